"""One judge of a CNI config (``tools/wincni/judge.py``): ``wincni install`` refuses what ``wincni
doctor`` would fail, says and counts what it would warn about, and every config fix either prints
is followed as an operator would, to the letter: the file it names edited as it says (the
template install renders, never the conflist install rewrites), install run again as printed,
and the doctor asked again."""

from __future__ import annotations

import ipaddress
import json
import re
from pathlib import Path

import pytest

from hnsnode import MGMT_IP, SUBNET, Node, package_folder
from test_wincni_doctor import sim_node
from test_wincni_doctor_fixes import run_as_printed

EXCEPTIONS = ["__CLUSTER_CIDR__", "__SERVICE_CIDR__", "__NODE_SUBNET__"]  # as install's own config


def template(node: Node, kind: str) -> dict:
    """The operator's template for a healthy ``kind`` node: flannel's files under the node's root."""
    conf = node.flannel_files(kind)
    route = {"Type": "ROUTE", "DestinationPrefix": "__SERVICE_CIDR__", "NeedEncap": True}
    policies = [
        {"Name": "EndpointPolicy", "Value": {"Type": "OutBoundNAT", "ExceptionList": list(EXCEPTIONS)}},
        {"Name": "EndpointPolicy", "Value": route},
    ]
    first = {k: v for k, v in conf.items() if k not in ("cniVersion", "name")}
    first["delegate"] = {"type": "__DELEGATE_TYPE__", "policies": policies}
    return {"cniVersion": "1.0.0", "name": "__NETWORK_NAME__", "plugins": [first]}


def install(node: Node, tmp_path: Path, doc: dict, expect: int = 0, output: str = "json") -> tuple[Path, dict | str]:
    """``wincni install --template`` with ``doc`` on ``node``: (the template, install's output);
    the doctor then looks where install laid (and finds its manifest)."""
    path = tmp_path / "template.conflist"
    path.write_text(json.dumps(doc, indent=2))
    node.cni_conf = None  # install writes the config, not the test
    done = node.install(
        "--from", str(package_folder(tmp_path, "0.1.0-aaa-1")), "--template", str(path), expect=expect, output=output
    )
    node.bin = node.cni_bin
    return path, done


def delegate(doc: dict) -> dict:
    return doc["plugins"][0]["delegate"]


# What the fixes ask of the operator, each as the one edit it names, in the file it names.
def _exceptions(doc: dict) -> list[str]:
    return next(p["Value"] for p in delegate(doc)["policies"] if p["Value"]["Type"] == "OutBoundNAT")["ExceptionList"]


def _covers(entry: str, ip: str) -> bool:
    try:
        return ipaddress.ip_address(ip) in ipaddress.ip_network(entry, strict=False)
    except ValueError:
        return False  # a token


EDITS = [
    (
        r"add (\S+(?:, \S+)*) to the OutBoundNAT policy's ExceptionList in the template (\S+) ",
        lambda doc, cidrs: _exceptions(doc).extend(cidrs.split(", ")),
    ),
    (
        r"remove the entry covering (\S+) from the OutBoundNAT policy's ExceptionList in the template (\S+) ",
        lambda doc, ip: _exceptions(doc).__setitem__(slice(None), [e for e in _exceptions(doc) if not _covers(e, ip)]),
    ),
    (r'set the delegate\'s "type" to "(\S+)" in the template (\S+) ', lambda doc, t: delegate(doc).update(type=t)),
    (r'set "name": "(\S+)" in the template (\S+) ', lambda doc, name: doc.update(name=name)),
    (r'remove "(loopbackDSR)" from the delegate in the template (\S+) ', lambda doc, key: delegate(doc).pop(key)),
    (r'set Backend\.Type to "(\S+)" in (\S+) ', lambda doc, t: doc["Backend"].update(type=t)),
    (r'set "Network" to "(\S+)" in (\S+) ', lambda doc, cidr: doc.update(Network=cidr)),
]


def follow(node: Node, fix: str) -> None:
    """Do what ``fix`` says, as printed: the edit it names in the file it names, then the install
    command it ends with, pasted into the shell."""
    edits = [(m, edit) for pattern, edit in EDITS for m in re.finditer(pattern, fix)]
    assert edits or "run install again: " in fix, f"nothing an operator could follow: {fix}"
    for m, edit in edits:
        path = Path(m.group(2))
        assert path.suffix != ".conflist" or path.parent != node.conf_dir, f"the fix edits what install rewrites: {fix}"
        doc = json.loads(path.read_text())
        edit(doc, m.group(1))
        path.write_text(json.dumps(doc))
    if "run install again: " in fix:
        run_as_printed(node, fix.rsplit("run install again: ", 1)[1])


