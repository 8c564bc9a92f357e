"""``wincni sourcevip``: kube-proxy's source VIP on an overlay node, reserved where pods cannot get it.

winkernel kube-proxy (overlay) needs ``--source-vip``, an address of the node's pod subnet that
no pod may hold. It is reserved through host-local's own allocator in the pods' store (the same
network name and dataDir as the pods' config) under an owner of the node's reserved ``_wincni-``
namespace: by the ownership rule (``plugins.cni.ownership``) no pod's DEL matches it, and GC and
``wincni reclaim`` keep it. Running it again returns the same address; after the node got a new
FLANNEL_SUBNET the old address is released and one of the new subnet reserved. It never reserves
an address HNS already gives to an endpoint (flanneld's ``<network>_ep``, a leftover pod's), and
keeps its address while the endpoint kube-proxy makes for it holds it (deploy/ runs it again each
time kube-proxy starts).
``--timeout`` bounds the whole command, each HNS call given what is left, and while it waits a
line on stderr every ``PROGRESS_S`` says for what and how much longer. On an L2Bridge (host-gw)
network kube-proxy takes no source VIP: it refuses (exit status 2).
``sourceVip.json`` is the host-local result in the 0.2.0 shape the existing scripts read
(``ip4.ip``).
"""

from __future__ import annotations

import argparse
import json
import os
from dataclasses import dataclass
from typing import Any, Callable, Mapping, TextIO

from basics.cli import Manual
from tools.wincni.cli.context import Context
from tools.wincni.cli.output import failed, json_doc
from tools.wincni.node.flagfile import quote
from tools.wincni.sourcevip.reserve import SourceVipError, reserve, wait_for_network

MANUAL = Manual(
    does="Reserve kube-proxy's source VIP on an overlay node: an address of the pods' subnet no pod can "
    "get, kept by the sweep; print the kube-proxy flags that use it. Running it again returns the same "
    "address (a new one after the node's subnet changed).",
    elevated=True,
    exits=(
        (0, "reserved (or already reserved)"),
        (1, "not reserved: the network or the store is not there yet (one line says what)"),
        (2, "a usage error, or an L2Bridge network, which takes no source VIP"),
    ),
    examples=("wincni sourcevip --out C:\\k\\sourceVip.json --timeout 120",),
)


RESULT_VERSION = "0.2.0"  # sourceVip.json as kube-proxy's start scripts read it: ip4.ip


MAX_CONF = 1 << 20


def add_arguments(p: argparse.ArgumentParser, platform: str) -> None:
    from basics.cli import FILE, add_output
    from tools.wincni.cli.flags import containerd_config, seconds
    from tools.wincni.node.containerd import CONF_NAME
    from tools.wincni.node.paths import default_paths

    p.add_argument(
        "--cni-conf",
        type=FILE,
        metavar="FILE",
        help=f"the pods' CNI config (default: what wincni install wrote, {CONF_NAME} in the runtime's "
        "conf dir: wincni dirs)",
    )
    containerd_config(p, platform)
    p.add_argument(
        "--out",
        type=FILE,
        default=default_paths(platform)["source_vip"],
        metavar="FILE",
        help="the host-local result kube-proxy's scripts read (default %(default)s)",
    )
    p.add_argument(
        "--timeout",
        type=seconds,
        default=120.0,
        metavar="S",
        help="the whole command's limit, HNS calls included, while it waits for flanneld's lease and the "
        "HNS network's management IP (default %(default)s)",
    )
    add_output(p, "the address, the flags and what was written")


@dataclass(frozen=True)
class SourceVipOptions:
    cni_conf: str  # the pods' CNI config
    out: str  # the sourceVip.json kube-proxy's scripts read
    timeout: float
    output: str = "table"


def options(args: argparse.Namespace, ctx: Context) -> SourceVipOptions:
    """FlagFileError: --containerd-config given and refused."""
    from tools.wincni.node.containerd import CONF_NAME
    from tools.wincni.node.dirs import where

    cni_conf = args.cni_conf or os.path.join(
        where(args.containerd_config, ctx.platform, ctx.env, strict=True).conf_dir, CONF_NAME
    )
    return SourceVipOptions(cni_conf, args.out, args.timeout, args.output)


def run(options: SourceVipOptions, ctx: Context) -> int:
    from plugins.cni.errors import CniError

    try:
        old = _old(options.out)
        name, ipam_of, lease = _pods_config(options.cni_conf, ctx.platform, ctx.cwd)
        network, ipam, taken = wait_for_network(
            name, ipam_of, ctx.env, options.timeout, ctx.clock, ctx.sleep, ctx.stderr, lease
        )
        ip, released, directory = reserve(name, ipam, ctx.platform, taken)
        changed = _write(options.out, _result(ip), old)
    except SourceVipError as exc:
        failed(ctx.stdout, options.output, str(exc))
        return exc.status
    except CniError as exc:
        failed(ctx.stdout, options.output, str(exc))
        return 1
    address = ip.address.split("/")[0]
    _print(
        options.output,
        ctx.stdout,
        {
            "networkName": name,
            "managementIP": network.management_ip,
            "sourceVip": address,
            "store": directory,
            "released": released,
            "file": options.out,
            "written": changed,
            "flags": [f"--source-vip={address}", f"--network-name={name}"],
        },
    )
    return 0


