"""The node's CNI config, rendered from flanneld's net-conf.json the way the SDN / sig-windows-tools
scripts wrote ``cni.conf`` by hand, then loaded by the plugins' own loaders before anyone sees it.

vxlan -> win-overlay: OutBoundNAT exceptions for the cluster and service CIDRs and a ROUTE for the
service CIDR (win-overlay adds the ProviderAddress itself, from the network's management IP, as the
Go plugin does). host-gw -> win-bridge: the same plus the node's management subnet (or IP) as an
exception and a /32 ROUTE to the node IP. V1 policy form without ``apiVersion``: wincni picks HCN
for containerd and translates. A conflist at cniVersion 1.1.0 for containerd 2.x (``cni_version``),
which then asks the plugins' STATUS before the node takes pods, else 1.0.0, which containerd 1.7
loads and which gives CHECK. Or the operator's own template (``from_template``), whose ``__TOKENS__`` take
the same ``values``. Either way ``validate`` loads the result as the plugins would.
"""

from __future__ import annotations

import ipaddress
import json
import re
from typing import Any

from plugins.cni.errors import INVALID_CONFIG, CniError
from plugins.flannel import netconf
from tools.wincni.node.installed import MAX_TEMPLATE

CNI_VERSION = "1.0.0"
#: The first version containerd 2.x calls CNI STATUS for (go-cni's GetStatusNetworkList).
STATUS_VERSION = "1.1.0"
DEFAULT_DOMAIN = "cluster.local"  # the kubelet's and kubeadm's default clusterDomain
TOKEN = re.compile(r"__[A-Z][A-Z_]*[A-Z]__")


def values(
    backend: netconf.Backend, service_cidr: str, node_ip: str, dns_servers: tuple[str, ...], dns_domain: str
) -> dict[str, str]:
    """What a config is rendered from, by template token; CniError (code 7) naming the input at
    fault. The DNS server falls back to kubeadm's convention, the service CIDR's tenth address
    (with the "dns" capability the runtime's per-pod DNS replaces it anyway)."""
    cluster = _cidr(
        backend.network,
        f"net-conf.json {backend.path}: Network",
        'flanneld needs the cluster CIDR there, e.g. "Network": "10.244.0.0/16"',
    )
    service = _cidr(
        service_cidr,
        "--service-cidr",
        "the cluster's service CIDR (kube-apiserver --service-cluster-ip-range), e.g. 10.96.0.0/12",
    )
    if not dns_servers and service.num_addresses <= 10:
        raise CniError(
            INVALID_CONFIG,
            f"--service-cidr {service} has no tenth address for the cluster DNS service",
            "pass --cluster-dns with its address (or --kubelet-config with clusterDNS)",
        )
    out = {
        "__NETWORK_NAME__": backend.network_name,
        "__DELEGATE_TYPE__": backend.delegate_type(),
        "__CLUSTER_CIDR__": str(cluster),
        "__SERVICE_CIDR__": str(service),
        "__DNS_SERVER__": (dns_servers or (str(service[10]),))[0],
        "__DNS_DOMAIN__": dns_domain or DEFAULT_DOMAIN,
    }
    if node_ip:
        node = _node(node_ip)
        out.update({"__NODE_IP__": str(node.ip), "__NODE_SUBNET__": str(node.network)})
    return out


def cni_version(containerd_version: int) -> str:
    """The rendered cniVersion for containerd's config.toml ``version`` (3: containerd 2.x, which
    calls STATUS on a config of 1.1.0 or later; 0: no config.toml)."""
    return STATUS_VERSION if containerd_version >= 3 else CNI_VERSION


