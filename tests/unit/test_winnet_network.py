"""plugins.winnet.network: the standalone ``network`` section → the HNS network document, the
mismatch rule, and find-or-create with its management-IP wait (a fake API and a fake clock)."""

from __future__ import annotations

import contextlib
import os

import pytest
from hypothesis import given
from hypothesis import strategies as st

from libhns.errors import HnsError
from libhns.networks import v1_network_document
from libhns.objects import HNSEndpoint, HNSNetwork, HostComputeNetwork
from plugins.cni.config import validate
from plugins.cni.errors import CniError
from plugins.win_bridge.flavor import FLAVOR as BRIDGE
from plugins.win_overlay.flavor import FLAVOR as OVERLAY
from plugins.winnet import network as nw
from plugins.winnet.lifecycle import lock_dir

ALL = {"dual_stack": True, "vxlan_port": True, "host_route": True}.__getitem__
NONE = {"dual_stack": False, "vxlan_port": False, "host_route": False}.__getitem__


def wanted(section: dict, flavor=BRIDGE, name: str = "cbr0") -> nw.WantedNetwork:
    validate({"name": name, "network": section}, flavor.schema())
    return nw.wanted_network(section, name, flavor.network_types[0], flavor.ipv6)


def bad(section: dict, flavor=BRIDGE) -> CniError:
    with pytest.raises(CniError) as err:
        wanted(section, flavor)
    assert err.value.code == 7
    return err.value


# --------------------------------------------------------------------------- documents (pure)


def test_l2bridge_document_is_a_static_subnet_with_its_default_route_non_persistent():
    doc = nw.document(wanted({"subnet": "10.244.4.0/24", "adapter": "Ethernet"}), NONE)
    assert doc == {
        "Name": "cbr0",
        "Type": "L2Bridge",
        "Policies": [{"Type": "NetAdapterName", "Settings": {"NetworkAdapterName": "Ethernet"}}],
        "Ipams": [
            {
                "Type": "Static",
                "Subnets": [
                    {
                        "IpAddressPrefix": "10.244.4.0/24",
                        "Routes": [{"NextHop": "10.244.4.1", "DestinationPrefix": "0.0.0.0/0"}],
                    }
                ],
            }
        ],
        "Flags": 8,
    }


def test_overlay_document_has_the_vsid_and_the_vxlan_port_when_hns_knows_it():
    s = wanted(
        {"subnet": "10.244.4.0/24", "gateway": "10.244.4.1", "adapter": "Ethernet", "drMac": "00:15:5d:01:02:03"},
        OVERLAY,
        "vxlan0",
    )
    doc = nw.document(s, ALL)
    assert doc["Type"] == "Overlay" and doc["Flags"] == 8
    assert doc["Policies"] == [
        {"Type": "NetAdapterName", "Settings": {"NetworkAdapterName": "Ethernet"}},
        {"Type": "DrMacAddress", "Settings": {"Address": "00-15-5D-01-02-03"}},
        {"Type": "VxlanPort", "Settings": {"Port": 4789}},
    ]
    [subnet] = doc["Ipams"][0]["Subnets"]
    assert subnet["Policies"] == [{"Type": "VSID", "Settings": {"IsolationId": 4096}}]
    # HNS before 10.3 has no VxlanPort policy and always uses 4789: none is sent.
    assert [p["Type"] for p in nw.document(s, NONE)["Policies"]] == ["NetAdapterName", "DrMacAddress"]


@pytest.mark.parametrize("adapter", ["v1", "v2"])
def test_hnscall_networks_lack_the_hcn_network_policies_without_asking_hns(tmp_path, adapter):
    """HNSCall has no VxlanPort (it uses 4789 anyway) nor HostRoute, whatever HNS's version: the
    V1 adapter says so without the version call, the V2 adapter asks HNS."""
    from plugins.winnet.lifecycle import _Features

    hcn, hnscall = clients(tmp_path)
    api = adapters(hcn, hnscall)[adapter]
    s = wanted({"subnet": "10.244.4.0/24"}, OVERLAY, "vxlan0")
    features = _Features(api)
    types = [p["Type"] for p in nw.document(s, features.get)["Policies"]]
    assert ("VxlanPort" in types) == (adapter == "v2")
    assert features.get("host_route") == (adapter == "v2")
    assert hcn.raw.calls == (["HNSCall"] if adapter == "v2" else [])  # GET /globals/version
    assert features.get("dsr")  # a feature both APIs have is HNS's to tell


