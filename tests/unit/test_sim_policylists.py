"""HNSCall's /policylists/: the simulator's load balancers as V1 shows them, and made through V1.

Real HNS shows kube-proxy's HCN load balancers through ``Get-HnsPolicyList`` (calico#8465), so a
load balancer made through either API is the same object seen through both."""

from __future__ import annotations

import json

import pytest

from libhns import errors
from libhns.client import HcnClient, HnsCallClient
from libhns.sim import Simulator
from test_sim import V2_QUERY, create, create_ep, endpoint, overlay, v1


@pytest.fixture
def sim(tmp_path) -> Simulator:
    return Simulator(tmp_path / "hns")


def _pod(sim: Simulator, ip: str = "10.244.2.5") -> tuple[dict, dict]:
    net = create(sim, "Network", overlay())
    return net, create_ep(sim, net["ID"], endpoint("pod", ip))


def test_an_empty_node_answers_the_kernel_mode_check(sim):
    """kube-proxy's IsCompatible: ``GET /policylists/`` must succeed; nothing there is []."""
    assert v1(sim, "GET", "/policylists/") == {"Success": True, "Output": []}


def test_a_v2_load_balancer_is_a_policy_list(sim):
    net, pod = _pod(sim)
    lb = create(
        sim,
        "LoadBalancer",
        {
            "HostComputeEndpoints": [pod["ID"]],
            "SourceVIP": "10.244.2.254",
            "FrontendVIPs": ["10.96.0.10"],
            "PortMappings": [{"Protocol": 17, "InternalPort": 53, "ExternalPort": 53, "Flags": 1}],
            "Flags": 1,
            "SchemaVersion": {"Major": 2, "Minor": 0},
        },
    )
    (listed,) = v1(sim, "GET", "/policylists/")["Output"]
    assert listed == v1(sim, "GET", f"/policylists/{lb['ID'].lower()}")["Output"]
    assert listed == {
        "ID": lb["ID"],
        "HostComputeNetwork": net["ID"],
        "Policies": [
            {
                "Type": "ELB",
                "Protocol": 17,
                "InternalPort": 53,
                "ExternalPort": 53,
                "ILB": True,
                "SourceVIP": "10.244.2.254",
                "VIPs": ["10.96.0.10"],
                "IsDSR": True,
            }
        ],
        "References": [f"/endpoints/{pod['ID'].lower()}"],
        "State": 2,
    }


def test_a_policy_list_made_through_v1_is_a_load_balancer(sim):
    """hnslib's AddLoadBalancer document; HCN then enumerates, shows and deletes the same object."""
    _, pod = _pod(sim)
    elb = {"Type": "ELB", "Protocol": 6, "InternalPort": 8080, "ExternalPort": 80, "VIPs": ["10.96.0.1"]}
    out = v1(sim, "POST", "/policylists/", {"References": [f"/endpoints/{pod['ID']}"], "Policies": [elb]})
    assert out["Success"], out
    made = out["Output"]
    assert made["Policies"] == [elb] and made["State"] == 2
    hcn = HcnClient(sim)
    (lb,) = hcn.list_load_balancers()
    assert lb.id == made["ID"] and lb.frontend_vips == ["10.96.0.1"]
    assert lb.host_compute_endpoints == [pod["ID"]]
    assert lb.port_mappings == [{"Protocol": 6, "InternalPort": 8080, "ExternalPort": 80, "Flags": 0}]
    hnscall = HnsCallClient(sim)
    assert hnscall.get_policy_list(made["ID"]) == made
    assert hnscall.delete_policy_list(made["ID"]) is True
    assert hcn.list_load_balancers() == [] and hnscall.get_policy_list(made["ID"]) is None
    assert hnscall.delete_policy_list(made["ID"], missing_ok=True) is False


def test_a_v1_load_balancer_is_deleted_through_hcn(sim):
    _, pod = _pod(sim)
    elb = {"Type": "ELB", "Protocol": 6, "InternalPort": 80, "ExternalPort": 30080}
    made = v1(sim, "POST", "/policylists/", {"References": [f"/endpoints/{pod['ID']}"], "Policies": [elb]})["Output"]
    sim.hcn_delete("LoadBalancer", made["ID"])
    assert v1(sim, "GET", "/policylists/")["Output"] == []
    assert v1(sim, "GET", f"/policylists/{made['ID']}") == {
        "Success": False,
        "Error": "Element not found.",
        "ErrorCode": errors.ERROR_NOT_FOUND,
    }


@pytest.mark.parametrize(
    "body, hresult",
    [
        # a reference to an endpoint HNS does not hold
        ({"References": ["/endpoints/0b5e3c0e-0000-4000-8000-000000000001"]}, errors.HCN_E_ENDPOINT_NOT_FOUND),
        # a reference that is no /endpoints/<id>
        ({"References": ["/networks/0b5e3c0e-0000-4000-8000-000000000001"]}, errors.HCN_E_INVALID_JSON_REFERENCE),
        # a V2-shaped policy in a V1 document
        ({"Policies": [{"Type": "ELB", "Settings": {"InternalPort": 80}}]}, errors.HCN_E_INVALID_POLICY),
        # hnslib's AddRoute: a ROUTE policy list, which the simulator does not hold
        ({"Policies": [{"Type": "ROUTE", "DestinationPrefix": "10.0.0.0/8"}]}, errors.HCN_E_REQUEST_UNSUPPORTED),
        # two frontends in one policy list: one V2 load balancer cannot hold them
        (
            {
                "Policies": [
                    {"Type": "ELB", "InternalPort": 80, "ExternalPort": 80, "VIPs": ["10.96.0.1"]},
                    {"Type": "ELB", "InternalPort": 80, "ExternalPort": 80, "VIPs": ["10.96.0.2"]},
                ]
            },
            errors.HCN_E_REQUEST_UNSUPPORTED,
        ),
        ({"Policies": [{"Type": "ELB", "Protocol": "sctp", "InternalPort": 80}]}, errors.HCN_E_INVALID_POLICY),
    ],
)
def test_v1_refusals(sim, body, hresult):
    _pod(sim)
    body = {"Policies": [{"Type": "ELB", "Protocol": 6, "InternalPort": 80, "ExternalPort": 80}], **body}
    out = v1(sim, "POST", "/policylists/", body)
    assert not out["Success"] and out["ErrorCode"] == hresult, out
    assert v1(sim, "GET", "/policylists/")["Output"] == []


def test_the_v1_view_survives_its_backend(sim):
    """A load balancer over a deleted endpoint still lists (kubernetes#113524: HNS keeps it),
    referencing the gone endpoint, with no network to name."""
    _, pod = _pod(sim)
    lb = create(sim, "LoadBalancer", {"HostComputeEndpoints": [pod["ID"]], "PortMappings": [{"InternalPort": 80}]})
    sim.hcn_delete("Endpoint", pod["ID"])
    (listed,) = v1(sim, "GET", "/policylists/")["Output"]
    assert listed["References"] == [f"/endpoints/{pod['ID'].lower()}"] and "HostComputeNetwork" not in listed
    h = sim.hcn_open("LoadBalancer", lb["ID"])
    try:
        assert json.loads(sim.hcn_query("LoadBalancer", h, V2_QUERY))["HostComputeEndpoints"] == [pod["ID"]]
    finally:
        sim.hcn_close("LoadBalancer", h)
