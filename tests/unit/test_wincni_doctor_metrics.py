"""``wincni metrics --textfile``: gauges a strict exposition-format reader accepts, counting what
the simulated node holds, written atomically and never through a planted link."""

from __future__ import annotations

import io
import os
import stat
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import promtext
from hnsnode import Node, pods_node, services_node
from test_wincni_doctor import PROXY_CHECKS
from tools.wincni.doctor.checks import registry as checks
from tools.wincni.doctor.facts import NodeFacts
from tools.wincni.doctor.metrics import command as metrics
from tools.wincni.doctor.metrics.gauges import _escape, exposition, gauges
from tools.wincni.judge.verdict import Check

pytestmark = pytest.mark.node("bridge", "overlay", build=pods_node)


def write_metrics(node: Node, folder: Path, *extra: str) -> tuple[int, str, str]:
    return node.wincni("metrics", "--textfile", str(folder), *extra)


def test_gauges_count_the_node(node: Node, tmp_path: Path) -> None:
    net = node.cni_conf["name"]
    (pod_a,) = [e["ID"] for e in node.hnsctl("endpoint", "list", "-o", "json") if e["Name"] == f"pod-a_{net}"]
    node.hnsctl("endpoint", "create", "remote_10.244.4.202", "--network", net, "--ip", "10.244.4.202", "--remote")
    node.hnsctl(
        "loadbalancer", "create", "--endpoint", pod_a, "--endpoint", "remote_10.244.4.202", "--vip", "10.96.0.10",
        "--port", "53", "--protocol", "udp",
    )  # fmt: skip
    rc, out, err = write_metrics(node, tmp_path / "textfile")
    assert (rc, err) == (0, "") and out == f"{tmp_path / 'textfile' / metrics.FILE}\n"
    found = promtext.parse((tmp_path / "textfile" / metrics.FILE).read_text())
    assert {f["type"] for f in found.values()} == {"gauge"} and all(f["help"] for f in found.values())

    def value(name: str, **labels: str) -> float:
        return found[name]["samples"][tuple(sorted(labels.items()))]

    assert value("wincni_hns_up") == 1
    assert value("wincni_hns_networks") == 1
    assert value("wincni_hns_endpoints") == 5  # two pods, the stale one, two remote
    assert value("wincni_hns_remote_endpoints") == 2
    assert value("wincni_hns_load_balancers") == 1
    assert value("wincni_orphans", kind="endpoint") == 1  # gone-pod: no sandbox holds it
    assert value("wincni_orphans", kind="remote-endpoint") == 1  # remote_10.244.4.201: no load balancer lists it
    assert value("wincni_orphans", kind="reservation") == 0  # the pods' are young and have endpoints
    assert value("wincni_pod_addresses", family="ipv4") == 253
    assert value("wincni_pod_addresses_free", family="ipv4") == 253 - 3  # two pods and the source VIP
    assert value("wincni_check", check="stale-endpoints", status="warn") == 1
    assert value("wincni_check", check="stale-endpoints", status="ok") == 0
    ids = {c.id for c in checks.CHECKS} - {"reach"}
    assert {dict(k)["check"] for k in found["wincni_check_not_checked"]["samples"]} == ids
    assert sorted(p.name for p in (tmp_path / "textfile").iterdir()) == [metrics.FILE]  # no temp left behind


def test_not_checked_is_kept_apart_from_the_statuses() -> None:
    samples = gauges(NodeFacts(), [Check("hns-network", "not-checked", "not checked: no HNS")])
    rows = {(name, labels): v for name, labels, v in samples}
    assert rows[("wincni_check_not_checked", (("check", "hns-network"),))] == 1
    assert all(rows[("wincni_check", (("check", "hns-network"), ("status", s)))] == 0 for s in ("ok", "warn", "fail"))
    assert not [name for name, _, _ in samples if name.startswith("wincni_hns_") and name != "wincni_hns_up"]


def test_an_unreadable_count_is_left_out_not_zero(node: Node, tmp_path: Path) -> None:
    node.env["LIBHNS_BACKEND"] = "nonsense"
    rc, _, err = write_metrics(node, tmp_path)
    assert rc == 0, err
    found = promtext.parse((tmp_path / metrics.FILE).read_text())
    assert found["wincni_hns_up"]["samples"] == {(): 0}
    assert "wincni_hns_endpoints" not in found and "wincni_orphans" not in found


