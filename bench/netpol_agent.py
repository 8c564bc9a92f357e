"""Benchmark the NetworkPolicy agent (``wincni netpol``'s ``Agent``) on the HNS simulator, fed a
list+watch stream of 5,000 pods (100 on this node) and 200 policies (bench/netpol_stream.py).

It runs in a child process (its peak RSS is the child's ``ru_maxrss``) from the source tree:
the frozen ``wincni netpol`` reaches the API server only over TLS through the service account,
so the stream comes in through the agent's injected API object instead (``StreamApi``: the
answers read a line at a time from the file, as from a socket). Figures:

- first sync: from the watch's start to the end of the first sync (lists, model, every apply);
- change to programmed: from a policy change event being read to the last HNS call it caused,
  the median of ``netpol_stream.CHANGES`` (one policy's port moved, and back, in turn);
- HNS calls per event: ``HcnModifyEndpoint`` in the journal, against the endpoints whose rules
  each change alters (worked out apart, with the pure model), and for an event that changes
  nothing here;
- a restart on the unchanged node: its HNS ACL calls (none).

    python bench/netpol_agent.py
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]
import netpol_stream
import netpol_translate as scale

NETWORK = "cbr0"
QUIET = 1.0  # no new HNS call for this long: the agent is done with an event


class Answer:
    """A list's body, read whole (``kubeapi.read_json``)."""

    def __init__(self, data: bytes) -> None:
        self.data = data

    def read(self, n: int = -1) -> bytes:
        return self.data

    def close(self) -> None:
        pass


class Feed:
    """A watch: the lines put on it, one ``readline`` at a time; ``None`` ends it."""

    def __init__(self, api: StreamApi, kind: str) -> None:
        self.api, self.kind = api, kind

    def readline(self, n: int = -1) -> bytes:
        with self.api.cond:
            while not self.api.queues[self.kind]:
                self.api.cond.wait()
            line = self.api.queues[self.kind].pop(0)
        if line is None:
            return b""
        self.api.read_at[self.kind] = time.time()
        return line

    def close(self) -> None:
        pass


class StreamApi:
    """``kubeapi.InCluster``'s ``get`` over the stream file: lists page by page, watches fed
    by ``send`` (the file's step lines) until ``end``."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.pages: dict[str, list[int]] = {}
        self.steps: dict[str, list[tuple[str, bytes]]] = {}
        with path.open("rb") as f:
            while True:
                at, line = f.tell(), f.readline()
                if not line:
                    break
                doc = json.loads(line)  # one page at a time, as the agent holds one answer
                if "page" in doc:
                    self.pages.setdefault(doc["kind"], []).append(at)
                else:
                    event = json.dumps(doc["event"]).encode() + b"\n"
                    self.steps.setdefault(doc["step"], []).append((doc["kind"], event))
        self.cond = threading.Condition()
        self.queues: dict[str, list] = {k: [] for k in netpol_stream.KINDS}
        self.read_at: dict[str, float] = {}

    def get(self, path: str, query: dict, timeout: float | None = None) -> object:
        kind = path.rsplit("/", 1)[-1]
        if "watch" in query:
            return Feed(self, kind)
        token = str(query.get("continue") or "")
        index = int(token.rsplit("-", 1)[-1]) // netpol_stream.PAGE if token else 0
        with self.path.open("rb") as f:
            f.seek(self.pages[kind][index])
            page = json.loads(f.readline())["page"]
        return Answer(json.dumps(page).encode())

    def send(self, step: str) -> None:
        with self.cond:
            for kind, line in self.steps[step]:
                self.queues[kind].append(line)
            self.cond.notify_all()

    def end(self) -> None:
        with self.cond:
            for q in self.queues.values():
                q.append(None)
            self.cond.notify_all()


def simulated_node(root: Path) -> tuple[dict, list[str]]:
    """The simulator with the pods' network and one endpoint per pod of ``scale.NODE``."""
    from libhns.client import open_clients

    env = {"LIBHNS_BACKEND": "sim", "LIBHNS_SIM_DIR": str(root / "hns")}
    hcn, _ = open_clients(env)
    subnet = {
        "IpAddressPrefix": "10.244.0.0/16",
        "Routes": [{"NextHop": "10.244.0.1", "DestinationPrefix": "0.0.0.0/0"}],
    }
    net = hcn.create_network(
        {"Name": NETWORK, "Type": "L2Bridge", "Flags": 8, "Ipams": [{"Type": "Static", "Subnets": [subnet]}]}
    )
    nat = {"Type": "OutBoundNAT", "Settings": {"Exceptions": ["10.244.0.0/16"]}}
    _, pods, _ = scale.objects()
    ips = [p["status"]["podIP"] for p in pods if p["spec"]["nodeName"] == scale.NODE]
    for i, ip in enumerate(ips):
        hcn.create_endpoint(
            net.id, {"Name": f"pod{i}_{NETWORK}", "IpConfigurations": [{"IpAddress": ip}], "Policies": [nat]}
        )
    return env, ips