CONFIG_CHECKS = ("exceptions", "net-conf", "reach", "hns-network", "hns-features")


def config_failures(found: dict[str, dict]) -> dict[str, dict]:
    return {id_: c for id_, c in found.items() if id_ in CONFIG_CHECKS and c["status"] == "fail"}


def test_install_refuses_a_config_the_doctor_fails_and_changes_nothing(tmp_path: Path) -> None:
    """The issue's template: the ExceptionList names 10.245.0.0/16 for the cluster's 10.244.0.0/16."""
    node = sim_node(tmp_path, "overlay")
    wrong = template(node, "overlay")
    _exceptions(wrong)[0] = "10.245.0.0/16"
    path, table = install(node, tmp_path, wrong, expect=1, output="table")
    assert not node.cni_bin.exists() and not node.conf_dir.exists()

    # the doctor on the same config, laid by hand: the same finding
    values = {"__NETWORK_NAME__": "vxlan0", "__DELEGATE_TYPE__": "win-overlay", "__SERVICE_CIDR__": "10.96.0.0/12"}
    text = json.dumps(wrong).replace('"__NODE_SUBNET__"', '"10.127.130.0/24"')
    for token, value in values.items():
        text = text.replace(token, value)
    node.write_cni_conf(json.loads(text))
    node.bin = tmp_path / "bin"
    doctor = node.doctor()["exceptions"]
    assert doctor["status"] == "fail"
    [failed] = [line for line in table.splitlines() if line.startswith("FAILED: ")]
    assert failed.startswith(f"FAILED: {doctor['message']}; fix: add 10.244.0.0/16 to the OutBoundNAT"), table
    assert f"in the template {path} " in failed and "run install again: " in failed


def test_a_warning_is_said_and_counted_as_the_doctor_says_it(tmp_path: Path) -> None:
    node = sim_node(tmp_path, "overlay")
    doc = template(node, "overlay")
    node.write_net_conf({"Network": "10.244.0.0/16", "Backend": {"name": "vxlan0", "type": "vxlan"}})
    _, table = install(node, tmp_path, doc, output="table")
    doctor = node.doctor()["net-conf"]
    assert doctor["status"] == "warn"
    assert f"WARN     {doctor['message']}; fix: {doctor['fix']}" in table.splitlines()
    assert table.rstrip().endswith(", 1 warning(s)")


def _exception(cidr: str):
    return lambda doc: _exceptions(doc).__setitem__(0, cidr)


# Templates install refuses: its FAILED line's fix, followed, makes install go through and the doctor pass.
REFUSED = {
    "exceptions: the cluster CIDR missing": _exception("10.245.0.0/16"),
    "net-conf: a name that is not Backend.Name": lambda doc: doc.update(name="cbr0"),
    "net-conf: the other backend's plugin": lambda doc: delegate(doc).update(type="win-bridge"),
    "net-conf: both": lambda doc: (doc.update(name="cbr0"), delegate(doc).update(type="win-bridge")),
}


@pytest.mark.parametrize("name", list(REFUSED))
def test_each_fix_install_prints_works_as_printed(tmp_path: Path, name: str) -> None:
    node = sim_node(tmp_path, "overlay")
    doc = template(node, "overlay")
    REFUSED[name](doc)
    _, done = install(node, tmp_path, doc, expect=1)
    [error] = done["error"].splitlines()
    assert error.count("run install again: ") == 1, error  # once, after every change it asks for
    follow(node, error.split("; fix: ", 1)[1] + " ")
    found = node.doctor()
    assert config_failures(found) == {}, found
    assert node.read_cni_conf()["name"] == "vxlan0" and delegate(node.read_cni_conf())["type"] == "win-overlay"


def _hand_edit(node: Node) -> None:
    """Someone edits the conflist install laid: the service CIDR out of the ExceptionList."""
    doc = node.read_cni_conf()
    _exceptions(doc).remove("10.96.0.0/12")
    (node.conf_dir / "10-flannel.conflist").write_text(json.dumps(doc))


VXLAN_CBR0 = {"Network": "10.244.0.0/16", "Backend": {"name": "cbr0", "type": "vxlan", "VNI": 4096, "Port": 4789}}


def _net_conf(doc: dict):
    return lambda node: node.write_net_conf(doc)


