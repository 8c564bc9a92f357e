"""A day in the life of a node: a hypothesis state machine over one simulated node that
interleaves what happens to a Windows node — flanneld's lease and network, ``wincni sourcevip``,
pod ADD/CHECK/DEL/GC through flannel over win-bridge or win-overlay (HCN and HNSCall sandboxes),
faults (hangs past the deadline, transient RPC errors, ``kill -9`` of an ADD at a random moment,
stale and live planted endpoints), ``wincni reclaim`` (``--min-age 0`` and the default), the
doctor, an HNS restart (the network comes back with a new ID, possibly with a new lease subnet) —
and checks the ownership invariants after every step:

- each live pod's address is reserved exactly once, to it, and its endpoint exists with it;
- no two live pods share an address;
- the source VIP stays reserved to the node and is never a pod's (nor any endpoint's);
- nothing is reserved without an owner once reclaim has run past the reclaim window;
- after recovery (the runtime's GC, reclaim, sourcevip) the doctor is healthy.

Plugins run in-process through their ``main`` (a ``kill -9`` needs a process). ``make test`` runs a
bounded number of examples; ``make soak`` runs it for ``SOAK_MINUTES`` and prints the figures.
"""

from __future__ import annotations

import functools
import io
import json
import os
import time
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from hnsnode import EXCEPTIONS, Node, net_conf_doc
from libhns.sim import Simulator
from plugins.cni import log, ownership
from plugins.flannel.__main__ import main as flannel_main
from test_killed_add import kill_at, start_add
from tools.wincni.cli.main import main as wincni_main
from unit.test_wincni_install import package_folder

STATS: Counter = Counter()
TRACE: list[str] = []  # the steps of the current example
FAILURES: list[str] = []  # each failing step, with the steps before it
NOTES: list[str] = []  # what the soak prints besides: the HNS refusals (code 100) met, with their steps
SUBNETS = ("10.244.4", "10.244.7")
VIP_OWNER = ownership.PINNED_PREFIX + "source-vip"


def _recorded(fn):
    """A rule or invariant that notes its failure, with the steps before it, in ``FAILURES``: what
    is reported, since replaying an example whose outcome raced (kill -9, a hang, reclaim against
    an ADD) need not fail the same way."""

    @functools.wraps(fn)
    def run(self, *args, **kwargs):
        try:
            return fn(self, *args, **kwargs)
        except Exception as err:
            FAILURES.append(f"{fn.__name__}: {type(err).__name__}: {str(err)[:1500]}\n  after: {' -> '.join(TRACE)}")
            raise

    return run


