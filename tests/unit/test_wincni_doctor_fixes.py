"""Every fix line ``wincni doctor`` prints is a promise: break a simulated node each way the doctor
knows, read the check's fix, and either run its ``run`` command exactly as printed (a real
process, through the shell) and see the check pass when the doctor runs again, or find that its
prose names the node's own file to change. Together the breaks cover every check id."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pytest

from hnsnode import CLUSTER_DNS, SOURCE_VIP, VENV_BIN, Node, add_two_pods, endpoint_of, with_services
from test_wincni_doctor import CHECK_IDS, age, sim_node
from test_wincni_doctor_checks_netpol import agent_args, drift, silence, strip
from tools.wincni.doctor.checks.common import command
from tools.wincni.doctor.checks.node import backend, permissions
from tools.wincni.doctor.facts import NodeFacts


@dataclass(frozen=True)
class Break:
    check: str  # the check that must not be ok
    kind: str  # "bridge" or "overlay": the healthy node it starts from
    apply: Callable[[Node], None]
    args: tuple[str, ...] = ()  # extra doctor flags (a wrong --cni-conf …)
    fixed_by: str = ""  # the check whose run mends it, when it is another's (a stale endpoint's reservation)
    prose_names: Callable[[Node], list[Path]] = field(default=lambda node: [])  # a file the prose must name
    node_args: Callable[[Node], tuple[str, ...]] = field(default=lambda node: ())  # doctor flags naming its files


def _edit_delegate(**changes) -> Callable[[Node], None]:
    return lambda node: node.cni_conf["delegate"].update(changes)


def _exceptions(entries: list[str]) -> Callable[[Node], None]:
    return lambda node: node.cni_conf["delegate"]["policies"][0]["Value"].update(ExceptionList=entries)


def _net_conf(backend: dict) -> Callable[[Node], None]:
    return lambda node: node.write_net_conf({"Network": "10.244.0.0/16", "Backend": backend})


def _store(node: Node) -> Path:
    return node.ipam_dir / node.network


def _orphan(node: Node) -> None:
    (_store(node) / "10.244.4.77").write_bytes(b"ghostpod\r\neth0")
    age(_store(node) / "10.244.4.77")


def _earlier_lease_pod(node: Node) -> None:
    _store(node).mkdir(parents=True, exist_ok=True)
    (_store(node) / "10.244.9.7").write_bytes(b"oldpod\r\neth0")


def _stale_endpoint(node: Node) -> None:
    node.hnsctl("endpoint", "create", f"gone_{node.network}", "--network", node.network, "--ip", "10.244.4.19")
    (_store(node) / "10.244.4.19").write_bytes(b"gone\r\neth0")
    age(_store(node) / "10.244.4.19")


def _unreserved_endpoint(node: Node) -> None:
    node.hnsctl("endpoint", "create", f"lost_{node.network}", "--network", node.network, "--ip", "10.244.4.8")


def _vip_held_by_a_pod(node: Node) -> None:
    (_store(node) / SOURCE_VIP).write_bytes(b"pod9\r\neth0")
    node.hnsctl("endpoint", "create", f"pod9_{node.network}", "--network", node.network, "--ip", SOURCE_VIP)


def _pod_without_endpoint(node: Node) -> None:
    add_two_pods(node)
    node.hnsctl("endpoint", "delete", f"pod-a_{node.network}")


def _pod_endpoint_detached(node: Node) -> None:
    add_two_pods(node)
    netns = next(ns for cid, ns in node.sandbox_records().values() if cid == "pod-b")
    node.hnsctl("namespace", "detach", netns, f"pod-b_{node.network}")
    age(*(_store(node) / ip for ip, cid in node.ip_files().items() if cid == "pod-b"))


def _services(brk: Callable[[Node], object]) -> Callable[[Node], None]:
    """``brk`` on the node once it has pods and kube-proxy's Services (tests/data/services)."""

    def apply(node: Node) -> None:
        with_services(add_two_pods(node))
        brk(node)

    return apply


