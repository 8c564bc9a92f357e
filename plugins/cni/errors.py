"""CNI errors: one exception type carrying its CNI specification code, turned into JSON only by ``skel``."""

from __future__ import annotations

# The CNI specification's error codes (SPEC.md "Error"); 0-99 are reserved for it.
INCOMPATIBLE_VERSION = 1
UNSUPPORTED_FIELD = 2
UNKNOWN_CONTAINER = 3
INVALID_ENV = 4
IO_FAILURE = 5
DECODE_FAILURE = 6
INVALID_CONFIG = 7
TRY_AGAIN_LATER = 11
NOT_AVAILABLE = 50
LIMITED_CONNECTIVITY = 51
INTERNAL = 999


class CniError(Exception):
    """A failure the runtime must see as a CNI error object (code, msg, details)."""

    def __init__(self, code: int, msg: str, details: str = "") -> None:
        super().__init__(msg)
        self.code = code
        self.msg = msg
        self.details = details

    def to_dict(self, cni_version: str) -> dict:
        doc = {"cniVersion": cni_version, "code": self.code, "msg": self.msg}
        if self.details:
            doc["details"] = self.details
        return doc

    def __str__(self) -> str:
        return f"{self.msg}: {self.details}" if self.details else self.msg


def invalid_config(msg: str, details: str = "") -> CniError:
    return CniError(INVALID_CONFIG, msg, details)