class NodeDay(RuleBasedStateMachine):
    """One node; ``self.pods`` is what the runtime believes runs (cid -> (netns, address))."""

    def __init__(self) -> None:
        super().__init__()
        import tempfile

        self.root = Path(tempfile.mkdtemp(prefix="nodeday-"))
        self.node = Node(self.root).venv_plugins()
        self.node.env["WINCNI_LOCK_DIR"] = str(self.root / "locks")
        self.pods: dict[str, tuple[str, str]] = {}
        self.vip = ""
        self.serial = 0
        self.subnet = SUBNETS[0]
        self.reclaimed_at_zero = False
        self.builds = 0
        self.recovered_at = 0  # len(TRACE) at the last recovery: the doctor's rule runs every few steps
        TRACE.clear()

    def teardown(self) -> None:
        import shutil

        log.reset()
        shutil.rmtree(self.root, ignore_errors=True)

    # ------------------------------------------------------------------ the node's side
    @initialize(kind=st.sampled_from(["bridge", "overlay", "standalone"]))
    @_recorded
    def flanneld_starts(self, kind: str) -> None:
        """flanneld's lease and network (host-gw: cbr0 with cbr0_ep; vxlan: vxlan0), or, for
        ``standalone``, no network: win-bridge's first ADD makes cbr0 from the ``network`` section."""
        self.step("flanneld")
        self.kind = kind
        self.name = "vxlan0" if kind == "overlay" else "cbr0"
        self.node.network = self.name
        self.node.lease(f"{self.subnet}.1/24").write_net_conf(
            net_conf_doc("overlay" if kind == "overlay" else "bridge")
        )
        self.conf = {
            "cniVersion": "1.0.0",
            "name": self.name,
            "type": "flannel",
            "subnetFile": str(self.node.subnet_env),
            "netConf": str(self.node.net_conf),
            "dataDir": str(self.node.flannel_dir),
            "ipam": {"dataDir": str(self.node.ipam_dir)},
            "delegate": {
                "type": "win-overlay" if kind == "overlay" else "win-bridge",
                "policies": [
                    {"Name": "EndpointPolicy", "Value": {"Type": "OutBoundNAT", "ExceptionList": list(EXCEPTIONS)}},
                    {
                        "Name": "EndpointPolicy",
                        "Value": {"Type": "ROUTE", "DestinationPrefix": "10.96.0.0/12", "NeedEncap": True},
                    },
                ],
            },
        }
        self.flanneld_network()

    def flanneld_network(self) -> None:
        subnet, gw = f"{self.subnet}.0/24", f"{self.subnet}.1"
        if self.kind == "standalone":
            self.conf["delegate"]["network"] = {"subnet": subnet, "adapter": "Ethernet"}
        elif self.kind == "bridge":
            self.node.hnsctl(
                "network",
                "create",
                "cbr0",
                "--type",
                "L2Bridge",
                "--subnet",
                subnet,
                "--gateway",
                gw,
                "--adapter",
                "Ethernet",
            )
            self.node.hnsctl("endpoint", "create", "cbr0_ep", "--network", "cbr0", "--ip", f"{self.subnet}.2", "--host")
        else:
            self.node.overlay(subnet=subnet)
        self.node.cni_conf = self.conf
        self.node.write_cni_conf(self.conf)

    def step(self, what: str, fault: bool = False) -> None:
        """Count a step (and a fault), and note it with the rule's arguments in ``TRACE``: what a
        failure in the soak, where hypothesis may not replay it, is reported with."""
        import sys

        args = {k: v for k, v in sys._getframe(1).f_locals.items() if k not in ("self", "data")}
        TRACE.append(f"{sys._getframe(1).f_code.co_name}({', '.join(f'{k}={v!r}' for k, v in args.items())})")
        STATS["steps"] += 1
        STATS[f"step:{what}"] += 1
        if fault:
            STATS["faults"] += 1

    # ------------------------------------------------------------------ running things
    def flannel(
        self, command: str, cid: str = "", netns: str = "", conf: dict | None = None, **env: str
    ) -> tuple[int, dict]:
        out = io.StringIO()
        full = {
            **self.node.env,
            "CNI_COMMAND": command,
            "CNI_CONTAINERID": cid,
            "CNI_NETNS": netns,
            "CNI_IFNAME": "eth0",
            **env,
        }
        rc = flannel_main(full, io.BytesIO(json.dumps(conf or self.conf).encode()), out)
        log.reset()
        return rc, json.loads(out.getvalue()) if out.getvalue().strip() else {}

    def wincni(self, *argv: str) -> tuple[int, str]:
        out, err = io.StringIO(), io.StringIO()
        rc = wincni_main(list(argv), out, err, self.node.env, platform="linux", cwd=str(self.root))
        log.reset()
        return rc, out.getvalue()

    def new_pod(self, api: str) -> tuple[str, str]:
        self.serial += 1
        cid = f"pod{self.serial}"
        return cid, self.node.sandbox(api, cid)

    def end_sandbox(self, cid: str, netns: str) -> None:
        """The runtime removes the sandbox after its DEL (or it died): namespace or pause container."""
        dump = self.node.hnsctl("dump", "-o", "json")
        if netns != "none":
            if any(ns["ID"].upper() == netns.upper() for ns in dump["namespaces"]):
                self.node.hnsctl("namespace", "delete", netns)
        elif any(c["Id"] == cid for c in self.node.hnsctl("container", "list", "-o", "json")):
            self.node.hnsctl("container", "delete", cid)

    def added(self, cid: str, netns: str, rc: int, out: dict) -> None:
        """What the runtime does with an ADD's answer: a live pod, or DEL and the sandbox gone."""
        if rc == 0:
            self.pods[cid] = (netns, out["ips"][0]["address"].split("/")[0])
            return
        assert out.get("code") in (11, 100), out  # try again later / HNS failure, never a crash
        STATS[f"add-error:{out.get('code')}"] += 1
        if out.get("code") == 100:  # HNS refused: which call, and why, for the soak's summary
            STATS[f"add-error:100:{out.get('msg', '')[:90]}"] += 1
            NOTES.append(f"{out.get('msg')} after: {' -> '.join(TRACE)}")
        self.remove(cid, netns)

    def remove(self, cid: str, netns: str) -> None:
        rc, out = self.flannel("DEL", cid, netns)
        assert rc == 0, out
        self.end_sandbox(cid, netns)
        self.pods.pop(cid, None)

    # ------------------------------------------------------------------ pods
    @rule(api=st.sampled_from(["v1", "v2"]))
    @_recorded
    def add_pod(self, api: str) -> None:
        self.step("add")
        cid, netns = self.new_pod(api)
        self.added(cid, netns, *self.flannel("ADD", cid, netns))

    @precondition(lambda self: self.pods)
    @rule(data=st.data())
    @_recorded
    def del_pod(self, data: st.DataObject) -> None:
        self.step("del")
        cid = data.draw(st.sampled_from(sorted(self.pods)))
        self.remove(cid, self.pods[cid][0])

    @precondition(lambda self: self.pods)
    @rule(data=st.data(), command=st.sampled_from(["CHECK", "ADD"]))
    @_recorded
    def runtime_asks_again(self, data: st.DataObject, command: str) -> None:
        """CHECK of a running pod, or its ADD once more (the same answer, nothing new)."""
        self.step(command.lower() if command == "CHECK" else "retried-add")
        cid = data.draw(st.sampled_from(sorted(self.pods)))
        netns, ip = self.pods[cid]
        prev = {"cniVersion": "1.0.0", "ips": [{"address": f"{ip}/24"}]}
        rc, out = self.flannel(
            command, cid, netns, conf={**self.conf, "prevResult": prev} if command == "CHECK" else None
        )
        assert rc == 0 and (command == "CHECK" or out["ips"][0]["address"].split("/")[0] == ip), out

    @precondition(lambda self: len(TRACE) % 3 == 0)  # as rare as a runtime's GC
    @rule()
    @_recorded
    def runtime_gc(self) -> None:
        self.step("gc")
        conf = {
            **self.conf,
            "cniVersion": "1.1.0",
            "cni.dev/valid-attachments": [{"containerID": cid, "ifname": "eth0"} for cid in self.pods],
        }
        rc, out = self.flannel("GC", conf=conf)
        assert rc == 0, out

    # ------------------------------------------------------------------ faults
    @rule(api=st.sampled_from(["v1", "v2"]), what=st.sampled_from(["0x800706BA", "stale-ip", "live-ip"]))
    @_recorded
    def add_meets_a_fault(self, api: str, what: str) -> None:
        """HNS restarting (a transient RPC error, retried), or an endpoint left on the pod's
        address by a gone sandbox (removed) or a live one (never touched: code 11)."""
        self.step(f"fault:{what}", fault=True)
        target = "HcnCreateEndpoint#1" if api == "v2" else "HNSCall:POST /endpoints/#1"
        Simulator.from_env(self.node.env).reset_fault_counters()
        cid, netns = self.new_pod(api)
        rc, out = self.flannel("ADD", cid, netns, LIBHNS_SIM_FAULTS=f"{target}={what}")
        if what == "live-ip":  # 100 when it squats the host endpoint's address of a network this ADD makes
            assert rc == 1 and (out["code"] == 11 or "creating HNS network" in out["msg"]), out
        self.added(cid, netns, rc, out)

    @rule(api=st.sampled_from(["v1", "v2"]), call=st.sampled_from(["create", "attach", "host-endpoint"]))
    @_recorded
    def add_hangs_past_the_deadline(self, api: str, call: str) -> None:
        """An HNS call hangs past the command's deadline (``host-endpoint``: the set-up of a
        standalone network, when this ADD makes it); HNS completes it late."""
        self.step("hang", fault=True)
        targets = {
            ("v2", "create"): "HcnCreateEndpoint",
            ("v2", "attach"): "HcnModifyNamespace",
            ("v1", "create"): "HNSCall:POST /endpoints/",
            ("v1", "attach"): "HcsModifyComputeSystem",
        }
        Simulator.from_env(self.node.env).reset_fault_counters()
        cid, netns = self.new_pod(api)
        rc, out = self.flannel(
            "ADD",
            cid,
            netns,
            LIBHNS_SIM_FAULTS=f"{targets.get((api, call), 'HNSCall:POST /endpoints/')}#1=hang:1.2",
            LIBHNS_COMMAND_TIMEOUT="0.8",
        )
        time.sleep(0.6)  # HNS answers the abandoned call late, as it does
        self.added(cid, netns, rc, out)

    @rule(api=st.sampled_from(["v1", "v2"]), after=st.floats(0.0, 0.8), retry=st.booleans())
    @_recorded
    def add_killed(self, api: str, after: float, retry: bool) -> None:
        """kill -9 of an ADD at a random moment; the runtime retries it, or gives the pod up (DEL)."""
        self.step("kill", fault=True)
        cid, netns = self.new_pod(api)
        kill_at(start_add(self.node, self.conf, cid, netns, {"CNI_IFNAME": "eth0"}), after)
        if retry:
            self.added(cid, netns, *self.flannel("ADD", cid, netns))
        else:
            self.remove(cid, netns)

    @rule(api=st.sampled_from(["v1", "v2"]))
    @_recorded
    def reclaim_races_a_retried_add(self, api: str) -> None:
        """A killed ADD left its reservation long ago (no endpoint); the runtime retries it while
        the operator runs ``wincni reclaim`` with the default --min-age."""
        self.step("reclaim-race", fault=True)
        cid, netns = self.new_pod(api)
        rc, out = self.flannel("ADD", cid, netns)
        if rc:
            return self.added(cid, netns, rc, out)
        ep = self.node.endpoints()[f"{cid}_{self.name}"]
        self.node.hnsctl("endpoint", "delete", ep["ID"])  # as if the kill came before the endpoint
        self.age_reservations()
        import threading

        done: list = []
        racer = threading.Thread(
            target=lambda: done.append(
                self.wincni("reclaim", "--cni-conf", str(self.node.conf_dir / "10-flannel.conf"))
            )
        )
        racer.start()
        self.added(cid, netns, *self.flannel("ADD", cid, netns))
        racer.join()
        assert done and done[0][0] == 0, done

    def age_reservations(self) -> None:
        """Time passes: every reservation is past the reclaim window."""
        store = self.node.ipam_dir / self.name
        then = time.time() - 2 * ownership.IN_FLIGHT_SECONDS
        for path in store.iterdir() if store.exists() else ():
            os.utime(path, (then, then))

    @rule(live=st.booleans())
    @_recorded
    def planted_endpoint_elsewhere(self, live: bool) -> None:
        """An endpoint of a future pod's name on another network; live or left by a gone sandbox."""
        self.step("plant:elsewhere", fault=True)
        cid = f"pod{self.serial + 1}"
        other = "elsewhere"
        if not any(n["Name"] == other for n in self.node.hnsctl("network", "list", "-o", "json")):
            self.node.hnsctl(
                "network",
                "create",
                other,
                "--type",
                "L2Bridge",
                "--subnet",
                "192.168.99.0/24",
                "--gateway",
                "192.168.99.1",
                "--adapter",
                "Ethernet2",
            )
        ep = self.node.hnsctl("endpoint", "create", f"{cid}_{self.name}", "--network", other, "-o", "json")
        if live:
            ns = self.node.hnsctl("namespace", "create", "-o", "json")["ID"]
            self.node.hnsctl("namespace", "attach", ns, ep["ID"])
        cid2, netns = self.new_pod("v2")
        assert cid2 == cid
        rc, out = self.flannel("ADD", cid, netns)
        if live:  # (or a standalone network this node cannot finish yet: code 11 too, nobody touched)
            assert rc == 1 and out["code"] == 11 and (ep["ID"] in out["msg"] or "half set up" in out["msg"]), out
            assert ep["ID"] in {e["ID"] for e in self.node.endpoints_v2().values()}
        self.added(cid, netns, rc, out)

    # ------------------------------------------------------------------ node events
    @rule(new_subnet=st.booleans())
    @_recorded
    def hns_restart(self, new_subnet: bool) -> None:
        """A reboot: the network and its endpoints are gone; flanneld makes it again (maybe with a
        new lease); the runtime tears down the pods it had (DEL), as it recreates sandboxes."""
        self.step("hns-restart", fault=True)
        self.node.hnsctl("restart")
        for net in self.node.hnsctl("network", "list", "-o", "json"):  # cbr0 is persistent: a reboot drops it here
            if net["Name"] == self.name:  # with its endpoints
                self.node.hnsctl("network", "delete", net["ID"])
        if new_subnet:
            self.subnet = SUBNETS[1] if self.subnet == SUBNETS[0] else SUBNETS[0]
            self.node.lease(f"{self.subnet}.1/24")
        self.flanneld_network()
        for cid, (netns, _) in sorted(self.pods.items()):
            self.remove(cid, netns)
        if self.vip:
            self.sourcevip()

    @precondition(lambda self: self.kind != "standalone")
    @rule()
    @_recorded
    def sourcevip(self) -> None:
        """kube-proxy's start: on overlay the source VIP is reserved (the same one again); on a
        host-gw bridge it is refused (exit 2): kube-proxy takes none there."""
        self.step("sourcevip")
        rc, out = self.wincni(
            "sourcevip",
            "--cni-conf",
            str(self.node.conf_dir / "10-flannel.conf"),
            "--out",
            str(self.node.source_vip),
            "--timeout",
            "5",
            "-o",
            "json",
        )
        if self.kind == "bridge":
            assert rc == 2 and "kube-proxy needs no source VIP" in out, out
            return
        assert rc == 0, out
        self.vip = json.loads(out)["sourceVip"]
        assert self.vip.startswith(self.subnet + ".")

    @rule(min_age=st.sampled_from(["0", None]), old=st.booleans())
    @_recorded
    def reclaim(self, min_age: str | None, old: bool) -> None:
        """``old``: time passed, every reservation is past the reclaim window."""
        self.step("reclaim")
        if old:
            self.age_reservations()
        args = ("--min-age", min_age, "--force") if min_age else ()
        rc, out = self.wincni("reclaim", "--cni-conf", str(self.node.conf_dir / "10-flannel.conf"), *args)
        assert rc == 0, out
        self.reclaimed_at_zero = bool(min_age) or old

    @precondition(lambda self: len(TRACE) - self.recovered_at >= 6)
    @rule()
    @_recorded
    def recover_and_ask_the_doctor(self) -> None:
        """What an operator does after a bad hour: end leftover sandboxes, GC, reclaim, sourcevip;
        then the doctor finds nothing wrong."""
        self.step("doctor")
        dump = self.node.hnsctl("dump", "-o", "json")
        mine = {netns.upper() for netns, _ in self.pods.values()}
        for ns in dump["namespaces"]:
            if ns["ID"].upper() not in mine:
                self.node.hnsctl("namespace", "delete", ns["ID"])
        self.runtime_gc()
        for ep in self.node.endpoints_v2().values():  # planted elsewhere: not this network's GC's
            if ep["Name"].startswith("pod") and ownership.pod_of(ep["Name"], self.name) not in self.pods:
                self.node.hnsctl("endpoint", "delete", ep["ID"])
        self.reclaim("0", False)
        if self.kind == "overlay":
            self.sourcevip()
        if self.kind == "standalone" and not self.pods:  # the next pod's ADD makes the network
            self.add_pod("v2")
        found = self.node.doctor()
        bad = {
            k: c
            for k, c in found.items()
            if c["status"] == "fail" or k in ("ipam-store", "stale-endpoints") and c["status"] != "ok"
        }
        assert not bad, bad
        self.recovered_at = len(TRACE)
        STATS["checks"] += 1

    @rule(pods_meanwhile=st.integers(0, 3))
    @_recorded
    def install_or_upgrade(self, pods_meanwhile: int) -> None:
        """``wincni install`` of a new build (the DaemonSet's rollout) while pods come and go."""
        self.step("install")
        import threading

        self.builds += 1
        rel = package_folder(self.root, f"0.1.{self.builds}-aaa-1")
        done: list = []
        upgrade = threading.Thread(target=lambda: done.append(self.node.install("--from", str(rel), "--keep-others")))
        upgrade.start()
        for _ in range(pods_meanwhile):
            cid, netns = self.new_pod("v2")
            self.added(cid, netns, *self.flannel("ADD", cid, netns))
        upgrade.join()
        assert done and done[0]["build"].startswith(f"0.1.{self.builds}-"), done

    @precondition(lambda self: self.builds)
    @rule()
    @_recorded
    def uninstall(self) -> None:
        """The DaemonSet is deleted: what install laid goes, the pods' state stays."""
        self.step("uninstall")
        self.node.install("--uninstall")
        assert not any(self.node.cni_bin.iterdir())
        self.builds = 0

    # ------------------------------------------------------------------ invariants
    @invariant()
    @_recorded
    def every_live_pod_holds_its_address_once_and_its_endpoint(self) -> None:
        if not hasattr(self, "name"):
            return
        files = self.node.ip_files()
        eps = self.node.endpoints()
        seen: dict[str, str] = {}
        for cid, (_, ip) in self.pods.items():
            assert files.get(ip) == cid, (cid, ip, files)
            assert sorted(files.values()).count(cid) == 1, (cid, files)
            ep = eps.get(f"{cid}_{self.name}")
            assert ep is not None and ep["IPAddress"] == ip, (cid, ep)
            assert ip not in seen, f"{cid} and {seen.get(ip)} share {ip}"
            seen[ip] = cid
        if self.pods and self.kind != "overlay":  # never a pod on a half-made network
            assert f"{self.name}_ep" in eps, f"pods {sorted(self.pods)} on {self.name} without its host endpoint"
        if self.vip:
            assert files.get(self.vip) == VIP_OWNER, (self.vip, files)
            assert self.vip not in seen, f"the source VIP is pod {seen.get(self.vip)}'s address"
            holders = [n for n, e in eps.items() if e.get("IPAddress") == self.vip]
            assert not holders, f"source VIP {self.vip} held by {holders}"
        if self.reclaimed_at_zero:
            orphans = {ip: cid for ip, cid in files.items() if cid not in self.pods and not ownership.pinned(cid)}
            assert not orphans, f"reserved without an owner after reclaim: {orphans}"
            self.reclaimed_at_zero = False
        STATS["checks"] += 1


