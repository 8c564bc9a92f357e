"""Where a node keeps the files the commands read: Windows' places, else the Linux ones (so the same flags drive the simulator)."""

from __future__ import annotations

import ntpath
import os
from typing import Any

# Where a Windows node keeps things (the Kubernetes Windows guide, flanneld, kube-proxy); off
# Windows the Linux places, so the same flags drive the simulator.
# The CNI folders are containerd.locate's to say.
WINDOWS_PATHS = {
    "subnet_env": r"C:\run\flannel\subnet.env",
    "net_conf": r"C:\etc\kube-flannel\net-conf.json",
    "source_vip": r"C:\k\SourceVip.json",
}


POSIX_PATHS = {
    "subnet_env": "/run/flannel/subnet.env",
    "net_conf": "/etc/kube-flannel/net-conf.json",
    "source_vip": "/var/lib/kube-proxy/SourceVip.json",
}


def default_paths(platform: str) -> dict[str, str]:
    return dict(WINDOWS_PATHS if platform == "win32" else POSIX_PATHS)


def node_path(platform: str) -> Any:
    """The path module of the node ``platform`` names (``ntpath`` for Windows, else this OS's)."""
    return ntpath if platform == "win32" else os.path