def _pods_config(path: str, platform: str, cwd: str) -> tuple[str, Callable[[], Mapping[str, Any] | None], str]:
    """The network name, how to get the pods' IPAM section once it exists (flannel: from its
    lease, which flanneld writes once the network is up), and that lease's path ("" without flannel)."""
    from plugins.cni.config import check_name, decode
    from plugins.cni.errors import CniError
    from plugins.flannel import subnet_env
    from plugins.flannel.config import FlannelConf
    from plugins.flannel.delegate import pod_ipam
    from tools.wincni.node.podnetwork import first_plugin

    found = _input("--cni-conf", path, MAX_CONF)
    if found is None:
        raise SourceVipError(f"the pods' CNI config {path} does not exist; pass --cni-conf (wincni install writes it)")
    try:
        conf = first_plugin(decode(found.data))
        name = check_name(conf)
        if conf.get("type") != "flannel":
            ipam = conf.get("ipam")
            if not isinstance(ipam, dict):
                raise SourceVipError(
                    f"{path}: {conf.get('type')!r} config without an ipam section: nothing to reserve in"
                )
            return name, lambda: ipam, ""
        fconf = FlannelConf.from_conf(conf, platform, cwd)
    except CniError as exc:
        raise SourceVipError(quote(str(exc), ("--cni-conf", found))) from None

    def from_lease() -> Mapping[str, Any] | None:
        lease_file = _input("the config's subnetFile", fconf.subnet_file, subnet_env.MAX_LEASE)
        if lease_file is None:
            return None
        try:
            lease = subnet_env.decode(lease_file.data, fconf.subnet_file)
        except subnet_env.LeaseError as err:
            raise SourceVipError(quote(err.reason, ("the config's subnetFile", lease_file))) from None
        if lease.subnet is None or lease.subnet.version != 4:
            raise SourceVipError(f"{fconf.subnet_file} has no IPv4 FLANNEL_SUBNET")
        return pod_ipam(fconf, lease)  # what flannel gives the pods

    return name, from_lease, fconf.subnet_file


def _result(ip: Any) -> dict:
    from plugins.cni.result import Result

    return Result(cni_version=RESULT_VERSION, ips=[ip]).to_dict(RESULT_VERSION)


def _input(flag: str, path: str, cap: int) -> Any:
    """The file ``path`` the flag names (``flagfile.read``), None when absent; SourceVipError naming
    the flag when it cannot be used."""
    from tools.wincni.node.flagfile import FlagFileError, read

    try:
        return read(flag, path, cap)
    except FlagFileError as exc:
        raise SourceVipError(str(exc)) from None


def _old(path: str) -> bytes | None:
    """What --out holds now (None: nothing yet), its folder checked first: one only
    administrators may write (``safefs.check_dir``; a missing one is made when written), then the
    file read as a flag's is (a FIFO or a user's link is refused, never waited on or followed)."""
    from basics.errors import UnsafePath
    from basics.safefs import check_dir

    try:
        check_dir(os.path.dirname(os.path.abspath(path)))
    except FileNotFoundError:
        return None
    except UnsafePath as exc:
        raise SourceVipError(f"--out {path}: {exc}") from None
    except OSError as exc:
        raise SourceVipError(f"--out {path}: {exc.strerror or exc}") from None
    found = _input("--out", path, MAX_CONF)
    return found.data if found else None


def _write(path: str, doc: dict, old: bytes | None) -> bool:
    """Atomically, and only when it differs from ``old`` (kube-proxy's restart loop rereads it),
    through its folder made admin-only (or refused) and held (``Disk.secure``): nobody can swap
    it between the check and the write."""
    from tools.wincni.node.disk import Disk

    data = (json.dumps(doc, indent=2) + "\n").encode()
    disk = Disk()
    try:
        disk.secure(os.path.dirname(os.path.abspath(path)))
        if old == data:
            return False
        disk.write_atomic(path, data)
    except OSError as exc:
        raise SourceVipError(f"cannot write {path}: {exc.strerror or exc}; pass --out") from None
    finally:
        disk.close()
    return True


def _print(output: str, stdout: TextIO, doc: dict) -> None:
    if output == "json":
        json_doc(stdout, doc)
        return
    was = f", released {', '.join(doc['released'])} (an earlier subnet)" if doc["released"] else ""
    stdout.write(
        f"network     {doc['networkName']}, management IP {doc['managementIP']}\n"
        f"source VIP  {doc['sourceVip']} reserved in {doc['store']}{was}\n"
        f"{'wrote' if doc['written'] else 'kept':<11} {doc['file']}\n"
        f"kube-proxy  {' '.join(doc['flags'])}\n"
    )