def test_v1_form_of_the_overlay_document():
    s = wanted({"subnet": "10.244.4.0/24", "adapter": "Ethernet", "vni": 5000, "persistent": True}, OVERLAY, "vxlan0")
    assert v1_network_document(nw.document(s, NONE)) == {
        "Name": "vxlan0",
        "Type": "overlay",
        "Policies": [],
        "NetworkAdapterName": "Ethernet",
        "Subnets": [
            {
                "AddressPrefix": "10.244.4.0/24",
                "GatewayAddress": "10.244.4.1",
                "Policies": [{"Type": "VSID", "VSID": 5000}],
            }
        ],
    }


def test_dual_stack_bridge_document_and_its_gateways():
    s = wanted(
        {"subnet": ["10.244.4.0/24", "fd00:4::/64"], "gateway": ["fd00:4::fe", "10.244.4.1"], "persistent": True}
    )
    doc = nw.document(s, ALL)
    assert "Flags" not in doc
    assert [(x["IpAddressPrefix"], x["Routes"]) for x in doc["Ipams"][0]["Subnets"]] == [
        ("10.244.4.0/24", [{"NextHop": "10.244.4.1", "DestinationPrefix": "0.0.0.0/0"}]),
        ("fd00:4::/64", [{"NextHop": "fd00:4::fe", "DestinationPrefix": "::/0"}]),
    ]
    with pytest.raises(CniError) as err:
        nw.document(s, NONE)
    assert err.value.code == 7 and "network.subnet" in err.value.msg and "11.10" in err.value.details


@given(st.integers(0, 255), st.integers(16, 30), st.integers(4096, (1 << 24) - 1))
def test_any_valid_overlay_section_round_trips_through_hns(octet, prefix, vni):
    """What we send, read back as HNS answers it, never mismatches its own section."""
    subnet = f"10.{octet}.0.0/{prefix}"
    s = wanted({"subnet": subnet, "vni": vni}, OVERLAY, "vxlan0")
    doc = nw.document(s, ALL)
    assert nw.mismatch(s, HostComputeNetwork.from_json(doc)) is None
    v1 = v1_network_document(doc)
    assert nw.mismatch(s, HNSNetwork.from_json({**v1, "Type": "overlay"})) is None


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "section,flavor,field,words",
    [
        ({"subnet": "10.244.4.0/24", "vni": 4095}, OVERLAY, "network.vni", ("4096", "Linux flannel", "4789")),
        ({"subnet": "10.244.4.0/24", "vni": 1}, OVERLAY, "network.vni", ("4096",)),
        ({"subnet": "10.244.4.0/24", "vni": 1 << 24}, OVERLAY, "network.vni", ("16777215",)),
        ({"subnet": "10.244.4.0/24", "vxlanPort": 8472}, OVERLAY, "network.vxlanPort", ("4789", "Linux flannel")),
        ({"subnet": "10.244.4.0/24", "vni": 4096}, BRIDGE, "network.vni", ("Overlay", "win-overlay")),
        ({"subnet": "10.244.4.0/24", "drMac": "00-15-5D-00-00-01"}, BRIDGE, "network.drMac", ("Overlay",)),
        ({"subnet": ["10.244.4.0/24", "10.244.5.0/24"]}, BRIDGE, "network.subnet", ("same IP family",)),
        ({"subnet": ["10.244.4.0/24", "fd00::/64"]}, OVERLAY, "network.subnet", ("IPv6",)),
        ({"subnet": "10.244.4.0/24", "gateway": "10.244.5.1"}, BRIDGE, "network.gateway", ("10.244.4.0/24",)),
        ({"subnet": "10.244.4.0/24", "gateway": "fd00::1"}, BRIDGE, "network.gateway", ("of its IP family",)),
    ],
)
def test_bad_sections_are_code_7_naming_the_field(section, flavor, field, words):
    err = bad(section, flavor)
    assert err.msg.startswith(field), err.msg
    for word in words:
        assert word in f"{err.msg} {err.details}"


