"""ADD / DEL / CHECK / GC / STATUS for an HNS pod endpoint — the imperative shell.

Pure parts (config model, policies, documents, results) live beside this module; here is only
the order of I/O and the promise that an ADD failing halfway leaves nothing behind: each step
that succeeded registers its undo, and a failure runs them in reverse (the IP is released
exactly once, the endpoint deleted) before the error reaches the runtime.
"""

from __future__ import annotations

import ntpath
import os
import posixpath

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable, Mapping, NoReturn

    from .addaction import Create, Facts, Join, LeaveAlone, NoPodEndpoint, Replace, Reuse

from basics import jsontext
from plugins.cni import log
from plugins.cni.config import valid_attachments
from plugins.cni.errors import (
    INVALID_CONFIG,
    INVALID_ENV,
    LIMITED_CONNECTIVITY,
    NOT_AVAILABLE,
    TRY_AGAIN_LATER,
    CniError,
)
from plugins.cni.record import Record
from plugins.cni.result import Result
from plugins.cni.skel import Handlers, Request

from . import policies as pol
from .config import NetConf, endpoint_name, load, merged_dns
from .documents import Address, EndpointPlan, build_result
from .hnsapi import EndpointApi, addresses_of, open_api

#: Plugin-specific CNI error codes (100+ per the CNI specification).
HNS_FAILURE = 100  # HNS refused or failed a call; msg names the call and the HRESULT
CHECK_MISMATCH = 101  # CHECK found the endpoint differing from what ADD set up

#: The codes of a failed or unanswered HNS call (``hns_step``), which STATUS reports as 50.
_HNS_CODES = (TRY_AGAIN_LATER, HNS_FAILURE)
_HNS_FIX = (
    "the node takes no pods on this network until HNS answers: check the HNS service "
    "(Get-Service hns; Restart-Service hns if it hangs) and the System event log"
)


class hns_step:
    """Turn a libhns error into a CNI error that says which step failed and why. (A class: with
    ``contextlib`` every pod command would import one module more.)"""

    __slots__ = ("what",)

    def __init__(self, what: str) -> None:
        self.what = what

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type | None, err: BaseException | None, tb: object) -> bool:
        if err is None:
            return False
        from libhns.errors import EnvError, HnsError, try_later

        if isinstance(err, EnvError):  # a bad LIBHNS_* variable: the environment's fault, not HNS's
            raise CniError(INVALID_ENV, f"{self.what}: {err}", "fix or unset the variable") from None
        if isinstance(err, HnsError):
            code = TRY_AGAIN_LATER if try_later(err) else HNS_FAILURE
            raise CniError(code, f"{self.what}: {err}") from err
        return False


class Flavor:
    """What differs between win-bridge and win-overlay; the defaults are win-bridge-neutral."""

    __slots__ = ("plugin", "network_types", "schema_path", "ipv6", "_schema")

    def __init__(self, plugin: str, network_types: tuple[str, ...], schema_path: str, ipv6: bool = True) -> None:
        self.plugin, self.network_types, self.schema_path, self.ipv6 = plugin, network_types, schema_path, ipv6
        self._schema: dict | None = None

    def __repr__(self) -> str:
        return f"{type(self).__name__}(plugin={self.plugin!r})"

    def schema(self) -> dict:
        if self._schema is None:
            with open(os.path.join(os.path.dirname(__file__), "schema.json"), encoding="utf-8") as f:
                base = jsontext.loads(f.read())
            with open(self.schema_path, encoding="utf-8") as f:
                extra = jsontext.loads(f.read())
            base["properties"].update(extra.get("properties", {}))
            self._schema = base
        return self._schema

    def ipam_conf(self, conf: dict) -> dict:
        """The config handed to the IPAM plugin (same for ADD, DEL, CHECK, GC, STATUS)."""
        return conf

    def gateway(self, address: str, network: Any) -> str:
        raise NotImplementedError

    def mac(self, conf: NetConf, addresses: tuple[Address, ...]) -> str:
        return ""

    def automatic_policies(
        self, policies: list[dict], conf: NetConf, network: Any, addresses: tuple[Address, ...], form: Any
    ) -> list[dict]:
        """The policies this plugin adds on its own to ``policies`` (in ``form``, ``policies.V1``
        / ``V2``), each through its type's home in ``policies.py``."""
        return policies

    def network_problems(self, network: Any) -> list[str]:
        return []


