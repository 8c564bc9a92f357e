"""Setting an existing endpoint's ACLs, on both APIs: HNS replaces the endpoint's ACL list and
keeps every other policy (OutBoundNAT, routes, ...), one HNS change per apply, and what one API
set the other shows."""

from __future__ import annotations

import json

import pytest

from libhns.policies import policy_type
from plugins.winnet.acls import AclRule
from plugins.winnet.hnsapi import open_api
from plugins.winnet.policies import V1, V2

NETNS = "8C5E9A5B-1E5F-4C3E-9D4C-5F1E2A3B4C5D"
NAT = {"Type": "OutBoundNAT", "Settings": {"Exceptions": ["10.244.0.0/16"]}}
OLD = AclRule("Allow", "In", 6, local_ports="80", priority=1000, rule_type="Switch")
NEW = [
    AclRule("Allow", "In", 6, local_ports="443", priority=3000, rule_type="Switch"),
    AclRule("Block", "In", priority=4000, rule_type="Switch"),
]


def _l2bridge() -> dict:
    subnet = {
        "IpAddressPrefix": "10.244.1.0/24",
        "Routes": [{"NextHop": "10.244.1.1", "DestinationPrefix": "0.0.0.0/0"}],
    }
    return {"Name": "cbr0", "Type": "L2Bridge", "Ipams": [{"Type": "Static", "Subnets": [subnet]}]}


@pytest.fixture
def node(tmp_path):
    """(env, endpoint ID) of a node with one pod endpoint holding OutBoundNAT and one ACL."""
    env = {"LIBHNS_BACKEND": "sim", "LIBHNS_SIM_DIR": str(tmp_path / "hns"), "LIBHNS_JOURNAL": str(tmp_path / "j")}
    hcn = open_api(2, env, None, "pod1", NETNS).hcn
    net = hcn.create_network(_l2bridge())
    ep = hcn.create_endpoint(net.id, {"Name": "pod1_cbr0", "Policies": [NAT, OLD.render(V2)]})
    (tmp_path / "j").write_text("")
    return env, ep.id


def _adapter(env, version):
    return open_api(version, env, None, "pod1", NETNS if version == 2 else "none")


def _changes(env) -> list[dict]:
    """The journal's calls that change HNS (not open/query/close/GET)."""
    calls = [json.loads(line) for line in open(env["LIBHNS_JOURNAL"])]
    return [c for c in calls if c["op"].startswith("HcnModify") or c.get("method") == "POST"]


def _policies(env, ep_id, version):
    api = _adapter(env, version)
    return (api.hcn.get_endpoint(ep_id) if version == 2 else api.hnscall.get_endpoint(ep_id)).policies


@pytest.mark.parametrize("version", [2, 1])
def test_set_acls_replaces_the_acl_list_and_keeps_the_other_policies(node, version):
    env, ep_id = node
    api = _adapter(env, version)
    ep = api.hcn.get_endpoint(ep_id) if version == 2 else api.hnscall.get_endpoint(ep_id)
    api.set_acls(ep, [r.render(api.policy_form) for r in NEW])
    assert len(_changes(env)) == 1
    held = _policies(env, ep_id, 2)
    assert [p for p in held if policy_type(p) != "ACL"] == [NAT]
    assert [p for p in held if policy_type(p) == "ACL"] == [r.render(V2) for r in NEW]
    assert [p for p in _policies(env, ep_id, 1) if policy_type(p) == "ACL"] == [r.render(V1) for r in NEW]


@pytest.mark.parametrize("version", [2, 1])
def test_an_empty_acl_list_clears_the_acls_only(node, version):
    env, ep_id = node
    api = _adapter(env, version)
    ep = api.hcn.get_endpoint(ep_id) if version == 2 else api.hnscall.get_endpoint(ep_id)
    api.set_acls(ep, [])
    assert _policies(env, ep_id, 2) == [NAT] and len(_changes(env)) == 1


def test_hcn_clears_nothing_with_no_call_when_the_endpoint_holds_no_acls(node):
    env, ep_id = node
    api = _adapter(env, 2)
    api.set_acls(api.hcn.get_endpoint(ep_id), [])
    api.set_acls(api.hcn.get_endpoint(ep_id), [])
    assert len(_changes(env)) == 1


def test_hcn_sends_one_update_of_the_other_policies_then_the_acls(node):
    """hcsshim's ModifyEndpointSettingRequest: ResourceType Policy, a PolicyEndpointRequest; the
    other policies first, as Azure NPM sends them."""
    env, ep_id = node
    api = _adapter(env, 2)
    api.set_acls(api.hcn.get_endpoint(ep_id), [NEW[1].render(V2)])
    (call,) = _changes(env)
    assert call["op"] == "HcnModifyEndpoint"
    assert call["request"] == {
        "ResourceType": "Policy",
        "RequestType": "Update",
        "Settings": {"Policies": [NAT, NEW[1].render(V2)]},
    }


def test_a_v1_update_of_another_type_replaces_that_type_and_keeps_the_acls(node):
    env, ep_id = node
    hnscall = _adapter(env, 1).hnscall
    nat = {"Type": "OutBoundNAT", "ExceptionList": ["10.0.0.0/8"]}
    hnscall.update_endpoint(ep_id, {"Policies": [nat, OLD.render(V1)]})
    held = _policies(env, ep_id, 1)
    assert [p for p in held if policy_type(p) == "OutBoundNAT"] == [nat]
    assert [p for p in held if policy_type(p) == "ACL"] == [OLD.render(V1)]


def test_hcn_update_of_an_unknown_endpoint_is_not_found(node):
    from libhns import errors

    env, _ = node
    with pytest.raises(errors.NotFound):
        _adapter(env, 2).hcn.modify_endpoint("6D5E9A5B-1E5F-4C3E-9D4C-5F1E2A3B4C5D", {"ResourceType": "Policy"})


def _hnsctl(env, *argv):
    import io

    from tools.hnsctl import main

    out, err = io.StringIO(), io.StringIO()
    return main(list(argv), out, err, env), out.getvalue(), err.getvalue()


@pytest.mark.parametrize("v1", [[], ["--v1"]], ids=["hcn", "hnscall"])
def test_hnsctl_sets_an_endpoints_acls_from_a_file_in_either_form(node, tmp_path, v1):
    env, ep_id = node
    path = tmp_path / "acls.json"
    path.write_text(json.dumps([NEW[0].render(V1), NEW[1].render(V2)]))
    code, out, err = _hnsctl(env, "endpoint", "acls", ep_id, str(path), *v1, "-o", "json")
    assert code == 0, err
    assert len(_changes(env)) == 1
    held = _policies(env, ep_id, 2)
    assert held[0] == NAT and [p for p in held if policy_type(p) == "ACL"] == [r.render(V2) for r in NEW]


@pytest.mark.parametrize("content", ["{}", '[{"Type": "OutBoundNAT"}]', "not json"])
def test_hnsctl_refuses_a_file_that_is_not_a_list_of_acls(node, tmp_path, content):
    env, ep_id = node
    path = tmp_path / "acls.json"
    path.write_text(content)
    code, _, err = _hnsctl(env, "endpoint", "acls", ep_id, str(path))
    assert code == 2 and "JSON list of ACL policies" in err and "Traceback" not in err
    assert _changes(env) == []
