"""Where containerd looks for CNI plugins and configs, read from its ``config.toml``.

containerd 1.x (config version 2) keeps them in ``[plugins."io.containerd.grpc.v1.cri".cni]``,
2.x (version 3) in ``[plugins."io.containerd.cri.v1.runtime".cni]`` where ``bin_dirs`` (a list,
2.1+) supersedes ``bin_dir``; version 1 configs used ``[plugins.cri.cni]``. The first section that
sets a key wins, newest first.

Every way the file can be unusable is a ``ConfigError`` saying so: larger than ``MAX_CONFIG``
(never read in part: a section past a cut would be silently missed), not TOML, nested deeper than
the reader goes, or a directory that no file system can hold (a NUL, a control character).
"""
from __future__ import annotations

from dataclasses import dataclass

SECTIONS = ("io.containerd.cri.v1.runtime", "io.containerd.grpc.v1.cri", "cri")
MAX_CONFIG = 1 << 20
WINDOWS = {"config": r"C:\Program Files\containerd\config.toml", "bin_dir": r"C:\opt\cni\bin",
           "conf_dir": r"C:\etc\cni\net.d"}
POSIX = {"config": "/etc/containerd/config.toml", "bin_dir": "/opt/cni/bin", "conf_dir": "/etc/cni/net.d"}


class ConfigError(Exception):
    """config.toml exists but cannot be used: the message names the file and the way out."""


@dataclass(frozen=True)
class CniDirs:
    bin_dir: str
    conf_dir: str


def defaults(platform: str) -> dict[str, str]:
    return dict(WINDOWS if platform == "win32" else POSIX)


def parse(raw: bytes, path: str, fallback: dict[str, str]) -> CniDirs:
    """The CNI dirs ``raw`` (config.toml's bytes) sets, each else ``fallback``'s."""
    if len(raw) > MAX_CONFIG:
        raise ConfigError(f"{path} is larger than {MAX_CONFIG >> 10} KiB, more than install reads of a containerd "
                          "config: pass --cni-bin-dir and --cni-conf-dir")
    try:
        import tomllib
    except ImportError:  # Python 3.10: the Windows bundle ships 3.13
        raise ConfigError(f"cannot read {path}: this Python has no TOML reader (3.11+); "
                          "pass --cni-bin-dir and --cni-conf-dir") from None
    try:
        doc = tomllib.loads(raw.decode("utf-8-sig"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path} is not valid TOML ({exc}): containerd cannot start with it either; "
                          "fix it, or pass --cni-bin-dir and --cni-conf-dir") from None
    except RecursionError:
        raise ConfigError(f"{path} nests arrays or tables deeper than install reads: no containerd config does; "
                          "fix it, or pass --cni-bin-dir and --cni-conf-dir") from None
    plugins = doc.get("plugins") if isinstance(doc.get("plugins"), dict) else {}
    cnis = [s["cni"] for s in (plugins.get(name) for name in SECTIONS)
            if isinstance(s, dict) and isinstance(s.get("cni"), dict)]
    bin_dir = _first(cnis, "bin_dirs", list) or _first(cnis, "bin_dir", str)
    conf_dir = _first(cnis, "conf_dir", str)
    for key, value in (("bin_dir", bin_dir), ("conf_dir", conf_dir)):
        if any(ord(c) < 32 for c in value):
            raise ConfigError(f"{path}: the cni {key} {value[:200]!r} holds a NUL or control character, which no "
                              "folder name can: fix it, or pass --cni-bin-dir and --cni-conf-dir")
    return CniDirs(bin_dir or fallback["bin_dir"], conf_dir or fallback["conf_dir"])


def _first(sections: list[dict], key: str, kind: type) -> str:
    for cni in sections:
        value = cni.get(key)
        if isinstance(value, kind) and value:
            first = value[0] if kind is list else value
            if isinstance(first, str) and first:
                return first
    return ""