class Lifecycle:
    def __init__(self, flavor: Flavor) -> None:
        self.flavor = flavor

    def handlers(self) -> Handlers:
        """What win-bridge's and win-overlay's ``__main__`` hand skel."""
        return Handlers(add=self.add, delete=self.delete, check=self.check, gc=self.gc, status=self.status)

    # ------------------------------------------------------------------ shared steps
    def load(self, req: Request) -> tuple[dict, NetConf]:
        return load(req.conf, req.command, self.flavor.schema())

    def api(self, conf: NetConf, req: Request, cap: float | None = None) -> EndpointApi:
        with hns_step("cannot reach HNS"):
            return open_api(conf.api_version, req.env, conf.hns_timeout, req.container_id, req.netns, cap)

    def find(self, api: EndpointApi, conf: NetConf) -> Any | None:
        """The pod's HNS network, or None when there is none. With a ``network`` section
        (standalone mode) an existing network must match it."""
        wanted = self.wanted_network(conf)
        with hns_step(f"error while getting network {conf.name}"):
            network = api.network(conf.name)
        if network is not None and wanted is not None:
            from .network import mismatch

            problem = mismatch(wanted, network)
            if problem is not None:
                raise problem
        return network if network is None else self._typed(network, conf)

    def require(self, api: EndpointApi, conf: NetConf, missing_code: int) -> Any:
        """The pod's HNS network; a missing one is ``missing_code`` naming it."""
        network = self.find(api, conf)
        if network is None:
            raise CniError(
                missing_code,
                f"network {conf.name} not found: is flanneld running on this node? It makes its network only when it "
                "starts, and an HNS restart drops it",
                'restart flanneld, or start it if it is not running (after an HNS restart it logs "Unable to find '
                f'network" and makes no new one); else no HNS network is named {conf.name!r}: the config\'s "name" must match the '
                'network flanneld (or start.ps1) created, or add a "network" section (e.g. {"subnet": "10.244.4.0/24"}) '
                "so the plugin creates it",
            )
        return network

    def ensure(self, api: EndpointApi, conf: NetConf, req: Request, features: "_Features") -> Any:
        """ADD's network: created under the node lock when a ``network`` section says how and it
        is missing (``network.ensure`` checks an existing one itself); else as ``require``."""
        wanted = self.wanted_network(conf)
        if wanted is None:
            return self.require(api, conf, TRY_AGAIN_LATER)
        from .network import ensure

        with hns_step(f"error while creating HNS network {conf.name}"):
            network = ensure(api, wanted, features.get, lock_dir(req.env, req.platform))
        return self._typed(network, conf)

    def _typed(self, network: Any, conf: NetConf) -> Any:
        if not any(network.is_type(t) for t in self.flavor.network_types):
            raise CniError(
                INVALID_CONFIG,
                f"network {conf.name} is of unexpected type: {network.network_type}",
                f"{self.flavor.plugin} needs a network of type {' or '.join(self.flavor.network_types)}",
            )
        return network

    def wanted_network(self, conf: NetConf) -> Any:
        """The network a standalone config's ``network`` section wants (a ``WantedNetwork``,
        validated: code 7 for a bad one), or None without the section."""
        if conf.network is None:
            return None
        from .network import ipam_outside, wanted_network

        wanted = wanted_network(conf.network, conf.name, self.flavor.network_types[0], self.flavor.ipv6)
        problem = ipam_outside(wanted, conf.ipam)
        if problem is not None:
            raise problem
        return wanted

    def ipam_stdin(self, req: Request, conf: dict) -> bytes:
        return jsontext.dumps(self.flavor.ipam_conf(conf)).encode()

    def run_ipam(self, req: Request, conf: dict, netconf: NetConf, command: str) -> dict | None:
        ipam_type = netconf.ipam.get("type") if isinstance(netconf.ipam, dict) else None
        if not ipam_type:
            return None
        return req.exec_plugin(ipam_type, command, self.ipam_stdin(req, conf))

    def requested(self, netconf: NetConf, req: Request, api: EndpointApi, features: _Features) -> pol.Requested:
        """The policies the config and the runtime ask for, checked (code 7 for one HNS cannot take)."""
        return pol.requested(netconf, req.runtime_config.port_mappings, api.policy_form, features.get)

    def policies(
        self,
        netconf: NetConf,
        network: Any,
        addresses: tuple[Address, ...],
        requested: pol.Requested,
        api: EndpointApi,
        features: _Features,
    ) -> list[dict]:
        """Every policy of the pod's endpoint: what was ``requested`` and what ``network`` and
        ``addresses`` add."""
        if netconf.loopback_dsr and addresses and not features.get("dsr"):
            log.warning("loopbackDSR is set but this HNS version does not support DSR; skipping the policy")
        return pol.completed(requested, self.flavor, netconf, network, addresses, api.policy_form, features.get)

    # ------------------------------------------------------------------ ADD
    def add(self, req: Request) -> Result:
        """Read what HNS holds under the pod's endpoint name, let ``addaction.decide`` choose one
        action, carry it out."""
        from . import addaction as act

        conf, netconf = self.load(req)
        api = self.api(netconf, req)
        api.require_sandbox()
        features = _Features(api)
        requested = self.requested(netconf, req, api, features)  # refused before IPAM reserves an address
        network = self.ensure(api, netconf, req, features)
        for problem in self.flavor.network_problems(network):
            log.warning(problem)
        name = endpoint_name(req.container_id, req.netns, netconf.name)
        existing, facts = self.endpoint_facts(api, name, network, netconf.name)
        add = _Add(req, conf, netconf, api, features, requested, network, name, existing)
        action = act.decide(facts)
        carry_out = {
            act.Create: self.create,
            act.Replace: self.replace,
            act.Reuse: self.reuse,
            act.Join: self.join,
            act.LeaveAlone: self.leave_alone,
            act.NoPodEndpoint: self.no_pod_endpoint,
        }
        return carry_out[type(action)](add, action)

    def endpoint_facts(self, api: EndpointApi, name: str, network: Any, network_name: str) -> tuple[Any | None, Facts]:
        """The endpoint of the pod's name and what ADD's choice reads of it; who holds it (an HNS
        call or more) only when the choice depends on it."""
        from plugins.cni.ownership import endpoint_kept

        from .addaction import ELSEWHERE, HERE, NOWHERE, Facts, needs_holder

        with hns_step(f"error while looking up HNS endpoint {name}"):
            ep = api.endpoint(name)
            if ep is None:
                return None, Facts(api.shared, NOWHERE)
            place = HERE if _same(ep.network_id, network.id) else ELSEWHERE
            attached = api.is_attached(ep)
            asked = needs_holder(api.shared, place, attached)
            kept = endpoint_kept(ep.name or "", network_name, api.in_use(ep)) if asked else None
        return ep, Facts(api.shared, place, attached, kept)

    def create(self, add: _Add, action: Create | Replace) -> Result:
        """A new endpoint: IPAM, create, attach; a failure undoes the steps done, in reverse. (Every
        step that carries out an action takes it; this one reads nothing of it.)"""
        req, conf, netconf, api, network, name = add.req, add.conf, add.netconf, add.api, add.network, add.name
        undo: list[tuple[str, Callable[[], Any]]] = []
        try:
            ipam = self.run_ipam(req, conf, netconf, "ADD")
            if ipam is not None:
                undo.append(("release the IP", lambda: self.run_ipam(req, conf, netconf, "DEL")))
            addresses = self.addresses(ipam, network, api, req)
            if any(a.version == 6 for a in addresses) and not add.features.get("dual_stack"):  # V2 only: usable_ips
                raise CniError(
                    INVALID_CONFIG,
                    "IPAM returned an IPv6 address but this HNS version has no dual-stack support",
                    "dual-stack needs HNS 11.10 or newer (Windows Server 2022 / build 19041+)",
                )
            plan = EndpointPlan(
                name=name,
                network_id=network.id,
                addresses=addresses,
                dns=merged_dns(netconf.dns, req.runtime_config.dns),
                policies=(
                    *self.policies(netconf, network, addresses, add.requested, api, add.features),
                    *_netpol_acls(req, api),
                ),
                mac=self.flavor.mac(netconf, addresses),
            )
            created: list[Any] = []
            undo.append(("delete the endpoint", lambda: _delete_created(api, created, name, network.id)))
            with hns_step(f"error while creating HNS endpoint {name}"):
                created.append(_create_clearing_stale(api, plan, network, netconf.name, name))
            ep = created[0]
            with hns_step(f"failed to attach HNS endpoint {name} to {req.netns or req.container_id}"):
                api.attach(ep)
            undo.append(("detach the endpoint", lambda: api.remove(ep)))
            if not addresses:  # no IPAM: HNS chose the address
                return self.result_of(ep, network, api, req)
            return build_result(
                name,
                ep.mac or plan.mac,
                _sandbox(req.netns),
                addresses,
                api.policy_form.applied_dns(plan.dns),
                req.cni_version,
            )
        except BaseException:
            with api.undo_window():  # its own deadline: the command's may be what failed
                for what, step in reversed(undo):
                    try:
                        step()
                    except Exception as err:  # noqa: BLE001 - report, keep undoing
                        log.warning(f"rollback: could not {what}: {err}")
            raise

    def replace(self, add: _Add, action: Replace) -> Result:
        """The stale endpoint of the pod's name goes, then as ``create``."""
        self.remove_stale(add, action.why)
        return self.create(add, action)

    def reuse(self, add: _Add, action: Reuse) -> Result:
        """A retry of an ADD that succeeded: the same answer, no second IP or endpoint."""
        if action.attach:
            with hns_step(f"failed to attach HNS endpoint {add.name}"):
                add.api.attach(add.existing)
        log.event("add-retry", endpoint=add.name)
        return self.result_of(add.existing, add.network, add.api, add.req)

    def join(self, add: _Add, action: Join) -> Result:
        with hns_step(f"failed to attach container {add.req.container_id} to HNSEndpoint {add.existing.id}"):
            add.api.attach(add.existing)
        return self.result_of(add.existing, add.network, add.api, add.req)

    def leave_alone(self, add: _Add, action: LeaveAlone) -> NoReturn:
        from . import stale

        self.release_ip(add.req, add.conf, add.netconf)  # a killed earlier ADD's, when there is one
        raise stale.left_alone(add.existing, add.name, action.kept, action.elsewhere)

    def no_pod_endpoint(self, add: _Add, action: NoPodEndpoint) -> NoReturn:
        if action.why:
            self.remove_stale(add, action.why)
        raise CniError(
            TRY_AGAIN_LATER,
            f"failed to find HNSEndpoint {add.name}: the pause container's endpoint does not exist",
            "the sandbox (pause) container must be set up before containers that share its network",
        )

    def remove_stale(self, add: _Add, why: str) -> None:
        from . import stale

        with hns_step(f"error while replacing stale HNS endpoint {add.name}"):
            stale.remove(add.api, add.existing, why)

    def release_ip(self, req: Request, conf: dict, netconf: NetConf) -> None:
        """IPAM DEL for this attachment, best effort (the error being raised is what counts)."""
        try:
            self.run_ipam(req, conf, netconf, "DEL")
        except CniError as err:
            log.warning(f"could not release the pod's IPAM reservation: {err}")

    def addresses(self, ipam: dict | None, network: Any, api: EndpointApi, req: Request) -> tuple[Address, ...]:
        if ipam is None:
            return ()
        result = Result.from_dict(ipam, req.cni_version)
        if not result.ips:
            raise CniError(
                INVALID_CONFIG,
                "IPAM plugin return is missing IP config",
                "the IPAM plugin returned no addresses; check its range configuration",
            )
        ips = result.ips
        if any(ip.family == 6 for ip in ips) and not self.flavor.ipv6:
            raise CniError(
                INVALID_CONFIG,
                f"{self.flavor.plugin} does not support IPv6 (IPAM returned "
                f"{', '.join(ip.address for ip in ips if ip.family == 6)})",
                "Windows overlay networking has no dual-stack: give this network an IPv4-only IPAM range",
            )
        return tuple(
            Address(interface=ip.address, gateway=self.flavor.gateway(ip.address, network))
            for ip in api.usable_ips(ips)
        )

    def result_of(self, ep: Any, network: Any, api: EndpointApi, req: Request) -> Result:
        """The result for an existing endpoint (retry, shared container): the DNS HNS holds, as the
        first ADD's result said."""
        return build_result(
            ep.name, ep.mac or "", _sandbox(req.netns), addresses_of(ep, network), api.dns(ep), req.cni_version
        )

    # ------------------------------------------------------------------ DEL
    def delete(self, req: Request) -> None:
        """Both halves are always attempted; gone is success; the first failure is reported."""
        conf, netconf = self.load(req)
        failures: list[CniError] = []
        try:
            self.run_ipam(req, conf, netconf, "DEL")
        except CniError as err:
            failures.append(err)
        try:
            api = self.api(netconf, req)
            name = endpoint_name(req.container_id, req.netns, netconf.name)
            with hns_step(f"failed to remove HNS endpoint {name}"):
                ep = api.endpoint_to_remove(name)
                if ep is not None:
                    api.remove(ep)
        except CniError as err:
            failures.append(err)
        if failures:
            first = failures[0]
            if len(failures) > 1:
                first.details = "; ".join(filter(None, [first.details] + [str(f) for f in failures[1:]]))
            raise first

    # ------------------------------------------------------------------ CHECK
    def check(self, req: Request) -> None:
        conf, netconf = self.load(req)
        api = self.api(netconf, req)
        api.require_sandbox()
        network = self.require(api, netconf, NOT_AVAILABLE)
        name = endpoint_name(req.container_id, req.netns, netconf.name)
        with hns_step(f"error while looking up HNS endpoint {name}"):
            ep = api.endpoint(name)
        if ep is None:
            raise CniError(
                CHECK_MISMATCH, f"HNS endpoint {name} does not exist", "the pod's network is gone; recreate the pod"
            )
        problems = []
        if not _same(ep.network_id, network.id):
            problems.append(f"it is on network {ep.network_id}, not {netconf.name} ({network.id})")
        if not api.is_attached(ep):
            problems.append(f"it is not attached to {api.attach_target}")
        prev = req.prev_result
        have = set(ep.ip_addresses)
        if prev is not None:
            lost = [ip.address for ip in prev.ips if ip.address.split("/")[0] not in have]
            if lost:
                problems.append(
                    f"it lacks the address(es) {', '.join(lost)} of prevResult (has {', '.join(sorted(have)) or 'none'})"
                )
        features = _Features(api)
        wanted = self.policies(
            netconf, network, addresses_of(ep, network), self.requested(netconf, req, api, features), api, features
        )
        missing = pol.missing_policies(wanted, ep.policies or [])
        if missing:
            problems.append("it lacks the policies " + ", ".join(jsontext.dumps(p, sort_keys=True) for p in missing))
        extra = pol.missing_policies(pol.of_type(ep.policies or [], pol.Acl.kind), pol.of_type(wanted, pol.Acl.kind))
        if extra:
            from .acls import netpol_owned

            extra = [p for p in extra if not netpol_owned(p)]  # the NetworkPolicy agent's to keep true
        if extra:  # ACLs are exact: a rule the config no longer has still filters the pod's traffic
            problems.append(
                "it carries ACLs the config does not ask for "
                + ", ".join(jsontext.dumps(p, sort_keys=True) for p in extra)
            )
        if problems:
            raise CniError(
                CHECK_MISMATCH, f"HNS endpoint {name} differs from its configuration: " + "; ".join(problems)
            )
        self.run_ipam(req, conf, netconf, "CHECK")

    # ------------------------------------------------------------------ GC
    def gc(self, req: Request) -> None:
        """Remove this network's <sandbox>_<network> endpoints of sandboxes the runtime no longer knows."""
        conf, netconf = self.load(req)
        attachments = valid_attachments(conf)
        if attachments is None:
            log.warning("GC without cni.dev/valid-attachments: nothing released")
            return
        keep = {cid for cid, _ in attachments}
        api = self.api(netconf, req)
        from plugins.cni.ownership import freed, pod_of

        failures = []
        with hns_step(f"error while listing endpoints of network {netconf.name}"):
            network = api.network(netconf.name)
            endpoints = api.endpoints_of(network) if network is not None else []
        for ep in endpoints:
            ep_name = ep.name or ""
            pod = pod_of(ep_name, netconf.name)  # only <sandbox>_<network>: never flanneld's or others'
            if not pod or pod in keep:
                continue
            try:
                with hns_step(f"GC: failed to remove stale endpoint {ep_name}"):
                    api.remove_stale(ep)
                freed(
                    f"{self.flavor.plugin} GC",
                    f"HNS endpoint {ep_name} ({ep.id})",
                    f"sandbox {pod} is not among the runtime's valid attachments",
                )
                log.event("gc-endpoint", endpoint=ep_name)
            except CniError as err:
                failures.append(err)
        self.run_ipam(req, conf, netconf, "GC")
        if failures:
            raise failures[0]

    # ------------------------------------------------------------------ STATUS
    def status(self, req: Request) -> None:
        """Whether this node can take pods on the network: 50 when ADD cannot succeed (no network
        outside standalone mode, HNS failing or not answering within ``STATUS_SECONDS``), 51 when
        pods would get limited connectivity (the flavor's network problems). containerd waits
        for the answer with no timeout and holds NetworkReady on it, hence the short bound."""
        from libhns.deadline import STATUS_SECONDS

        conf, netconf = self.load(req)
        try:
            api = self.api(netconf, req, STATUS_SECONDS)
            # Standalone mode: a missing network is not a problem, the next ADD creates it.
            standalone = netconf.network is not None
            network = self.find(api, netconf) if standalone else self.require(api, netconf, NOT_AVAILABLE)
        except CniError as err:
            if err.code not in _HNS_CODES:
                raise
            raise CniError(NOT_AVAILABLE, err.msg, _HNS_FIX) from err
        problems = self.flavor.network_problems(network) if network is not None else []
        if problems:
            raise CniError(LIMITED_CONNECTIVITY, problems[0], "; ".join(problems[1:]))
        self.run_ipam(req, conf, netconf, "STATUS")


