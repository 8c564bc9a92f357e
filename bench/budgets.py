"""`make bench` budgets: the frozen one-folder bundle and the source side by side, every figure a
ratio to numbers taken in the same run (but NetworkPolicy's translation, CPU seconds against the
issue's 1 s: bench/netpol_translate.py; and the NetworkPolicy agent's sync times, HNS calls and
RSS against the issue's budgets: bench/netpol_agent.py). One PASS/FAIL line per budget; exits 0
either way; all figures also in bench/results.json.

    python bench/budgets.py [--reps N] [--dist dist/wincni]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
VENV_BIN = Path(sys.executable).parent
sys.path.insert(0, str(HERE))
import host_local
import netpol_agent
import netpol_translate
from verdict import verdict

SUBNET_ENV = "FLANNEL_NETWORK=10.244.0.0/16\nFLANNEL_SUBNET=10.244.4.1/24\nFLANNEL_MTU=1450\nFLANNEL_IPMASQ=true\n"
POLICY = {"name": "EndpointPolicy", "value": {"Type": "OutBoundNAT", "Settings": {"Exceptions": ["10.96.0.0/12"]}}}


def run(argv, env, stdin=b""):
    started = time.perf_counter()
    proc = subprocess.run(argv, input=stdin, env=env, capture_output=True, timeout=120)
    ms = (time.perf_counter() - started) * 1000
    if proc.returncode != 0:
        raise SystemExit(f"{argv[0]} failed: {proc.stdout.decode()} {proc.stderr.decode()}")
    return ms, proc.stdout


def median(samples):
    return statistics.median(samples)


def frozen_floor(reps: int, work: Path) -> float:
    """An empty script built with the spec's options (one folder, stripped, noarchive): the least
    any frozen Python start costs here."""
    work.mkdir(parents=True)
    script = work / "empty.py"
    script.write_text("")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "PyInstaller",
            "--noconfirm",
            "--log-level",
            "ERROR",
            "--onedir",
            "--debug",
            "noarchive",
            "--strip",
            "--additional-hooks-dir",
            str(REPO / "specs" / "hooks"),
            "--distpath",
            str(work / "dist"),
            "--workpath",
            str(work / "build"),
            "--specpath",
            str(work),
            str(script),
        ],
        check=True,
        capture_output=True,
    )
    exe = str(work / "dist" / "empty" / "empty")
    run([exe], {})
    return median([run([exe], {})[0] for _ in range(reps)])


class Node:
    """One simulated node: an L2Bridge network, flannel's files, plugins from ``bindir``."""

    def __init__(self, root: Path, bindir: Path, **extra: str) -> None:
        self.root, self.bindir = root, bindir
        root.mkdir(parents=True)
        (root / "subnet.env").write_text(SUBNET_ENV)
        self.env = {
            "PATH": os.environ.get("PATH", ""),
            "LIBHNS_BACKEND": "sim",
            "LIBHNS_SIM_DIR": str(root / "hns"),
            "CNI_PATH": str(bindir),
            "CNI_IFNAME": "eth0",
            **extra,
        }
        run(
            [
                str(bindir / "hnsctl"),
                "network",
                "create",
                "cbr0",
                "--type",
                "L2Bridge",
                "--subnet",
                "10.244.4.0/24",
                "--gateway",
                "10.244.4.1",
            ],
            self.env,
        )
        self.n = 0

    def namespace(self) -> str:
        return json.loads(run([str(self.bindir / "hnsctl"), "namespace", "create", "-o", "json"], self.env)[1])["ID"]

    def flannel_conf(self) -> bytes:
        return json.dumps(
            {
                "cniVersion": "1.0.0",
                "name": "cbr0",
                "type": "flannel",
                "subnetFile": str(self.root / "subnet.env"),
                "dataDir": str(self.root / "flannel"),
                "ipam": {"dataDir": str(self.root / "ipam")},
                "delegate": {"type": "win-bridge", "apiVersion": 2, "policies": [POLICY]},
            }
        ).encode()

    def bridge_conf(self, api: int) -> bytes:
        return json.dumps(
            {
                "cniVersion": "1.0.0",
                "name": "cbr0",
                "type": "win-bridge",
                "apiVersion": api,
                "policies": [POLICY],
                "ipam": {"type": "host-local", "subnet": "10.244.4.0/24", "dataDir": str(self.root / "ipam")},
            }
        ).encode()

    def call(self, plugin: str, command: str, conf: bytes, cid: str, netns: str, **extra: str):
        env = {**self.env, "CNI_COMMAND": command, "CNI_CONTAINERID": cid, "CNI_NETNS": netns, **extra}
        return run([str(self.bindir / plugin)], env, conf)

    def pod(self) -> tuple[str, str]:
        self.n += 1
        return f"pod{self.n}", self.namespace()


