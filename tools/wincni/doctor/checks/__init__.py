"""``wincni doctor``'s checks: each a pure function of ``Facts`` -> ``Check``, so tests feed facts directly.

Address-space questions are ``addresses.AddressSet`` membership.
"""

from __future__ import annotations

import os
from typing import Any, Callable

from tools.wincni.doctor.checks import pods as podchecks
from tools.wincni.doctor.checks import proxy as proxychecks
from tools.wincni.doctor.checks.config import config, exceptions, net_conf, plugins, reach, runtime_status
from tools.wincni.doctor.checks.network import hns_features, hns_network, stale_endpoints, subnet_env, vxlan
from tools.wincni.doctor.checks.node import backend, build, permissions
from tools.wincni.doctor.checks.store import ipam_store
from tools.wincni.doctor.checks.vip import source_vip
from tools.wincni.doctor.facts import Facts
from tools.wincni.judge import addresses
from tools.wincni.judge.verdict import FAIL, OK, SKIP, WARN, Check, command_line
from tools.wincni.node.source import Problem

ALL: tuple[Callable[[Facts], Check | None], ...] = (
    backend,
    config,
    plugins,
    hns_network,
    subnet_env,
    exceptions,
    reach,
    net_conf,
    vxlan,
    source_vip,
    hns_features,
    ipam_store,
    stale_endpoints,
    # the pods and their endpoints (podchecks)
    podchecks.pod_endpoints,
    podchecks.endpoint_state,
    # kube-proxy's side of HNS (proxychecks)
    proxychecks.lb_backends,
    proxychecks.policy_lists,
    proxychecks.stale_remote_endpoints,
    proxychecks.remote_endpoint_addresses,
    proxychecks.duplicate_load_balancers,
    proxychecks.dns_load_balancer,
    proxychecks.old_network,
    runtime_status,
    build,
    permissions,
)


# ``wincni doctor --quick`` (the DaemonSet's readiness probe): what decides whether a pod can get a
# network now, from reads alone; host-local's store (its lock and index are written) and the scan of
# every endpoint are left out.
QUICK = frozenset(
    {
        "backend",
        "config",
        "plugins",
        "hns-network",
        "subnet-env",
        "exceptions",
        "net-conf",
        "vxlan",
        "hns-features",
        "permissions",
    }
)


#: What the checks that only the node itself can answer need of it: replayed from a bundle
#: (``wincni doctor --replay``) each is not checked, saying so, and never passes.
LIVE_ONLY = {
    "backend": "the runtime's environment",
    "plugins": "the CNI bin dir's files and who laid them",
    "runtime-status": "the plugins' STATUS answer",
    "build": "the install manifest as the node's wincni judges it",
    "permissions": "who may write the node's folders",
}


def check_id(check: Callable[[Facts], Check | None]) -> str:
    return check.__name__.replace("_", "-")


def run(facts: Facts, quick: bool = False) -> list[Check]:
    chosen = [check for check in ALL if not quick or check_id(check) in QUICK]
    return [c for c in (_run_one(check, facts) for check in chosen) if c is not None]


def _run_one(check: Callable[[Facts], Check | None], facts: Facts) -> Check | None:
    needs = LIVE_ONLY.get(check_id(check)) if facts.replayed else None
    if needs is None:
        return check(facts)
    return Check(check_id(check), SKIP, f"not checked (replay): needs {needs}", "run wincni doctor on the node")