# --------------------------------------------------------------------------- mismatch


def existing(doc: dict) -> HostComputeNetwork:
    return HostComputeNetwork.from_json(doc)


@pytest.mark.parametrize(
    "doc,named",
    [
        (
            {"Name": "cbr0", "Type": "L2Bridge", "Ipams": [{"Subnets": [{"IpAddressPrefix": "10.244.9.0/24"}]}]},
            "10.244.9.0/24",
        ),
        ({"Name": "cbr0", "Type": "NAT", "Ipams": [{"Subnets": [{"IpAddressPrefix": "10.244.4.0/24"}]}]}, "NAT"),
        ({"Name": "cbr0", "Type": "L2Bridge"}, "(no subnet)"),
    ],
)
def test_an_existing_network_of_another_shape_is_named_with_the_section(doc, named):
    err = nw.mismatch(wanted({"subnet": "10.244.4.0/24"}), existing(doc))
    assert err.code == 7 and named in err.msg and "L2Bridge 10.244.4.0/24" in err.msg
    assert "never replaces" in err.details


def test_an_overlay_with_another_vni_is_a_mismatch():
    s = wanted({"subnet": "10.244.4.0/24", "vni": 4097}, OVERLAY, "vxlan0")
    doc = nw.document(wanted({"subnet": "10.244.4.0/24"}, OVERLAY, "vxlan0"), NONE)
    err = nw.mismatch(s, existing(doc))
    assert "VNI 4096" in err.msg and "VNI 4097" in err.msg


# --------------------------------------------------------------------------- ensure (fake HNS)


class FakeApi:
    """Just the EndpointApi calls ``ensure`` makes, over a dict of network documents."""

    def __init__(
        self,
        networks: dict | None = None,
        mgmt_after: int = 0,
        create_error: HnsError | None = None,
        sneak: dict | None = None,
        attach_error: HnsError | None = None,
    ) -> None:
        self.docs = dict(networks or {})
        self.mgmt_after = mgmt_after  # management_ip() answers None this many times
        self.create_error = create_error
        self.sneak = sneak  # a network another process creates just before our create
        self.attach_error = attach_error
        self.endpoints: dict[str, dict] = {}
        self.calls: list[str] = []

    def undo_window(self):  # no deadline over a fake
        return contextlib.nullcontext()

    def network(self, name: str):
        self.calls.append("network")
        doc = self.docs.get(name)
        return None if doc is None else HostComputeNetwork.from_json(doc)

    def create_network(self, doc: dict):
        self.calls.append("create")
        if self.sneak is not None:
            self.docs[doc["Name"]] = self.sneak
        if self.create_error is not None:
            raise self.create_error
        self.docs[doc["Name"]] = {**doc, "ID": "N1"}
        return HostComputeNetwork.from_json(self.docs[doc["Name"]])

    def management_ip(self, network):
        self.calls.append("mgmt")
        if self.mgmt_after > 0:
            self.mgmt_after -= 1
            return None
        return "10.127.130.36"

    def shows_management_ip(self, network):  # as HCN: on Overlay only
        return network.is_type("Overlay")

    def add_network_policy(self, network, kind, *args, **settings):
        self.calls.append("policy " + kind.v2(*args, **settings)["Type"])

    def delete_network(self, network):
        self.calls.append("delete network")
        self.docs = {k: v for k, v in self.docs.items() if v.get("ID") != network.id}

    def create_host_endpoint(self, network, name: str, ip: str):
        self.calls.append(f"create {name} {ip}")
        self.endpoints[name] = {"Name": name, "VirtualNetwork": network.id, "IPAddress": ip}
        self.calls.append("host attach 1")
        if self.attach_error is not None:
            raise self.attach_error
        return HNSEndpoint.from_json({**self.endpoints[name], "ID": "E1"})

    def endpoints_of(self, network):
        self.calls.append("endpoints")
        return [HNSEndpoint.from_json(e) for e in self.endpoints.values() if e["VirtualNetwork"] == network.id]

    def delete_host_endpoint(self, name: str):
        if name in self.endpoints:
            self.calls.append("delete endpoint")
            del self.endpoints[name]


