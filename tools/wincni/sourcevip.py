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
import time
from typing import Any, Callable, Mapping, TextIO

from plugins.cni.ownership import PINNED_PREFIX
from plugins.ipam_host_local.allocator import Owner

from .flagfile import quote

OWNER = Owner(PINNED_PREFIX + "source-vip", "sourcevip")
RESULT_VERSION = "0.2.0"  # sourceVip.json as kube-proxy's start scripts read it: ip4.ip
MAX_CONF = 1 << 20
POLL_S = 1.0
PROGRESS_S = 5.0


class SourceVipError(Exception):
    """Cannot reserve: the message names what is missing and what to do (exit status 1)."""

    status = 1


class NotNeeded(SourceVipError):
    """The network takes no source VIP (L2Bridge): nothing to do, and saying so is a usage error (2)."""

    status = 2


def add_arguments(p: argparse.ArgumentParser, platform: str) -> None:
    from basics.cli import FILE, add_output

    from .containerd import CONF_NAME, add_config_argument
    from .facts import default_paths

    p.add_argument(
        "--cni-conf",
        type=FILE,
        metavar="FILE",
        help=f"the pods' CNI config (default: what wincni install wrote, {CONF_NAME} in the runtime's "
        "conf dir: wincni dirs)",
    )
    add_config_argument(p, platform)
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


