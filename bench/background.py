"""`make bench`'s background work: the raw HNS calls (as ``LIBHNS_JOURNAL`` records them, Close
included) of the DaemonSet's periodic commands on a simulated flannel -> win-bridge node with
N pods, and what they cost HNS a minute at the DaemonSet's default periods. A benchmark, not a
test: it prints figures and two budget lines (`make bench` runs it through bench/budgets.py).

    python bench/background.py [--pods 0,60,250]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(HERE))
from verdict import judged

VENV_BIN = Path(sys.executable).parent
NETWORK = "cbr0"
#: A /22 lease: room for 250 pods beside the gateway and flanneld's host endpoint.
LEASE = "FLANNEL_NETWORK=10.244.0.0/16\r\nFLANNEL_SUBNET=10.244.4.1/22\r\nFLANNEL_MTU=1450\r\nFLANNEL_IPMASQ=true\r\n"
NET_CONF = {"Network": "10.244.0.0/16", "Backend": {"name": NETWORK, "type": "host-gw"}}

#: The DaemonSet's periods (deploy/wincni-flannel.yaml), seconds: what runs how often.
PERIODS = {"sweep": 60, "metrics": 300, "readiness": 30}
#: The issue's budget: raw HNS calls a minute (Close included) at 250 pods on an idle node.
PER_MINUTE = 60
POPULATIONS = (0, 60, 250)


class Node:
    """A node as flanneld and the runtime leave it: ``cbr0`` and its host endpoint, flannel's
    files and config, and ``pods`` pods added through flannel in containerd sandboxes."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.conf_dir, self.textfile = root / "net.d", root / "textfile"
        self.journal = root / "journal.jsonl"
        self.env = {
            "PATH": os.environ.get("PATH", ""),
            "LIBHNS_BACKEND": "sim",
            "LIBHNS_SIM_DIR": str(root / "hns"),
            "CNI_PATH": str(VENV_BIN),
            "CNI_IFNAME": "eth0",
            "WINCNI_LOCK_DIR": str(root / "locks"),
        }
        for folder in (self.conf_dir, self.textfile):
            folder.mkdir(parents=True)
        (root / "subnet.env").write_text(LEASE)
        (root / "net-conf.json").write_text(json.dumps(NET_CONF))
        self.conf = {
            "cniVersion": "1.0.0",
            "name": NETWORK,
            "type": "flannel",
            "subnetFile": str(root / "subnet.env"),
            "netConf": str(root / "net-conf.json"),
            "dataDir": str(root / "flannel"),
            "ipam": {"dataDir": str(root / "ipam")},
            "delegate": {
                "type": "win-bridge",
                "dns": {"nameservers": ["10.96.0.10"]},
                "policies": [
                    {"Name": "EndpointPolicy", "Value": {"Type": "OutBoundNAT", "ExceptionList": ["10.244.0.0/16"]}}
                ],
            },
        }
        (self.conf_dir / "10-flannel.conf").write_text(json.dumps(self.conf))
        self.hnsctl(
            "network", "create", NETWORK, "--type", "L2Bridge", "--subnet", "10.244.4.0/22", "--gateway", "10.244.4.1"
        )
        self.hnsctl("endpoint", "create", f"{NETWORK}_ep", "--network", NETWORK, "--ip", "10.244.4.2", "--host")
        self.pods = 0

    def hnsctl(self, *args: str) -> str:
        from tools import hnsctl

        out, err = io.StringIO(), io.StringIO()
        if hnsctl.main(list(args), out, err, self.env) != 0:
            raise SystemExit(f"hnsctl {' '.join(args)}: {err.getvalue()}")
        return out.getvalue()

    def add_pods(self, count: int) -> None:
        from plugins.flannel.__main__ import main as flannel

        stdin = json.dumps(self.conf).encode()
        for _ in range(count):
            self.pods += 1
            netns = json.loads(self.hnsctl("namespace", "create", "-o", "json"))["ID"]
            env = {**self.env, "CNI_COMMAND": "ADD", "CNI_CONTAINERID": f"pod{self.pods}", "CNI_NETNS": netns}
            out = io.StringIO()
            if flannel(env, io.BytesIO(stdin), out) != 0:
                raise SystemExit(f"flannel ADD pod{self.pods}: {out.getvalue()}")

    def flags(self) -> list[str]:
        return [
            "--cni-conf",
            str(self.conf_dir),
            "--cni-bin-dir",
            str(VENV_BIN),
            "--source-vip",
            str(self.root / "SourceVip.json"),
            "--containerd-config",
            str(self.root / "config.toml"),
        ]

    def commands(self) -> dict[str, list[str]]:
        """Each periodic command's one pass, by the DaemonSet container that runs it."""
        flags = self.flags()
        return {
            "sweep": ["reclaim", *flags[:2], *flags[-2:], "--runtime-endpoint", "none"],
            "metrics": ["metrics", *flags, "--textfile", str(self.textfile)],
            "doctor": ["doctor", *flags, "-o", "json"],
            "readiness": ["doctor", "--quick", *flags, "-o", "json"],
        }

    def calls(self, argv: list[str]) -> tuple[int, float]:
        """(raw HNS calls, Close included; seconds) of one run of ``wincni argv`` in-process."""
        from tools.wincni.cli.main import main

        self.journal.unlink(missing_ok=True)
        started = time.perf_counter()
        main(argv, io.StringIO(), io.StringIO(), {**self.env, "LIBHNS_JOURNAL": str(self.journal)}, "linux")
        elapsed = time.perf_counter() - started
        return len(self.journal.read_text().splitlines()) if self.journal.exists() else 0, elapsed


def per_minute(counts: dict[str, int]) -> float:
    """Raw calls a minute of the DaemonSet's sweep, metrics and readiness probe at their periods."""
    return sum(counts[name] * 60 / period for name, period in PERIODS.items())


def measure(pods: list[int], work: Path) -> dict:
    """Calls (and seconds) of each command's pass at each population, one node growing."""
    node, out = Node(work), {}
    for count in sorted(pods):
        node.add_pods(count - node.pods)
        runs = {name: node.calls(argv) for name, argv in node.commands().items()}
        out[count] = {
            "calls": {name: calls for name, (calls, _) in runs.items()},
            "seconds": {name: s for name, (_, s) in runs.items()},
        }
    return out


def report(found: dict, budget: Callable[..., None]) -> None:
    """Each population's figures, then the issue's budget (at the largest population) and its
    flatness (the largest against 60 pods, the first with pods of every kind) through
    ``budget(label, figures, limit, unit)`` (a count is one figure)."""
    for count, row in found.items():
        calls, secs = row["calls"], row["seconds"]
        print(
            f"     (figure) background HNS calls at {count} pods, one pass each: "
            + ", ".join(f"{name} {n}" for name, n in calls.items())
            + f"; {per_minute(calls):.1f} a minute; sweep pass {secs['sweep']:.2f} s, metrics run {secs['metrics']:.2f} s",
            flush=True,
        )
    most = max(found)
    budget(
        f"background HNS calls a minute at {most} pods (Close included)",
        [per_minute(found[most]["calls"])],
        PER_MINUTE,
        "",
    )
    base = min((c for c in found if c), default=most)
    growth = per_minute(found[most]["calls"]) - per_minute(found[base]["calls"])
    budget(f"background HNS calls a minute, growth from {base} to {most} pods", [growth], 0, "")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pods", default=",".join(map(str, POPULATIONS)), help="populations (default %(default)s)")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="wincni-background-") as tmp:
        found = measure([int(p) for p in args.pods.split(",")], Path(tmp))
    report(found, lambda *a: print(judged(*a), flush=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