def lock_dir(env: Mapping[str, str], platform: str) -> str:
    """Where the node-wide locks live: a folder only administrators can write, never one a local
    user could create first (``%TEMP%``, ``/tmp``). %ProgramData%\\wincni on Windows (made with a
    protected DACL), ``/run/wincni`` for root elsewhere, the user's own runtime folder for a
    developer; ``WINCNI_LOCK_DIR`` (set by whoever starts the plugins) overrides."""
    if env.get("WINCNI_LOCK_DIR"):
        return env["WINCNI_LOCK_DIR"]
    if platform == "win32":
        return ntpath.join(env.get("ProgramData") or "C:\\ProgramData", "wincni")
    if os.geteuid() == 0:
        return "/run/wincni"
    return posixpath.join(env.get("XDG_RUNTIME_DIR") or posixpath.join(env.get("HOME") or "/", ".cache"), "wincni")


def netpol_state(env: Mapping[str, str], platform: str) -> str:
    """The NetworkPolicy agent's state for ADD (``netpolstate``), in the same admin-only folder;
    ``WINCNI_NETPOL_STATE`` overrides."""
    if env.get("WINCNI_NETPOL_STATE"):
        return env["WINCNI_NETPOL_STATE"]
    return (ntpath if platform == "win32" else posixpath).join(lock_dir(env, platform), "netpol.json")


