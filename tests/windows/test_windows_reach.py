"""Every path a command can take, run from the package zip, so that a module the bundle leaves out
(specs/wincni.spec's EXCLUDES) fails here, as a traceback or a wrong answer, and not on a node.

The lane's other files run flannel's ADD/CHECK/DEL on both network types and both APIs, the
doctor, ``wincni install``, HNS faults and the parser's errors. This file adds what they leave:
each plugin's own ADD/CHECK/GC/STATUS/DEL (not only through flannel), jsonschema explaining a
rejected config for every plugin (jsonschema, attrs, referencing and rpds load only then), and
hnsctl's and wincni's other commands."""

from __future__ import annotations

import json
import zipfile

import pytest

from hnsnode import MGMT_IP, lease_text
from winenode import WineNode

REACH = r"C:\reach"
IPAM = {"type": "host-local", "dataDir": REACH + r"\ipam"}
BRIDGE, OVERLAY = ("reach0", "10.244.60.0/24"), ("reachvx", "10.244.61.0/24")
CONFS = {  # plugin -> (network, config); every one 1.1.0 so that GC and STATUS exist
    "win-bridge": (BRIDGE[0], {"type": "win-bridge", "apiVersion": 2, "ipam": {**IPAM, "subnet": "10.244.60.0/25"}}),
    "win-overlay": (OVERLAY[0], {"type": "win-overlay", "apiVersion": 2, "ipam": {**IPAM, "subnet": OVERLAY[1]}}),
    "flannel": (
        BRIDGE[0],
        {
            "type": "flannel",
            "subnetFile": REACH + r"\subnet.env",
            "dataDir": REACH + r"\flannel",
            "netConf": REACH + r"\net-conf.json",  # the lane's default one names cbr0
            "ipam": {"dataDir": IPAM["dataDir"]},
            "delegate": {"type": "win-bridge", "apiVersion": 2},
        },
    ),
    "host-local": ("reach-ipam", {"ipam": {**IPAM, "subnet": "10.244.62.0/24"}}),
}
REJECTED = {  # plugin -> (a field of the wrong type, the word the message names)
    "win-bridge": ({"apiVersion": "two"}, "apiVersion"),
    "win-overlay": ({"apiVersion": "two"}, "apiVersion"),
    "flannel": ({"delegate": 7}, "delegate"),
    "host-local": ({"ipam": {"type": "host-local", "subnet": "10.244.62.0/24", "routes": "x"}}, "ipam.routes"),
}


@pytest.fixture(scope="module")
def reach(node: WineNode) -> WineNode:
    for name, subnet in (BRIDGE, OVERLAY):
        kind = (
            ["--type", "L2Bridge"]
            if name == BRIDGE[0]
            else ["--type", "Overlay", "--vsid", "4160", "--management-ip", MGMT_IP]
        )
        node.hnsctl("network", "create", name, *kind, "--subnet", subnet, "--gateway", subnet[:-4] + "1")
    node.path(REACH).mkdir(parents=True, exist_ok=True)
    (node.path(REACH) / "subnet.env").write_text(lease_text("10.244.60.1/24"))
    (node.path(REACH) / "net-conf.json").write_text(
        json.dumps({"Network": "10.244.0.0/16", "Backend": {"name": BRIDGE[0], "type": "host-gw"}})
    )
    return node


def conf(plugin: str, **extra) -> dict:
    network, body = CONFS[plugin]
    return {"cniVersion": "1.1.0", "name": network, **body, **extra}


@pytest.mark.parametrize("plugin", list(CONFS))
def test_each_plugin_runs_every_cni_command(reach: WineNode, plugin: str) -> None:
    node = reach
    node.network = CONFS[plugin][0]
    cid = f"reach-{plugin}"
    netns = node.sandbox("v2", cid)
    add = node.run("ADD", conf(plugin), cid, netns, plugin=plugin)
    assert add.ok and add.out["ips"], (add.out, add.stderr)
    for command, extra in (
        ("CHECK", {"prevResult": add.out}),
        ("GC", {"cni.dev/valid-attachments": [{"containerID": cid, "ifname": "eth0"}]}),
        ("STATUS", {}),
    ):
        run = node.run(command, conf(plugin, **extra), cid if command == "CHECK" else "", netns, plugin=plugin)
        assert run.ok, (command, run.out, run.stderr)
    assert add.out["ips"][0]["address"].split("/")[0] in ip_owners(node, plugin), "GC dropped a live pod"
    assert node.run("DEL", conf(plugin), cid, netns, plugin=plugin).ok
    assert node.run("GC", conf(plugin, **{"cni.dev/valid-attachments": []}), plugin=plugin).ok
    assert not [n for n in node.endpoints() if n.startswith(cid)]
    assert cid not in ip_owners(node, plugin).values()


def ip_owners(node: WineNode, plugin: str) -> dict[str, str]:
    """Address -> container ID in the plugin's host-local store."""
    ipam = conf(plugin)["ipam"]
    store = node.path(ipam["dataDir"]) / conf(plugin)["name"]
    return (
        {p.name: p.read_text().splitlines()[0] for p in store.iterdir() if p.name[0].isdigit()}
        if store.exists()
        else {}
    )


@pytest.mark.parametrize("plugin", list(REJECTED))
def test_jsonschema_explains_a_rejected_config(reach: WineNode, plugin: str) -> None:
    wrong, field = REJECTED[plugin]
    run = reach.run("ADD", conf(plugin, **wrong), "reach-bad", "none", plugin=plugin)
    run.failed(7, field, "is not of type")  # jsonschema's own words: it was imported and ran
    assert "Traceback" not in run.stderr


def test_hnsctl_and_wincni_read_commands(reach: WineNode) -> None:
    node = reach
    dump = node.hnsctl_exe("dump")
    assert {BRIDGE[0], OVERLAY[0]} <= {n["Name"] for n in dump["networks"]}, dump.keys()
    assert {BRIDGE[0], OVERLAY[0]} <= {n["Name"] for n in node.hnsctl_exe("network", "list")}
    assert isinstance(node.hnsctl_exe("namespace", "list"), list)
    config = node.path(REACH) / "cni.conf"
    config.write_text(json.dumps(conf("flannel")))
    proc = node.wine(node.exe("wincni"), "reclaim", "--dry-run", "--cni-conf", REACH + r"\cni.conf")
    assert proc.returncode == 0 and b"Traceback" not in proc.stderr, (proc.stdout, proc.stderr)
    for args in (("--help",), ("install", "--help"), ("sourcevip", "--help")):
        proc = node.wine(node.exe("wincni"), *args)
        assert proc.returncode == 0 and b"usage" in proc.stdout.lower(), (args, proc.stdout, proc.stderr)


def test_the_modules_those_commands_ran_came_from_the_pack(reach: WineNode) -> None:
    """Every command above imported its modules through specs/bootstrap/pyi_rth_wincni_pack.py's
    finder (Windows paths, backslashes): the Windows bundle has no other copy of them."""
    cni = reach.path(r"C:\k\cni")
    (contents,) = (p for p in cni.iterdir() if p.is_dir() and p.name.startswith("_wincni-"))
    assert (contents / "wincni.pack").is_file()
    assert not list(contents.rglob("*.pyc"))  # what starts the interpreter is in base_library.zip
    with zipfile.ZipFile(contents / "base_library.zip") as zf:
        boot = {name.split("/")[0].removesuffix(".pyc") for name in zf.namelist()}
    assert boot == {"encodings", "struct"}, boot
