"""win-bridge as the kubelet runs it, on a simulated flannel host-gw node (cbr0 + cbr0_ep at .2).

What both plugins share (lifecycle, rollback, CHECK, GC, STATUS, parallel pods, result versions)
is in test_winnet_lifecycle.py; here is what is win-bridge's own: the documents its config
features produce on each API, dockershim's shared endpoint, dual-stack, the node fixtures.
"""

from __future__ import annotations

import pytest

from hnsnode import Node, creates, first_ip, fixture_policies

DSR_IP = "10.127.130.36"
# One config exercising every feature: user policies in both schemas (and a non-EndpointPolicy
# entry that must be ignored), sdnbridge AdditionalArgs, ipMasqNetwork, loopbackDSR, config DNS
# with Go-style capitalised keys, runtime DNS and port mappings.
RICH = dict(
    ipMasqNetwork="10.244.0.0/16",
    loopbackDSR=True,
    dns={
        "Nameservers": ["10.96.0.10"],
        "Search": ["svc.cluster.local"],
        "domain": "cluster.local",
        "options": ["ndots:5"],
    },
    policies=[
        {"name": "EndpointPolicy", "value": {"Type": "OutBoundNAT", "ExceptionList": ["10.96.0.0/12"]}},
        {
            "Name": "EndpointPolicy",
            "Value": {"Type": "SDNRoute", "Settings": {"DestinationPrefix": "10.96.0.0/12", "NeedEncap": True}},
        },
        {"name": "NetworkPolicy", "value": {"Type": "Ignored"}},
    ],
    AdditionalArgs=[
        {"Name": "EndpointPolicy", "Value": {"Type": "OutBoundNAT", "Settings": {"Exceptions": ["192.168.1.0/24"]}}}
    ],
    capabilities={"portMappings": True, "dns": True},
    runtimeConfig={
        "portMappings": [
            {"hostPort": 8080, "containerPort": 80, "protocol": "tcp"},
            {"hostPort": 5353, "containerPort": 53, "protocol": "UDP", "hostIP": DSR_IP},
            {"hostPort": 9000, "containerPort": 9000, "protocol": "6"},
        ],
        "dns": {"servers": ["10.96.0.11"], "searches": ["ns.svc.cluster.local"], "options": ["ndots:2"]},
    },
)


def expected_policies(api: str, ip: str) -> list[dict]:
    """User policies first (translated to the API), then ipMasqNetwork's exception, port mappings, DSR."""
    if api == "v2":
        nat = lambda cidr: {"Type": "OutBoundNAT", "Settings": {"Exceptions": [cidr]}}  # noqa: E731 - one row of the table below

        def pm(i, e, p, vip):
            return {
                "Type": "PortMapping",
                "Settings": {"InternalPort": i, "ExternalPort": e, "Protocol": p, "VIP": vip},
            }

        return [
            nat("10.96.0.0/12"),
            {"Type": "SDNRoute", "Settings": {"DestinationPrefix": "10.96.0.0/12", "NeedEncap": True}},
            nat("192.168.1.0/24"),
            nat("10.244.0.0/16"),
            pm(80, 8080, 6, ""),
            pm(53, 5353, 17, DSR_IP),
            pm(9000, 9000, 6, ""),
            {"Type": "OutBoundNAT", "Settings": {"Destinations": [ip]}},
        ]
    nat = lambda cidr: {"Type": "OutBoundNAT", "ExceptionList": [cidr]}  # noqa: E731 - one row of the table below
    pm = lambda i, e, p: {"Type": "NAT", "InternalPort": i, "ExternalPort": e, "Protocol": p}  # noqa: E731 - one row of the table below
    return [
        nat("10.96.0.0/12"),
        {"Type": "ROUTE", "DestinationPrefix": "10.96.0.0/12", "NeedEncap": True},
        nat("192.168.1.0/24"),
        nat("10.244.0.0/16"),
        pm(80, 8080, "tcp"),
        pm(53, 5353, "UDP"),
        pm(9000, 9000, "6"),
        {"Type": "OutBoundNAT", "Destinations": [ip]},
    ]