def acl_calls(journal: Path, since: int) -> list[dict]:
    lines = journal.read_text().splitlines()[since:]
    return [c for c in map(json.loads, lines) if c["op"] == "HcnModifyEndpoint"]


def settled(journal: Path) -> None:
    """Wait until the journal has not grown for ``QUIET`` seconds."""
    size, still = -1, time.monotonic()
    while time.monotonic() - still < QUIET:
        time.sleep(0.05)
        now = journal.stat().st_size if journal.exists() else 0
        if now != size:
            size, still = now, time.monotonic()


def _ts(call: dict) -> float:
    return datetime.fromisoformat(call["ts"]).timestamp()


class Running:
    """An agent over a stream file and the simulator, its loop in a thread; ``syncs``: (wall
    time, ``Sync``) of each pass, ``started``: when its watch started."""

    def __init__(self, stream: Path, root: Path, env: dict) -> None:
        from plugins.winnet.hnsapi import open_api
        from tools.wincni.netpol.agent import Agent
        from tools.wincni.netpol.node_endpoints import NodeEndpoints
        from tools.wincni.netpol.state import StateFile
        from tools.wincni.netpol.watch import ClusterWatch

        self.api = StreamApi(stream)
        endpoints = NodeEndpoints(open_api(2, env, None, "wincni-netpol", ""), NETWORK, scale.NODE_ADDRESSES)
        self.agent = Agent(ClusterWatch(self.api), endpoints, StateFile(str(root / "netpol.json")), scale.NODE)
        self.loop_stop = threading.Event()
        self.syncs: list = []
        self.started = time.time()
        self.agent.watch.start()
        report = lambda sync: self.syncs.append((time.time(), sync))  # noqa: E731 - the loop's one callback
        self.thread = threading.Thread(target=self.agent.run, args=(report, self.loop_stop), daemon=True)
        self.thread.start()

    def stop(self) -> None:
        for event in (self.loop_stop, self.agent.watch.stop, self.agent.watch.changed):
            event.set()
        self.api.end()
        self.thread.join(30)


def wait_for(what: str, ok, limit: float = 120.0) -> None:
    deadline = time.monotonic() + limit
    while not ok():
        if time.monotonic() > deadline:
            raise SystemExit(f"netpol bench: no {what} within {limit:.0f} s")
        time.sleep(0.01)