def _remote(ip: str) -> Callable[[Node], object]:
    return lambda node: node.hnsctl("endpoint", "create", "", "--network", node.network, "--ip", ip, "--remote")


def _rm(attr: str, name: str = "") -> Callable[[Node], None]:
    return lambda node: (getattr(node, attr) / name if name else getattr(node, attr)).unlink()


def _conf(node: Node) -> list[Path]:
    return [node.conf_dir / "10-flannel.conf"]


def _netconf(node: Node) -> list[Path]:
    return [node.net_conf]


BREAKS = {
    "config: a field of the wrong type": Break(
        "config", "bridge", _edit_delegate(loopbackDSR="yes"), prose_names=_conf
    ),
    "config: --cni-conf that does not exist": Break("config", "bridge", lambda node: None, ("--cni-conf", "/nope")),
    "config: a conf dir without a config": Break(
        "config",
        "bridge",
        lambda node: (setattr(node, "cni_conf", None), node.conf_dir.mkdir()),
        prose_names=lambda node: [node.conf_dir],
    ),
    "plugins: host-local missing": Break(
        "plugins", "bridge", _rm("bin", "host-local"), prose_names=lambda node: [node.bin]
    ),
    "plugins: bin dir unreadable": Break("plugins", "bridge", lambda node: None, ("--cni-bin-dir", "/nope")),
    "hns-network: absent": Break(
        "hns-network",
        "bridge",
        lambda node: node.hnsctl("network", "delete", "cbr0"),
        prose_names=lambda node: [node.net_conf, node.conf_dir / "10-flannel.conf"],
    ),
    "hns-network: of the wrong type": Break(
        "hns-network",
        "bridge",
        lambda node: (
            _edit_delegate(type="win-overlay")(node),
            _net_conf({"name": "cbr0", "type": "vxlan", "VNI": 4096})(node),
        ),
        prose_names=_netconf,  # the config agrees with net-conf.json: the network is the odd one
    ),
    "hns-network: HNS not reachable": Break(
        "hns-network", "bridge", lambda node: node.env.update(LIBHNS_SIM_VERSION="x")
    ),
    "subnet-env: absent": Break("subnet-env", "bridge", _rm("subnet_env"), prose_names=lambda node: [node.subnet_env]),
    "subnet-env: a new lease": Break(
        "subnet-env",
        "bridge",
        lambda node: (
            node.lease("10.244.9.1/24"),
            node.source_vip.write_text(json.dumps({"ip4": {"ip": "10.244.9.9/24"}})),
        ),
    ),
    "subnet-env: pods of an earlier lease": Break("subnet-env", "bridge", _earlier_lease_pod),
    "exceptions: the service CIDR missing": Break(
        "exceptions", "overlay", _exceptions(["10.244.0.0/16"]), prose_names=_conf
    ),
    "exceptions: not a CIDR": Break(
        "exceptions", "bridge", _exceptions(["10.244.0.0/16", "10.96.0.0/12", "bogus"]), prose_names=_conf
    ),
    "reach: the node subnet excepted": Break(
        "reach", "bridge", lambda node: None, ("--reach", "10.127.130.1"), prose_names=_conf
    ),
    "net-conf: Backend.Name differs from HNS": Break(
        "net-conf",
        "overlay",
        _net_conf({"name": "vxlan1", "type": "vxlan", "VNI": 4096, "Port": 4789}),
        prose_names=_netconf,
    ),
    "net-conf: a VNI Windows refuses": Break(
        "net-conf",
        "overlay",
        _net_conf({"name": "vxlan0", "type": "vxlan", "VNI": 4095, "Port": 4789}),
        prose_names=_netconf,
    ),
    "net-conf: the backend of the other plugin": Break(
        "net-conf", "overlay", _net_conf({"name": "vxlan0", "type": "host-gw"}), prose_names=_netconf
    ),
    "net-conf: Linux peers' defaults": Break(
        "net-conf", "overlay", _net_conf({"name": "vxlan0", "type": "vxlan"}), prose_names=_netconf
    ),
    "net-conf: not JSON": Break(
        "net-conf", "overlay", lambda node: node.net_conf.write_text("{"), prose_names=_netconf
    ),
    "vxlan: the HNS network's VNI": Break(
        "vxlan", "overlay", lambda node: (node.hnsctl("network", "delete", "vxlan0"), node.overlay(vsid=4000))
    ),
    "source-vip: from an old subnet": Break(
        "source-vip",
        "overlay",
        lambda node: node.source_vip.write_text(
            json.dumps({"cniVersion": "1.0.0", "ips": [{"address": "10.244.7.3/24"}]})
        ),
    ),
    "source-vip: not JSON": Break("source-vip", "overlay", lambda node: node.source_vip.write_text("{")),
    "source-vip: absent on overlay": Break("source-vip", "overlay", _rm("source_vip")),
    "source-vip: not reserved": Break("source-vip", "overlay", lambda node: (_store(node) / SOURCE_VIP).unlink()),
    "source-vip: a pod holds it": Break("source-vip", "overlay", _vip_held_by_a_pod),
    "hns-features: loopbackDSR on HNS 9.2": Break(
        "hns-features",
        "bridge",
        lambda node: (node.env.update(LIBHNS_SIM_VERSION="9.2"), _edit_delegate(loopbackDSR=True)(node)),
        prose_names=_conf,
    ),
    "hns-features: the VXLAN port on HNS 10.2": Break(
        "hns-features", "overlay", lambda node: node.env.update(LIBHNS_SIM_VERSION="10.2"), prose_names=_netconf
    ),
    "ipam-store: a reservation whose pod is gone": Break("ipam-store", "bridge", _orphan),
    "ipam-store: an endpoint host-local does not know": Break(
        "ipam-store", "bridge", _unreserved_endpoint, fixed_by="stale-endpoints"
    ),
    "stale-endpoints: an endpoint of no sandbox": Break("stale-endpoints", "overlay", _stale_endpoint),
    "pod-endpoints: a running pod's endpoint deleted": Break("pod-endpoints", "bridge", _pod_without_endpoint),
    "endpoint-state: a running pod's endpoint detached": Break("endpoint-state", "overlay", _pod_endpoint_detached),
    "source-vip: kube-proxy's endpoint gone": Break(
        "source-vip",
        "overlay",
        _services(lambda node: node.hnsctl("endpoint", "delete", endpoint_of(node, SOURCE_VIP, remote=False))),
    ),
    "lb-backends: a backend HNS lost": Break(
        "lb-backends",
        "bridge",
        _services(lambda node: node.hnsctl("endpoint", "delete", endpoint_of(node, "10.244.6.4"))),
    ),
    "stale-remote-endpoints: a remote endpoint no load balancer lists": Break(
        "stale-remote-endpoints", "overlay", _services(_remote("10.244.7.7"))
    ),
    "remote-endpoint-addresses: a remote endpoint on a local pod's address": Break(
        "remote-endpoint-addresses", "bridge", _services(_remote("10.244.4.2"))
    ),
    "dns-load-balancer: none for the cluster DNS": Break(
        "dns-load-balancer",
        "bridge",
        _services(
            lambda node: [
                node.hnsctl("loadbalancer", "delete", lb["ID"])
                for lb in node.hnsctl("loadbalancer", "list", "-o", "json")
                if CLUSTER_DNS in (lb.get("FrontendVIPs") or ())
            ]
        ),
    ),
    "permissions: a bin dir anyone may write": Break("permissions", "bridge", lambda node: node.bin.chmod(0o777)),
    "build: plugins of another build": Break("build", "overlay", lambda node: node.write_manifest("0.0.9-abc-1")),
    "netpol-agent: the agent gone quiet": Break("netpol-agent", "bridge", silence, node_args=agent_args),
    "netpol-drift: an endpoint's ACLs set by someone else": Break(
        "netpol-drift", "bridge", drift, node_args=agent_args
    ),
    "netpol-unprotected: an isolated pod's ACLs removed": Break(
        "netpol-unprotected", "bridge", strip, node_args=agent_args
    ),
    "runtime-status: containerd 2.x with a config it never asks": Break(
        "runtime-status",
        "overlay",
        lambda node: (node.root / "config.toml").write_text("version = 3\n"),
        prose_names=_conf,
    ),
}

