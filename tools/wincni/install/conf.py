"""The config ``wincni install`` lays: read from the files its flags name, rendered (``render``)
and judged as the doctor judges it on the node (``judge``), all before anything changes; with
the plugins it chains that the bin dir lacks, and the arguments that render it again.
"""

from __future__ import annotations

import json
import os

from tools.wincni.install.options import InstallOptions
from tools.wincni.install.report import InstallError, Outcome
from tools.wincni.node.flagfile import FlagFileError, quote
from tools.wincni.node.flagfile import read as read_flag
from tools.wincni.node.installed import MAX_TEMPLATE


def rendered(options: InstallOptions, platform: str, cwd: str, out: Outcome) -> bytes:
    """The config to install, loaded by the plugins' own parsers, then judged as the doctor judges
    it on the node (``judge``): InstallError (nothing changed yet) for anything a plugin would
    refuse or the doctor would fail, quoting no file an administrator does not own; the doctor's
    warnings become install's."""
    from plugins.cni.errors import INVALID_CONFIG, CniError
    from plugins.flannel import netconf
    from tools.wincni.install import render
    from tools.wincni.judge import config as judge
    from tools.wincni.node.build import frozen_dir
    from tools.wincni.node.podnetwork import endpoint_policies, flavor_of

    read: list = []  # (flag, what was read) for quote
    try:
        found = read_flag("--net-conf", options.net_conf, netconf.MAX_NET_CONF)
        if found is None:
            raise InstallError(
                f"{options.net_conf} does not exist: pass --net-conf with flanneld's net-conf.json "
                "(the kube-flannel-cfg ConfigMap's net-conf.json)"
            )
        read.append(("--net-conf", found))
        backend = netconf.parse(found.data, options.net_conf)
        template = read_flag("--template", options.template, MAX_TEMPLATE) if options.template else None
        if options.template and template is None:
            raise InstallError(f"--template {options.template} does not exist")
        read.append(("--template", template))
        uses_node = template is not None and {"__NODE_IP__", "__NODE_SUBNET__"} & render.template_tokens(template.data)
        node_ip = options.node_ip or (_default_node_ip() if backend.type == "host-gw" or uses_node else "")
        servers, domain = _cluster_dns(options, out)
        values = render.values(backend, options.service_cidr, node_ip, servers, domain)
        out.dns = {"servers": [values["__DNS_SERVER__"]], "domain": values["__DNS_DOMAIN__"], **out.dns}
        doc = (
            render.conflist(values, render.cni_version(out.containerd_version))
            if template is None
            else render.from_template(template.data, options.template, values)
        )
        built, loaded = render.validate(doc, backend, platform, cwd)
        policies, problem = endpoint_policies(out.conf_path, flavor_of(built["type"]), loaded, None, None)
        if problem is not None:
            raise CniError(INVALID_CONFIG, problem.message, problem.fix)
    except CniError as exc:
        raise InstallError(quote(str(exc), *read)) from None
    except FlagFileError as exc:
        raise InstallError(str(exc)) from None
    out.install = rerun_args(options, out, cwd)
    origin = judge.Origin(out.conf_path, out.install, platform == "win32", frozen_dir())
    config = judge.Config(origin, built["name"], built["type"], policies, backend, values["__CLUSTER_CIDR__"], node_ip)
    _verdict(judge.judge(config), out, read)
    return render.encode(doc)


def _verdict(findings: list, out: Outcome, read: list) -> None:
    """The judge's findings on what install would lay: a failure refuses it (InstallError, nothing
    changed yet), a warning is said and counted; each with its fix, as the doctor prints it."""

    def said(status: str) -> list[str]:
        return [quote(f"{c.message}; fix: {c.fix}", *read) for c in findings if c.status == status]

    if said("fail"):
        raise InstallError("\n".join(said("fail")))
    out.warnings += said("warn")


