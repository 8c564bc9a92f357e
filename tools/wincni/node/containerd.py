"""Where the runtime looks for CNI plugins and configs on this node: ``locate``, the one answer
``wincni install``, ``doctor``, ``sourcevip``, ``reclaim`` and ``dirs`` take their defaults from.

containerd's ``config.toml`` decides when it names the folders. When it leaves them out (or is
absent but containerd's own folder is there), containerd uses its built-in defaults, which on
Windows are NOT sig-windows-tools' ``C:\\opt\\cni\\bin`` / ``C:\\etc\\cni\\net.d``: containerd 1.x
(``pkg/cri/config/config_windows.go``, ``DefaultConfig``) and 2.x
(``internal/cri/config/config_windows.go``, ``DefaultRuntimeConfig``) both set
``NetworkPluginBinDir = filepath.Join(os.Getenv("ProgramFiles"), "containerd", "cni", "bin")`` and
``NetworkPluginConfDir`` likewise ending in ``"cni", "conf"``; its config folder is
``%ProgramFiles%\\containerd`` too. On Linux they are ``/opt/cni/bin`` and ``/etc/cni/net.d``. With no
containerd at all, install still targets containerd's defaults (it installs for containerd); the
reading tools pass ``without_containerd``: the dockershim-era ``C:\\k\\cni`` layout.

containerd 1.x (config version 2) keeps them in ``[plugins."io.containerd.grpc.v1.cri".cni]``,
2.x (version 3) in ``[plugins."io.containerd.cri.v1.runtime".cni]`` where ``bin_dirs`` (a list,
2.1+) supersedes ``bin_dir``; version 1 configs used ``[plugins.cri.cni]``. The first section that
sets a key wins, newest first.

Every way the file can be unusable is a ``ConfigError`` saying so: larger than ``MAX_CONFIG``
(never read in part: a section past a cut would be silently missed), not TOML, nested deeper than
the reader goes, or a directory that no file system can hold (a NUL, a control character).
"""

from __future__ import annotations

import ntpath
import posixpath
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Callable, Mapping

if TYPE_CHECKING:
    pass

SECTIONS = ("io.containerd.cri.v1.runtime", "io.containerd.grpc.v1.cri", "cri")
MAX_CONFIG = 1 << 20
CONF_NAME = "10-flannel.conflist"  # the config wincni install writes (its --conf-name)
PROGRAM_FILES = r"C:\Program Files"  # when %ProgramFiles% is unset or not an absolute path
POSIX_HOME = "/etc/containerd"


class ConfigError(Exception):
    """config.toml exists but cannot be used: the message names the file and what is wrong (the
    caller adds its own flags as the way out)."""


@dataclass(frozen=True)
class CniDirs:
    bin_dir: str
    conf_dir: str
    why: str = ""  # where the answer came from, for the operator
    # config.toml's version: 3 is containerd 2.x, which calls CNI STATUS; 2 is 1.x, 1 a config
    # without one (containerd's reading); 0 when no config.toml was read
    version: int = 0


# The kubelet's own C:\k\cni layout (the Windows guide's dockershim nodes): only the reading tools
# fall back to it, and only where nothing of containerd is.
LEGACY = {"win32": CniDirs(r"C:\k\cni", r"C:\k\cni\config", "the dockershim-era C:\\k\\cni layout")}
POSIX_DEFAULTS = CniDirs("/opt/cni/bin", "/etc/cni/net.d", "containerd's own defaults")


def home(platform: str, env: Mapping[str, str]) -> str:
    """containerd's own folder: ``%ProgramFiles%\\containerd`` on Windows, /etc/containerd elsewhere."""
    if platform != "win32":
        return POSIX_HOME
    found = next((v for k, v in env.items() if k.upper() == "PROGRAMFILES"), "")
    usable = ntpath.isabs(found) and found[:1] not in "\\/" and not any(ord(c) < 32 for c in found)
    return ntpath.join(found if usable else PROGRAM_FILES, "containerd")


def config_path(platform: str, env: Mapping[str, str]) -> str:
    """containerd's default config.toml."""
    return (ntpath if platform == "win32" else posixpath).join(home(platform, env), "config.toml")


