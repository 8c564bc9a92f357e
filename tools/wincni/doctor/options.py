"""The doctor's typed options: ``NodeFiles`` (what ``gather`` reads, and what a bundle records
of it) and ``DoctorOptions`` (the report around them). Built once from the parsed flags and the
CNI folders ``node.dirs.where`` found; nothing below reads argparse."""

from __future__ import annotations

import argparse
from dataclasses import asdict, dataclass, field
from typing import Any, Mapping


@dataclass(frozen=True)
class NodeFiles:
    """The node's files the doctor reads. ``*_given``: the operator named the file (else the
    config's own subnetFile / netConf win over the default)."""

    cni_conf: str = ""
    subnet_env: str = ""
    subnet_env_given: bool = False
    net_conf: str = ""
    net_conf_given: bool = False
    source_vip: str = ""
    cni_bin_dir: str = ""
    reach: str = ""
    quick: bool = False
    containerd_version: int | None = None
    checked: tuple[tuple[str, str], ...] = ()  # (flag, path) of each ``CheckFile`` the checks read

    def recorded(self) -> dict[str, Any]:
        """As a bundle's manifest records them (``doctor``), and replay reads them back."""
        return asdict(self)

    @classmethod
    def of_record(cls, doc: Mapping[str, Any]) -> "NodeFiles":
        known = {k: v for k, v in doc.items() if k in cls.__dataclass_fields__}
        return cls(**{**known, "checked": tuple(tuple(pair) for pair in known.get("checked") or ())})


@dataclass(frozen=True)
class DoctorOptions:
    files: NodeFiles
    output: str = "table"
    replay: str = ""  # a bundle to read the node from instead
    looked: Mapping[str, str] = field(default_factory=dict)  # the report's cniDirs: conf, binDir, from
    chose: bool = True  # the doctor picked a CNI folder itself, so the table says where it looked


def add_node_files(p: argparse.ArgumentParser, platform: str) -> None:
    """The node's files the doctor reads, as flags (``cli.flags.node_files``, and each check's
    ``CheckFile``): the doctor's, the bundle's and the metrics' alike."""
    from basics.cli import FILE
    from tools.wincni.cli import flags
    from tools.wincni.doctor.checks.registry import FILES

    flags.node_files(p, platform)
    for f in FILES.values():
        p.add_argument(f.flag, type=FILE, metavar="FILE", help=f"{f.what} (default {f.default(platform)})")


def node_files(args: argparse.Namespace, found: Any, platform: str, env: Mapping[str, str]) -> NodeFiles:
    """``NodeFiles`` from the shared node flags (``cli.flags.node_files``) and the CNI folders
    ``found`` (a ``containerd.CniDirs``); ``env`` places a check's file its writer places by it."""
    from tools.wincni.node.paths import default_paths

    defaults = default_paths(platform)
    return NodeFiles(
        cni_conf=args.cni_conf or found.conf_dir,
        subnet_env=args.subnet_env or defaults["subnet_env"],
        subnet_env_given=bool(args.subnet_env),
        net_conf=args.net_conf or defaults["net_conf"],
        net_conf_given=bool(args.net_conf),
        source_vip=args.source_vip,
        cni_bin_dir=args.cni_bin_dir or found.bin_dir,
        reach=getattr(args, "reach", None) or "",
        quick=getattr(args, "quick", False),
        containerd_version=found.version if found is not None else None,
        checked=_checked(args, platform, env),
    )


def _checked(args: argparse.Namespace, platform: str, env: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    from tools.wincni.doctor.checks.registry import FILES

    return tuple(
        (f.flag, getattr(args, f.flag[2:].replace("-", "_")) or f.default(platform, env)) for f in FILES.values()
    )