def rerun_args(options: InstallOptions, out: Outcome, cwd: str) -> tuple[str, ...]:
    """This install as arguments that render the same config again from anywhere (paths made
    absolute, the dirs it chose named): what the manifest records for the doctor's fixes."""
    from tools.wincni.node.build import frozen_dir

    def path(p: str) -> str:
        return os.path.normpath(os.path.join(cwd, p))

    source = path(options.source) if options.source else frozen_dir()
    argv = ["install"] + (["--from", source] if source else [])
    argv += ["--cni-bin-dir", path(out.bin_dir), "--cni-conf-dir", path(os.path.dirname(out.conf_path))]
    argv += ["--net-conf", path(options.net_conf), "--service-cidr", options.service_cidr]
    argv += ["--kubelet-config", path(options.kubelet_config)]
    argv += [a for ip in options.cluster_dns for a in ("--cluster-dns", ip)]
    for flag, value in (("--cluster-domain", options.cluster_domain), ("--node-ip", options.node_ip)):
        argv += [flag, value] if value else []
    argv += ["--template", path(options.template)] if options.template else []
    argv += ["--conf-name", options.conf_name] + (["--keep-others"] if options.keep_others else [])
    return tuple(argv)


def diff(existing: bytes | None, conf: bytes, path: str) -> str:
    """What laying ``conf`` at ``path`` changes, as a unified diff (a dry run prints it)."""
    import difflib

    return "".join(
        difflib.unified_diff(
            (existing or b"").decode("utf-8", "replace").splitlines(True),
            conf.decode().splitlines(True),
            path if existing is not None else "/dev/null",
            path,
        )
    )


def missing_plugins(conf: bytes, present: tuple[str, ...], bin_dir: str) -> list[str]:
    """A plugin the config chains after flannel that is neither laid by install nor in the bin dir
    (a template's ``{"type": "portmap"}``): containerd fails every pod's ADD on it."""
    have = {n[:-4] if n.lower().endswith(".exe") else n for n in present}
    chained = [p.get("type") for p in json.loads(conf).get("plugins", [])[1:] if isinstance(p, dict)]
    return [
        f"the config chains plugin {t!r}, which is not in {bin_dir}: every pod's ADD fails until it is "
        "there (or remove it from the template)"
        for t in dict.fromkeys(chained)
        if t not in have
    ]


def _cluster_dns(options: InstallOptions, out: Outcome) -> tuple[tuple[str, ...], str]:
    """(servers, domain): the flags, else the kubelet's own config, else ((), "") for the defaults
    ``render.values`` applies, with a warning saying so. ``out.dns["from"]`` says which."""
    from tools.wincni.install import kubelet

    found = None
    try:
        for ip in options.cluster_dns:
            kubelet.check_server(ip, "--cluster-dns")
        if options.cluster_domain:
            kubelet.check_domain(options.cluster_domain, "--cluster-domain")
        dns = kubelet.ClusterDns((), "")
        if not (options.cluster_dns and options.cluster_domain):
            found = read_flag("--kubelet-config", options.kubelet_config, kubelet.MAX_BYTES)
            if found is not None:
                dns = kubelet.parse(found.data.decode("utf-8-sig", "replace"), options.kubelet_config)
            else:
                out.warnings.append(
                    f"no kubelet config at {options.kubelet_config}: pass --kubelet-config, or "
                    "--cluster-dns and --cluster-domain, unless kubeadm's defaults (the service "
                    "CIDR's tenth address, cluster.local) are this cluster's"
                )
    except kubelet.KubeletConfigError as exc:
        message = f"{exc}; or pass --cluster-dns and --cluster-domain"
        raise InstallError(quote(message, ("--kubelet-config", found))) from None
    servers, domain = tuple(options.cluster_dns) or dns.servers, options.cluster_domain or dns.domain
    out.dns = {
        "from": "flags"
        if options.cluster_dns and options.cluster_domain
        else options.kubelet_config
        if dns.servers or dns.domain
        else "defaults"
    }
    return servers, domain


def _default_node_ip() -> str:
    """host-gw needs it (and a template naming __NODE_IP__); vxlan does not (win-overlay takes the
    management IP from HNS). The source address the routing table picks for an outside
    destination: the default route's interface, as flannel's scripts choose it. A UDP connect
    sends nothing."""
    import socket

    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("192.0.2.1", 9))  # TEST-NET-1: never answered, never sent to
            return s.getsockname()[0]
    except OSError as exc:
        raise InstallError(f"cannot tell the node's IP (no default route?): {exc}; pass --node-ip") from None