def test_the_file_is_replaced_not_written_through_a_link(node: Node, tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("keep me")
    folder = tmp_path / "textfile"
    folder.mkdir()
    (folder / metrics.FILE).symlink_to(victim)
    assert write_metrics(node, folder)[0] == 0
    assert victim.read_text() == "keep me" and not (folder / metrics.FILE).is_symlink()


@pytest.mark.parametrize("mode, group", [(0o1777, 0), (0o2775, 100), (0o777, 0)], ids=["tmp", "group", "open"])
def test_a_shared_textfile_folder_is_left_as_it_is(node: Node, tmp_path: Path, mode: int, group: int) -> None:
    folder = tmp_path / "textfile"
    folder.mkdir()
    os.chown(folder, 0, group)
    folder.chmod(mode)
    assert write_metrics(node, folder)[0] == 0
    assert (stat.S_IMODE(folder.stat().st_mode), folder.stat().st_gid) == (mode, group)
    assert stat.S_IMODE((folder / metrics.FILE).stat().st_mode) == 0o600
    assert sorted(p.name for p in folder.iterdir()) == [metrics.FILE]


def test_every_rewrites_it_on_the_interval(node: Node, tmp_path: Path) -> None:
    from tools.wincni.cli.context import Context
    from tools.wincni.cli.main import build_parser

    args = build_parser("linux").parse_args(
        ["metrics", *node.node_flags(), "--textfile", str(tmp_path), "--every", "7"]
    )
    slept: list[float] = []
    out, err = io.StringIO(), io.StringIO()
    ctx = Context(out, err, node.env, "linux", str(node.root), sleep=slept.append)
    rc = metrics.run(metrics.options(args, ctx), ctx, rounds=3)
    assert (rc, slept, err.getvalue()) == (0, [7, 7], "")


@given(st.text(), st.text())
def test_any_label_value_and_help_survive_the_format(label: str, text: str) -> None:
    samples = [("wincni_check", (("check", label), ("status", "ok")), 1)]
    found = promtext.parse(exposition(samples))
    assert found["wincni_check"]["samples"] == {(("check", label), ("status", "ok")): 1.0}
    assert promtext._unescape(_escape(text, quote=False), 0, quotes=False) == text


@pytest.mark.parametrize(
    "text",
    [
        "a 1",  # no final line feed
        "# TYPE a gauge\n# TYPE a gauge\na 1\n",  # TYPE twice
        "a 1\n# TYPE a gauge\n",  # TYPE after the samples
        "a 1\nb 1\na 2\n",  # a's lines not one group
        'a{x="1"} 1\na{x="1"} 2\n',  # the same series twice
        'a{x="\\q"} 1\n',  # an escape the format has not
        'a{__x="1"} 1\n',  # a reserved label name
        "a one\n",  # not a float
        "# TYPE a gauges\na 1\n",  # no such type
        "1a 1\n",  # a bad metric name
    ],
)
def test_the_reader_refuses_what_the_format_does_not_allow(text: str) -> None:
    with pytest.raises(promtext.FormatError):
        promtext.parse(text)


@pytest.mark.node("bridge", "overlay", build=services_node)
def test_gauges_count_kube_proxys_objects_and_checks(node: Node, tmp_path: Path) -> None:
    """A node with Services programmed: its load balancers and remote endpoints counted, each of
    kube-proxy's checks a status; a remote endpoint left behind is an orphan and a warning."""
    node.hnsctl("endpoint", "create", "", "--network", node.cni_conf["name"], "--ip", "10.244.7.7", "--remote")
    assert write_metrics(node, tmp_path)[0] == 0
    found = promtext.parse((tmp_path / metrics.FILE).read_text())

    def value(name: str, **labels: str) -> float:
        return found[name]["samples"][tuple(sorted(labels.items()))]

    overlay = node.cni_conf["name"] == "vxlan0"
    assert value("wincni_hns_load_balancers") == 6
    assert value("wincni_hns_remote_endpoints") == (6 if overlay else 3) + 1  # overlay: the Service VIPs' too
    assert value("wincni_orphans", kind="remote-endpoint") == 1
    assert value("wincni_check", check="stale-remote-endpoints", status="warn") == 1
    for check in PROXY_CHECKS:
        assert value("wincni_check_not_checked", check=check) == 0
        expected = "warn" if check == "stale-remote-endpoints" else "ok"
        assert value("wincni_check", check=check, status=expected) == 1, check