# Fixes that name no file of the node, and why: HNS's side, or the environment.
NO_FILE = {
    "hns-network: HNS not reachable": "LIBHNS_SIM_VERSION",
    "config: --cni-conf that does not exist": "conf_dir",
    "plugins: bin dir unreadable": "bin_dir",
    "vxlan: the HNS network's VNI": "",
    "subnet-env: a new lease": "",
    "subnet-env: pods of an earlier lease": "crictl rmp -f oldpod",  # the runtime's, then the kubelet's
    "build: plugins of another build": "DaemonSet",
    # the pod is recreated through the runtime (tests/e2e/test_pod_endpoints.py carries it out)
    "pod-endpoints: a running pod's endpoint deleted": "crictl rmp pod-a",
    "endpoint-state: a running pod's endpoint detached": "crictl rmp pod-b",
    # kube-proxy's own state: kube-proxy programs it again when it starts
    "source-vip: kube-proxy's endpoint gone": "restart kube-proxy",
    "lb-backends: a backend HNS lost": "restart kube-proxy",
    "dns-load-balancer: none for the cluster DNS": "restart kube-proxy",
    # the agent's DaemonSet, which only the cluster restarts
    "netpol-agent: the agent gone quiet": "rollout restart daemonset wincni-netpol-windows",
}


