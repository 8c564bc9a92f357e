"""Our side of the judgement: a cluster's NetworkPolicy as the ACLs one node's endpoints would hold
(the model, translated), the simulator's ACL walk deciding single packets over them, and both held
to an oracle's table."""

from __future__ import annotations

from libhns import policies as hp
from libhns.objects import REMOTE_ENDPOINT_FLAG
from libhns.sim import aclwalk, validate
from plugins.netpol import model, resources, translate
from plugins.winnet.policies import V1, V2

#: The address each node holds itself (outside the oracles' pod addresses).
NODE_ADDRESSES = {f"node-{n}": [f"10.127.130.{n + 1}"] for n in range(3)}
PROTOCOLS = {"TCP": 6, "UDP": 17}


def read(cluster: dict) -> resources.Cluster:
    return resources.read(cluster["namespaces"], cluster["pods"], cluster["policies"])


def node_endpoints(c: resources.Cluster, node: str, v1: bool) -> list[tuple[str, list[str], dict]]:
    """``(ID, addresses, document)`` of the node's endpoints, their ACLs as the simulator stores
    them: sent in V1 form (as HNSCall takes them) or V2, and checked as the simulator checks them."""
    endpoints = []
    for access in model.node_access(c, node):
        docs = translate.endpoint_acls(access, NODE_ADDRESSES[node], V1 if v1 else V2)
        if v1:
            docs = [hp.to_v2(p) for p in validate.check_v1_policies(docs, "endpoint")]
        validate.check_v2_policies(docs, hp.KNOWN_V2_ENDPOINT_TYPES, "endpoint")
        endpoints.append((f"ep-{access.pod.key}", [str(access.pod.ip)], {"Policies": docs}))
    return endpoints


def walked(endpoints: list, src_ip: str, dst_ip: str, port: int, protocol: str) -> bool:
    """Whether the node passes a packet opening a flow (no flow remembered before it)."""
    steps, _ = aclwalk.walk(endpoints, [], (src_ip, 40000), (dst_ip, port), PROTOCOLS[protocol], 0)
    return aclwalk.verdict(steps)[0]


def held(listed: list[dict]) -> list[tuple[str, list[str], dict]]:
    """``(ID, addresses, document)`` of this node's own endpoints as HNS lists them (V2
    documents, ``hnsctl endpoint list``): what the walk takes, as the simulator's probe does."""
    own = [d for d in listed if not int(d.get("Flags") or 0) & REMOTE_ENDPOINT_FLAG]
    return [(d["ID"], [c["IpAddress"] for c in d.get("IpConfigurations") or ()], d) for d in own]


def probed(step) -> list[dict]:
    """The step's rows with a port to reach."""
    return [p for p in step.probes if p["port"] is not None]


def misjudged(step, v1: bool) -> list[tuple]:
    """The probes of one step where we differ from the step's table: the model's two directions,
    and on each node the walk of the packets one of whose ends is there. A pod reaching itself is
    loopback, allowed whatever the table says (the table answers as if it were subject)."""
    c = read(step.cluster)
    ips = step.addresses
    wrong = []
    for row in probed(step):
        src, dst = ips[row["from"]], ips[row["to"]]
        loopback = src == dst
        want = (True, True) if loopback else (row["ingress"], row["egress"])
        got = model.allows(c, src, dst, row["port"], row["protocol"])
        if got != want:
            wrong.append(("model", row, got))
    for node in NODE_ADDRESSES:
        wrong += misjudged_on_node(step, node_endpoints(c, node, v1), node)
    return wrong


def misjudged_on_node(step, endpoints: list, where: str) -> list[tuple]:
    """``(where, row, verdict)`` of the step's probes one of whose ends is one of ``endpoints``
    (a node's) where the walk of their ACLs differs from the table: a remote end's own policy is
    its node's to enforce, a pod reaching itself is loopback."""
    ips = step.addresses
    local = {ip for _, addresses, _ in endpoints for ip in addresses}
    wrong = []
    for row in probed(step):
        src, dst = ips[row["from"]], ips[row["to"]]
        if src not in local and dst not in local:
            continue
        want = src == dst or ((row["ingress"] or dst not in local) and (row["egress"] or src not in local))
        got = walked(endpoints, src, dst, row["port"], row["protocol"])
        if got != want:
            wrong.append((where, row, got))
    return wrong