def command_times(bindir: Path, reps: int, work: Path) -> dict:
    """Medians (ms) of VERSION, a whole flannel V2 ADD chain, a win-bridge V2 DEL."""
    version_env = {"CNI_COMMAND": "VERSION"}
    run([str(bindir / "host-local")], version_env, b"{}")
    out = {"VERSION": median([run([str(bindir / "host-local")], version_env, b"{}")[0] for _ in range(reps)])}
    node = Node(work, bindir)
    conf, adds = node.flannel_conf(), []
    for _ in range(reps):
        cid, netns = node.pod()
        adds.append(node.call("flannel", "ADD", conf, cid, netns)[0])
    out["flannel ADD chain"] = median(adds)
    bconf, dels = node.bridge_conf(2), []
    for _ in range(reps):
        cid, netns = node.pod()
        node.call("win-bridge", "ADD", bconf, cid, netns)
        dels.append(node.call("win-bridge", "DEL", bconf, cid, netns)[0])
    out["win-bridge DEL"] = median(dels)
    return out


def hns_ms(bindir: Path, reps: int, work: Path) -> dict:
    """Median summed time (ms) of the raw HNS calls inside a flannel V2 ADD chain and a win-bridge V2
    DEL, from LIBHNS_JOURNAL (separate runs: journaling costs time of its own), so a budget can be
    read as our own cost: the command's time minus this."""
    node = Node(work, bindir)
    conf, bconf = node.flannel_conf(), node.bridge_conf(2)
    sums: dict[str, list[float]] = {"flannel ADD chain": [], "win-bridge DEL": []}
    for i in range(reps):
        cid, netns = node.pod()
        add, dele = work / f"add{i}.jsonl", work / f"del{i}.jsonl"
        node.call("flannel", "ADD", conf, cid, netns, LIBHNS_JOURNAL=str(add))
        cid, netns = node.pod()
        node.call("win-bridge", "ADD", bconf, cid, netns)
        node.call("win-bridge", "DEL", bconf, cid, netns, LIBHNS_JOURNAL=str(dele))
        for key, path in (("flannel ADD chain", add), ("win-bridge DEL", dele)):
            sums[key].append(sum(json.loads(line).get("ms") or 0 for line in path.read_text().splitlines()))
    return {key: median(values) for key, values in sums.items()}


def top_imports(work: Path, count: int = 12) -> list[tuple[str, float]]:
    """The flannel V2 ADD chain's costliest imports, self time in ms (``-X importtime``, source
    tree; what ``site`` imports, e.g. the editable install's finder, is left out, as the bundle
    has none), simulator modules included: they run in every measured command here, though no
    node imports them."""
    node = Node(work, VENV_BIN)
    cid, netns = node.pod()
    env = {**node.env, "CNI_COMMAND": "ADD", "CNI_CONTAINERID": cid, "CNI_NETNS": netns}
    probe = f"import sys; sys.path.insert(0, {str(REPO)!r}); from plugins.flannel.__main__ import entry; entry()"
    proc = subprocess.run(
        [sys.executable, "-I", "-X", "importtime", "-c", probe],
        input=node.flannel_conf(),
        env=env,
        capture_output=True,
        timeout=120,
    )
    if proc.returncode != 0:
        raise SystemExit(f"flannel ADD under -X importtime failed: {proc.stdout.decode()} {proc.stderr.decode()}")
    rows, after_site = [], False
    for line in proc.stderr.decode().splitlines():
        if line.startswith("import time:") and "|" in line and "self [us]" not in line:
            self_us, _, name = line[len("import time:") :].split("|")
            if after_site:
                rows.append((name.strip(), int(self_us) / 1000))
            after_site = after_site or name == " site"  # rows come when an import completes
    return sorted(rows, key=lambda row: -row[1])[:count]


