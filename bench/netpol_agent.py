"""Benchmark the NetworkPolicy agent as a node runs it: the frozen ``wincni netpol`` (``make
dist``'s ``dist/wincni/wincni``) as a child process on the HNS simulator, with a HostProcess
container's in-cluster environment (``KUBERNETES_SERVICE_HOST``/``PORT``, the service account's
token and CA under ``CONTAINER_SANDBOX_MOUNT_POINT``), against a fake API server on loopback
(tests/fakeapiserver.py: TLS under the test cluster CA) serving bench/netpol_stream.py's stream of
5,000 pods (100 on this node) and 200 policies: the lists page by page, then open watches whose
events the bench sends on cue. Figures:

- first sync: to the last HNS call of the first sync (the journal's last line once the state
  says synced and the journal is quiet), from the process' start and from the first list
  request the server had (the watch's start: what is left is lists, model and applies), and the
  time its HNS calls took (the journal's ``ms``: the simulator's share);
- change to programmed: from the bench sending a policy change to the last HNS call it caused
  (journal timestamps), each of ``netpol_stream.CHANGES`` (one policy's port moved, and back);
- HNS calls per event: ``HcnModifyEndpoint`` in the journal, against the endpoints whose rules
  each change alters (worked out apart, with the pure model), and for an event that changes
  nothing here;
- a restart (SIGTERM, then started again over the lists with the change in): its HNS ACL calls
  (none);
- peak RSS: the process' ``VmHWM`` read just before each stop, the larger of the two runs.

``--source`` runs ``python -m tools.wincni`` from this tree instead: an agent change measured
without ``make dist``.

    python bench/netpol_agent.py [--source]
"""

from __future__ import annotations

import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path[:0] = [str(HERE), str(REPO), str(REPO / "tests")]
import netpol_stream
import netpol_translate as scale
from fakeapiserver import FakeApiServer, service_account

NETWORK = "cbr0"
CONF = {"cniVersion": "1.0.0", "name": NETWORK, "type": "win-bridge", "apiVersion": 2, "ipam": {"type": "host-local"}}
QUIET = 1.0  # no new HNS call for this long: the agent is done with an event
SOURCE = [sys.executable, "-m", "tools.wincni"]
SYNC = re.compile(r"wincni netpol: sync in ([0-9.]+)s")