class Clock:
    def __init__(self) -> None:
        self.now = 100.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def ensure(api: FakeApi, s: nw.WantedNetwork, tmp_path, clock: Clock | None = None, timeout: float = 30.0, feature=ALL):
    clock = clock or Clock()
    return nw.ensure(api, s, feature, str(tmp_path), clock=clock, sleep=clock.sleep, timeout=timeout)


def test_a_missing_bridge_network_is_created_waited_for_and_given_its_host_endpoint(tmp_path):
    api, clock = FakeApi(mgmt_after=3), Clock()
    net = ensure(api, wanted({"subnet": "10.244.4.0/24"}), tmp_path, clock)
    assert net.id == "N1"
    assert api.calls == [
        "network",
        "create",
        "mgmt",
        "network",
        "mgmt",
        "network",
        "mgmt",
        "network",
        "mgmt",
        "create cbr0_ep 10.244.4.2",
        "host attach 1",
    ]
    assert clock.sleeps == [0.25, 0.25, 0.25]


def test_a_network_whose_set_up_fails_is_deleted_again(tmp_path):
    """The next ADD must start over, not find a network without its host endpoint."""
    api = FakeApi(attach_error=HnsError("HNSCall", 0x803B0014, None, "attach failed"))
    with pytest.raises(HnsError):
        ensure(api, wanted({"subnet": "10.244.4.0/24"}), tmp_path)
    assert api.calls[-3:] == ["endpoints", "delete endpoint", "delete network"]
    assert api.docs == {} and api.endpoints == {}


def test_a_network_whose_set_up_fails_is_left_while_it_holds_another_endpoint(tmp_path):
    """HNS deletes a network's endpoints with it: one that is not ours may be in use, so the
    network stays (its marker too: the next ADD tries again)."""
    api = FakeApi(attach_error=HnsError("HNSCall", 0x803B0014, None, "attach failed"))
    api.endpoints["pod9_cbr0"] = {"Name": "pod9_cbr0", "VirtualNetwork": "N1", "IPAddress": "10.244.4.9"}
    with pytest.raises(HnsError):
        ensure(api, wanted({"subnet": "10.244.4.0/24"}), tmp_path)
    assert api.calls[-1] == "endpoints" and "delete network" not in api.calls
    assert set(api.endpoints) == {"cbr0_ep", "pod9_cbr0"} and (tmp_path / "network-cbr0.setup").exists()


def test_a_created_hcn_overlay_gets_its_host_route_once_ready(tmp_path):
    api = FakeApi()
    ensure(api, wanted({"subnet": "10.244.4.0/24"}, OVERLAY, "vxlan0"), tmp_path)
    assert api.calls == ["network", "create", "mgmt", "policy HostRoute"]
    api = FakeApi()
    ensure(api, wanted({"subnet": "10.244.4.0/24"}, OVERLAY, "vxlan0"), tmp_path, feature=NONE)  # HNS < 9.2
    assert "policy HostRoute" not in api.calls


def test_an_existing_ready_network_costs_one_lookup(tmp_path):
    s = wanted({"subnet": "10.244.4.0/24"})
    api = FakeApi(networks={"cbr0": {**nw.document(s, NONE), "ID": "N0"}})
    assert ensure(api, s, tmp_path).id == "N0"
    assert api.calls == ["network"]


def test_the_wait_is_bounded_and_says_how_long_it_waited(tmp_path):
    api, clock = FakeApi(mgmt_after=1000), Clock()
    with pytest.raises(CniError) as err:
        ensure(api, wanted({"subnet": "10.244.4.0/24", "adapter": "Ethernet 2"}), tmp_path, clock, timeout=2.0)
    assert err.value.code == 11 and "after 2.0s" in err.value.msg and "network.adapter" in err.value.details
    assert sum(clock.sleeps) == pytest.approx(2.0)
    assert api.calls[-1] == "delete network" and api.docs == {}


