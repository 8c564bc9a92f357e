"""Where containerd looks for CNI plugins and configs, read from its ``config.toml``.

containerd 1.x (config version 2) keeps them in ``[plugins."io.containerd.grpc.v1.cri".cni]``,
2.x (version 3) in ``[plugins."io.containerd.cri.v1.runtime".cni]`` where ``bin_dirs`` (a list,
2.1+) supersedes ``bin_dir``; version 1 configs used ``[plugins.cri.cni]``. The first section that
sets a key wins, newest first.
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
    try:
        import tomllib
    except ImportError:  # Python 3.10: the Windows bundle ships 3.13
        raise ConfigError(f"cannot read {path}: this Python has no TOML reader (3.11+); "
                          "pass --cni-bin-dir and --cni-conf-dir") from None
    try:
        doc = tomllib.loads(raw[:MAX_CONFIG].decode("utf-8-sig"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path} is not valid TOML ({exc}): containerd cannot start with it either; "
                          "fix it, or pass --cni-bin-dir and --cni-conf-dir") from None
    plugins = doc.get("plugins") if isinstance(doc.get("plugins"), dict) else {}
    cnis = [s["cni"] for s in (plugins.get(name) for name in SECTIONS)
            if isinstance(s, dict) and isinstance(s.get("cni"), dict)]
    bin_dir = _first(cnis, "bin_dirs", list) or _first(cnis, "bin_dir", str)
    conf_dir = _first(cnis, "conf_dir", str)
    return CniDirs(bin_dir or fallback["bin_dir"], conf_dir or fallback["conf_dir"])


def _first(sections: list[dict], key: str, kind: type) -> str:
    for cni in sections:
        value = cni.get(key)
        if isinstance(value, kind) and value:
            first = value[0] if kind is list else value
            if isinstance(first, str) and first:
                return first
    return ""
