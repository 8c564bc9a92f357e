"""The flags several commands share, declared once: the node's files the doctor reads (and so
``bundle`` and ``metrics``), ``--cni-conf``, ``--containerd-config``, and the value types."""

from __future__ import annotations

import argparse

from basics.cli import DIR, FILE, FILE_OR_DIR

#: What the CNI folder flags default to: ``node.dirs.where``'s answer.
DIRS_DEFAULT = "the runtime's (wincni dirs)"


def seconds(text: str) -> float:
    """A duration option's type (--timeout, reclaim's --min-age): a finite number of seconds, 0 or
    more; NaN or infinity would make a deadline that never passes."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds (0 or more)")
    return value


def cni_conf(p: argparse.ArgumentParser) -> None:
    """The reading commands' --cni-conf: a config file, or the folder the runtime picks one from."""
    p.add_argument(
        "--cni-conf",
        type=FILE_OR_DIR,
        metavar="FILE|DIR",
        help=f"config file or directory (default: {DIRS_DEFAULT} conf dir)",
    )


def containerd_config(p: argparse.ArgumentParser, platform: str) -> None:
    """``--containerd-config``, for every command whose CNI folders ``containerd.locate`` decides."""
    from tools.wincni.node.containerd import config_path

    default = r"%%ProgramFiles%%\containerd\config.toml" if platform == "win32" else config_path(platform, {})
    p.add_argument(
        "--containerd-config",
        type=FILE,
        metavar="FILE",
        help=f"containerd's config, which names the CNI folders (default {default})",
    )


def node_files(p: argparse.ArgumentParser, platform: str) -> None:
    """The files of the node the doctor reads, and so the bundle and the metrics too."""
    from tools.wincni.node.paths import default_paths

    defaults = default_paths(platform)
    cni_conf(p)
    p.add_argument(
        "--subnet-env",
        type=FILE,
        metavar="FILE",
        help=f"flanneld's lease (default: the config's subnetFile, else {defaults['subnet_env']})",
    )
    p.add_argument(
        "--net-conf",
        type=FILE,
        metavar="FILE",
        help=f"flanneld's net-conf.json (default: the config's netConf, else {defaults['net_conf']})",
    )
    p.add_argument(
        "--source-vip",
        type=FILE,
        default=defaults["source_vip"],
        metavar="FILE",
        help="kube-proxy's source VIP file (default %(default)s)",
    )
    p.add_argument(
        "--cni-bin-dir", type=DIR, metavar="DIR", help=f"the plugins' directory (default: {DIRS_DEFAULT} bin dir)"
    )
    containerd_config(p, platform)