@pytest.mark.parametrize("api", ["v1", "v2"])
def test_config_features_make_the_reference_documents(node, api):
    netns = node.sandbox(api, "pod1")
    conf = node.conf(**RICH)
    result = node.add(conf, "pod1", netns)
    [doc] = creates(node.journal())
    ip = result["ips"][0]["address"].split("/")[0]
    assert doc["Policies"] == expected_policies(api, ip)
    if api == "v2":
        assert doc["IpConfigurations"] == [{"IpAddress": ip}]
        assert doc["Routes"] == [{"NextHop": "10.244.4.2", "DestinationPrefix": "0.0.0.0/0"}]
        assert doc["Dns"] == {
            "Domain": "cluster.local",
            "Search": ["ns.svc.cluster.local"],
            "ServerList": ["10.96.0.11"],
            "Options": ["ndots:2"],
        }
    else:  # V1 carries servers and suffixes only, as comma strings
        assert (doc["IPAddress"], doc["GatewayAddress"]) == (ip, "10.244.4.2")
        assert (doc["DNSServerList"], doc["DNSSuffix"]) == ("10.96.0.11", "ns.svc.cluster.local")
    # The result says what the endpoint holds: HCN applies all four, HNSCall servers and suffixes.
    applied = {"nameservers": ["10.96.0.11"], "search": ["ns.svc.cluster.local"]}
    if api == "v2":
        applied.update(domain="cluster.local", options=["ndots:2"])
    assert result["dns"] == applied
    # A retry answers the same, and CHECK finds every policy the config asks for.
    assert node.add(conf, "pod1", netns) == result
    assert node.run("CHECK", {**conf, "prevResult": result}, "pod1", netns).ok


def test_loopback_dsr_is_skipped_with_a_warning_where_hns_has_no_dsr(node):
    old_hns = {"LIBHNS_SIM_VERSION": "9.1"}  # a node without DSR (and without HCN: dockershim)
    run = node.run("ADD", node.conf(loopbackDSR=True), "pod1", node.sandbox("v1", "pod1"), **old_hns)
    assert run.ok, run.out
    assert "loopbackDSR" in run.stderr and "warning" in run.stderr
    [doc] = creates(node.journal())
    assert "Policies" not in doc
    assert node.run("CHECK", node.conf(loopbackDSR=True, prevResult=run.out), "pod1", "none", **old_hns).ok


def test_dockershim_pause_and_app_containers_share_one_endpoint(node):
    conf = node.conf()
    pause = node.add(conf, "pause", node.sandbox("v1", "pause"))
    node.hnsctl("container", "create", "app")
    node.ipam_calls()
    app = node.add(conf, "app", "container:pause")
    assert node.ipam_calls() == [], "the app container must not get an address of its own"
    assert app["ips"] == pause["ips"] and app["interfaces"][0]["name"] == "pause_cbr0"
    ep = node.endpoints()["pause_cbr0"]
    assert sorted(ep["SharedContainers"]) == ["app", "pause"]
    assert not [n for n in node.endpoints() if n.startswith("app")]
    # DEL of the app container: detached, the endpoint and the address stay.
    assert node.run("DEL", conf, "app", "container:pause").ok
    assert node.endpoints()["pause_cbr0"]["SharedContainers"] == ["pause"]
    assert list(node.ip_files().values()) == ["pause"]
    # DEL of the pause container: everything goes.
    assert node.run("DEL", conf, "pause", "none").ok
    node.assert_clean("pause")
    # An app container whose pause container has no endpoint: retryable, nothing created.
    node.run("ADD", conf, "app", "container:pause").failed(11, "pause_cbr0")


def test_dual_stack_on_hns_with_dual_stack_support(tmp_path):
    node = Node(tmp_path).bridge(ipv6_subnet="fd00:10:244:4::/64")
    conf = node.conf(
        ipam={
            "type": "host-local",
            "dataDir": str(node.ipam_dir),
            "ranges": [[{"subnet": "10.244.4.0/24"}], [{"subnet": "fd00:10:244:4::/64"}]],
        }
    )
    result = node.add(conf, "pod1", node.sandbox("v2", "pod1"))
    [doc] = creates(node.journal())
    v4, v6 = (a["address"].split("/")[0] for a in result["ips"])
    assert doc["IpConfigurations"] == [{"IpAddress": v4}, {"IpAddress": v6}]
    assert doc["Routes"] == [
        {"NextHop": "10.244.4.2", "DestinationPrefix": "0.0.0.0/0"},
        {"NextHop": "fd00:10:244:4::2", "DestinationPrefix": "::/0"},
    ]
    assert result["routes"] == [{"dst": "0.0.0.0/0", "gw": "10.244.4.2"}, {"dst": "::/0", "gw": "fd00:10:244:4::2"}]
    assert node.run("CHECK", {**conf, "prevResult": result}, "pod1", result["interfaces"][0]["sandbox"]).ok