def child(stream: Path, after: Path, root: Path) -> dict:
    """The figures of one agent over ``stream`` (its lists, then its change and no-op steps) and
    of a second over ``after`` (the lists with the change in), on the node the first left."""
    env, ips = simulated_node(root)
    journal = root / "journal.jsonl"
    env["LIBHNS_JOURNAL"] = str(journal)
    run = Running(stream, root, env)
    wait_for("first sync", lambda: run.syncs)
    first_s, first = run.syncs[0][0] - run.started, run.syncs[0][1]
    first_calls = len(acl_calls(journal, 0))
    settled(journal)
    changes = []  # (seconds from the event read to its last HNS call, its HNS calls, its sync's seconds)
    for n in range(netpol_stream.CHANGES):
        at = len(journal.read_text().splitlines())
        run.api.send(f"change{n}")
        wait_for("sync after the change", lambda n=n: len(run.syncs) > n + 1)
        settled(journal)
        calls = acl_calls(journal, at)
        last = max(map(_ts, calls)) - run.api.read_at["networkpolicies"] if calls else float("nan")
        changes.append((last, len(calls), run.syncs[n + 1][1].seconds))
    at = len(journal.read_text().splitlines())
    run.api.send("noop")
    wait_for("the no-op events read", lambda: "pods" in run.api.read_at and not run.api.queues["pods"])
    settled(journal)
    noop = len(acl_calls(journal, at))
    run.stop()
    at = len(journal.read_text().splitlines())
    restarted = Running(after, root, env)
    wait_for("first sync after the restart", lambda: restarted.syncs)
    settled(journal)
    restart = len(acl_calls(journal, at))
    restarted.stop()
    return {
        "endpoints": len(ips),
        "first sync s": first_s,
        "first sync's own s": first.seconds,
        "first sync HNS ACL calls": first_calls,
        "change to programmed s": statistics.median(c[0] for c in changes),
        "change to programmed s, each": [c[0] for c in changes],
        "change sync s": statistics.median(c[2] for c in changes),
        "change HNS ACL calls": [c[1] for c in changes],
        "no-op event HNS ACL calls": noop,
        "restart HNS ACL calls": restart,
    }


def after_change(stream: Path, out: Path) -> Path:
    """The stream as a restarted agent lists it: the changed policy in its list."""
    docs = [json.loads(line) for line in stream.read_text().splitlines()]
    change = [d["event"]["object"] for d in docs if str(d.get("step")).startswith("change")][-1]
    key = (change["metadata"]["namespace"], change["metadata"]["name"])
    listed = {k: v for k, v in change.items() if k not in ("kind", "apiVersion")}
    with out.open("w") as f:
        for d in docs:
            if "page" in d and d["kind"] == "networkpolicies":
                items = d["page"]["items"]
                d["page"]["items"] = [
                    listed if (i["metadata"]["namespace"], i["metadata"]["name"]) == key else i for i in items
                ]
            f.write(json.dumps(d) + "\n")
    return out


def rules_changed(changed: int) -> int:
    """How many of this node's endpoints the change alters, by the pure model."""
    from plugins.netpol import model, resources, translate
    from plugins.winnet.policies import V2

    namespaces, pods, policies = scale.objects()

    def node_rules(pols: list) -> dict:
        c = resources.read(namespaces, pods, pols)
        return {
            a.pod.key: translate.endpoint_acls(a, scale.NODE_ADDRESSES, V2) for a in model.node_access(c, scale.NODE)
        }

    after = list(policies)
    after[changed] = netpol_stream.changed_policy(policies[changed])
    before, now = node_rules(policies), node_rules(after)
    return sum(before[k] != now[k] for k in before)


def pick_change() -> tuple[int, int]:
    """The first policy whose change alters some of this node's endpoints, and how many."""
    for n in range(scale.POLICIES):
        try:
            count = rules_changed(n)
        except ValueError:
            continue
        if count:
            return n, count
    raise SystemExit("netpol bench: no policy change reaches this node")


def measure() -> dict:
    changed, expected = pick_change()
    with tempfile.TemporaryDirectory(prefix="wincni-netpol-bench-") as tmp:
        root = Path(tmp)
        stream = netpol_stream.write(root / "stream.jsonl", changed)
        after = after_change(stream, root / "after.jsonl")
        proc = subprocess.run(
            [sys.executable, __file__, "--child", str(stream), str(after), str(root)],
            capture_output=True,
            text=True,
            timeout=600,
            env={**os.environ, "PYTHONPATH": str(HERE.parent)},
        )
        if proc.returncode != 0:
            raise SystemExit(f"netpol bench child failed:\n{proc.stderr[-3000:]}")
        found = json.loads(proc.stdout)
        found["stream MB"] = stream.stat().st_size / 1e6
    found["endpoints whose rules the change alters"] = expected
    found["peak RSS MB"] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return found


def main(argv: list[str]) -> int:
    if argv[:1] == ["--child"]:
        print(json.dumps(child(Path(argv[1]), Path(argv[2]), Path(argv[3]))))
        return 0
    print(json.dumps(measure(), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
