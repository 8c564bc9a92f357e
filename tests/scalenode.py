"""A node of a big cluster, made as documents instead of by running ADDs: what kube-proxy leaves in
HNS (a remote endpoint per remote backend, a load balancer per Service port, the cluster DNS's
among them), the node's own pods (endpoints in their namespaces, host-local's reservations and
sandbox records) and flanneld's files, as a ``wincni bundle`` that ``wincni doctor --replay``
reads. Shared by the doctor's scale test (tests/unit/test_wincni_doctor_scale.py) and its
benchmark (bench/doctor_scale.py).

The HNS documents are the simulator's own answers (``libhns.sim``'s V1 and V2 views of its
stored records), so the bundle holds what ``wincni bundle`` would have recorded from that node.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

NETWORK = "cbr0"
NETWORK_ID = "0000C0B0-0000-4000-8000-000000000001"
SUBNET = "10.244.4.0/22"  # room for the test's pods at twice its size
CLUSTER_DNS = "10.96.0.10"
ROOT = "/scale"  # where the recorded node kept its files (replay never touches them)
IPAM_DIR = f"{ROOT}/ipam/{NETWORK}"
TCP, UDP = 6, 17
LOCAL, REMOTE, BALANCER, NAMESPACE = 1, 2, 3, 4  # the first group of each kind's IDs


@dataclass(frozen=True)
class Scale:
    """How big: ``pods`` on this node and ``adding`` (reservations of ADDs still in flight: no
    endpoint yet, no sandbox record, as the Go plugin makes them; together at most 1,000: one /22), ``remote`` endpoints (the
    cluster's other pods), ``balancers`` of ``backends`` each, and ``wide`` = (VIPs, port mappings)
    of one more load balancer serving every VIP on every port (none when either is 0)."""

    pods: int = 200
    adding: int = 50
    remote: int = 5000
    balancers: int = 2000
    backends: int = 10
    wide: tuple[int, int] = (0, 0)

    def __str__(self) -> str:
        wide = f" + 1 of {self.wide[0]} VIPs x {self.wide[1]} ports" if all(self.wide) else ""
        return (
            f"{self.pods} pods (+{self.adding} ADDs in flight), {self.remote} remote endpoints, {self.balancers} load balancers "
            f"x {self.backends} backends{wide}"
        )


def object_id(kind: int, n: int) -> str:
    return f"{kind:08X}-0000-4000-8000-{n:012X}"


def _v2(doc: dict) -> dict:
    return {**doc, "SchemaVersion": {"Major": 2, "Minor": 0}}


def pod_ip(n: int) -> str:
    return f"10.244.{4 + (n + 3) // 256}.{(n + 3) % 256}"  # .1 the gateway, .2 flanneld's cbr0_ep


def remote_ip(n: int) -> str:
    return f"10.244.{8 + n // 250}.{n % 250 + 2}"  # 250 pods on each other node


def balancer(n: int, backends: list[str], vips: list[str], ports: list[tuple[int, int]]) -> dict:
    mappings = [{"Protocol": proto, "InternalPort": port, "ExternalPort": port, "Flags": 0} for port, proto in ports]
    return _v2(
        {
            "ID": object_id(BALANCER, n),
            "HostComputeEndpoints": backends,
            "SourceVIP": "10.127.130.36",
            "FrontendVIPs": vips,
            "PortMappings": mappings,
            "Flags": 0,
        }
    )


def service(n: int) -> tuple[list[str], list[tuple[int, int]]]:
    """The frontend of the ``n``-th load balancer: the cluster DNS's two first, then Services of two
    ports each (one load balancer a port), every twentieth a NodePort's (no VIP)."""
    if n < 2:
        return [CLUSTER_DNS], [(53, (UDP, TCP)[n])]
    if n % 20 == 19:
        return [], [(30000 + n % 2768, TCP)]
    k = n // 2
    return [f"10.96.{1 + k // 250}.{k % 250 + 2}"], [(80 + n % 2, TCP)]


def state(scale: Scale) -> dict:
    """The simulator's store (``libhns.sim.store``) of that node."""
    if scale.pods + scale.adding > 1000:
        raise ValueError(f"{scale.pods} pods and {scale.adding} more reservations do not fit the node's /22")
    network = _v2(
        {
            "ID": NETWORK_ID,
            "Name": NETWORK,
            "Type": "L2Bridge",
            "Policies": [{"Type": "NetAdapterName", "Settings": {"NetworkAdapterName": "Ethernet"}}],
            "Ipams": [
                {
                    "Type": "Static",
                    "Subnets": [
                        {
                            "IpAddressPrefix": SUBNET,
                            "Routes": [{"NextHop": "10.244.4.1", "DestinationPrefix": "0.0.0.0/0"}],
                        }
                    ],
                }
            ],
            "Flags": 0,
        }
    )
    endpoints, namespaces = {}, {}
    for n in range(scale.pods):
        ns = object_id(NAMESPACE, n)
        ep = _endpoint(object_id(LOCAL, n), f"pod{n}_{NETWORK}", pod_ip(n), 24, 0)
        ep["doc"]["HostComputeNamespace"] = ns
        endpoints[ep["doc"]["ID"]] = ep
        resources = [{"Type": "Endpoint", "Data": {"Id": ep["doc"]["ID"]}}]
        namespaces[ns] = {"doc": _v2({"ID": ns, "NamespaceId": n + 2, "Type": "Host", "Resources": resources})}
    for n in range(scale.remote):
        ep = _endpoint(object_id(REMOTE, n), "", remote_ip(n), 32, 1)
        endpoints[ep["doc"]["ID"]] = ep
    used = [object_id(REMOTE, n) for n in range(scale.remote)] + [object_id(LOCAL, n) for n in range(scale.pods)]
    balancers = {}
    for n in range(scale.balancers):
        backends = [used[(n * scale.backends + b) % len(used)] for b in range(scale.backends)] if used else []
        balancers[object_id(BALANCER, n)] = {"doc": balancer(n, backends, *service(n))}
    vips, ports = scale.wide
    if vips and ports:
        wide = balancer(
            scale.balancers,
            used[: scale.backends],
            [f"10.97.{v // 250}.{v % 250 + 1}" for v in range(vips)],
            [(1000 + p, TCP) for p in range(ports)],
        )
        balancers[wide["ID"]] = {"doc": wide}
    return {
        "networks": {NETWORK_ID: {"doc": network, "mgmt_ip": "10.127.130.36", "mgmt_at": 0.0, "v1extra": {}}},
        "endpoints": endpoints,
        "namespaces": namespaces,
        "loadbalancers": balancers,
        "containers": {},
        "seq": {"compartment": scale.pods + 1},
    }


def _endpoint(id_: str, name: str, ip: str, prefix: int, flags: int) -> dict:
    doc = {
        "ID": id_,
        "Name": name,
        "HostComputeNetwork": NETWORK_ID,
        "IpConfigurations": [{"IpAddress": ip, "PrefixLength": prefix}],
        "Flags": flags,
    }
    return {"doc": _v2(doc), "base_state": 1, "shared": [], "host": None, "port": None, "v1extra": {}}


def documents(data: dict) -> dict[str, list]:
    """Every bundle member of HNS (its name -> documents) as the simulator answers over ``data``."""
    from libhns.sim.kinds import KINDS
    from libhns.sim.policylist import policy_list
    from libhns.sim.state import HnsState
    from tools.wincni.doctor.archive.members import V2_MEMBERS

    st = HnsState(data, KINDS)
    out = {f"hns/v2/{name}.json": [r.v2(st) for r in st.table(kind).values()] for kind, name in V2_MEMBERS.items()}
    for name, kind in (("networks", "Network"), ("endpoints", "Endpoint"), ("namespaces", "Namespace")):
        out[f"hns/v1/{name}.json"] = [r.v1(st) for r in st.table(kind).values()]
    out["hns/v1/policylists.json"] = [policy_list(r.doc, NETWORK_ID) for r in st.table("LoadBalancer").values()]
    return out


def bundle(scale: Scale, path: Path) -> Path:
    """``wincni bundle``'s archive of the node at ``scale``, written to ``path``."""
    from tools.wincni.doctor.archive.members import archive

    path.write_bytes(archive(*recorded(scale)))
    return path


def replayed(scale: Scale) -> Any:
    """The doctor's facts of the node at ``scale``, as ``wincni doctor --replay`` gathers them from
    its bundle (without packing and unpacking the archive)."""
    from tools.wincni.doctor.archive.replay import gather

    return gather(recorded_node(scale))


def recorded_node(scale: Scale) -> Any:
    """The bundle of the node at ``scale`` as replay holds it (``RecordedNode``): its JSON members
    parsed under replay's caps and checked against their shapes, as ``replay.load`` does."""
    from tools.wincni.doctor.archive.replay import RecordedNode, checked

    manifest, members = recorded(scale)
    data = dict(members.data)
    return RecordedNode(str(scale), manifest, data, checked(data))


def recorded(scale: Scale) -> tuple[dict, Any]:
    """The bundle's manifest and members (``archive.members.Members``) of the node at ``scale``."""
    from tools.wincni.doctor.archive.members import (
        FORMAT,
        HCS_MEMBER,
        SANDBOX_MEMBER,
        STORE_MEMBER,
        VERSION_MEMBER,
        Members,
    )

    conf = {
        "cniVersion": "1.0.0",
        "name": NETWORK,
        "type": "flannel",
        "delegate": {"type": "win-bridge", "dns": {"nameservers": [CLUSTER_DNS]}},
        "subnetFile": f"{ROOT}/subnet.env",
        "netConf": f"{ROOT}/net-conf.json",
        "ipam": {"dataDir": f"{ROOT}/ipam"},
    }
    files = {
        f"{ROOT}/net.d/10-flannel.conf": ("--cni-conf", json.dumps(conf)),
        f"{ROOT}/net-conf.json": (
            "--net-conf",
            json.dumps({"Network": "10.244.0.0/16", "Backend": {"name": NETWORK, "type": "host-gw"}}),
        ),
        f"{ROOT}/subnet.env": (
            "--subnet-env",
            "FLANNEL_NETWORK=10.244.0.0/16\nFLANNEL_SUBNET=10.244.4.1/22\nFLANNEL_MTU=1450\nFLANNEL_IPMASQ=true\n",
        ),
    }
    members = Members()
    entries = {}
    for n, (where, (flag, text)) in enumerate(files.items()):
        members.add(f"files/{n}", text.encode())
        entries[where] = {"flag": flag, "member": f"files/{n}", "owner": ""}
    entries[f"{ROOT}/SourceVip.json"] = {"flag": "--source-vip", "absent": True}
    for name, docs in documents(state(scale)).items():
        members.json(name, docs)
    members.json(VERSION_MEMBER, {"Major": 13, "Minor": 2})
    members.json(HCS_MEMBER, [])
    pods = range(scale.pods)
    reservations = [{"ip": pod_ip(n), "container": f"pod{n}", "ageSeconds": 3600.0} for n in pods]
    reservations += [
        {"ip": pod_ip(scale.pods + n), "container": f"adding{n}", "ageSeconds": 1.0} for n in range(scale.adding)
    ]
    members.json(STORE_MEMBER, {"dir": IPAM_DIR, "reservations": reservations, "problem": None})
    records = [
        {"ip": pod_ip(n), "container": f"pod{n}", "ifname": "eth0", "netns": object_id(NAMESPACE, n)} for n in pods
    ]
    members.json(SANDBOX_MEMBER, {"dir": IPAM_DIR, "records": records})
    manifest = {
        "format": FORMAT,
        "platform": "linux",
        "cwd": ROOT,
        "doctor": {
            "cni_conf": f"{ROOT}/net.d",
            "subnet_env": f"{ROOT}/subnet.env",
            "subnet_env_given": False,
            "net_conf": f"{ROOT}/net-conf.json",
            "net_conf_given": False,
            "source_vip": f"{ROOT}/SourceVip.json",
            "cni_bin_dir": f"{ROOT}/bin",
            "reach": "",
            "quick": False,
            "containerd_version": 0,
            "checked": [],
        },
        "configs": {f"{ROOT}/net.d": ["10-flannel.conf"]},
        "exists": {f"{ROOT}/net.d": True},
        "files": entries,
        "omitted": members.omitted,
    }
    return manifest, members
