"""Build tests/fakedll/fakehns.c with the system C compiler and drive it from Python."""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
from pathlib import Path

SOURCE = Path(__file__).resolve().parents[1] / "fakedll" / "fakehns.c"


def compiler() -> str | None:
    """The C compiler to use: $CC, else cc, else gcc; None when there is none."""
    for name in (os.environ.get("CC"), "cc", "gcc"):
        if name and shutil.which(name):
            return name
    return None


def build(directory: Path) -> Path:
    """Compile the fake into ``directory`` and return the shared library's path."""
    cc = compiler()
    if cc is None:
        raise FileNotFoundError("no C compiler (cc/gcc) on PATH")
    target = directory / "libfakehns.so"
    subprocess.run(
        [cc, "-shared", "-fPIC", "-Wall", "-Werror", "-O1", "-o", str(target), str(SOURCE)],
        check=True,
        capture_output=True,
        text=True,
    )
    return target


class FakeHns:
    """Typed access to the fake's fake_* controls; ``lib`` is what the backend is given."""

    def __init__(self, path: Path) -> None:
        self.lib = ctypes.CDLL(str(path))
        self._sig("fake_reset", [], None)
        self._sig("fake_set_next", [ctypes.c_int32, ctypes.c_wchar_p, ctypes.c_wchar_p], None)
        self._sig("fake_last_call", [], ctypes.c_char_p)
        self._sig("fake_last_guid", [ctypes.c_char_p], ctypes.c_int)
        self._sig("fake_last_string", [ctypes.c_int], ctypes.c_wchar_p)
        self._sig("fake_last_string_set", [ctypes.c_int], ctypes.c_int)
        for name in ("fake_last_handle_in", "fake_last_handle_out"):
            self._sig(name, [], ctypes.c_size_t)
        for name in (
            "fake_alloc_count",
            "fake_free_count",
            "fake_bad_free_count",
            "fake_call_count",
            "fake_close_count",
        ):
            self._sig(name, [], ctypes.c_int)

    def _sig(self, name: str, argtypes: list, restype: object) -> None:
        fn = getattr(self.lib, name)
        fn.argtypes, fn.restype = argtypes, restype

    def reset(self) -> None:
        self.lib.fake_reset()

    def set_next(self, hresult: int = 0, out: str | None = None, record: str | None = None) -> None:
        """Script the next call: its HRESULT (unsigned is fine), out-string and ErrorRecord."""
        signed = hresult - (1 << 32) if hresult & 0x80000000 else hresult
        self.lib.fake_set_next(signed, out, record)

    @property
    def last_call(self) -> str:
        return self.lib.fake_last_call().decode()

    def last_guid(self) -> bytes | None:
        """The 16 GUID bytes the last call received, None when it received a NULL pointer."""
        buf = ctypes.create_string_buffer(16)
        return None if self.lib.fake_last_guid(buf) else buf.raw

    def last_strings(self) -> list[str | None]:
        """The strings the last call received, in parameter order (None for a NULL pointer)."""
        return [self.lib.fake_last_string(i) for i in range(3) if self.lib.fake_last_string_set(i)]

    @property
    def last_handle_in(self) -> int:
        return self.lib.fake_last_handle_in()

    @property
    def last_handle_out(self) -> int:
        return self.lib.fake_last_handle_out()

    @property
    def allocs(self) -> int:
        return self.lib.fake_alloc_count()

    @property
    def frees(self) -> int:
        return self.lib.fake_free_count()

    @property
    def bad_frees(self) -> int:
        return self.lib.fake_bad_free_count()

    @property
    def calls(self) -> int:
        return self.lib.fake_call_count()

    @property
    def closes(self) -> int:
        return self.lib.fake_close_count()