def doctor(node: Node, brk: Break) -> dict[str, dict]:
    return node.doctor(*brk.args, *brk.node_args(node))


def run_as_printed(node: Node, command: str) -> None:
    """The command through the shell, as an operator pastes it; our programs found on PATH."""
    assert command and not any(c in command for c in ";&|\n`$<>"), command  # one command, nothing else
    env = {**node.env, "PATH": f"{VENV_BIN}{os.pathsep}{node.env['PATH']}"}
    proc = subprocess.run(command, shell=True, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, (command, proc.stdout, proc.stderr)


@pytest.mark.parametrize("name", list(BREAKS))
def test_each_fix_works_as_printed(tmp_path: Path, name: str) -> None:
    brk = BREAKS[name]
    node = sim_node(tmp_path, brk.kind)
    brk.apply(node)
    found = doctor(node, brk)
    check = found[brk.check]
    assert check["status"] != "ok" and check["fix"], check
    fixer = found[brk.fixed_by or brk.check]
    if fixer["run"]:
        run_as_printed(node, fixer["run"])
        again = doctor(node, brk)
        # a fix that removes what its check reads (vxlan's network, until flanneld makes it again) leaves it unchecked
        assert again[brk.check]["status"] in ("ok", "not-checked"), (check, again[brk.check])
        return
    text = check["message"] + " " + check["fix"]
    paths = brk.prose_names(node)
    assert paths or name in NO_FILE, f"{name}: a prose fix must name the file to change: {check}"
    for path in paths:
        assert str(path) in text, (path, check)
    assert NO_FILE.get(name, "") in text
    if name == "config: a conf dir without a config":
        assert f"{node.conf_dir} holds no *.conf" in check["message"] and "wincni install" in check["fix"]


def test_a_missing_config_leaves_the_checks_that_need_it_unchecked(tmp_path: Path) -> None:
    found = sim_node(tmp_path).doctor("--cni-conf", str(tmp_path / "nope"))
    assert found["config"]["message"] == f"--cni-conf {tmp_path / 'nope'} does not exist"
    for id_ in ("plugins", "subnet-env", "net-conf", "source-vip", "hns-features", "exceptions", "ipam-store"):
        assert found[id_]["status"] == "not-checked" and found[id_]["message"].startswith("not checked"), found[id_]


def test_the_table_carries_the_command_alone_on_a_run_line(tmp_path: Path) -> None:
    import io

    from tools.wincni.cli.main import main

    node = sim_node(tmp_path, "overlay")
    node.source_vip.unlink()
    node.write_cni_conf(node.cni_conf)
    out = io.StringIO()
    main(
        node.doctor_argv(output="table"),
        out,
        io.StringIO(),
        node.env,
        platform="linux",
        cwd=str(tmp_path),
    )
    lines = out.getvalue().splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("WARN  source-vip"))
    run = lines[at + 1].split("run: ", 1)[1]
    assert shlex.split(run) == [
        "wincni",
        "sourcevip",
        "--cni-conf",
        str(node.conf_dir / "10-flannel.conf"),
        "--out",
        str(node.source_vip),
    ]
    assert lines[at + 2].strip().startswith("fix: then restart kube-proxy")


