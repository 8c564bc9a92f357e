"""``wincni doctor``'s checks, in the order the report lists them: ``CHECKS``, the one registry.

Each check is a pure function of ``NodeFacts`` -> ``Check`` (``None`` only for ``reach`` when
``--reach`` did not ask), named for its id (``cluster_dns`` for ``cluster-dns``), living in the
module of its subject. Its entry says what else the doctor must know of it: ``quick``, whether
``--quick`` (the DaemonSet's readiness probe: what decides whether a pod can get a network now,
from reads alone; no host-local store, no scan of every endpoint) runs it; ``live_only``, what
only the node itself can answer, so replayed from a bundle it is not checked, saying so, and
never passes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from tools.wincni.doctor.checks import config, netpol, network, node, pods, proxy, store, vip
from tools.wincni.doctor.facts import CheckFile, NodeFacts
from tools.wincni.judge.verdict import SKIP, Check


@dataclass(frozen=True)
class DoctorCheck:
    judge: Callable[[NodeFacts], Check | None]
    quick: bool = False
    live_only: str = ""  # what it needs of the node itself; "" when a bundle answers it too
    reads: tuple[CheckFile, ...] = ()  # files of the node it reads beyond the pods' network (``NodeFacts.files``)

    @property
    def id(self) -> str:
        return self.judge.__name__.replace("_", "-")


CHECKS: tuple[DoctorCheck, ...] = (
    DoctorCheck(node.backend, quick=True, live_only="the runtime's environment"),
    DoctorCheck(config.config, quick=True),
    DoctorCheck(config.plugins, quick=True, live_only="the CNI bin dir's files and who laid them"),
    DoctorCheck(network.hns_network, quick=True),
    DoctorCheck(network.subnet_env, quick=True),
    DoctorCheck(config.exceptions, quick=True),
    DoctorCheck(config.reach),
    DoctorCheck(config.net_conf, quick=True),
    DoctorCheck(network.vxlan, quick=True),
    DoctorCheck(vip.source_vip),
    DoctorCheck(network.hns_features, quick=True),
    DoctorCheck(store.ipam_store),
    DoctorCheck(network.stale_endpoints),
    # the pods and their endpoints
    DoctorCheck(pods.pod_endpoints),
    DoctorCheck(pods.endpoint_state),
    # kube-proxy's side of HNS
    DoctorCheck(proxy.lb_backends),
    DoctorCheck(proxy.policy_lists),
    DoctorCheck(proxy.stale_remote_endpoints),
    DoctorCheck(proxy.remote_endpoint_addresses),
    DoctorCheck(proxy.duplicate_load_balancers),
    DoctorCheck(proxy.dns_load_balancer),
    DoctorCheck(proxy.old_network),
    # the NetworkPolicy agent's side of HNS
    DoctorCheck(netpol.netpol_agent, reads=(netpol.STATE,)),
    DoctorCheck(netpol.netpol_drift, reads=(netpol.STATE,)),
    DoctorCheck(netpol.netpol_unprotected, reads=(netpol.STATE,)),
    DoctorCheck(config.runtime_status, live_only="the plugins' STATUS answer"),
    DoctorCheck(node.build, live_only="the install manifest as the node's wincni judges it"),
    DoctorCheck(node.permissions, quick=True, live_only="who may write the node's folders"),
)
BY_ID = {c.id: c for c in CHECKS}
#: Every file the checks read beyond the pods' network, by flag.
FILES = {f.flag: f for c in CHECKS for f in c.reads}


def run(facts: NodeFacts, quick: bool = False) -> list[Check]:
    chosen = [c for c in CHECKS if c.quick or not quick]
    return [found for found in (_run_one(c, facts) for c in chosen) if found is not None]


def _run_one(check: DoctorCheck, facts: NodeFacts) -> Check | None:
    if not (facts.replayed and check.live_only):
        return check.judge(facts)
    return Check(check.id, SKIP, f"not checked (replay): needs {check.live_only}", "run wincni doctor on the node")
