"""`make bench` budgets: the frozen one-folder bundle and the source side by side, every figure a
ratio to numbers taken in the same run, round by round, the things compared interleaved (but
NetworkPolicy's translation, CPU seconds against the issue's 1 s: bench/netpol_translate.py; and
the doctor on a big cluster's node, seconds and MiB against the issue's 5 s and 200 MiB:
bench/doctor_scale.py; and the frozen NetworkPolicy agent's sync times, HNS calls and RSS against
the issue's budgets: bench/netpol_agent.py). One PASS/FAIL line per budget, judging the median of the rounds by its 95%
interval (bench/verdict.py: FAIL only when the whole interval is over the budget); exits 0 either
way; all figures also in bench/results.json.

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
import background
import doctor_scale
import host_local
import netpol_agent
import netpol_translate
from verdict import judged

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


def frozen_floor(work: Path) -> Path:
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
    return work / "dist" / "empty" / "empty"


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


STEPS = ("floor", "VERSION", "flannel ADD chain", "win-bridge DEL")


def rounds(sides: dict[str, tuple[Path, list[str]]], reps: int, work: Path) -> dict[str, dict[str, list[float]]]:
    """ms of each side's floor, VERSION, a whole flannel V2 ADD chain and a win-bridge V2 DEL, round
    by round: ``sides`` maps a name to its plugins' folder and its floor's command line; in each
    round every side runs every step back to back, which side goes first taking turns, so a burst
    of the machine's other work weighs on a ratio's both terms. Round 0 warms the caches and is
    not counted."""
    names = list(sides)
    nodes = {name: Node(work / name, bindir) for name, (bindir, _) in sides.items()}
    out: dict[str, dict[str, list[float]]] = {name: {step: [] for step in STEPS} for name in names}
    for rep in range(reps + 1):
        for name in names[rep % len(names) :] + names[: rep % len(names)]:
            node, (bindir, floor) = nodes[name], sides[name]
            pod, bridged = node.pod(), node.pod()
            node.call("win-bridge", "ADD", node.bridge_conf(2), *bridged)
            times = {
                "floor": run(floor, {})[0],
                "VERSION": run([str(bindir / "host-local")], {"CNI_COMMAND": "VERSION"}, b"{}")[0],
                "flannel ADD chain": node.call("flannel", "ADD", node.flannel_conf(), *pod)[0],
                "win-bridge DEL": node.call("win-bridge", "DEL", node.bridge_conf(2), *bridged)[0],
            }
            for step, ms in times.items():
                if rep:
                    out[name][step].append(ms)
    return out


def over(samples: dict[str, list[float]], step: str) -> list[float]:
    """Each round's ``step`` over that round's floor."""
    return [a / b for a, b in zip(samples[step], samples["floor"])]


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


def agent_budgets(budget, res: dict, dist: Path) -> None:
    """The NetworkPolicy agent, the frozen ``wincni netpol`` on the simulator, fed the 5,000-pod
    list+watch stream by a TLS fake API server."""
    if not (dist / "wincni").is_file():
        print(f"(no bundle at {dist}: run `make dist` for the netpol agent's budgets)")
        return
    found = res["netpol agent"] = netpol_agent.measure(netpol_agent.frozen(dist))
    scale = (
        f"{found['endpoints']} pods here, {netpol_translate.PODS} in the cluster, {netpol_translate.POLICIES} policies"
    )
    budget(f"frozen netpol agent: first full sync from its start ({scale})", [found["first sync s"]], 10.0, unit=" s")
    each = ", ".join(f"{s:.2f}" for s in found["change to programmed s, each"])
    budget(
        f"frozen netpol agent: policy change sent -> its last HNS call, each of {each}",
        found["change to programmed s, each"],
        1.0,
        unit=" s",
    )
    expected, calls = found["endpoints whose rules the change alters"], found["change HNS ACL calls"]
    budget(
        f"frozen netpol agent: HNS ACL calls past 1 per endpoint whose rules changed ({calls} for {expected} each)",
        [max(abs(n - expected) for n in calls)],
        0,
        unit="",
    )
    budget(
        "frozen netpol agent: HNS ACL calls for an event that changes nothing here",
        [found["no-op event HNS ACL calls"]],
        0,
        unit="",
    )
    budget(
        "frozen netpol agent: HNS ACL calls of a restart on the unchanged node",
        [found["restart HNS ACL calls"]],
        0,
        unit="",
    )
    budget("frozen netpol agent: peak RSS", [found["peak RSS MB"]], 150, unit=" MB")
    print(
        f"     (figure) netpol agent's first sync set {found['first sync HNS ACL calls']} endpoints "
        f"({found['first sync from the watch s']:.2f} s of it from the first list request, "
        f"{found['first sync HNS calls s']:.2f} s in HNS calls); the change's sync "
        f"{found['change sync s']:.3f} s; stream {found['stream MB']:.1f} MB",
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

    def budget(label: str, values: list[float], limit: float, unit: str = "x") -> None:
        lines.append(judged(label, values, limit, unit))
        print(lines[-1], flush=True)

    with tempfile.TemporaryDirectory(prefix="wincni-bench-") as tmp:
        work = Path(tmp)
        sides = {"source": (VENV_BIN, [sys.executable, "-I", "-S", "-c", "pass"])}
        frozen = (dist / "host-local").exists() or (dist / "host-local.exe").exists()
        if frozen:
            sides["frozen"] = (dist, [str(frozen_floor(work / "floor"))])
        times = res["ms per round"] = rounds(sides, args.reps, work / "rounds")
        if frozen:
            # The frozen bundle's budgets: on a node the bundle is what runs, and almost all of its cost is ours.
            fz, src = times["frozen"], times["source"]
            budget("frozen VERSION / frozen floor", over(fz, "VERSION"), 1.3)
            budget("frozen flannel->win-bridge->host-local V2 ADD / frozen floor", over(fz, "flannel ADD chain"), 2.5)
            budget("frozen win-bridge V2 DEL / frozen floor", over(fz, "win-bridge DEL"), 2.0)
            inside = res["HNS ms inside (simulator, journal)"] = hns_ms(dist, args.reps, work / "hns-ms")
            for key, ms in inside.items():
                print(f"     (figure) {key}: {median(fz[key]):.1f} ms, of which raw HNS calls {ms:.1f} ms", flush=True)
            top = res["top imports of the ADD chain (ms, self)"] = top_imports(work / "imports")
            print(
                "     (figure) costliest imports of the ADD chain, self ms (source, -X importtime): "
                + ", ".join(f"{name} {ms:.2f}" for name, ms in top),
                flush=True,
            )
            for key in STEPS[1:]:
                above = zip(fz[key], fz["floor"], src[key], src["floor"])
                budget(
                    f"frozen vs source, {key} (above each floor)", [(f - ff) / (s - sf) for f, ff, s, sf in above], 1.25
                )
        else:
            print(f"(no bundle at {dist}: run `make dist` for the frozen budgets)")
        cmd = host_local.ours_cmd()
        stores = res["host-local ADD+DEL s per round"] = host_local.rounds(cmd, args.reps)
        full, empty = host_local.add_del(stores[host_local.POPULATION]), host_local.add_del(stores[0])
        budget("host-local ADD+DEL @10,000 / empty range", [f / e for f, e in zip(full, empty)], 1.5)
        if os.path.exists(host_local.GO_DEFAULT):
            go = host_local.add_del(host_local.rounds([host_local.GO_DEFAULT], args.reps, (0,))[0])
            print(
                f"     (figure) Go host-local ADD+DEL, empty range: {median(go) * 1000:.1f} ms; "
                f"ours {median(empty) * 1000:.1f} ms"
            )
        calls = res["raw HNS calls"] = hns_calls(work / "calls")
        for key, limit in (("V2 ADD", 8), ("V2 DEL", 5), ("V1 ADD", 5), ("V1 DEL", 4)):
            budget(f"raw HNS calls, {key}", [calls[key]], limit, unit="")
        quiet = res["background HNS calls"] = background.measure(list(background.POPULATIONS), work / "background")
        background.report(quiet, budget)
        conc = res["50 flannel ADDs ms"] = concurrency(work / "conc", 50)
        budget("50 concurrent flannel ADDs / 50 serial", [conc["parallel"] / conc["serial"]], 0.7)
        budget("duplicate IPs among 50 concurrent ADDs", [conc["parallel duplicate IPs"]], 0, unit="")
        policy = res["netpol translation"] = netpol_translate.measure()
        budget(
            f"netpol: {netpol_translate.POLICIES} policies for {policy['endpoints']} pods on a node "
            f"({netpol_translate.PODS} in the cluster) to HNS ACLs, CPU",
            [policy["cpu s"]],
            1.0,
            unit=" s",
        )
        per = policy["rules per endpoint"]
        print(f"     (figure) ACL rules per endpoint: min {per['min']}, median {per['median']}, max {per['max']}")
        scale = doctor_scale.Scale()
        doctor = res[f"doctor at {scale}"] = doctor_scale.measure(scale, args.reps)
        for line, got in doctor.items():
            budget(f"{doctor_scale.LINES[line]} at {scale}, wall", got["seconds"], doctor_scale.SECONDS, unit=" s")
            budget(f"{doctor_scale.LINES[line]}, peak of Python's allocations", [got["MiB"]], doctor_scale.MIB, " MiB")
        agent_budgets(budget, res, dist)
    res["budgets"] = lines
    (HERE / "results.json").write_text(json.dumps(res, indent=2) + "\n")
    print(f"results: {HERE / 'results.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
