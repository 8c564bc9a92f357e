"""``wincni metrics --textfile DIR``: the doctor's findings and HNS's counts as Prometheus gauges,
in the file windows_exporter's textfile collector reads (``DIR/wincni.prom``).

``gauges`` is pure (facts and checks in, samples out) and ``exposition`` writes the text format
(version 0.0.4: HELP and TYPE before each family's samples, label values escaped); ``run`` gathers,
writes the file through its folder made admin-only and held, temp + rename (the collector never
reads half a file, and its temp name does not end in ``.prom``), and with ``--every`` does it
again on that interval. A count that could not be read is left out, never written as 0: a missing
series is "unknown", a 0 is a fact. A not-checked check is kept apart from ok/warn/fail
(``wincni_check_not_checked``), so it never reads as a pass.
"""

from __future__ import annotations

import argparse
from typing import Any, Callable, Mapping, TextIO

from .verdict import FAIL, OK, SKIP, WARN

FILE = "wincni.prom"
#: (name, help) of every family, in the order they are written.
FAMILIES = {
    "wincni_hns_up": "1 when HNS answered the doctor's queries.",
    "wincni_hns_networks": "HNS networks on the node.",
    "wincni_hns_endpoints": "HNS endpoints on the node, local and remote.",
    "wincni_hns_remote_endpoints": "HNS remote endpoints (other nodes' pods, made by kube-proxy).",
    "wincni_hns_load_balancers": "HNS load balancers (kube-proxy's Services).",
    "wincni_check": "1 for the status (ok, warn, fail) a wincni doctor check ended in, else 0.",
    "wincni_check_not_checked": "1 when a wincni doctor check could not run (what it reads was not read).",
    "wincni_orphans": "Objects nothing uses any more, by kind (what the doctor's fixes remove).",
    "wincni_pod_addresses": "Addresses host-local can hand out in the pods' range, by IP family.",
    "wincni_pod_addresses_free": "Addresses in the pods' range no pod holds, by IP family.",
}

Sample = tuple  # (family, labels as ((name, value), ...), value)


def gauges(f: Any, results: list) -> list[Sample]:
    """Every sample for the facts ``f`` and the doctor's ``results`` on them."""
    from .checks import orphan_reservations

    out: list[Sample] = [("wincni_hns_up", (), 0 if f.hns_problem else 1)]
    inv = f.inventory
    if inv is not None:
        out += [
            ("wincni_hns_networks", (), len(inv.networks)),
            ("wincni_hns_endpoints", (), len(inv.endpoints)),
            ("wincni_hns_remote_endpoints", (), len(inv.remote_endpoints)),
            ("wincni_hns_load_balancers", (), len(inv.load_balancers)),
        ]
    for c in results:
        out += [("wincni_check", (("check", c.id), ("status", s)), int(c.status == s)) for s in (OK, WARN, FAIL)]
        out.append(("wincni_check_not_checked", (("check", c.id),), int(c.status == SKIP)))
    if f.network is not None and not f.hns_problem:
        out.append(("wincni_orphans", (("kind", "endpoint"),), len(f.stale_endpoints)))
    if inv is not None:
        out.append(("wincni_orphans", (("kind", "remote-endpoint"),), len(inv.unreferenced_remote_endpoints)))
    if f.reservations is not None and f.network is not None:
        out.append(("wincni_orphans", (("kind", "reservation"),), len(orphan_reservations(f))))
    for family, size, free in pod_addresses(f):
        out.append(("wincni_pod_addresses", (("family", family),), size))
        out.append(("wincni_pod_addresses_free", (("family", family),), free))
    return out


def pod_addresses(f: Any) -> list[tuple[str, int, int]]:
    """(IP family, addresses host-local can hand out, how many no reservation holds) for each
    range set of the config's IPAM; none when the config or the store was not read."""
    if f.netconf is None or f.reservations is None or not isinstance(f.netconf.ipam, dict):
        return []
    from plugins.cni.errors import CniError
    from plugins.ipam_host_local import config
    from plugins.ipam_host_local.ranges import parse_ip

    try:
        ipam = config.load(
            {"name": f.name, "ipam": f.netconf.ipam}, {}, f.cni_version or "1.0.0", "win32" if f.windows else "linux"
        )
    except CniError:
        return []
    held = [parse_ip(ip) for ip, _ in f.reservations]
    return [(f"ipv{rs.version}", rs.size(), rs.size() - sum(rs.contains(ip) for ip in held)) for rs in ipam.range_sets]


def exposition(samples: list[Sample]) -> str:
    """The Prometheus text format: each family once, HELP and TYPE before its samples."""
    lines = []
    for family, text in FAMILIES.items():
        rows = [(labels, value) for name, labels, value in samples if name == family]
        if not rows:
            continue
        lines += [f"# HELP {family} {_escape(text, quote=False)}", f"# TYPE {family} gauge"]
        for labels, value in rows:
            shown = ",".join(f'{k}="{_escape(str(v), quote=True)}"' for k, v in labels)
            lines.append(f"{family}{{{shown}}} {value}" if shown else f"{family} {value}")
    return "\n".join(lines) + "\n"


def _escape(text: str, quote: bool) -> str:
    text = text.replace("\\", "\\\\").replace("\n", "\\n")
    return text.replace('"', '\\"') if quote else text


def add_arguments(p: argparse.ArgumentParser) -> None:
    from basics.cli import DIR

    from .sourcevip import seconds

    p.add_argument(
        "--textfile",
        type=DIR,
        required=True,
        metavar="DIR",
        help=f"windows_exporter's --collector.textfile.directories folder: {FILE} is written there",
    )
    p.add_argument(
        "--every",
        type=seconds,
        default=0,
        metavar="SECONDS",
        help="write it again every SECONDS until stopped (default 0: once)",
    )


def run(
    args: argparse.Namespace,
    opts: Mapping[str, Any],
    env: Mapping[str, str],
    platform: str,
    cwd: str,
    stdout: TextIO,
    stderr: TextIO,
    sleep: Callable[[float], None] | None = None,
    rounds: int | None = None,
) -> int:
    """Write the file once, or (``--every``) every so often, ``rounds`` times when given (tests);
    1 when the last round could not write it or a file a flag names was refused (said on stderr;
    the gauges say what that cost)."""
    import os
    import time

    from . import checks, facts
    from .bundle import Recorder

    path = os.path.join(args.textfile, FILE)
    status, done = 0, 0
    while True:
        recorder = Recorder()  # to say which of the flags' files were refused
        found = facts.gather(opts, env, platform, cwd, recorder)
        status = write(path, exposition(gauges(found, checks.run(found))), stderr)
        for why in recorder.refused():
            stderr.write(f"wincni metrics: refused {why}\n")
            status = 1
        done += 1
        if not args.every or (rounds is not None and done >= rounds):
            break
        (sleep or time.sleep)(args.every)
    if status == 0:
        stdout.write(f"{path}\n")
    return status


def write(path: str, text: str, stderr: TextIO) -> int:
    """``text`` into ``path`` atomically, through its folder made admin-only and held."""
    import os

    from .disk import Disk

    disk = Disk()
    try:
        disk.secure(os.path.dirname(os.path.abspath(path)))
        disk.write_atomic(path, text.encode())
    except OSError as exc:
        stderr.write(f"wincni metrics: cannot write {path}: {exc}\n")
        return 1
    finally:
        disk.release()
    return 0