def run_machine(examples: int, steps: int) -> None:
    """Generation only: no shrinking, whose replays of a racing example mislead; a failure is
    reported as it first happened."""
    conf = settings(
        max_examples=examples,
        stateful_step_count=steps,
        deadline=None,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    FAILURES.clear()
    try:
        run_state_machine_as_test(NodeDay, settings=conf)
    except Exception as err:
        if not FAILURES:
            raise
        raise AssertionError(FAILURES[0]) from err


def test_a_day_in_the_life_of_a_node() -> None:
    """Bounded for ``make test``: 8 days of 25 steps (``NODE_DAY_EXAMPLES`` days for a longer run)."""
    run_machine(examples=int(os.environ.get("NODE_DAY_EXAMPLES", "8")), steps=25)


@pytest.mark.skipif(not os.environ.get("SOAK_MINUTES"), reason="make soak SOAK_MINUTES=N runs it")
def test_soak() -> None:
    end = time.monotonic() + float(os.environ["SOAK_MINUTES"]) * 60
    runs = failures = 0
    STATS.clear()
    first: BaseException | None = None
    while time.monotonic() < end:
        try:
            run_machine(examples=8, steps=40)
        except Exception as err:  # noqa: BLE001 - counted and shown; the first one re-raised at the end
            failures += 1
            first = first or err
            print(f"\nsoak: failure {failures}: {err}")
        runs += 1
    print(
        f"\nsoak: {float(os.environ['SOAK_MINUTES']):g} min, {runs} runs, {STATS['steps']} steps, "
        f"{STATS['faults']} faults injected, {STATS['checks']} invariant checks passed, {failures} failures"
    )
    print("soak: " + ", ".join(f"{k}={v}" for k, v in sorted(STATS.items()) if ":" in k))
    for note in NOTES[:5]:
        print(f"soak: HNS refused: {note}")
    if first is not None:
        raise first
