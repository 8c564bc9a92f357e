"""The CNI folders the reading commands look at (``wincni dirs`` prints them): containerd's, by
``containerd.locate``, else the C:\\k\\cni layout where nothing of containerd is."""

from __future__ import annotations

import os
from typing import Callable, Mapping

from tools.wincni.node.containerd import CniDirs


def where(
    containerd_config: str | None,
    platform: str,
    env: Mapping[str, str],
    read: object = None,
    isdir: Callable[[str], bool] = os.path.isdir,
    strict: bool = False,
) -> CniDirs:
    """``containerd.locate``'s answer; a config.toml the commands cannot use is said in ``why``,
    containerd's defaults then looked at (containerd itself does not start with it). ``read``: a
    ``flagfile.Reader`` (default: --containerd-config's, on the node's files). ``strict``: a
    --containerd-config given that cannot be read at all (a FIFO, a user's link) is raised
    (``FlagFileError``), for the commands that do not print ``why``."""
    from dataclasses import replace

    from tools.wincni.node import containerd
    from tools.wincni.node.flagfile import FlagFileError, Reader

    read = read or Reader("--containerd-config")
    try:
        return containerd.locate(platform, env, read, isdir, containerd_config, containerd.without_containerd(platform))
    except (containerd.ConfigError, FlagFileError) as exc:
        if strict and containerd_config and isinstance(exc, FlagFileError):
            raise
        found = containerd.defaults(platform, env)
        why = read.quote(str(exc))
        return replace(found, why=f"{why} (fix it, or pass --cni-conf and --cni-bin-dir): looking at {found.why}")
