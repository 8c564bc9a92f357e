"""Checks of the CNI config and the plugins that run it."""

from __future__ import annotations

import os
from typing import Any

from tools.wincni.doctor.checks.common import failed, no_config, not_checked
from tools.wincni.doctor.facts import NodeFacts
from tools.wincni.judge import addresses
from tools.wincni.judge.verdict import FAIL, OK, WARN, Check


def config(f: NodeFacts) -> Check:
    if f.conf_problem:
        return failed("config", f.conf_problem)
    if f.netconf is None:
        return Check(
            "config",
            WARN,
            f"{f.conf_path}: flannel config valid; its delegate not checked (no subnet.env)",
            "see the subnet-env check",
        )
    return Check("config", OK, f"{f.conf_path}: {f.plugin} config {f.name!r} is valid (delegate {f.delegate_type})")


def plugins(f: NodeFacts) -> Check:
    if f.bin_files is None:
        return Check(
            "plugins",
            FAIL,
            f"CNI bin dir {f.bin_dir} cannot be read",
            "pass --cni-bin-dir with the folder the runtime runs the plugins from (containerd's "
            "config.toml bin_dir, or bin_dirs on containerd 2.1+)",
        )
    if skipped := no_config(f, "plugins"):
        return skipped
    wanted = [p for p in (f.plugin, f.delegate_type, "host-local") if p]
    missing = [p for p in dict.fromkeys(wanted) if p not in f.bin_files and f"{p}.exe" not in f.bin_files]
    if missing:
        return Check(
            "plugins",
            FAIL,
            f"{', '.join(missing)} not found in {f.bin_dir}",
            f"copy {', '.join(m + '.exe' for m in missing)} from the wincni bundle into {f.bin_dir}",
        )
    if f.bin_audit:
        return Check(
            "plugins",
            FAIL,
            "; ".join(f.bin_audit) + ": the runtime runs them as SYSTEM/root",
            f"wincni install --from <the release zip> --cni-bin-dir {f.bin_dir} --cni-conf-dir "
            f"{os.path.dirname(f.conf_path)} (it takes the folder over, removes what no administrator "
            "laid and replaces what it cannot vouch for)",
        )
    return Check("plugins", OK, f"{', '.join(dict.fromkeys(wanted))} present in {f.bin_dir}")


def config_of(f: NodeFacts) -> Any:
    """The judge's view (``judge.Config``) of the config the facts hold, weighed against this
    node: flanneld's lease, the HNS network of its name, the install that manages it."""
    from plugins.registry import ENDPOINT_PLUGINS
    from tools.wincni.judge import config as judge
    from tools.wincni.node.podnetwork import flavor_of

    cluster = f.lease.first_ipv4_network if f.lease is not None else None
    network = f.network
    return judge.Config(
        origin=judge.Origin(f.conf_path, f.install, f.windows, f.tools),
        name=f.name,
        delegate_type=f.delegate_type,
        policies=f.policies,
        backend=f.backend,
        cluster=str(cluster) if cluster is not None else "",
        management_ip=(network.management_ip or "") if network is not None else "",
        hns_type=network.network_type if network is not None else "",
        hns_fits=tuple(
            p for p in ENDPOINT_PLUGINS if network is not None and any(map(network.is_type, flavor_of(p).network_types))
        ),
    )


def exceptions(f: NodeFacts) -> Check:
    from tools.wincni.judge import config as judge

    if f.netconf is None:
        return not_checked("exceptions", "no valid delegate config")
    return judge.exceptions(config_of(f))


def reach(f: NodeFacts) -> Check | None:
    from tools.wincni.judge import config as judge

    if not f.reach:
        return None
    ip = addresses.address(f.reach)  # the parser took only an IP address
    if f.netconf is None:
        return not_checked("reach", "no valid delegate config")
    config = config_of(f)
    internal = addresses.AddressSet(c for _, c in judge.must_not_nat(config))
    if ip in judge.excepted_set(config.policies):
        if ip in internal:
            return Check("reach", OK, f"traffic to {ip} keeps the pod IP (cluster-internal)")
        return Check(
            "reach",
            FAIL,
            f"traffic to {ip} is not SNAT'ed: it leaves with the pod IP, which nothing outside the cluster routes back",
            config.origin.edit(f"remove the entry covering {ip} from the OutBoundNAT policy's ExceptionList"),
        )
    if ip in internal:
        return Check(
            "reach",
            FAIL,
            f"traffic to {ip} (cluster-internal) is SNAT'ed to the node IP",
            config.origin.edit(f"add a range covering {ip} to the OutBoundNAT policy's ExceptionList"),
        )
    return Check("reach", OK, f"traffic to {ip} is SNAT'ed to the node IP (right for destinations outside the cluster)")


def net_conf(f: NodeFacts) -> Check:
    from tools.wincni.judge import config as judge

    if f.backend_problem:
        return failed("net-conf", f.backend_problem)
    if skipped := no_config(f, "net-conf"):
        return skipped
    if f.backend is None:
        status = WARN if f.plugin == "flannel" else OK
        origin = config_of(f).origin
        return Check(
            "net-conf",
            status,
            f"{f.net_conf_path} not found: Backend name/type not cross-checked",
            "pass --net-conf with flanneld's net-conf.json (the kube-flannel-cfg ConfigMap's)"
            + ("" if origin.renders_itself else ", or " + origin.edit('set "netConf" to where it is'))
            if status == WARN
            else "",
        )
    return judge.net_conf(config_of(f))


def runtime_status(f: NodeFacts) -> Check:
    """containerd 2.x (config.toml version 3) asks every config of cniVersion 1.1.0 or later for
    CNI STATUS and starts only host-network pods while it fails: whether it asks here, and what
    the plugins answer now (``live.read_status``)."""
    if skipped := no_config(f, "runtime-status"):
        return skipped
    if f.status is None:
        return not_checked("runtime-status", f"STATUS of a {f.plugin or 'typeless'} config (not a wincni plugin)")
    from plugins.cni.version import at_least
    from tools.wincni.doctor.live import STATUS_VERSION

    code, msg, details = f.status
    containerd = f"config.toml version {f.containerd_version}" if f.containerd_version else "no config.toml read"
    modern = (f.containerd_version or 0) >= 3
    try:
        asked = modern and at_least(f.cni_version, STATUS_VERSION)
    except ValueError:
        asked = False
    answer = "ready" if code == 0 else f"code {code}: {msg}"
    if code != 0:
        who = "containerd asks it, so this node takes no pods but host-network ones" if asked else containerd
        return Check("runtime-status", FAIL if asked else WARN, f"STATUS answers {answer} ({who})", details)
    if modern and not asked:
        return Check(
            "runtime-status",
            WARN,
            f"containerd 2.x ({containerd}) never asks the plugins' STATUS: the config's cniVersion "
            f"{f.cni_version or 'is unset'} is below {STATUS_VERSION} (STATUS answers {answer})",
            config_of(f).origin.edit(f'set "cniVersion" to "{STATUS_VERSION}"'),
        )
    if asked:
        return Check("runtime-status", OK, f"containerd 2.x asks STATUS ({containerd}); it answers {answer}")
    return Check("runtime-status", OK, f"STATUS answers {answer}; the runtime does not ask it ({containerd})")
