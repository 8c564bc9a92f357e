"""``wincni sourcevip``: kube-proxy's source VIP on an overlay node, reserved where pods cannot get it.

winkernel kube-proxy (overlay) needs ``--source-vip``, an address of the node's pod subnet that
no pod may hold. It is reserved through host-local's own allocator in the pods' store (the same
network name and dataDir as the pods' config) under a pinned owner (``Owner.pinned``): no pod's
DEL matches it and GC keeps it. Running it again returns the same address; after the node got a
new FLANNEL_SUBNET the old address is released and one of the new subnet reserved.
``sourceVip.json`` is the host-local result in the 0.2.0 shape the existing scripts read
(``ip4.ip``).
"""
from __future__ import annotations

import argparse
import json
import os
import time
from typing import Any, Callable, Mapping, TextIO

from plugins.ipam_host_local.allocator import PINNED_PREFIX, Owner

OWNER = Owner(PINNED_PREFIX + "source-vip", "sourcevip")
RESULT_VERSION = "0.2.0"  # sourceVip.json as kube-proxy's start scripts read it: ip4.ip
MAX_CONF = 1 << 20
POLL_S = 1.0


class SourceVipError(Exception):
    """Cannot reserve: the message names what is missing and what to do (exit status 1)."""


def add_arguments(p: argparse.ArgumentParser, platform: str) -> None:
    from .containerd import CONF_NAME, add_config_argument
    from .facts import default_paths
    p.add_argument("--cni-conf", metavar="FILE",
                   help=f"the pods' CNI config (default: what wincni install wrote, {CONF_NAME} in the runtime's "
                        "conf dir: wincni dirs)")
    add_config_argument(p, platform)
    p.add_argument("--out", default=default_paths(platform)["source_vip"], metavar="FILE",
                   help="the host-local result kube-proxy's scripts read (default %(default)s)")
    p.add_argument("--timeout", type=float, default=120.0, metavar="S",
                   help="wait this long for flanneld's lease and the HNS network's management IP (default %(default)s)")
    p.add_argument("-o", "--output", choices=("table", "json"), default="table")


def run(args: argparse.Namespace, stdout: TextIO, env: Mapping[str, str], platform: str, cwd: str,
        clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep) -> int:
    from plugins.cni.errors import CniError
    try:
        name, ipam_of = _pods_config(args.cni_conf, platform, cwd)
        network, ipam = _wait(name, ipam_of, env, args.timeout, clock, sleep)
        ip, released, directory = reserve(name, ipam, platform)
        changed = _write(args.out, _result(ip))
    except SourceVipError as exc:
        _print(args, stdout, {"error": str(exc)})
        return 1
    except CniError as exc:
        _print(args, stdout, {"error": f"{exc.msg}: {exc.details}" if exc.details else exc.msg})
        return 1
    address = ip.address.split("/")[0]
    _print(args, stdout, {
        "networkName": name, "managementIP": network.management_ip, "sourceVip": address, "store": directory,
        "released": released, "file": args.out, "written": changed,
        "flags": [f"--source-vip={address}", f"--network-name={name}"]})
    return 0


def _pods_config(path: str, platform: str, cwd: str) -> tuple[str, Callable[[], Mapping[str, Any] | None]]:
    """The network name, and how to get the pods' IPAM section once it exists (flannel: from its
    lease, which flanneld writes once the network is up)."""
    from plugins.cni.config import check_name, decode
    from plugins.flannel import subnet_env
    from plugins.flannel.config import FlannelConf

    from .facts import first_plugin
    try:
        with open(path, "rb") as f:
            raw = f.read(MAX_CONF)
    except OSError as exc:
        raise SourceVipError(f"cannot read the pods' CNI config {path}: {exc.strerror or exc}; pass --cni-conf "
                             "(wincni install writes it)") from None
    conf = first_plugin(decode(raw))
    name = check_name(conf)
    if conf.get("type") != "flannel":
        ipam = conf.get("ipam")
        if not isinstance(ipam, dict):
            raise SourceVipError(f"{path}: {conf.get('type')!r} config without an ipam section: nothing to reserve in")
        return name, lambda: ipam
    fconf = FlannelConf.from_conf(conf, platform, cwd)

    def from_lease() -> Mapping[str, Any] | None:
        try:
            lease = subnet_env.load(fconf.subnet_file)
        except subnet_env.LeaseError as err:
            if err.problem is subnet_env.LeaseProblem.MISSING:
                return None
            raise SourceVipError(err.reason) from None
        if lease.subnet is None or lease.subnet.version != 4:
            raise SourceVipError(f"{fconf.subnet_file} has no IPv4 FLANNEL_SUBNET")
        return {**fconf.ipam, "type": "host-local", "subnet": str(lease.subnet)}  # what flannel gives the pods
    return name, from_lease


