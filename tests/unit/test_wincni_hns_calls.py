"""What the DaemonSet's background work costs HNS, counted through the journal (``LIBHNS_JOURNAL``,
every raw call, Close included): the sweep's pass, ``wincni metrics`` and the full doctor read
HNS in as many calls at 50 pods and 21 load balancers as at 5 and 1 (a per-object open, query
and close that comes back fails here), and a sweep pass that finds nothing to free writes nothing and says one line at most."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pytest

from hnsnode import Node, add_pods, drain_jsonl
from tools.wincni.cli.main import main

pytestmark = [pytest.mark.slow, pytest.mark.node(build=lambda root: grown(Node(root)))]


def grown(node: Node) -> Node:
    node.cni_conf = node.flannel_files("bridge")
    node.bridge()
    return add_pods(node, {f"pod{i}": "" for i in range(5)})


def sweep_argv(node: Node, *extra: str) -> list[str]:
    conf = ["--cni-conf", str(node.conf_dir), "--containerd-config", str(node.root / "config.toml")]
    return ["reclaim", *conf, "--runtime-endpoint", "none", *extra]


def calls(node: Node, argv: list[str]) -> list[str]:
    """The raw calls (op, and HNSCall's path) of one ``wincni argv`` run in-process."""
    journal = node.root / "background.jsonl"
    rc = main(argv, io.StringIO(), io.StringIO(), {**node.env, "LIBHNS_JOURNAL": str(journal)}, "linux", str(node.root))
    assert rc in (0, 1), argv  # the doctor's 1: a check failed (these Services hold no cluster DNS)
    return [f"{c['op']} {c.get('path') or ''}".strip() for c in drain_jsonl(journal)]


def background(node: Node) -> dict[str, list[str]]:
    textfile = node.root / "textfile"
    textfile.mkdir(exist_ok=True)
    return {
        "sweep": calls(node, sweep_argv(node)),
        "metrics": calls(node, ["metrics", *node.node_flags(), "--textfile", str(textfile)]),
        "doctor": calls(node, node.doctor_argv()),
    }


def services(node: Node, count: int, first: int = 1) -> None:
    """``count`` load balancers as kube-proxy makes them, each over one pod endpoint, their VIPs
    from 10.96.1.``first`` on."""
    from libhns.client import open_clients

    hcn, _ = open_clients({k: v for k, v in node.env.items() if k != "LIBHNS_JOURNAL"})
    pods = [e for e in hcn.list_endpoints() if e.name and e.name.startswith("pod")]
    for i, ep in zip(range(count), pods):
        mapping = {"Protocol": 6, "InternalPort": 8080, "ExternalPort": 80}
        hcn.create_load_balancer(
            {"HostComputeEndpoints": [ep.id], "FrontendVIPs": [f"10.96.1.{i + first}"], "PortMappings": [mapping]}
        )


def test_the_sweep_metrics_and_the_doctor_cost_hns_the_same_at_5_and_50_pods(node: Node) -> None:
    services(node, 1)
    few = background(node)
    add_pods(node, {f"pod{i}": "" for i in range(5, 50)})
    services(node, 20, first=2)
    many = background(node)
    for name in few:
        assert sorted(many[name]) == sorted(few[name]), name
        opens = [c for c in many[name] if c.startswith("HcnOpen")]
        assert len(opens) <= 2 and len(many[name]) <= 16, (name, many[name])


def files(root: Path) -> dict[str, tuple[int, int, int]]:
    """Every file under ``root`` (the node's stores, locks, logs, HNS's state): inode, size, mtime."""
    found = {}
    for folder, _, names in os.walk(root):
        for name in names:
            st = os.lstat(os.path.join(folder, name))
            found[os.path.join(folder, name)] = (st.st_ino, st.st_size, st.st_mtime_ns)
    return found


class Stop(Exception):
    pass


def test_a_sweep_pass_that_finds_nothing_to_free_writes_nothing_and_says_one_line_at_most(node: Node) -> None:
    """The first pass says once how it asks the runtime; the next says nothing; neither touches
    a file (host-local's index, its folder, the locks, HNS's state)."""
    env = {k: v for k, v in node.env.items() if k != "LIBHNS_JOURNAL"}
    before, said = files(node.root), []

    def sleep(seconds: float) -> None:
        said.append(err.getvalue())
        if len(said) == 2:
            raise Stop

    err = io.StringIO()
    with pytest.raises(Stop):
        main(sweep_argv(node, "--every", "60"), io.StringIO(), err, env, "linux", str(node.root), sleep=sleep)
    assert files(node.root) == before
    assert said[0].count("\n") <= 1 and said[1] == said[0], said


def test_the_first_read_of_a_pass_finds_the_leaked_pod_and_the_re_check_frees_it(node: Node) -> None:
    """The constant reads still find what to free: a pod whose namespace went."""
    (leaked,) = [e for e in node.endpoints().values() if e["Name"] == f"pod0_{node.network}"]
    node.hnsctl("namespace", "delete", leaked["Namespace"]["ID"])
    out = io.StringIO()
    rc = main(sweep_argv(node, "--min-age", "0", "--force", "-o", "json"), out, io.StringIO(), node.env, "linux")
    assert rc == 0
    removed = {(r["kind"], r["name"]) for r in json.loads(out.getvalue())["removed"]}
    assert removed == {("endpoint", f"pod0_{node.network}"), ("delegate", "pod0")}
