"""`make bench`: whole-process latency of the plugins as the kubelet runs them, plus raw HNS
calls per operation (from LIBHNS_JOURNAL). A benchmark, not a test: it prints figures.

    python bench/run.py [--reps N]
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
from collections import Counter
from pathlib import Path

BIN = Path(sys.executable).parent
sys.path.insert(0, str(Path(__file__).resolve().parent))


def timed(argv: list[str], env: dict, stdin: bytes = b"") -> tuple[float, subprocess.CompletedProcess]:
    start = time.perf_counter()
    proc = subprocess.run(argv, input=stdin, env=env, capture_output=True, timeout=120)
    return (time.perf_counter() - start) * 1000, proc


def median_ms(samples: list[float]) -> str:
    return f"{statistics.median(samples):7.1f} ms"


def startup(reps: int) -> None:
    print("\n## Start-up (median of %d runs)" % reps)
    env = {**os.environ, "CNI_COMMAND": "VERSION"}
    rows = [
        ("bare interpreter (python -c pass)", [sys.executable, "-c", "pass"], b""),
        ("win-bridge VERSION", [str(BIN / "win-bridge")], b"{}"),
        ("win-bridge bad JSON (code 6)", [str(BIN / "win-bridge")], b"{nope"),
    ]
    for label, argv, stdin in rows:
        e = (
            env
            if "VERSION" in label
            else {**os.environ, "CNI_COMMAND": "ADD", "CNI_CONTAINERID": "c", "CNI_NETNS": "none", "CNI_IFNAME": "eth0"}
        )
        samples = [timed(argv, e, stdin)[0] for _ in range(reps)]
        print(f"  {label:<40} {median_ms(samples)}")


def pod_lifecycle(reps: int) -> None:
    print("\n## win-bridge ADD / DEL on the HNS simulator (median of %d pods; host-local IPAM)" % reps)
    for api in (2, 1):
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            env = {
                **os.environ,
                "LIBHNS_BACKEND": "sim",
                "LIBHNS_SIM_DIR": str(root / "hns"),
                "CNI_PATH": str(BIN),
                "CNI_IFNAME": "eth0",
            }
            subprocess.run(
                [
                    str(BIN / "hnsctl"),
                    "network",
                    "create",
                    "cbr0",
                    "--type",
                    "L2Bridge",
                    "--subnet",
                    "10.244.0.0/16",
                    "--gateway",
                    "10.244.0.1",
                ],
                env=env,
                check=True,
                capture_output=True,
            )
            conf = json.dumps(
                {
                    "cniVersion": "1.0.0",
                    "name": "cbr0",
                    "type": "win-bridge",
                    "apiVersion": api,
                    "ipMasqNetwork": "10.244.0.0/16",
                    "policies": [
                        {
                            "name": "EndpointPolicy",
                            "value": {"Type": "OutBoundNAT", "Settings": {"Exceptions": ["10.96.0.0/12"]}},
                        }
                    ],
                    "ipam": {"type": "host-local", "subnet": "10.244.0.0/16", "dataDir": str(root / "ipam")},
                }
            ).encode()
            adds, dels = [], []
            calls: dict[str, Counter] = {}
            for i in range(reps):
                cid = f"bench{i}"
                if api == 2:
                    out = subprocess.run(
                        [str(BIN / "hnsctl"), "namespace", "create", "-o", "json"],
                        env=env,
                        check=True,
                        capture_output=True,
                    )
                    netns = json.loads(out.stdout)["ID"]
                else:
                    subprocess.run(
                        [str(BIN / "hnsctl"), "container", "create", cid], env=env, check=True, capture_output=True
                    )
                    netns = "none"
                for command, bucket in (("ADD", adds), ("DEL", dels)):
                    journal = root / f"{command}.jsonl"
                    journal.unlink(missing_ok=True)
                    e = {**env, "CNI_COMMAND": command, "CNI_CONTAINERID": cid, "CNI_NETNS": netns}
                    if i == 0:
                        e["LIBHNS_JOURNAL"] = str(journal)
                    ms, proc = timed([str(BIN / "win-bridge")], e, conf)
                    if proc.returncode != 0:
                        raise SystemExit(f"win-bridge {command} failed: {proc.stdout.decode()} {proc.stderr.decode()}")
                    if i == 0:
                        records = [json.loads(line) for line in journal.read_text().splitlines()]
                        calls[command] = Counter(
                            r["op"] + (" " + r["method"] + " " + r["path"] if r.get("method") else "") for r in records
                        )
                    else:  # the first pod pays for journaling; keep it out of the timings
                        bucket.append(ms)
            name = "HCN (V2)" if api == 2 else "HNSCall (V1)"
            print(f"  {name:<14} ADD {median_ms(adds)}   DEL {median_ms(dels)}")
            for command in ("ADD", "DEL"):
                total = sum(n for op, n in calls[command].items() if "Close" not in op)
                closes = sum(n for op, n in calls[command].items() if "Close" in op)
                ops = ", ".join(
                    f"{op}" + (f" x{n}" if n > 1 else "") for op, n in calls[command].items() if "Close" not in op
                )
                print(f"      {command}: {total} raw HNS calls (+{closes} Close): {ops}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=21)
    args = parser.parse_args(argv)
    print("# wincni bench (Linux, HNS simulator; process start-up dominates, as on a node)")
    startup(args.reps)
    pod_lifecycle(args.reps)
    print("\n## host-local")
    import host_local

    return host_local.main(["--reps", str(max(5, args.reps // 2))])


if __name__ == "__main__":
    sys.exit(main())