def hns_calls(work: Path) -> dict:
    """Raw HNS calls (not Close) of one win-bridge ADD and DEL per API, from LIBHNS_JOURNAL."""
    out = {}
    for api in (2, 1):
        node = Node(work / f"v{api}", VENV_BIN)
        cid = "pod1"
        if api == 2:
            netns = node.namespace()
        else:
            run([str(VENV_BIN / "hnsctl"), "container", "create", cid], node.env)
            netns = "none"
        for command in ("ADD", "DEL"):
            journal = work / f"v{api}-{command}.jsonl"
            node.call("win-bridge", command, node.bridge_conf(api), cid, netns, LIBHNS_JOURNAL=str(journal))
            ops = [json.loads(line)["op"] for line in journal.read_text().splitlines()]
            out[f"V{api} {command}"] = sum("Close" not in op for op in ops)
    return out


def concurrency(work: Path, pods: int) -> dict:
    """50 flannel ADDs at once vs one after another (source plugins); duplicate IPs counted."""
    result = {}
    for mode in ("serial", "parallel"):
        node = Node(work / mode, VENV_BIN)
        conf = node.flannel_conf()
        jobs = [node.pod() for _ in range(pods)]
        started = time.perf_counter()
        if mode == "serial":
            outs = [node.call("flannel", "ADD", conf, c, n)[1] for c, n in jobs]
        else:
            with ThreadPoolExecutor(pods) as pool:
                outs = [o[1] for o in pool.map(partial(node.call, "flannel", "ADD", conf), *zip(*jobs))]
        result[mode] = (time.perf_counter() - started) * 1000
        ips = [json.loads(o)["ips"][0]["address"] for o in outs]
        result[f"{mode} duplicate IPs"] = len(ips) - len(set(ips))
    return result


