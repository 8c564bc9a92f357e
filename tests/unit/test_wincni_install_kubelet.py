"""``wincni install`` fitted to a cluster: the DNS server and domain from the kubelet's own config
(flags override), and a conflist template the operator owns, rendered, validated by the plugins'
loaders, and never reverted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hnsnode import Node
from test_wincni_install import install_node, package_folder
from tools.wincni.install.kubelet import ClusterDns, KubeletConfigError, parse

KUBEADM = """apiVersion: kubelet.config.k8s.io/v1beta1
authentication:
  x509:
    clientCAFile: /etc/kubernetes/pki/ca.crt
clusterDNS:
- 10.100.0.10
clusterDomain: corp.example
"""


@pytest.mark.parametrize(
    "text, want",
    [
        (KUBEADM, ClusterDns(("10.100.0.10",), "corp.example")),
        (
            "clusterDNS:\n  - '10.1.0.10'   # ours\n  - \"10.1.0.11\"\nclusterDomain: cluster.local.\n",
            ClusterDns(("10.1.0.10", "10.1.0.11"), "cluster.local."),
        ),
        ('clusterDNS: [10.2.0.10]\nclusterDomain: "k8s.test" # a comment\n', ClusterDns(("10.2.0.10",), "k8s.test")),
        (
            '{"kind": "KubeletConfiguration", "clusterDNS": ["10.3.0.10"], "clusterDomain": "a.b"}',
            ClusterDns(("10.3.0.10",), "a.b"),
        ),
        ("kind: KubeletConfiguration\nnested:\n  clusterDNS: [1.1.1.1]\n", ClusterDns((), "")),
        ("clusterDNS: []\nclusterDomain:\n", ClusterDns((), "")),
        # dual-stack: the config names one DNS server, the IPv4 one (an IPv6 one beside it is not an error)
        ("clusterDNS:\n- fd00:10:96::a\n- 10.96.0.10\n", ClusterDns(("10.96.0.10",), "")),
    ],
)
def test_the_two_fields_in_every_form_kubeadm_and_hands_write(text: str, want: ClusterDns) -> None:
    assert parse(text, "config.yaml") == want


@pytest.mark.parametrize(
    "text, words",
    [
        ("clusterDNS:\n- 10.96.0.300\n", ("clusterDNS '10.96.0.300' is not an IPv4 address",)),
        ("clusterDNS:\n- fd00::10\n", ("clusterDNS holds no IPv4 address", "--cluster-dns")),
        ("clusterDNS:\n  server: 10.96.0.10\n", ("line 2", "must be a list of plain values")),
        ("clusterDNS: [10.96.0.10\n", ("line 1", "must end on its line")),
        ("clusterDomain: 'cluster.local\n", ("line 1", "unterminated quote")),
        ("clusterDomain: bad_domain\n", ("clusterDomain 'bad_domain' is not a DNS domain",)),
        ("clusterDomain:\n- a.b\n", ("line 1", "one value, not a list")),
        ("clusterDNS: [1.1.1.1]\nclusterDNS: [2.2.2.2]\n", ("line 2", "set twice")),
        ("clusterDNS: &anchor 1.1.1.1\n", ("not a plain value",)),
        ('{"clusterDNS": "10.96.0.10", ', ("not JSON",)),
        ('{"clusterDNS": [167772170]}', ("clusterDNS 167772170 is not an IPv4 address",)),  # a number is no address
        ('{"a": ' * 100_000 + "1" + "}" * 100_000, ("not JSON", "maximum recursion depth")),  # was a traceback
    ],
)
def test_what_it_cannot_read_is_an_error_naming_file_and_line(text: str, words: tuple) -> None:
    with pytest.raises(KubeletConfigError) as exc:
        parse(text, "config.yaml")
    assert str(exc.value).startswith("config.yaml")
    for word in words:
        assert word in str(exc.value)


@given(st.text(max_size=300))
def test_any_text_is_read_or_refused_never_raised_otherwise(text: str) -> None:
    try:
        found = parse(text, "c")
    except KubeletConfigError:
        return
    assert isinstance(found, ClusterDns)


@given(
    servers=st.lists(st.ip_addresses(v=4).map(str), max_size=3),
    domain=st.from_regex(r"[a-z][a-z0-9]{0,8}(\.[a-z][a-z0-9]{0,8}){0,3}", fullmatch=True),
    form=st.sampled_from(["block", "indented", "flow", "quoted"]),
    noise=st.booleans(),
)
def test_what_is_written_is_read_back(servers: list[str], domain: str, form: str, noise: bool) -> None:
    if form == "flow":
        dns = f"clusterDNS: [{', '.join(servers)}]\n"
    else:
        item = {"block": "- {}", "indented": "  - {}", "quoted": '- "{}"'}[form]
        dns = "clusterDNS:\n" + "".join(item.format(s) + "\n" for s in servers)
    other = "authentication:\n  anonymous:\n    enabled: false\nclusterDomainX: nope\n" if noise else ""
    text = other + dns + f"clusterDomain: {domain}\n" + other.replace("clusterDomainX", "kind")
    assert parse(text, "c") == ClusterDns(tuple(servers), domain)


# ------------------------------------------------------------------------------ install


def delegate_dns(node: Node) -> dict:
    return node.read_cni_conf()["plugins"][0]["delegate"]["dns"]


pytestmark = pytest.mark.node(build=install_node)


def test_dns_comes_from_the_kubelet_config(node: Node, tmp_path: Path) -> None:
    node.kubelet_config.parent.mkdir(parents=True)
    node.kubelet_config.write_text(KUBEADM)
    done = node.install("--from", str(package_folder(tmp_path, "0.1.0-aaa-1")))
    assert delegate_dns(node) == {"Nameservers": ["10.100.0.10"], "Search": ["svc.corp.example"]}
    assert done["dns"] == {"servers": ["10.100.0.10"], "domain": "corp.example", "from": str(node.kubelet_config)}
    assert done["warnings"] == []


def test_flags_override_the_kubelet_config(node: Node, tmp_path: Path) -> None:
    node.kubelet_config.parent.mkdir(parents=True)
    node.kubelet_config.write_text(KUBEADM)
    done = node.install(
        "--from",
        str(package_folder(tmp_path, "0.1.0-aaa-1")),
        "--cluster-dns",
        "10.200.0.10",
        "--cluster-domain",
        "other.test",
    )
    assert delegate_dns(node) == {"Nameservers": ["10.200.0.10"], "Search": ["svc.other.test"]}
    assert done["dns"]["from"] == "flags"


def test_without_a_kubelet_config_kubeadm_s_defaults_and_a_warning(node: Node, tmp_path: Path) -> None:
    done = node.install(
        "--from",
        str(package_folder(tmp_path, "0.1.0-aaa-1")),
        "--kubelet-config",
        str(tmp_path / "nope"),
        "--service-cidr",
        "10.112.0.0/12",
    )
    assert delegate_dns(node) == {"Nameservers": ["10.112.0.10"], "Search": ["svc.cluster.local"]}
    assert done["dns"]["from"] == "defaults" and "no kubelet config at" in done["warnings"][0]


@pytest.mark.parametrize(
    "args, kubelet, words",
    [
        ((), "clusterDNS:\n- nope\n", ("clusterDNS 'nope' is not an IPv4 address", "--cluster-dns")),
        (("--cluster-dns", "10.96.0.x"), KUBEADM, ("--cluster-dns '10.96.0.x'",)),
        (("--cluster-domain=-bad-",), KUBEADM, ("--cluster-domain '-bad-'",)),
        ((), "x" * (1 << 20) + "\n", ("over 1 MiB",)),
    ],
)
def test_a_bad_dns_source_fails_and_changes_nothing(
    node: Node, tmp_path: Path, args: tuple, kubelet: str, words: tuple
) -> None:
    node.kubelet_config.parent.mkdir(parents=True)
    node.kubelet_config.write_text(kubelet)
    done = node.install("--from", str(package_folder(tmp_path, "0.1.0-aaa-1")), *args, expect=1)
    assert all(w in done["error"] for w in words), done
    assert not node.cni_bin.exists() and not node.conf_dir.exists()


# ------------------------------------------------------------------------------ template

TEMPLATE = {
    "cniVersion": "1.0.0",
    "name": "__NETWORK_NAME__",
    "plugins": [
        {
            "type": "flannel",
            "capabilities": {"portMappings": True, "dns": True},
            "delegate": {
                "type": "__DELEGATE_TYPE__",
                "loopbackDSR": True,
                "dns": {"Nameservers": ["__DNS_SERVER__"], "Search": ["svc.__DNS_DOMAIN__", "__DNS_DOMAIN__"]},
                "policies": [
                    {
                        "Name": "EndpointPolicy",
                        "Value": {
                            "Type": "OutBoundNAT",
                            "ExceptionList": ["__CLUSTER_CIDR__", "__SERVICE_CIDR__", "192.168.0.0/16"],
                        },
                    },
                    {
                        "Name": "EndpointPolicy",
                        "Value": {"Type": "ROUTE", "DestinationPrefix": "__SERVICE_CIDR__", "NeedEncap": True},
                    },
                ],
            },
        }
    ],
}


def write_template(tmp_path: Path, doc) -> Path:
    path = tmp_path / "cni-template" / "10-flannel.conflist"
    path.parent.mkdir(exist_ok=True)
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc, indent=2))
    return path


def test_a_template_is_rendered_validated_and_never_reverted(node: Node, tmp_path: Path) -> None:
    node.kubelet_config.parent.mkdir(parents=True)
    node.kubelet_config.write_text(KUBEADM)
    template = write_template(tmp_path, TEMPLATE)
    rel = package_folder(tmp_path, "0.1.0-aaa-1")
    node.install("--from", str(rel), "--template", str(template))
    got = node.read_cni_conf()
    delegate = got["plugins"][0]["delegate"]
    assert got["name"] == "vxlan0" and delegate["type"] == "win-overlay" and delegate["loopbackDSR"] is True
    assert delegate["dns"] == {"Nameservers": ["10.100.0.10"], "Search": ["svc.corp.example", "corp.example"]}
    assert delegate["policies"][0]["Value"]["ExceptionList"] == ["10.244.0.0/16", "10.96.0.0/12", "192.168.0.0/16"]
    rendered = json.dumps(TEMPLATE)
    for token, value in (
        ("__NETWORK_NAME__", "vxlan0"),
        ("__DELEGATE_TYPE__", "win-overlay"),
        ("__DNS_SERVER__", "10.100.0.10"),
        ("__DNS_DOMAIN__", "corp.example"),
        ("__CLUSTER_CIDR__", "10.244.0.0/16"),
        ("__SERVICE_CIDR__", "10.96.0.0/12"),
    ):
        rendered = rendered.replace(token, value)
    assert got == json.loads(rendered)  # nothing added, nothing dropped: the operator's config

    again = node.install("--from", str(rel), "--template", str(template))  # the DaemonSet's next start
    assert set(actions_of(again).values()) == {"keep"} and node.read_cni_conf() == got


def actions_of(result: dict) -> dict[str, str]:
    return {Path(s["path"]).name: s["action"] for s in result["steps"]}


@pytest.mark.parametrize(
    "doc, words",
    [
        (
            {
                **TEMPLATE,
                "plugins": [
                    {**TEMPLATE["plugins"][0], "delegate": {**TEMPLATE["plugins"][0]["delegate"], "loopbackDSR": "yes"}}
                ],
            },
            ("loopbackDSR",),
        ),
        ({**TEMPLATE, "name": "__NETWORK__"}, ("unknown __NETWORK__", "__NETWORK_NAME__")),
        ({**TEMPLATE, "name": "cbr0"}, ("Backend.Name is vxlan0",)),
        ({**TEMPLATE, "plugins": [{"type": "win-overlay"}]}, ("first plugin is 'win-overlay', not flannel",)),
        (
            {
                **TEMPLATE,
                "plugins": [
                    {**TEMPLATE["plugins"][0], "delegate": {**TEMPLATE["plugins"][0]["delegate"], "type": "win-bridge"}}
                ],
            },
            ("win-overlay",),
        ),
        ("[1, 2]", ("template",)),
        ("{", ("template",)),
        # what decodes to a token is one (an escaped "_"); a token in a key is never filled in
        ('{"cniVersion": "1.0.0", "name": "\\u005f_FOO__", "plugins": [{"type": "flannel"}]}', ("unknown __FOO__",)),
        ({**TEMPLATE, "plugins": [{**TEMPLATE["plugins"][0], "__DNS_SERVER__": 1}]}, ("__DNS_SERVER__ in a key",)),
        (
            '{"cniVersion": "1.0.0", "name": "__NETWORK_NAME__", "plugins": [{"type": "flannel", "x": '
            + "[" * 700
            + "]" * 700
            + "}]}",
            ("nests deeper than 32",),
        ),
        # a .conflist without its list: containerd could load no config at all
        ({k: v for k, v in TEMPLATE.items() if k != "plugins"}, ('"plugins" is not a list',)),
        ({**TEMPLATE, "plugins": []}, ('"plugins" is not a list',)),
        ({"cniVersion": "1.0.0", "name": "__NETWORK_NAME__", "type": "flannel"}, ('"plugins" is not a list',)),
    ],
)
def test_a_template_the_plugins_would_refuse_fails_and_changes_nothing(tmp_path: Path, doc, words: tuple) -> None:
    node = install_node(tmp_path)
    done = node.install(
        "--from",
        str(package_folder(tmp_path, "0.1.0-aaa-1")),
        "--template",
        str(write_template(tmp_path, doc)),
        "--node-ip",
        "",
        expect=1,
    )
    assert all(w in done["error"] for w in words), done
    assert not node.conf_dir.exists()


def test_a_chained_plugin_the_node_lacks_is_warned_about(tmp_path: Path) -> None:
    """containerd fails every pod's ADD on a chained type it cannot find: said, until it is there."""
    node = install_node(tmp_path)
    rel = package_folder(tmp_path, "0.1.0-aaa-1")
    doc = {**TEMPLATE, "plugins": [*TEMPLATE["plugins"], {"type": "portmap", "capabilities": {"portMappings": True}}]}
    template = str(write_template(tmp_path, doc))
    [warning] = node.install("--from", str(rel), "--template", template)["warnings"]
    assert "chains plugin 'portmap'" in warning and str(node.cni_bin) in warning
    (node.cni_bin / "portmap").write_bytes(b"")  # laid by someone else: nothing to say
    assert node.install("--from", str(rel), "--template", template)["warnings"] == []


