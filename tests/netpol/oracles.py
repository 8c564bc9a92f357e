"""The two NetworkPolicy oracles as tests ask them, and the case files' loaders (README.md here).

``cyclonus_cases()`` runs the built cyclonus program once per session; ``knp_verdicts`` asks one
long-lived knp process, so thousands of questions cost one start. Both programs come from
``winbuild/gobuild.py``'s cache (``.ci/run`` builds them); a missing one fails saying how to build
it.
"""

from __future__ import annotations

import atexit
import functools
import json
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from gotool import go_tool

DATA = Path(__file__).resolve().parent / "data"
KNP_ORACLE = "kube-network-policies v1.1.1"


@dataclass(frozen=True)
class Step:
    """One step of one case: the cluster then, and the oracle's truth table over it."""

    case: str
    index: int  # from 1, as the case's steps are numbered
    namespaces: list[dict]
    pods: list[dict]
    policies: list[dict]
    probes: list[dict]

    @property
    def cluster(self) -> dict:
        return {"namespaces": self.namespaces, "pods": self.pods, "policies": self.policies}

    @property
    def addresses(self) -> dict[str, str]:
        """``ns/name`` -> the pod's IPv4 address."""
        return {f"{p['metadata']['namespace']}/{p['metadata']['name']}": p["status"]["podIP"] for p in self.pods}

    def packet(self, probe: dict) -> dict:
        """The single packet a probe row stands for (a row with a port to reach)."""
        ips = self.addresses
        return {
            "srcIP": ips[probe["from"]],
            "dstIP": ips[probe["to"]],
            "dstPort": probe["port"],
            "protocol": probe["protocol"],
        }


def steps(document: dict) -> Iterator[Step]:
    for case in document["cases"]:
        for index, step in enumerate(case["steps"], 1):
            yield Step(case["name"], index, step["namespaces"], step["pods"], step["policies"], step["probes"])


def load(name: str) -> dict:
    """A case file of ``data/``."""
    return json.loads((DATA / name).read_text())


@functools.cache
def cyclonus_cases() -> dict:
    """cyclonus's default generated cases with its truth tables (README.md's format)."""
    exe = go_tool("cyclonus", "print cyclonus's NetworkPolicy cases")
    done = subprocess.run([exe], capture_output=True, text=True, timeout=300)
    if done.returncode:
        raise RuntimeError(f"{exe} failed (exit {done.returncode}): {done.stderr.strip()}")
    return json.loads(done.stdout)


class KnpError(RuntimeError):
    """knp could not answer: the message is its own reason."""


class Knp:
    """One knp process: each question is one JSON line in, one line out."""

    def __init__(self, exe: Path) -> None:
        self.exe = exe
        self.proc: subprocess.Popen | None = None

    def ask(self, question: dict) -> dict:
        if self.proc is None or self.proc.poll() is not None:
            self.proc = subprocess.Popen(
                [self.exe], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
            )
        self.proc.stdin.write(json.dumps(question) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            self.proc.stdin.close()
            why = self.proc.stderr.read().strip()
            self.proc.wait()
            raise KnpError(why or f"{self.exe} ended without an answer (exit {self.proc.returncode})")
        return json.loads(line)

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.stdin.close()
            self.proc.wait(timeout=30)


@functools.cache
def _knp() -> Knp:
    knp = Knp(go_tool("knp", "ask kube-network-policies about single packets"))
    atexit.register(knp.close)
    return knp


def knp_verdicts(cluster: dict, packets: list[dict]) -> list[dict]:
    """kube-network-policies' verdict for each packet over ``cluster`` (namespaces, pods, policies):
    ``{"ingress", "egress", "allowed"}`` each."""
    return _knp().ask({**cluster, "packets": packets})["verdicts"]