def test_a_network_deleted_during_the_wait_is_try_again_later(tmp_path):
    api = FakeApi(mgmt_after=1)
    real_network = api.network

    def vanishing(name):
        net = real_network(name)
        if api.calls.count("network") > 1:
            api.docs.clear()
            return None
        return net

    api.network = vanishing
    with pytest.raises(CniError) as err:
        ensure(api, wanted({"subnet": "10.244.4.0/24"}), tmp_path)
    assert err.value.code == 11 and "disappeared" in err.value.msg


def test_losing_the_creation_race_to_a_process_outside_the_lock_uses_its_network(tmp_path):
    s = wanted({"subnet": "10.244.4.0/24"})
    theirs = {**nw.document(s, NONE), "ID": "THEIRS"}
    api = FakeApi(create_error=HnsError("HcnCreateNetwork", 0x803B0010, None, "already exists"), sneak=theirs)
    assert ensure(api, s, tmp_path).id == "THEIRS"
    assert api.calls[:3] == ["network", "create", "network"]


def test_losing_the_race_to_a_network_of_another_shape_is_the_mismatch_error(tmp_path):
    s = wanted({"subnet": "10.244.4.0/24"})
    theirs = {
        "Name": "cbr0",
        "Type": "L2Bridge",
        "ID": "T",
        "Ipams": [{"Subnets": [{"IpAddressPrefix": "192.168.0.0/24"}]}],
    }
    api = FakeApi(create_error=HnsError("HcnCreateNetwork", 0x803B0010, None, "already exists"), sneak=theirs)
    with pytest.raises(CniError) as err:
        ensure(api, s, tmp_path)
    assert err.value.code == 7 and "192.168.0.0/24" in err.value.msg
    assert "mgmt" not in api.calls  # a network we may not use is never waited for


def test_a_creation_error_that_is_not_a_race_propagates(tmp_path):
    api = FakeApi(create_error=HnsError("HcnCreateNetwork", 0x803B000A, None, "invalid network"))
    with pytest.raises(HnsError):
        ensure(api, wanted({"subnet": "10.244.4.0/24"}), tmp_path)


def test_the_lock_directory_is_shared_by_every_user_of_the_node():
    assert (
        lock_dir({"ProgramData": "D:\\ProgramData", "TEMP": "C:\\Users\\x\\Temp"}, "win32") == "D:\\ProgramData\\wincni"
    )
    assert lock_dir({}, "win32") == "C:\\ProgramData\\wincni"
    # Never the world-writable temp folder, where any user could create the folder first.
    if os.geteuid() == 0:
        assert lock_dir({"TMPDIR": "/var/tmp"}, "linux") == "/run/wincni"
    assert lock_dir({"WINCNI_LOCK_DIR": "/srv/l", "TMPDIR": "/tmp"}, "linux") == "/srv/l"
    assert lock_dir({"WINCNI_LOCK_DIR": "D:\\l"}, "win32") == "D:\\l"


def test_the_lock_file_is_per_network_name_and_safe_as_a_file_name(tmp_path):
    assert nw.lock_path("cbr0", str(tmp_path)) == str(tmp_path / "network-cbr0.lock")
    assert nw.lock_path("a/b\\c:d", str(tmp_path)).endswith("network-a_b_c_d.lock")


@pytest.mark.parametrize(
    "ipam,field",
    [
        ({"type": "host-local", "subnet": "10.244.5.0/24"}, "ipam.subnet"),
        ({"type": "host-local", "subnet": "10.244.0.0/16"}, "ipam.subnet"),  # wider than the network
        (
            {"type": "host-local", "ranges": [[{"subnet": "10.244.4.0/25"}], [{"subnet": "fd00:5::/64"}]]},
            "ipam.ranges[1][0].subnet",
        ),
    ],
)
def test_an_ipam_range_outside_the_network_is_named(ipam, field):
    s = wanted({"subnet": ["10.244.4.0/24", "fd00:4::/64"]})
    err = nw.ipam_outside(s, ipam)
    assert err.code == 7 and err.msg.startswith(field) and "10.244.4.0/24" in err.msg