# Configs install laid that the doctor fails on the node: (check, node kind, the template's change,
# the net-conf.json install renders from, what happens after, doctor flags).
LAID = {
    "exceptions: the installed conflist edited by hand": ("exceptions", "bridge", None, None, _hand_edit, ()),
    "reach: an outside range excepted": (
        "reach",
        "overlay",
        lambda doc: _exceptions(doc).append("192.168.0.0/16"),
        None,
        lambda node: None,
        ("--reach", "192.168.1.1"),
    ),
    "net-conf: Backend.Type changed after install": (
        "net-conf",
        "overlay",
        None,
        None,
        _net_conf(
            {"Network": "10.244.0.0/16", "Backend": {"name": "vxlan0", "type": "host-gw", "VNI": 4096, "Port": 4789}}
        ),
        (),
    ),
    "hns-network: rendered for the backend before it was fixed": (
        "hns-network",
        "bridge",
        None,
        VXLAN_CBR0,
        _net_conf({"Network": "10.244.0.0/16", "Backend": {"name": "cbr0", "type": "host-gw"}}),
        (),
    ),
    "hns-features: loopbackDSR on HNS 9.2": (
        "hns-features",
        "bridge",
        lambda doc: delegate(doc).update(loopbackDSR=True),
        None,
        lambda node: node.env.update(LIBHNS_SIM_VERSION="9.2"),
        (),
    ),
}


@pytest.mark.parametrize("name", list(LAID))
def test_each_config_fix_the_doctor_prints_works_as_printed(tmp_path: Path, name: str) -> None:
    check, kind, change, net_conf, breaks, args = LAID[name]
    node = sim_node(tmp_path, kind)
    doc = template(node, kind)
    if change:
        change(doc)
    if net_conf:
        node.write_net_conf(net_conf)
    install(node, tmp_path, doc)
    breaks(node)
    found = node.doctor(*args)[check]
    assert found["status"] == "fail", found
    follow(node, found["fix"] + " ")
    again = node.doctor(*args)
    assert again[check]["status"] == "ok" and config_failures(again) == {}, (found, again)


# install's own config (no template): a miss is one of its inputs', named with the flag or file.
OWN = {
    "exceptions: --node-ip is not the management IP": ("bridge", ("--node-ip", "10.127.130.99"), None),
    "exceptions: net-conf.json's Network is not flanneld's": (
        "overlay",
        (),
        {"Network": "10.245.0.0/16", "Backend": {"name": "vxlan0", "type": "vxlan", "VNI": 4096, "Port": 4789}},
    ),
}


@pytest.mark.parametrize("name", list(OWN))
def test_a_fix_on_install_s_own_config_names_the_input_it_came_from(tmp_path: Path, name: str) -> None:
    kind, flags, net_conf = OWN[name]
    node = sim_node(tmp_path, kind, network=kind != "bridge")
    if kind == "bridge":  # as flanneld host-gw makes it on a node: with the adapter's address
        node.network = "cbr0"
        node.hnsctl("network", "create", "cbr0", "--type", "L2Bridge", "--subnet", SUBNET, "--management-ip", MGMT_IP)
    node.cni_conf = None
    if net_conf:
        node.write_net_conf(net_conf)
    node.install("--from", str(package_folder(tmp_path, "0.1.0-aaa-1")), *flags)
    node.bin = node.cni_bin
    files = ("--net-conf", str(node.net_conf), "--subnet-env", str(node.subnet_env))  # not in install's config
    found = node.doctor(*files)["exceptions"]
    assert found["status"] == "fail" and str(node.conf_dir) not in found["fix"].split("run install again: ")[0]
    follow(node, found["fix"] + " ")
    assert node.doctor(*files)["exceptions"]["status"] == "ok"


def test_a_fix_says_where_a_change_lasts() -> None:
    from tools.wincni.judge.config import Origin

    change = "add 10.96.0.0/12 to the ExceptionList"
    assert Origin("/net.d/10.conflist").edit(change) == f"{change} in /net.d/10.conflist"
    laid = Origin("/net.d/10.conflist", ("install", "--template", "/t.conflist", "--node-ip", "10.0.0.1"))
    assert laid.edit(change).startswith(f"{change} in the template /t.conflist (not in /net.d/10.conflist")
    assert laid.again(node_ip="10.0.0.2").endswith("wincni install --template /t.conflist --node-ip 10.0.0.2")
    assert Origin("/net.d/10.conflist", ()).edit(change) == (
        f"{change} in the template install renders (its --template; not in /net.d/10.conflist, which install "
        "rewrites), then run wincni install again with the flags it was run with"
    )