def run(
    args: argparse.Namespace,
    stdout: TextIO,
    env: Mapping[str, str],
    platform: str,
    cwd: str,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    stderr: TextIO | None = None,
) -> int:
    from plugins.cni.errors import CniError

    try:
        old = _old(args.out)
        name, ipam_of, lease = _pods_config(args.cni_conf, platform, cwd)
        network, ipam, taken = _wait(name, ipam_of, env, args.timeout, clock, sleep, stderr, lease)
        ip, released, directory = reserve(name, ipam, platform, taken)
        changed = _write(args.out, _result(ip), old)
    except SourceVipError as exc:
        return failed(args, stdout, str(exc), exc.status)
    except CniError as exc:
        return failed(args, stdout, str(exc))
    address = ip.address.split("/")[0]
    _print(
        args,
        stdout,
        {
            "networkName": name,
            "managementIP": network.management_ip,
            "sourceVip": address,
            "store": directory,
            "released": released,
            "file": args.out,
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

    from .facts import first_plugin

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
        return {**fconf.ipam, "type": "host-local", "subnet": str(lease.subnet)}  # what flannel gives the pods

    return name, from_lease, fconf.subnet_file


def _wait(
    name: str,
    ipam_of: Callable[[], Mapping[str, Any] | None],
    env: Mapping[str, str],
    timeout: float,
    clock: Callable[[], float],
    sleep: Callable[[float], None],
    stderr: TextIO | None = None,
    lease: str = "",
) -> tuple[Any, Mapping[str, Any], set[str]]:
    """Poll until the HNS network has its management IP and the pods' IPAM is known, all within
    ``timeout`` (each HNS call is given what is left, at most ``PROGRESS_S``, so a hung HNS is
    reported too); (network, IPAM, addresses HNS gives to endpoints on it). A line on ``stderr``
    at the first miss and every ``PROGRESS_S`` after says what it waits for."""
    from libhns.client import open_clients
    from libhns.deadline import Limits
    from libhns.errors import EnvError, HnsError

    start = clock()
    deadline = start + timeout
    said = start - PROGRESS_S
    missing = ""
    while True:
        now = clock()
        if missing and now >= deadline:
            raise SourceVipError(
                f"{missing} not there after {timeout:g} s: is flanneld running on this node? "
                '(its log: "Waiting for the Network to be created")'
            )
        if missing and stderr is not None and now - said >= PROGRESS_S:
            said = now
            stderr.write(f"wincni sourcevip: waiting for {missing}{_where(lease, name)}, {deadline - now:.0f} s more\n")
            stderr.flush()
        if missing:
            sleep(min(POLL_S, deadline - now))
        left = deadline - clock()
        if missing and left <= 0:
            continue  # the wait is over: say what was missing, not what a call given no time could not do
        left = max(left, 0.001)  # --timeout 0: one look
        hns_error = None
        try:
            client, _ = open_clients(env, Limits(call=min(PROGRESS_S, left), command=left))
            network = client.get_network_by_name(name)
            if network is not None and not network.is_type("Overlay"):
                raise NotNeeded(
                    f"HNS network {name!r} is {network.network_type} (host-gw): kube-proxy needs no source "
                    "VIP there; run it without --source-vip (nothing was reserved)"
                )
            endpoints = client.list_endpoints(network.id) if network else []
            taken = {ip: (ep.name or "", ep.is_remote) for ep in endpoints for ip in ep.ip_addresses}
        except EnvError as err:
            raise SourceVipError(f"cannot query HNS: {err}") from None
        except (HnsError, OSError) as err:
            network, hns_error = None, err  # HNS restarting, or hung: as good as not there yet
        ipam = ipam_of()
        if network is not None and network.management_ip and ipam is not None:
            return network, ipam, taken
        missing = (
            "flanneld's lease (subnet.env)"
            if ipam is None
            else f"an answer from HNS ({hns_error})"
            if hns_error is not None
            else f"HNS network {name!r}"
            if network is None
            else f"the management IP of HNS network {name!r}"
        )


def _where(lease: str, name: str) -> str:
    return f" (lease {lease}, network {name})" if lease else f" (network {name})"


def reserve(
    name: str, ipam: Mapping[str, Any], platform: str, taken: Mapping[str, tuple[str, bool]] | None = None
) -> tuple[Any, list[str], str]:
    """(IPConfig, addresses released as stale, store directory). Idempotent: the address
    already reserved to OWNER in the current subnet is returned again, unless HNS now gives it
    to an endpoint other than kube-proxy's own for it (``taken``: address -> the endpoint's name
    and whether it is remote; ``ownership.source_vip_endpoint``); a new one is never an address
    an endpoint holds."""
    from plugins.cni import ownership
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
            taken = taken or {}
            lost = {ip for ip, holder in taken.items() if not ownership.source_vip_endpoint(*holder)}
            stale = [ip for ip in store.owned_by(OWNER) if not v4[0].contains(ip) or str(ip) in lost]
            for ip in stale:  # from an earlier FLANNEL_SUBNET, or an address an endpoint holds
                store.release(ip)
                ownership.freed(
                    "wincni sourcevip",
                    f"its reservation of {ip} in {cfg.directory}",
                    "an endpoint holds it" if str(ip) in lost else "outside the current FLANNEL_SUBNET",
                )
            [allocation] = allocate_all(v4, _Avoiding(store, taken), OWNER)
    except OSError as exc:
        raise CniError(IO_FAILURE, f"cannot use host-local's store {cfg.directory}: {exc.strerror or exc}") from None
    return allocation.ip_config(), [str(ip) for ip in stale], cfg.directory


class _Avoiding:
    """host-local's store, refusing the addresses HNS gives to endpoints (as if reserved)."""

    def __init__(self, store: Any, taken: Mapping[str, Any]) -> None:
        self.store, self.taken = store, taken

    def reserve(self, owner: Owner, ip: Any, range_id: int) -> bool:
        return str(ip) not in self.taken and self.store.reserve(owner, ip, range_id)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)


def _result(ip: Any) -> dict:
    from plugins.cni.result import Result

    return Result(cni_version=RESULT_VERSION, ips=[ip]).to_dict(RESULT_VERSION)


def _input(flag: str, path: str, cap: int) -> Any:
    """The file ``path`` the flag names (``flagfile.read``), None when absent; SourceVipError naming
    the flag when it cannot be used."""
    from .flagfile import FlagFileError, read

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
    from .disk import Disk

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


def failed(args: argparse.Namespace, stdout: TextIO, message: str, status: int = 1) -> int:
    """Say why nothing was reserved, in the chosen format; the exit status."""
    _print(args, stdout, {"error": message})
    return status


def _print(args: argparse.Namespace, stdout: TextIO, doc: dict) -> None:
    if args.output == "json":
        json.dump(doc, stdout, indent=2)
        stdout.write("\n")
        return
    if "error" in doc:
        stdout.write(f"FAILED: {doc['error']}\n")
        return
    was = f", released {', '.join(doc['released'])} (an earlier subnet)" if doc["released"] else ""
    stdout.write(
        f"network     {doc['networkName']}, management IP {doc['managementIP']}\n"
        f"source VIP  {doc['sourceVip']} reserved in {doc['store']}{was}\n"
        f"{'wrote' if doc['written'] else 'kept':<11} {doc['file']}\n"
        f"kube-proxy  {' '.join(doc['flags'])}\n"
    )