@pytest.mark.parametrize(
    "ipam",
    [
        {"type": "host-local", "subnet": "10.244.4.0/24"},
        {"type": "host-local", "subnet": "10.244.4.1/24", "rangeStart": "10.244.4.10"},
        {"type": "host-local", "ranges": [[{"subnet": "10.244.4.128/25"}], [{"subnet": "fd00:4::/80"}]]},
        {"type": "host-local", "subnet": "not a cidr"},  # host-local's own error, with its own field name
        {"type": "dhcp"},
        {},
        "garbage",
        {"type": "host-local", "ranges": 5},
        {"type": "host-local", "ranges": [5, [7, None]], "subnet": ["x"]},
        {"type": "host-local", "subnet": 7},  # an int is not a subnet (ipaddress would read 0.0.0.7/32)
    ],
)
def test_ipam_inside_the_network_or_not_ours_to_judge_passes(ipam):
    assert nw.ipam_outside(wanted({"subnet": ["10.244.4.0/24", "fd00:4::/64"]}), ipam) is None


class Counted:
    """A RawHns that forwards to the simulator and keeps the name of each raw call."""

    def __init__(self, inner) -> None:
        self.inner, self.calls = inner, []

    def __getattr__(self, name: str):
        self.calls.append("HNSCall" if name == "hns_call" else name)
        return getattr(self.inner, name)


def clients(tmp_path):
    from libhns.client import HcnClient, HnsCallClient
    from libhns.sim import Simulator

    hcn = HcnClient(Counted(Simulator(tmp_path)))
    return hcn, HnsCallClient(hcn.raw)


def adapters(hcn, hnscall) -> dict:
    from plugins.winnet.hnsapi import HcnApi, HnsV1Api

    clients = {"hcn": hcn, "hnscall": hnscall, "container_id": "c"}
    return {"v1": HnsV1Api(**clients, netns="none"), "v2": HcnApi(**clients, netns="")}


@pytest.mark.parametrize("adapter", ["v1", "v2"])
def test_both_adapters_make_the_host_vnic_through_hnscall(tmp_path, adapter):
    """flanneld makes <name>_ep with HNSCall whatever the pods use; so do both adapters."""
    hcn, hnscall = clients(tmp_path)
    net = hcn.create_network(
        {
            "Name": "cbr0",
            "Type": "L2Bridge",
            "SchemaVersion": {"Major": 2, "Minor": 0},
            "Ipams": [{"Type": "Static", "Subnets": [{"IpAddressPrefix": "10.244.4.0/24"}]}],
        }
    )
    api = adapters(hcn, hnscall)[adapter]
    ep = api.create_host_endpoint(net, "cbr0_ep", "10.244.4.2")
    assert hnscall.get_endpoint_by_name("cbr0_ep").id == ep.id
    api.delete_host_endpoint("cbr0_ep")
    api.delete_host_endpoint("cbr0_ep")  # already gone: nothing to do
    assert hnscall.get_endpoint_by_name("cbr0_ep") is None


@pytest.mark.parametrize("adapter", ["v1", "v2"])
def test_a_made_overlay_gets_its_host_route_from_hcn_and_a_clear_refusal_from_hnscall(tmp_path, adapter):
    """HCN adds HostRoute to the network it made; HNSCall, were it asked (its ``lacks`` keeps
    ``_set_up`` from asking), refuses by name with a libhns error (code 100 through ``hns_step``)
    and the half-made network is deleted again."""
    from libhns.errors import Unsupported

    hcn, hnscall = clients(tmp_path)
    api = adapters(hcn, hnscall)[adapter]
    s = wanted({"subnet": "10.244.4.0/24"}, OVERLAY, "vxlan0")
    refused = pytest.raises(Unsupported, match="cannot add a HostRoute policy")
    with refused if adapter == "v1" else contextlib.nullcontext():
        nw.ensure(api, s, ALL, str(tmp_path / "locks"), clock=Clock(), sleep=lambda _: None)
    network = hcn.get_network_by_name("vxlan0")
    if adapter == "v1":
        assert network is None
    else:
        assert {"Type": "HostRoute", "Settings": {}} in network.policies
