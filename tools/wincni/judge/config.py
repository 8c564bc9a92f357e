"""The one judge of a CNI config's content: what ``wincni install`` refuses to lay (or warns about)
is what ``wincni doctor`` fails (or warns about) on the node, finding for finding, fix for fix.

Pure: a ``Config`` (the config as its plugin would run it, and what it is weighed against) in,
``Check``s out. The doctor builds the ``Config`` from its facts (``config.config_of``), install
from what it rendered, before anything changes (``conf.rendered``). A fix names what the operator
owns (``Origin``): the conflist only when nobody manages it; once ``wincni install`` laid it, the
template (or the install flag) it renders from and install's command to run again, since the next
install reverts a hand edit of the conflist.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

from plugins.winnet.policies import OutboundNat, Route
from tools.wincni.judge.addresses import AddressSet, network
from tools.wincni.judge.verdict import FAIL, OK, WARN, Check, command_line


@dataclass(frozen=True)
class Origin:
    """Where a change to the config lasts. ``install``: the arguments of the ``wincni install``
    whose manifest names the conflist (() when that manifest does not record them), None when
    nobody manages it; ``windows`` and ``tools`` say how to write its command for the node."""

    conflist: str
    install: tuple[str, ...] | None = None
    windows: bool = False
    tools: str = ""

    def flag(self, name: str) -> str:
        args = self.install or ()
        return args[args.index(name) + 1] if name in args[:-1] else ""

    @property
    def renders_itself(self) -> bool:
        """install renders the config from its flags alone (no template to edit); unknown (False)
        when its manifest does not say how it ran."""
        return bool(self.install) and not self.flag("--template")

    def edit(self, change: str, in_template: str = "") -> str:
        """``change`` made in the file it lasts in: the conflist nobody manages, else the template
        install renders (``in_template``, when a token says it there), then install again;
        install's own config is rendered again as is."""
        if self.install is None:
            return f"{change} in {self.conflist}"
        if self.renders_itself:
            return f"install writes {self.conflist} from its flags: {self.again()}"
        template = self.flag("--template")
        named = f"the template {template} (not" if template else "the template install renders (its --template; not"
        return f"{in_template or change} in {named} in {self.conflist}, which install rewrites), {self.then()}"

    def then(self) -> str:
        """The last step of a fix made in the template: install run again."""
        return "then " + self.again()

    def again(self, **flags: str) -> str:
        """Run install again, with ``flags`` (``node_ip="…"`` for ``--node-ip``) changed; the
        command comes last, alone, for the operator to paste."""
        if not self.install:
            changed = ", ".join(f"--{k.replace('_', '-')} {v}" for k, v in flags.items())
            return "run wincni install again with the flags it was run with" + (f" and {changed}" if changed else "")
        args = list(self.install)
        for key, value in flags.items():
            name = "--" + key.replace("_", "-")
            if name in args[:-1]:
                args[args.index(name) + 1] = value
            else:
                args += [name, value]
        return "run install again: " + command_line(self.windows, self.tools, "wincni", *args)


@dataclass(frozen=True)
class Config:
    """A config as its plugin runs it, and what it is weighed against: ``cluster`` is the cluster
    CIDR (flanneld's FLANNEL_NETWORK; at install, net-conf.json's Network), ``management_ip`` the
    node's address, ``hns_type`` the type of the HNS network of the config's name ("" when there
    is none or HNS was not asked) and ``hns_fits`` the plugins that run on it."""

    origin: Origin
    name: str = ""
    delegate_type: str = ""
    policies: tuple[dict, ...] = ()
    backend: Any = None  # plugins.flannel.netconf.Backend; None when there is no net-conf.json
    cluster: str = ""
    management_ip: str = ""
    hns_type: str = ""
    hns_fits: tuple[str, ...] = ()


def judge(c: Config) -> list[Check]:
    """Every finding on the config; install's whole judgement (it has no HNS network to compare)."""
    return [exceptions(c), net_conf(c)]


def exceptions(c: Config) -> Check:
    bad = [e for e in OutboundNat.exceptions(c.policies) + Route.destinations(c.policies) if network(e) is None]
    if bad:
        return Check(
            "exceptions",
            FAIL,
            f"OutBoundNAT/ROUTE entries that are not CIDRs: {', '.join(map(str, bad))}",
            "HNS rejects the endpoint: " + c.origin.edit("write each as address/prefix, e.g. 10.96.0.0/12,"),
        )
    excepted = excepted_set(c.policies)
    needed = list(must_not_nat(c))
    missing = [(what, cidr) for what, cidr in needed if (n := network(cidr)) is None or n not in excepted]
    if missing:
        return Check(
            "exceptions",
            FAIL,
            "OutBoundNAT ExceptionList misses "
            + ", ".join(f"{w} {cidr}" for w, cidr in missing)
            + ": pod traffic there is SNAT'ed to the node IP",
            _add_exceptions(c, missing),
        )
    return Check(
        "exceptions", OK, "ExceptionList covers " + (", ".join(f"{w} {cidr}" for w, cidr in needed) or "nothing needed")
    )