def test_windows_commands_are_quoted_for_windows_and_name_the_frozen_folder() -> None:
    """PowerShell (the Windows node's shell) takes a quoted program only after ``&``: without it the
    line is a string expression and the next word a parse error."""
    facts = NodeFacts(windows=True, tools=r"C:\Program Files\wincni")
    assert (
        command(facts, "wincni", "reclaim", "--cni-conf", r"C:\etc\cni\net.d\10-flannel.conflist")
        == r'& "C:\Program Files\wincni\wincni.exe" reclaim --cni-conf C:\etc\cni\net.d\10-flannel.conflist'
    )
    assert (
        command(NodeFacts(windows=True, tools=r"C:\opt\cni\bin"), "hnsctl", "endpoint", "delete", "1A-2B")
        == r"C:\opt\cni\bin\hnsctl.exe endpoint delete 1A-2B"
    )  # the same line in cmd and PowerShell


def test_the_windows_acl_fix_pastes_into_powershell_and_any_language() -> None:
    """icacls' grants quoted (unquoted, PowerShell runs "(OI)" as a command) and by SID (SYSTEM,
    Administrators and Users are named otherwise on a German or French Windows)."""
    import re

    check = permissions(NodeFacts(windows=True, open_dirs=(("CNI bin dir", r"C:\opt\cni\bin", "Users"),)))
    command = "icacls" + check.fix.split("icacls", 1)[1]
    unquoted = re.sub(r'"[^"]*"', "", command.split(" (SYSTEM")[0])
    assert "(" not in unquoted, command
    assert '"*S-1-5-18:(OI)(CI)F" "*S-1-5-32-544:(OI)(CI)F" "*S-1-5-32-545:(OI)(CI)RX"' in command


def test_the_simulator_on_windows_names_where_the_variable_is_set() -> None:
    """The one check the simulated Linux node cannot break (it judges a Windows node's environment)."""
    check = backend(NodeFacts(simulated=True))
    assert check.status == "fail" and not check.run
    assert "LIBHNS_BACKEND" in check.fix and r"HKLM\SYSTEM\CurrentControlSet\Services\containerd" in check.fix


def test_every_check_id_is_broken_at_least_once() -> None:
    """backend: below; policy-lists, old-network and duplicate-load-balancers break what the
    simulator keeps whole (a policy list's State, a network with endpoints, one load balancer a
    frontend): test_wincni_doctor_checks_proxy breaks them in a bundle."""
    replayed = {"backend", "policy-lists", "old-network", "duplicate-load-balancers"}
    assert {b.check for b in BREAKS.values()} | replayed == CHECK_IDS