def test_a_template_without_a_name_is_not_blamed_on_net_conf(tmp_path: Path) -> None:
    node = install_node(tmp_path)
    doc = {k: v for k, v in TEMPLATE.items() if k != "name"}
    done = node.install(
        "--from",
        str(package_folder(tmp_path, "0.1.0-aaa-1")),
        "--template",
        str(write_template(tmp_path, doc)),
        expect=1,
    )
    assert done["error"].startswith("missing network name") and "Backend.Name" not in done["error"], done


def test_a_host_gw_template_gets_the_node_address(tmp_path: Path) -> None:
    node = install_node(tmp_path, "net-conf.host-gw.json")
    doc = json.loads(json.dumps(TEMPLATE).replace('"192.168.0.0/16"', '"__NODE_SUBNET__"'))
    doc["plugins"][0]["delegate"]["policies"].append(
        {"Name": "EndpointPolicy", "Value": {"Type": "ROUTE", "DestinationPrefix": "__NODE_IP__/32", "NeedEncap": True}}
    )
    node.install(
        "--from", str(package_folder(tmp_path, "0.1.0-aaa-1")), "--template", str(write_template(tmp_path, doc))
    )
    policies = [p["Value"] for p in node.read_cni_conf()["plugins"][0]["delegate"]["policies"]]
    assert (
        policies[0]["ExceptionList"][-1] == "10.127.130.0/24"
        and policies[-1]["DestinationPrefix"] == "10.127.130.36/32"
    )


def test_a_missing_template_is_named(node: Node, tmp_path: Path) -> None:
    done = node.install(
        "--from", str(package_folder(tmp_path, "0.1.0-aaa-1")), "--template", str(tmp_path / "nope"), expect=1
    )
    assert done["error"] == f"--template {tmp_path / 'nope'} does not exist"