def _add_exceptions(c: Config, missing: list[tuple[str, str]]) -> str:
    """install's own config excepts net-conf.json's Network and --node-ip: a miss there is that input's."""
    if c.origin.renders_itself and missing[0][0] == "FLANNEL_NETWORK" and c.backend is not None:
        return (
            f'set "Network" to "{missing[0][1]}" in {c.backend.path} (flanneld\'s FLANNEL_NETWORK; install excepts '
            f"the cluster CIDR it names), then {c.origin.again()}"
        )
    if c.origin.renders_itself and missing[0][0] == "management IP":
        return f"install excepts --node-ip's address: {c.origin.again(node_ip=c.management_ip)}"
    return c.origin.edit(f"add {', '.join(cidr for _, cidr in missing)} to the OutBoundNAT policy's ExceptionList")


def must_not_nat(c: Config) -> Iterable[tuple[str, str]]:
    """Cluster CIDR, ROUTE destinations (service CIDR, management IP), the bridge's management IP."""
    if c.cluster:
        yield "FLANNEL_NETWORK", c.cluster
    for prefix in Route.destinations(c.policies):
        if network(prefix) is not None:
            yield "ROUTE", prefix
    if c.delegate_type == "win-bridge" and c.management_ip:
        yield "management IP", c.management_ip.split("/")[0] + "/32"


def net_conf(c: Config) -> Check:
    """net-conf.json against the config: the network name, the plugin for its Backend.Type, what
    Windows refuses in it, and (a warning) what Linux flanneld nodes would read differently."""
    from plugins.cni.errors import CniError
    from plugins.flannel import netconf

    try:
        wanted = c.backend.delegate_type()
    except CniError as err:
        return Check("net-conf", FAIL, err.msg, err.details)
    name = f'set "name": "{c.backend.network_name}"'
    found = netconf.problems(
        c.backend, c.name, c.origin.conflist, bool(c.hns_type), c.origin.edit(name, 'set "name": "__NETWORK_NAME__"')
    )
    if c.delegate_type and wanted != c.delegate_type:
        found.append(
            (
                f"Backend.Type {c.backend.type} needs {wanted}, the config delegates to {c.delegate_type}",
                _match_type(c, wanted),
            )
        )
    if found:
        return Check("net-conf", FAIL, "; ".join(m for m, _ in found), _one_fix([fix for _, fix in found], c.origin))
    linux = netconf.linux_mismatch(c.backend)
    if linux is not None:
        return Check("net-conf", WARN, *linux)
    return Check("net-conf", OK, f"Backend {c.backend.type} {c.backend.network_name!r} matches the config ({wanted})")


def _one_fix(fixes: list[str], origin: Origin) -> str:
    """Several changes as one fix: install run again once, after them all."""
    then = ", " + origin.then()
    joined = "; ".join(f.removesuffix(then) for f in fixes)
    return joined + then if any(f.endswith(then) for f in fixes) else joined


def _match_type(c: Config, wanted: str) -> str:
    """The side to change is the one the HNS network disagrees with: net-conf.json when the network
    flanneld made runs the config's plugin, else the config (which then follows Backend.Type)."""
    from plugins.flannel.netconf import DELEGATES

    if c.delegate_type in c.hns_fits:
        kind = next(k for k, plugin in DELEGATES.items() if plugin == c.delegate_type)
        return (
            f"HNS network {c.name} is {c.hns_type}, which {c.delegate_type} runs on: set Backend.Type to "
            f'"{kind}" in {c.backend.path} (flanneld\'s net-conf.json)'
        )
    return c.origin.edit(
        f'set the delegate\'s "type" to "{wanted}"', 'set the delegate\'s "type" to "__DELEGATE_TYPE__"'
    )


def excepted_set(policies: Iterable[Any]) -> AddressSet:
    """Destinations OutBoundNAT leaves alone (entries that are not CIDRs excluded: the check names them)."""
    return AddressSet(n for n in map(network, OutboundNat.exceptions(policies)) if n is not None)