def conflist(v: dict[str, str], cni_version: str = CNI_VERSION) -> dict[str, Any]:
    """The ``10-flannel.conflist`` document wincni renders when the operator gives no template."""
    exceptions = [v["__CLUSTER_CIDR__"], v["__SERVICE_CIDR__"]]
    routes = [v["__SERVICE_CIDR__"]]
    if v["__DELEGATE_TYPE__"] == "win-bridge":
        exceptions.append(v["__NODE_SUBNET__"])
        routes.append(v["__NODE_IP__"] + "/32")
    policies = [_policy({"Type": "OutBoundNAT", "ExceptionList": exceptions})]
    policies += [_policy({"Type": "ROUTE", "DestinationPrefix": r, "NeedEncap": True}) for r in routes]
    dns = {"Nameservers": [v["__DNS_SERVER__"]], "Search": ["svc." + v["__DNS_DOMAIN__"]]}
    return {
        "cniVersion": cni_version,
        "name": v["__NETWORK_NAME__"],
        "plugins": [
            {
                "type": "flannel",
                "capabilities": {"portMappings": True, "dns": True},
                "delegate": {"type": v["__DELEGATE_TYPE__"], "dns": dns, "policies": policies},
            }
        ],
    }


def template_tokens(raw: bytes) -> set[str]:
    return set(TOKEN.findall(raw.decode("utf-8", "replace")))


def from_template(raw: bytes, path: str, v: dict[str, str]) -> dict[str, Any]:
    """The operator's conflist template (a ConfigMap's) with each ``__TOKEN__`` inside its string
    values replaced; nothing else is added, dropped or reordered. CniError (code 7) for a template
    that is not a JSON object with a "plugins" list, nests deeper than ``MAX_DEPTH``, names a token
    wincni does not know or puts one in a key."""
    from plugins.cni.config import decode

    if len(raw) > MAX_TEMPLATE:
        raise CniError(
            INVALID_CONFIG,
            f"template {path} is over {MAX_TEMPLATE >> 20} MiB",
            "a CNI config template is a few KiB: check --template",
        )
    try:
        doc = decode(raw)
    except CniError as err:
        raise CniError(
            INVALID_CONFIG, f"template {path}: {err.msg}", "the template must be a JSON object (a .conflist)"
        ) from None
    in_values, in_keys = _tokens(doc, path)
    if in_keys:
        raise CniError(
            INVALID_CONFIG,
            f"template {path}: {', '.join(sorted(in_keys))} in a key",
            "tokens are filled in string values only: write the key itself",
        )
    unknown = sorted(in_values - set(v))
    if unknown:
        known = ", ".join(sorted(v))
        raise CniError(
            INVALID_CONFIG,
            f"template {path}: unknown {', '.join(unknown)}",
            f"this node knows {known}"
            + ("" if "__NODE_IP__" in v else " (__NODE_IP__ and __NODE_SUBNET__ with --node-ip or host-gw)"),
        )
    plugins = doc.get("plugins")
    if not isinstance(plugins, list) or not plugins or not all(isinstance(p, dict) for p in plugins):
        raise CniError(
            INVALID_CONFIG,
            f'template {path}: "plugins" is not a list of plugin objects',
            'install writes a .conflist: "plugins": [{"type": "flannel", ...}] (wincni install '
            "--dry-run prints the one it renders)",
        )
    return _substitute(doc, v)


MAX_DEPTH = 32  # a CNI config nests 5 deep; _substitute recurses once per level


def _tokens(doc: Any, path: str) -> tuple[set[str], set[str]]:
    """The tokens in ``doc``'s string values and in its keys, as decoded (a ``\\u005f`` escape
    included); CniError for nesting deeper than ``MAX_DEPTH``."""
    values: set[str] = set()
    keys: set[str] = set()
    pending = [(doc, 1)]
    while pending:
        node, depth = pending.pop()
        if depth > MAX_DEPTH:
            raise CniError(
                INVALID_CONFIG,
                f"template {path} nests deeper than {MAX_DEPTH} levels",
                "a CNI config nests a few levels: check --template",
            )
        if isinstance(node, str):
            values.update(TOKEN.findall(node))
        elif isinstance(node, list):
            pending += [(x, depth + 1) for x in node]
        elif isinstance(node, dict):
            for key in node:
                keys.update(TOKEN.findall(key))
            pending += [(x, depth + 1) for x in node.values()]
    return values, keys


def _substitute(node: Any, v: dict[str, str]) -> Any:
    if isinstance(node, str):
        return TOKEN.sub(lambda m: v[m.group(0)], node)
    if isinstance(node, list):
        return [_substitute(x, v) for x in node]
    if isinstance(node, dict):
        return {k: _substitute(x, v) for k, x in node.items()}
    return node