def frozen(dist: Path = REPO / "dist" / "wincni") -> list[str]:
    return [str(dist / "wincni")]


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
    """``wincni netpol`` started as the DaemonSet's container starts it (``started``: the wall
    time), its stderr kept a line at a time."""

    def __init__(self, command: list[str], root: Path, env: dict) -> None:
        args = ["netpol", "--node-name", scale.NODE, "--cni-conf", str(root / "10-cbr0.conf")]
        args += [a for ip in scale.NODE_ADDRESSES for a in ("--node-address", ip)]
        self.lines: list[str] = []
        self.started = time.time()
        self.proc = subprocess.Popen(
            [*command, *args],
            cwd=REPO,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stderr:
            self.lines.append(line)

    def syncs(self) -> list[float]:
        """The seconds of each sync that set anything (the one stderr line it writes)."""
        return [float(m[1]) for m in map(SYNC.match, self.lines) if m]

    def stop(self) -> float:
        """SIGTERM, as the kubelet stops the container; its peak RSS in MB, read just before."""
        status = Path(f"/proc/{self.proc.pid}/status").read_text()
        peak = int(re.search(r"VmHWM:\s+(\d+) kB", status)[1]) / 1024
        self.proc.send_signal(signal.SIGTERM)
        if self.proc.wait(30) != 0:
            raise SystemExit(f"netpol bench: wincni netpol exited {self.proc.returncode}: {self.said()}")
        return peak

    def said(self) -> str:
        return "".join(self.lines)[-3000:]


def wait_for(what: str, ok, agent: Running, limit: float = 120.0) -> None:
    deadline = time.monotonic() + limit
    while not ok():
        if agent.proc.poll() is not None:
            raise SystemExit(f"netpol bench: wincni netpol exited {agent.proc.returncode}: {agent.said()}")
        if time.monotonic() > deadline:
            raise SystemExit(f"netpol bench: no {what} within {limit:.0f} s")
        time.sleep(0.05)


def synced_since(state: Path, since: float) -> bool:
    """Whether the state says a sync applied all it had to at or after wall time ``since``."""
    try:
        doc = json.loads(state.read_text())
    except (OSError, ValueError):
        return False
    return (doc.get("status") or {}).get("synced", 0) >= since


def node_env(root: Path, hns: dict, port: int) -> dict:
    """A HostProcess container's environment on the simulated node: the API server's service
    address, the service account under the mount point, the state's folder."""
    sandbox = root / "sandbox"
    service_account(sandbox)
    own = ("LIBHNS_", "KUBERNETES_", "NODE_", "WINCNI_", "CONTAINER_", "PYTHONPATH")
    env = {k: v for k, v in os.environ.items() if not k.startswith(own)}
    return {
        **env,
        **hns,
        "CONTAINER_SANDBOX_MOUNT_POINT": str(sandbox),
        "KUBERNETES_SERVICE_HOST": "127.0.0.1",
        "KUBERNETES_SERVICE_PORT": str(port),
        "WINCNI_LOCK_DIR": str(root / "lock"),
    }


def served(docs: list[dict]) -> dict:
    """The stream's lists as the fake API server serves them; its watches stay open."""
    lists = {k: [d["page"] for d in docs if d["kind"] == k and "page" in d] for k in netpol_stream.KINDS}
    return {"lists": lists, "watches": {k: [] for k in lists}}


def send(server: FakeApiServer, docs: list[dict], step: str) -> float:
    """The events of ``step`` to the open watches; when they were sent."""
    sent = time.time()
    for kind in netpol_stream.KINDS:
        server.push(kind, [d["event"] for d in docs if d.get("step") == step and d["kind"] == kind])
    return sent


def restarted(docs: list[dict], lists: dict) -> dict:
    """The lists as a restarted agent gets them: the last change's policy in its list, each at
    the stream's last resourceVersion (so the watches send nothing again)."""
    events = [d for d in docs if "step" in d]
    change = [d["event"]["object"] for d in events if d["step"].startswith("change")][-1]
    version = events[-1]["event"]["object"]["metadata"]["resourceVersion"]
    key = (change["metadata"]["namespace"], change["metadata"]["name"])
    listed = {k: v for k, v in change.items() if k not in ("kind", "apiVersion")}

    def item(i: dict) -> dict:
        return listed if (i["metadata"].get("namespace"), i["metadata"]["name"]) == key else i

    return {
        kind: [
            {**p, "metadata": {**p["metadata"], "resourceVersion": version}, "items": [item(i) for i in p["items"]]}
            for p in pages
        ]
        for kind, pages in lists.items()
    }


def run(command: list[str], root: Path, docs: list[dict]) -> dict:
    """The figures of an agent over the stream ``docs`` (its lists, then its change and no-op
    steps) and of a restart over the lists with the change in, on the node the first left."""
    hns, ips = simulated_node(root)
    journal, state = root / "journal.jsonl", root / "lock" / "netpol.json"
    hns["LIBHNS_JOURNAL"] = str(journal)
    (root / "10-cbr0.conf").write_text(json.dumps(CONF))
    stream = served(docs)
    server = FakeApiServer(stream, open_watches=True)
    started: list[Running] = []
    try:
        env = node_env(root, hns, server.server_address[1])
        agent = Running(command, root, env)
        started.append(agent)
        wait_for("first sync", lambda: synced_since(state, agent.started), agent)
        settled(journal)
        first = [json.loads(line) for line in journal.read_text().splitlines()]
        first_end, first_hns = _ts(first[-1]), sum(c["ms"] or 0 for c in first) / 1000
        first_calls = len(acl_calls(journal, 0))
        changes = []  # (seconds from the event sent to its last HNS call, its HNS calls, its sync's seconds)
        for n in range(netpol_stream.CHANGES):
            at = len(journal.read_text().splitlines())
            sent = send(server, docs, f"change{n}")
            wait_for("sync after the change", lambda n=n: len(agent.syncs()) > n + 1, agent)
            settled(journal)
            calls = acl_calls(journal, at)
            last = max(map(_ts, calls)) - sent if calls else float("nan")
            changes.append((last, len(calls), agent.syncs()[n + 1]))
        at, before = len(journal.read_text().splitlines()), sum(server.sent.values())
        send(server, docs, "noop")
        noops = sum(d.get("step") == "noop" for d in docs)
        wait_for("the no-op events sent", lambda: sum(server.sent.values()) == before + noops, agent)
        settled(journal)
        noop = len(acl_calls(journal, at))
        peak = agent.stop()
        server.lists = restarted(docs, stream["lists"])
        at = len(journal.read_text().splitlines())
        again = Running(command, root, env)
        started.append(again)
        wait_for("first sync after the restart", lambda: synced_since(state, again.started), again)
        settled(journal)
        restart = len(acl_calls(journal, at))
        peak = max(peak, again.stop())
    finally:
        for r in started:
            if r.proc.poll() is None:
                r.proc.kill()
                r.proc.wait()
        server.close()
    return {
        "endpoints": len(ips),
        "first sync s": first_end - agent.started,
        "first sync from the watch s": first_end - server.requested_at[0],
        "first sync HNS ACL calls": first_calls,
        "first sync HNS calls s": first_hns,
        "change to programmed s": statistics.median(c[0] for c in changes),
        "change to programmed s, each": [c[0] for c in changes],
        "change sync s": statistics.median(c[2] for c in changes),
        "change HNS ACL calls": [c[1] for c in changes],
        "no-op event HNS ACL calls": noop,
        "restart HNS ACL calls": restart,
        "peak RSS MB": peak,
    }


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


def measure(command: list[str] | None = None) -> dict:
    """The figures of ``command`` (default: the frozen bundle's ``wincni``) over the stream."""
    command = command or frozen()
    if not Path(command[0]).is_file():
        raise SystemExit(f"netpol bench: no {command[0]}: run `make dist`")
    changed, expected = pick_change()
    with tempfile.TemporaryDirectory(prefix="wincni-netpol-bench-") as tmp:
        root = Path(tmp)
        stream = netpol_stream.write(root / "stream.jsonl", changed)
        with stream.open() as f:
            docs = [json.loads(line) for line in f]
        found = run(command, root, docs)
        found["stream MB"] = stream.stat().st_size / 1e6
    found["endpoints whose rules the change alters"] = expected
    return found


def main(argv: list[str]) -> int:
    print(json.dumps(measure(SOURCE if argv[:1] == ["--source"] else None), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
