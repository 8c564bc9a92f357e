"""The node's CNI config, rendered from flanneld's net-conf.json the way the SDN / sig-windows-tools
scripts wrote ``cni.conf`` by hand, then loaded by the plugins' own loaders before anyone sees it.

vxlan -> win-overlay: OutBoundNAT exceptions for the cluster and service CIDRs and a ROUTE for the
service CIDR (win-overlay adds the ProviderAddress itself, from the network's management IP, as the
Go plugin does). host-gw -> win-bridge: the same plus the node's management subnet (or IP) as an
exception and a /32 ROUTE to the node IP. V1 policy form without ``apiVersion``: wincni picks HCN
for containerd and translates. A conflist at cniVersion 1.0.0, which containerd 1.7 and 2.x load
and which gives CHECK.
"""
from __future__ import annotations

import ipaddress
import json
from typing import Any

from plugins.cni.errors import INVALID_CONFIG, CniError
from plugins.flannel import netconf

CNI_VERSION = "1.0.0"
DNS_SEARCH = ("svc.cluster.local",)


def conflist(backend: netconf.Backend, service_cidr: str, node_ip: str) -> dict[str, Any]:
    """The ``10-flannel.conflist`` document; CniError (code 7) naming the input at fault."""
    cluster = _cidr(backend.network, f"net-conf.json {backend.path}: Network",
                    'flanneld needs the cluster CIDR there, e.g. "Network": "10.244.0.0/16"')
    service = _cidr(service_cidr, "--service-cidr", "the cluster's service CIDR (kube-apiserver "
                    "--service-cluster-ip-range), e.g. 10.96.0.0/12")
    delegate_type = backend.delegate_type()
    exceptions = [str(cluster), str(service)]
    routes = [str(service)]
    if delegate_type == "win-bridge":
        node = _node(node_ip)
        exceptions.append(str(node.network))
        routes.append(f"{node.ip}/32")
    policies = [_policy({"Type": "OutBoundNAT", "ExceptionList": exceptions})]
    policies += [_policy({"Type": "ROUTE", "DestinationPrefix": r, "NeedEncap": True}) for r in routes]
    # kubeadm's convention: the cluster DNS service is the tenth address of the service CIDR.
    # With the "dns" capability the runtime's per-pod DNS replaces it; it is the fallback.
    dns = {"Nameservers": [str(service[10])], "Search": list(DNS_SEARCH)}
    return {"cniVersion": CNI_VERSION, "name": backend.network_name, "plugins": [{
        "type": "flannel",
        "capabilities": {"portMappings": True, "dns": True},
        "delegate": {"type": delegate_type, "dns": dns, "policies": policies},
    }]}


def encode(doc: dict[str, Any]) -> bytes:
    return (json.dumps(doc, indent=2) + "\n").encode()


def validate(doc: dict[str, Any], backend: netconf.Backend, platform: str, cwd: str) -> None:
    """Load ``doc`` as the plugins would for an ADD on a node of this cluster: the bytes the
    runtime hands flannel, through the CNI checks every plugin runs first (its version, the
    network name rule), flannel's config, net-conf.json's rules, the delegate flannel builds
    (same checks), the delegate plugin's own validation."""
    import importlib

    from plugins.cni.config import decode
    from plugins.flannel import delegate, subnet_env
    from plugins.flannel.config import FlannelConf
    from plugins.winnet.lifecycle import Lifecycle

    from plugins.registry import flavor_module

    from .facts import first_plugin
    conf = decode(encode(doc))
    _cni_checks(conf, backend)
    fconf = FlannelConf.from_conf(first_plugin(conf), platform, cwd)
    cluster = ipaddress.ip_network(backend.network, strict=False)
    subnet = next(cluster.subnets(new_prefix=max(cluster.prefixlen, 24)))
    lease = subnet_env.parse(f"FLANNEL_NETWORK={cluster}\nFLANNEL_SUBNET={subnet}\nFLANNEL_MTU=1450\n"
                             "FLANNEL_IPMASQ=true\n", "(a lease of this cluster)")
    built = delegate.build(fconf, lease, backend)
    _cni_checks(built, backend)
    Lifecycle(importlib.import_module(flavor_module(built["type"])).FLAVOR).load_conf(built, "ADD")


def _cni_checks(conf: dict[str, Any], backend: netconf.Backend) -> None:
    """What ``plugins.cni.skel`` checks before any plugin reads a config; a refused name is
    traced back to where it came from, net-conf.json's Backend.Name."""
    from plugins.cni.config import check_name, cni_version
    cni_version(conf)
    try:
        check_name(conf)
    except CniError as exc:
        raise CniError(exc.code, f"flanneld's net-conf.json {backend.path}: Backend.Name becomes the CNI network "
                       f"name, which every plugin refuses: {exc.msg}", exc.details) from None


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
        raise CniError(INVALID_CONFIG, f"--node-ip {text!r} is not an IP address",
                       "the node's management IP, optionally with its prefix: 10.127.130.36/24") from None
    if node.version != 4:
        raise CniError(INVALID_CONFIG, f"--node-ip {text} is not IPv4", "pass the node's IPv4 management address")
    return node