def _netpol_acls(req: Request, api: EndpointApi) -> list[dict]:
    """The NetworkPolicy ACLs a new endpoint gets from the node agent's state (``netpolstate``);
    a node without the agent pays this one absent-file check."""
    path = netpol_state(req.env, req.platform)
    if not os.path.lexists(path):
        return []
    from . import netpolstate

    return netpolstate.acls(path, req.cni_args, api.policy_form)


def _delete_created(api: EndpointApi, created: list, name: str, network_id: str) -> None:
    """Undo of the create step. HCN creation is Create + Query: when the Query fails the endpoint
    exists but we never got it back, so look it up by name (ADD checked none existed before)."""
    ep = created[0] if created else api.endpoint(name)
    if ep is not None and _same(ep.network_id, network_id):
        api.delete(ep)


def _create_clearing_stale(api: EndpointApi, plan: EndpointPlan, network: Any, network_name: str, name: str) -> Any:
    """Create the endpoint; when HNS refuses its address as taken by a stale endpoint of ours,
    remove that one and create once more (``stale.clear_addresses``)."""
    from libhns.errors import InvalidAddress

    try:
        return api.create(plan)
    except InvalidAddress:
        from . import stale

        if not stale.clear_addresses(api, network, network_name, [a.ip for a in plan.addresses], name):
            raise
    return api.create(plan)


