"""The CNI_* environment, checked once and handed to the plugin as a typed value."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Mapping

from .errors import INVALID_ENV, CniError
from .names import file_name_problem, is_name

COMMANDS = ("ADD", "DEL", "CHECK", "VERSION", "GC", "STATUS")

# Which variables each command cannot do without (CNI_PATH is optional: we may need no delegate).
_REQUIRED = {
    "ADD": ("CNI_CONTAINERID", "CNI_NETNS", "CNI_IFNAME"),
    "CHECK": ("CNI_CONTAINERID", "CNI_NETNS", "CNI_IFNAME"),
    "DEL": ("CNI_CONTAINERID", "CNI_IFNAME"),
    "GC": (),
    "STATUS": (),
    "VERSION": (),
}

# Every file name later built from a container ID relies on this pattern (CNI specification + libcni).
#: The longest container ID: flannel's attachment marker ``<sandbox>@<container>@<ifname>`` must
#: stay one file name (255 characters) with a 15-character ifname quoted. Runtimes use 64.
MAX_CONTAINER_ID = 100


class CmdArgs:
    """The checked CNI_* variables (a plain class: ``dataclasses`` is too slow to import here)."""

    __slots__ = ("command", "container_id", "netns", "ifname", "args", "path", "env")

    def __init__(
        self,
        command: str,
        container_id: str = "",
        netns: str = "",
        ifname: str = "",
        args: str = "",
        path: tuple[str, ...] = (),
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.command = command
        self.container_id = container_id
        self.netns = netns
        self.ifname = ifname
        self.args = args
        self.path = path
        self.env = {} if env is None else env

    def _key(self) -> tuple:
        return (self.command, self.container_id, self.netns, self.ifname, self.args, self.path)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CmdArgs) and self._key() == other._key()

    def __hash__(self) -> int:  # env is a mapping: left out of equality and hash
        return hash(self._key())

    def __repr__(self) -> str:
        return "CmdArgs(" + ", ".join(f"{k}={v!r}" for k, v in zip(self.__slots__, self._key())) + ")"


def path_separator(platform: str) -> str:
    return ";" if platform == "win32" else ":"


def split_path(value: str, platform: str) -> tuple[str, ...]:
    return tuple(p for p in value.split(path_separator(platform)) if p)


def parse_env(env: Mapping[str, str], platform: str) -> CmdArgs:
    """Validate the environment for its command; raise code 4 naming what is wrong."""
    command = env.get("CNI_COMMAND", "")
    if command not in COMMANDS:
        raise CniError(INVALID_ENV, f"unknown CNI_COMMAND: {command}", "expected one of " + ", ".join(COMMANDS))
    missing = [k for k in _REQUIRED[command] if not env.get(k)]
    if missing:
        raise CniError(
            INVALID_ENV,
            f"required env variables [{','.join(missing)}] missing",
            f"CNI_COMMAND={command} needs " + ", ".join(_REQUIRED[command]),
        )
    container_id = env.get("CNI_CONTAINERID", "")
    if container_id and not is_name(container_id):
        raise CniError(INVALID_ENV, "invalid characters in containerID", container_id[:200])
    problem = container_id and file_name_problem(container_id, MAX_CONTAINER_ID)
    if problem:
        raise CniError(INVALID_ENV, f"CNI_CONTAINERID {problem}", container_id[:200])
    ifname = env.get("CNI_IFNAME", "")
    if command in ("ADD", "CHECK", "DEL") or ifname:
        check_ifname(ifname)
    return CmdArgs(
        command=command,
        container_id=container_id,
        netns=env.get("CNI_NETNS", ""),
        ifname=ifname,
        args=env.get("CNI_ARGS", ""),
        path=split_path(env.get("CNI_PATH", ""), platform),
        env=env,
    )


def check_ifname(ifname: str) -> None:
    if not ifname:
        raise CniError(INVALID_ENV, "interface name is empty", "set CNI_IFNAME, e.g. eth0")
    if len(ifname) > 15:
        raise CniError(INVALID_ENV, "interface name is too long", "interface name should be less than 16 characters")
    if ifname in (".", ".."):
        raise CniError(INVALID_ENV, "interface name is . or ..", ifname)
    if any(c in "/:" or c.isspace() for c in ifname):
        raise CniError(INVALID_ENV, "interface name contains / or : or whitespace characters", ifname)
