"""tests/data/kubeproxy/ (what the real kube-proxy left on HNS in the Windows lane) is one node's
consistent state: the doctor's kube-proxy checks test against it, so a regeneration that mixed
runs or lost a file must fail here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parents[1] / "data" / "kubeproxy"
FOLDERS = ("vxlan", "host-gw", "vxlan-dsr")


def load(folder: str, name: str) -> list | dict:
    return json.loads((DATA / folder / name).read_text())


@pytest.mark.parametrize("folder", FOLDERS)
def test_every_load_balancer_is_over_endpoints_of_the_node(folder: str) -> None:
    balancers = load(folder, "loadbalancers-v2.json")
    endpoints = load(folder, "endpoints-kube-proxy-v2.json") + load(folder, "endpoints-pods-v2.json")
    network = load(folder, "network-v2.json")["ID"]
    assert balancers and all(e["HostComputeNetwork"] == network for e in endpoints)
    known = {e["ID"] for e in endpoints}
    for lb in balancers:
        assert lb["HostComputeEndpoints"] and set(lb["HostComputeEndpoints"]) <= known, lb


@pytest.mark.parametrize("folder", FOLDERS)
def test_the_v1_policy_lists_are_the_same_load_balancers(folder: str) -> None:
    v2 = {lb["ID"]: lb for lb in load(folder, "loadbalancers-v2.json")}
    v1 = {pl["ID"]: pl for pl in load(folder, "policylists-v1.json")}
    assert set(v1) == set(v2)
    for id_, pl in v1.items():
        ids = {ref.rsplit("/", 1)[1].upper() for ref in pl["References"]}
        assert ids == set(v2[id_]["HostComputeEndpoints"]), (pl, v2[id_])


def test_remote_endpoints_never_hold_a_pods_address() -> None:
    for folder in FOLDERS:
        pods = {c["IpAddress"] for e in load(folder, "endpoints-pods-v2.json") for c in e["IpConfigurations"]}
        remote = [e for e in load(folder, "endpoints-kube-proxy-v2.json") if e["Flags"] & 1]
        assert remote and not pods & {c["IpAddress"] for e in remote for c in e["IpConfigurations"]}
        v1 = {e["ID"] for e in load(folder, "endpoints-kube-proxy-v1.json")}
        assert {e["ID"] for e in load(folder, "endpoints-kube-proxy-v2.json")} == v1