def defaults(platform: str, env: Mapping[str, str]) -> CniDirs:
    """containerd's built-in CNI folders (see the module docstring)."""
    if platform != "win32":
        return POSIX_DEFAULTS
    cni = ntpath.join(home(platform, env), "cni")
    return CniDirs(ntpath.join(cni, "bin"), ntpath.join(cni, "conf"), "containerd's own defaults")


def without_containerd(platform: str) -> CniDirs:
    """What the reading tools look at on a node with no containerd: C:\\k\\cni on Windows."""
    return LEGACY.get(platform, POSIX_DEFAULTS)


def locate(
    platform: str,
    env: Mapping[str, str],
    read: Callable[[str, int], "bytes | None"],
    isdir: Callable[[str], bool],
    config: str | None = None,
    absent: CniDirs | None = None,
) -> CniDirs:
    """Where the runtime's CNI folders are on this node, and why: ``config`` (default: containerd's
    own config.toml) when it names them, else containerd's defaults; when neither the config nor
    containerd's folder exists, ``absent`` if given. ``read`` returns at most ``cap`` bytes, None
    when the file is absent; ConfigError when the config cannot be used."""
    path = config or config_path(platform, env)
    raw = _read(read, path)
    base = defaults(platform, env)
    if raw is not None:
        return parse(raw, path, base)
    folder = home(platform, env)
    if config is None and absent is not None and not isdir(folder):
        return replace(absent, why=f"no containerd here ({path} and {folder} do not exist): {absent.why}")
    return replace(base, why=f"{path} does not exist: {base.why}")


def _read(read: Callable[[str, int], "bytes | None"], path: str) -> "bytes | None":
    try:
        return read(path, MAX_CONFIG + 1)
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror or exc}") from None


def parse(raw: bytes, path: str, fallback: CniDirs) -> CniDirs:
    """The CNI dirs ``raw`` (config.toml's bytes) sets, each else ``fallback``'s; ``why`` says which."""
    doc = _toml(raw, path)
    plugins = doc.get("plugins") if isinstance(doc.get("plugins"), dict) else {}
    cnis = [
        s["cni"]
        for s in (plugins.get(name) for name in SECTIONS)
        if isinstance(s, dict) and isinstance(s.get("cni"), dict)
    ]
    bin_dir = _first(cnis, "bin_dirs", list) or _first(cnis, "bin_dir", str)
    conf_dir = _first(cnis, "conf_dir", str)
    for key, value in (("bin_dir", bin_dir), ("conf_dir", conf_dir)):
        if any(ord(c) < 32 for c in value):
            raise ConfigError(
                f"{path}: the cni {key} {value[:200]!r} holds a NUL or control character, which no folder name can"
            )
    named = " and ".join(k for k, v in (("bin_dir", bin_dir), ("conf_dir", conf_dir)) if v)
    why = (
        f"{path} names them"
        if bin_dir and conf_dir
        else f"{path} names {named}; the other: {fallback.why}"
        if named
        else f"{path} leaves them out: {fallback.why}"
    )
    version = doc.get("version", 1)
    return CniDirs(
        bin_dir or fallback.bin_dir, conf_dir or fallback.conf_dir, why, version if type(version) is int else 1
    )


def _toml(raw: bytes, path: str) -> dict:
    if len(raw) > MAX_CONFIG:
        raise ConfigError(
            f"{path} is larger than {MAX_CONFIG >> 10} KiB, more than wincni reads of a containerd config"
        )
    try:
        import tomllib
    except ImportError:  # Python 3.10: the Windows package ships 3.13
        raise ConfigError(f"cannot read {path}: this Python has no TOML reader (3.11+)") from None
    try:
        doc = tomllib.loads(raw.decode("utf-8-sig"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path} is not valid TOML ({exc}): containerd cannot start with it either") from None
    except RecursionError:
        raise ConfigError(
            f"{path} nests arrays or tables deeper than wincni reads: no containerd config does"
        ) from None
    return doc


def said(given: list[str], found: CniDirs) -> str:
    """Why the folders a command uses are those: the flags ``given`` for them, ``found`` for the rest."""
    return "; ".join([" and ".join(given) + " given"] * bool(given) + [found.why] * (len(given) < 2))


def _first(sections: list[dict], key: str, kind: type) -> str:
    for cni in sections:
        value = cni.get(key)
        if isinstance(value, kind) and value:
            first = value[0] if kind is list else value
            if isinstance(first, str) and first:
                return first
    return ""