def _sandbox(netns: str) -> str:
    """The result's interface sandbox: the namespace (or container:<id>); dockershim's 'none' names nothing."""
    return "" if netns in ("", "none") else netns


def _same(a: str | None, b: str | None) -> bool:
    from libhns.objects import same_id

    return same_id(a, b)


class _Add(Record):
    """One ADD's inputs, as the step carrying out its action reads them (read-only once built)."""

    __slots__ = ("req", "conf", "netconf", "api", "features", "requested", "network", "name", "existing")

    def __init__(
        self,
        req: Request,
        conf: dict,
        netconf: NetConf,
        api: EndpointApi,
        features: _Features,
        requested: pol.Requested,
        network: Any,
        name: str,
        existing: Any | None,
    ) -> None:
        self.req, self.conf, self.netconf, self.api, self.features = req, conf, netconf, api, features
        self.requested, self.network, self.name, self.existing = requested, network, name, existing


class _Features:
    """HNS features, read (one GET /globals/version) only if a decision needs them and the API
    may have them at all."""

    def __init__(self, api: EndpointApi) -> None:
        self._api = api
        self._features: Any = None

    def get(self, name: str) -> bool:
        if name in self._api.lacks:
            return False
        if self._features is None:
            with hns_step("error while reading the HNS version"):
                self._features = self._api.features()
        return bool(getattr(self._features, name))