def encode(doc: dict[str, Any]) -> bytes:
    return (json.dumps(doc, indent=2) + "\n").encode()


def validate(doc: dict[str, Any], backend: netconf.Backend, platform: str, cwd: str) -> tuple[dict, Any]:
    """Load ``doc`` as the plugins would for an ADD on a node of this cluster: the bytes the
    runtime hands flannel, through the CNI checks every plugin runs first (its version, the
    network name rule), flannel's config, the delegate flannel builds (same checks), the
    delegate plugin's own validation; net-conf.json's rules are the judge's (``judge.net_conf``).
    The delegate flannel builds and its ``NetConf``, for the judge."""
    from plugins.cni.config import decode
    from plugins.flannel import subnet_env
    from plugins.flannel.config import FlannelConf
    from plugins.winnet.config import load
    from tools.wincni.node.podnetwork import first_plugin, flannel_delegate, flavor_of

    conf = decode(encode(doc))
    _cni_checks(conf, backend)
    first = first_plugin(conf)
    if first.get("type") != "flannel":
        raise CniError(
            INVALID_CONFIG,
            f"the config's first plugin is {first.get('type')!r}, not flannel",
            "wincni install lays a config for flannel: start the template from the one wincni renders "
            "(wincni install --dry-run prints it)",
        )
    fconf = FlannelConf.from_conf(first, platform, cwd)
    cluster = ipaddress.ip_network(backend.network, strict=False)
    subnet = next(cluster.subnets(new_prefix=max(cluster.prefixlen, 24)))
    lease = subnet_env.parse(
        f"FLANNEL_NETWORK={cluster}\nFLANNEL_SUBNET={subnet}\nFLANNEL_MTU=1450\nFLANNEL_IPMASQ=true\n",
        "(a lease of this cluster)",
    )
    built = flannel_delegate(fconf, lease, backend)
    _cni_checks(built, backend)
    flavor = flavor_of(built["type"])
    if flavor is None:
        raise CniError(
            INVALID_CONFIG,
            f"the delegate's type {built['type']!r} is not a wincni plugin",
            'set "type": "__DELEGATE_TYPE__" in the delegate, or leave it out',
        )
    return built, load(built, "ADD", flavor.schema())[1]


def _cni_checks(conf: dict[str, Any], backend: netconf.Backend) -> None:
    """What ``plugins.cni.skel`` checks before any plugin reads a config; a refused name is
    traced back to where it came from when that is net-conf.json's Backend.Name (not a template's
    own or missing "name")."""
    from plugins.cni.config import check_name, cni_version

    cni_version(conf)
    try:
        check_name(conf)
    except CniError as exc:
        if conf.get("name") != backend.network_name:
            raise
        raise CniError(
            exc.code,
            f"flanneld's net-conf.json {backend.path}: Backend.Name becomes the CNI network "
            f"name, which every plugin refuses: {exc.msg}",
            exc.details,
        ) from None


def _policy(value: dict[str, Any]) -> dict[str, Any]:
    return {"Name": "EndpointPolicy", "Value": value}


def _cidr(text: str, what: str, fix: str) -> Any:
    try:
        net = ipaddress.ip_network(text, strict=False)
    except ValueError:
        raise CniError(INVALID_CONFIG, f"{what} {text!r} is not a CIDR", fix) from None
    if net.version != 4:
        raise CniError(INVALID_CONFIG, f"{what} {text} is not IPv4", "Windows pod networks are IPv4")
    return net


def _node(text: str) -> ipaddress.IPv4Interface:
    """``IP`` or ``IP/prefix``: with a prefix the whole management subnet is excepted, as the SDN
    scripts do; without it only the node's own address."""
    try:
        node = ipaddress.ip_interface(text if "/" in text else f"{text}/32")
    except ValueError:
        raise CniError(
            INVALID_CONFIG,
            f"--node-ip {text!r} is not an IP address",
            "the node's management IP, optionally with its prefix: 10.127.130.36/24",
        ) from None
    if node.version != 4:
        raise CniError(INVALID_CONFIG, f"--node-ip {text} is not IPv4", "pass the node's IPv4 management address")
    return node