def test_dual_stack_without_hns_support_is_a_clear_error_and_leaks_nothing(tmp_path):
    node = Node(tmp_path, version="11.9").bridge(ipv6_subnet="fd00:10:244:4::/64")
    conf = node.conf(
        ipam={
            "type": "host-local",
            "dataDir": str(node.ipam_dir),
            "ranges": [[{"subnet": "10.244.4.0/24"}], [{"subnet": "fd00:10:244:4::/64"}]],
        }
    )
    node.run("ADD", conf, "pod1", node.sandbox("v2", "pod1")).failed(7, "dual-stack", "IPv6")
    assert node.ipam_calls() == ["ADD pod1", "DEL pod1"]
    node.assert_clean("pod1")


@pytest.mark.parametrize(
    "fixture,api",
    [("cni.conf.l2bridge-v1.json", "v1"), ("cni.conf.l2bridge-v1.json", "v2"), ("cni.conf.l2bridge-v2.json", "v2")],
)
def test_node_fixtures_work_unchanged(node, fixture, api):
    """The operators' configs, with only what flannel adds (name, ipam); policies fitted to the API."""
    doc, result = node.fixture_lifecycle(fixture, api)
    assert doc["Policies"][:3] == fixture_policies(f"cni.conf.l2bridge-{api}.json")
    assert first_ip(result)[1] == "10.244.4.2"


def test_the_v2_fixture_on_dockershim_needs_apiversion_1(node):
    conf = node.fixture("cni.conf.l2bridge-v2.json")
    node.run("ADD", conf, "pod1", node.sandbox("v1", "pod1")).failed(4, "CNI_NETNS")
    assert first_ip(node.add({**conf, "apiVersion": 1}, "pod1", "none"))[1] == "10.244.4.2"


BAD = [  # (config change, field the error must name)
    (dict(apiVersion=3), "apiVersion"),
    (dict(policies={}), "policies"),
    (dict(policies=[{"name": "EndpointPolicy"}]), "policies[0]"),
    (dict(policies=[{"name": "EndpointPolicy", "value": {"Type": "Bogus", "Settings": {}}}]), "policies[0].value"),
    (dict(policies=[{"name": "EndpointPolicy", "value": {"Type": "ELB"}}]), "policies[0].value"),
    (dict(AdditionalArgs=[{"Name": "EndpointPolicy", "Value": "x"}]), "AdditionalArgs[0].value"),
    (dict(loopbackDSR="yes"), "loopbackDSR"),
    (dict(ipMasqNetwork="10.244.0.0"), "ipMasqNetwork"),
    (dict(dns={"nameservers": ["not-an-ip"]}), "dns.nameservers[0]"),
    (dict(runtimeConfig={"dns": {"servers": ["x"]}}), "runtimeConfig.dns.servers[0]"),
    (dict(runtimeConfig={"portMappings": [{"hostPort": 70000, "containerPort": 80}]}), "portMappings[0].hostPort"),
    (dict(runtimeConfig={"portMappings": [{"containerPort": 80}]}), "hostPort"),
    (
        dict(runtimeConfig={"portMappings": [{"hostPort": 80, "containerPort": 80, "protocol": "sctp"}]}),
        "portMappings[0].protocol",
    ),
    (dict(name=""), "name"),
]


def test_bad_input_table(node):
    """Each bad config is code 7 naming the field, before IPAM or HNS is asked for anything."""
    node.assert_bad_inputs(BAD)
    node.run("ADD", b"{not json", "bad", "none").failed(6)


@pytest.mark.parametrize("api", ["v1", "v2"])
def test_without_ipam_hns_chooses_the_address_and_the_result_says_which(node, api):
    """Found by the fuzz test: on HCN the result of an IPAM-less ADD crashed reading V1 fields."""
    netns = node.sandbox(api, "pod1")
    result = node.add(node.conf(ipam={}), "pod1", netns)
    [ip] = [i["address"].split("/")[0] for i in result["ips"]]
    assert node.endpoints()["pod1_cbr0"]["IPAddress"] == ip
    assert node.run("DEL", node.conf(ipam={}), "pod1", netns).ok
    node.assert_clean("pod1")


def test_empty_ip_masq_network_adds_no_exception(node):
    """ "ipMasqNetwork": "" is absent, as in Go: the pod starts and no OutBoundNAT exception is added for it."""
    conf = node.conf(ipMasqNetwork="")
    result = node.add(conf, "pod1", node.sandbox("v1", "pod1"))
    [doc] = creates(node.journal())
    assert not [p for p in doc.get("Policies") or () if p.get("Type") == "OutBoundNAT"], doc
    assert node.run("DEL", conf, "pod1", "none").ok
    assert result["ips"]