def _wait(name: str, ipam_of: Callable[[], Mapping[str, Any] | None], env: Mapping[str, str], timeout: float,
          clock: Callable[[], float], sleep: Callable[[float], None]) -> tuple[Any, Mapping[str, Any]]:
    """Poll (bounded) until the HNS network has its management IP and the pods' IPAM is known."""
    from libhns.client import HnsClient
    from libhns.errors import EnvError, HnsError
    deadline = clock() + timeout
    while True:
        try:
            network = HnsClient.from_env(env).get_network_by_name(name)
        except EnvError as err:
            raise SourceVipError(f"cannot query HNS: {err}") from None
        except (HnsError, OSError):
            network = None  # HNS restarting: as good as not there yet
        ipam = ipam_of()
        if network is not None and network.management_ip and ipam is not None:
            return network, ipam
        if clock() >= deadline:
            missing = ("flanneld's lease (subnet.env)" if ipam is None else
                       f"HNS network {name!r}" if network is None else f"the management IP of HNS network {name!r}")
            raise SourceVipError(f"{missing} not there after {timeout:g} s: is flanneld running on this node? "
                                 "(its log: \"Waiting for the Network to be created\")")
        sleep(POLL_S)


def reserve(name: str, ipam: Mapping[str, Any], platform: str) -> tuple[Any, list[str], str]:
    """(IPConfig, addresses released as stale, store directory). Idempotent: the address
    already reserved to OWNER in the current subnet is returned again."""
    from plugins.cni.errors import IO_FAILURE, CniError
    from plugins.ipam_host_local import config
    from plugins.ipam_host_local.allocator import allocate_all
    from plugins.ipam_host_local.store import open_store
    cfg = config.load({"name": name, "ipam": dict(ipam)}, {}, "1.0.0", platform)
    v4 = [s for s in cfg.range_sets if s.ranges[0].subnet.version == 4][:1]
    if not v4:
        raise SourceVipError(f"the pods' IPAM for {name} has no IPv4 range: kube-proxy's source VIP is IPv4")
    try:
        with open_store(cfg.directory, platform) as store:
            stale = [ip for ip in store.owned_by(OWNER) if not v4[0].contains(ip)]
            for ip in stale:  # from an earlier FLANNEL_SUBNET
                store.release(ip)
            [allocation] = allocate_all(v4, store, OWNER)
    except OSError as exc:
        raise CniError(IO_FAILURE, f"cannot use host-local's store {cfg.directory}: {exc.strerror or exc}") from None
    return allocation.ip_config(), [str(ip) for ip in stale], cfg.directory


def _result(ip: Any) -> dict:
    from plugins.cni.result import Result
    return Result(cni_version=RESULT_VERSION, ips=[ip]).to_dict(RESULT_VERSION)


def _write(path: str, doc: dict) -> bool:
    """Atomically, and only when it differs (kube-proxy's restart loop rereads it)."""
    from .disk import Disk
    data = (json.dumps(doc, indent=2) + "\n").encode()
    disk = Disk()
    try:
        if disk.read(path, MAX_CONF) == data:
            return False
        disk.makedirs(os.path.dirname(path) or ".")
        disk.write_atomic(path, data)
    except OSError as exc:
        raise SourceVipError(f"cannot write {path}: {exc.strerror or exc}; pass --out") from None
    return True


def _print(args: argparse.Namespace, stdout: TextIO, doc: dict) -> None:
    if args.output == "json":
        json.dump(doc, stdout, indent=2)
        stdout.write("\n")
        return
    if "error" in doc:
        stdout.write(f"FAILED: {doc['error']}\n")
        return
    was = f", released {', '.join(doc['released'])} (an earlier subnet)" if doc["released"] else ""
    stdout.write(f"network     {doc['networkName']}, management IP {doc['managementIP']}\n"
                 f"source VIP  {doc['sourceVip']} reserved in {doc['store']}{was}\n"
                 f"{'wrote' if doc['written'] else 'kept':<11} {doc['file']}\n"
                 f"kube-proxy  {' '.join(doc['flags'])}\n")