def agent_budgets(budget, res: dict) -> None:
    """The NetworkPolicy agent (source tree, simulator) fed the 5,000-pod list+watch stream."""
    found = res["netpol agent"] = netpol_agent.measure()
    scale = (
        f"{found['endpoints']} pods here, {netpol_translate.PODS} in the cluster, {netpol_translate.POLICIES} policies"
    )
    budget(f"netpol agent: first full sync ({scale})", found["first sync s"], 10.0, unit=" s")
    each = ", ".join(f"{s:.2f}" for s in found["change to programmed s, each"])
    budget(
        f"netpol agent: policy change read -> its last HNS call, median of {each}",
        found["change to programmed s"],
        1.0,
        unit=" s",
    )
    expected, calls = found["endpoints whose rules the change alters"], found["change HNS ACL calls"]
    budget(
        f"netpol agent: HNS ACL calls past 1 per endpoint whose rules changed ({calls} for {expected} each)",
        max(abs(n - expected) for n in calls),
        0,
        unit="",
    )
    budget(
        "netpol agent: HNS ACL calls for an event that changes nothing here",
        found["no-op event HNS ACL calls"],
        0,
        unit="",
    )
    budget("netpol agent: HNS ACL calls of a restart on the unchanged node", found["restart HNS ACL calls"], 0, unit="")
    budget("netpol agent: peak RSS", found["peak RSS MB"], 150, unit=" MB")
    print(
        f"     (figure) netpol agent's first sync set {found['first sync HNS ACL calls']} endpoints; the change's "
        f"sync {found['change sync s']:.3f} s; stream {found['stream MB']:.1f} MB (source tree: the frozen "
        "wincni netpol reads the API server only over TLS)",
        flush=True,
    )


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=9)
    ap.add_argument("--dist", default=str(REPO / "dist" / "wincni"))
    args = ap.parse_args(argv)
    dist = Path(args.dist)
    res: dict = {}
    lines = []

    def budget(label: str, value: float, limit: float, unit: str = "x") -> None:
        lines.append(verdict(label, value, limit, unit))
        print(lines[-1], flush=True)

    with tempfile.TemporaryDirectory(prefix="wincni-bench-") as tmp:
        work = Path(tmp)
        python_floor = median([run([sys.executable, "-I", "-S", "-c", "pass"], {})[0] for _ in range(args.reps)])
        res["source floor (python -I -S -c pass) ms"] = python_floor
        res["source"] = command_times(VENV_BIN, args.reps, work / "src")
        if (dist / "host-local").exists() or (dist / "host-local.exe").exists():
            floor = frozen_floor(args.reps, work / "floor")
            res["frozen floor ms"] = floor
            frozen = res["frozen"] = command_times(dist, args.reps, work / "frozen")
            # The frozen bundle's budgets: on a node the bundle is what runs, and almost all of its cost is ours.
            budget("frozen VERSION / frozen floor", frozen["VERSION"] / floor, 1.3)
            budget(
                "frozen flannel->win-bridge->host-local V2 ADD / frozen floor", frozen["flannel ADD chain"] / floor, 2.5
            )
            budget("frozen win-bridge V2 DEL / frozen floor", frozen["win-bridge DEL"] / floor, 2.0)
            inside = res["HNS ms inside (simulator, journal)"] = hns_ms(dist, args.reps, work / "hns-ms")
            for key, ms in inside.items():
                print(f"     (figure) {key}: {frozen[key]:.1f} ms, of which raw HNS calls {ms:.1f} ms", flush=True)
            top = res["top imports of the ADD chain (ms, self)"] = top_imports(work / "imports")
            print(
                "     (figure) costliest imports of the ADD chain, self ms (source, -X importtime): "
                + ", ".join(f"{name} {ms:.2f}" for name, ms in top),
                flush=True,
            )
            for key in frozen:
                over_f, over_s = frozen[key] - floor, res["source"][key] - python_floor
                budget(f"frozen vs source, {key} (above each floor)", over_f / over_s, 1.25)
        else:
            print(f"(no bundle at {dist}: run `make dist` for the frozen budgets)")
        cmd = host_local.ours_cmd()
        empty, full = host_local.measure(cmd, args.reps, 0), host_local.measure(cmd, args.reps, host_local.POPULATION)
        res["host-local ADD+DEL ms"] = {"empty": empty["add+del"], "10000": full["add+del"]}
        budget("host-local ADD+DEL @10,000 / empty range", full["add+del"] / empty["add+del"], 1.5)
        if os.path.exists(host_local.GO_DEFAULT):
            go = host_local.measure([host_local.GO_DEFAULT], args.reps, 0)
            res["host-local ADD+DEL ms"]["go empty"] = go["add+del"]
            print(
                f"     (figure) Go host-local ADD+DEL, empty range: {go['add+del']:.1f} ms; ours {empty['add+del']:.1f} ms"
            )
        calls = res["raw HNS calls"] = hns_calls(work / "calls")
        for key, limit in (("V2 ADD", 8), ("V2 DEL", 5), ("V1 ADD", 5), ("V1 DEL", 4)):
            budget(f"raw HNS calls, {key}", calls[key], limit, unit="")
        conc = res["50 flannel ADDs ms"] = concurrency(work / "conc", 50)
        budget("50 concurrent flannel ADDs / 50 serial", conc["parallel"] / conc["serial"], 0.7)
        budget("duplicate IPs among 50 concurrent ADDs", conc["parallel duplicate IPs"], 0, unit="")
        policy = res["netpol translation"] = netpol_translate.measure()
        budget(
            f"netpol: {netpol_translate.POLICIES} policies for {policy['endpoints']} pods on a node "
            f"({netpol_translate.PODS} in the cluster) to HNS ACLs, CPU",
            policy["cpu s"],
            1.0,
            unit=" s",
        )
        per = policy["rules per endpoint"]
        print(f"     (figure) ACL rules per endpoint: min {per['min']}, median {per['median']}, max {per['max']}")
        agent_budgets(budget, res)
    res["budgets"] = lines
    (HERE / "results.json").write_text(json.dumps(res, indent=2) + "\n")
    print(f"results: {HERE / 'results.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
