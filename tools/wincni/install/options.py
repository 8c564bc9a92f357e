"""``wincni install``'s options: its command line (``add_arguments``) and the typed record
(``InstallOptions``) built from it once, at the command-line edge; nothing below reads argparse."""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from tools.wincni.node import installed


@dataclass(frozen=True)
class InstallOptions:
    """What the operator asked for; "" or () where a flag was not given (its default chosen later:
    the dirs by ``containerd.locate``, the cluster DNS by the kubelet config)."""

    net_conf: str
    kubelet_config: str
    conf_name: str
    source: str = ""  # --from: the package folder or zip; "": the folder this wincni runs from
    cni_bin_dir: str = ""
    cni_conf_dir: str = ""
    containerd_config: str = ""
    service_cidr: str = "10.96.0.0/12"
    cluster_dns: tuple[str, ...] = ()
    cluster_domain: str = ""
    template: str = ""
    node_ip: str = ""
    keep_others: bool = False
    dry_run: bool = False
    uninstall: bool = False
    output: str = "table"

    @classmethod
    def of(cls, args: argparse.Namespace) -> "InstallOptions":
        """The record of ``add_arguments``' parse."""
        return cls(
            net_conf=args.net_conf,
            kubelet_config=args.kubelet_config,
            conf_name=args.conf_name,
            source=args.source or "",
            cni_bin_dir=args.cni_bin_dir or "",
            cni_conf_dir=args.cni_conf_dir or "",
            containerd_config=args.containerd_config or "",
            service_cidr=args.service_cidr,
            cluster_dns=tuple(args.cluster_dns),
            cluster_domain=args.cluster_domain,
            template=args.template,
            node_ip=args.node_ip,
            keep_others=args.keep_others,
            dry_run=args.dry_run,
            uninstall=args.uninstall,
            output=args.output,
        )


def add_arguments(p: argparse.ArgumentParser, platform: str) -> None:
    from basics.cli import DIR, FILE, FILE_OR_DIR, add_output
    from tools.wincni.cli.flags import containerd_config
    from tools.wincni.node.containerd import CONF_NAME

    p.add_argument(
        "--from",
        dest="source",
        type=FILE_OR_DIR,
        metavar="DIR|ZIP",
        help="the release folder or zip (default: the folder this wincni runs from)",
    )
    p.add_argument(
        "--cni-bin-dir",
        type=DIR,
        metavar="DIR",
        help="default: containerd's bin_dir(s), else its own default (wincni dirs says)",
    )
    p.add_argument(
        "--cni-conf-dir",
        type=DIR,
        metavar="DIR",
        help="default: containerd's conf_dir, else its own default (wincni dirs says)",
    )
    containerd_config(p, platform)
    p.add_argument(
        "--net-conf",
        type=FILE,
        default=_net_conf_default(platform),
        metavar="FILE",
        help="flanneld's net-conf.json (the kube-flannel-cfg ConfigMap; default %(default)s)",
    )
    p.add_argument(
        "--service-cidr",
        default="10.96.0.0/12",
        metavar="CIDR",
        help="the cluster's service range: the config excepts it from SNAT and routes it, and the cluster "
        "DNS defaults to its tenth address (default %(default)s, kubeadm's)",
    )
    p.add_argument(
        "--kubelet-config",
        type=FILE,
        default=_kubelet_config_default(platform),
        metavar="FILE",
        help="the kubelet's config, for clusterDNS and clusterDomain (default %(default)s)",
    )
    p.add_argument(
        "--cluster-dns",
        action="append",
        default=[],
        metavar="IP",
        help="the cluster DNS service's address (default: the kubelet config's clusterDNS, else the "
        "service CIDR's tenth address); repeat for more",
    )
    p.add_argument(
        "--cluster-domain",
        default="",
        metavar="DOMAIN",
        help="(default: the kubelet config's clusterDomain, else cluster.local)",
    )
    p.add_argument(
        "--template",
        type=FILE,
        default="",
        metavar="FILE",
        help="a conflist template the operator owns (e.g. from a ConfigMap): its __TOKENS__ filled in, "
        "nothing else changed; default: wincni's own config",
    )
    p.add_argument(
        "--node-ip",
        default="",
        metavar="IP[/PREFIX]",
        help="the node's management IP (host-gw; default: the address of the default route's interface)",
    )
    p.add_argument(
        "--conf-name",
        default=CONF_NAME,
        type=_conf_name,
        metavar="NAME",
        help="the config's file name in the conf dir; containerd loads the first by name, so configs "
        "sorting before it are moved aside unless --keep-others (default %(default)s)",
    )
    p.add_argument("--keep-others", action="store_true", help="leave configs that sort before ours in place")
    p.add_argument("--dry-run", action="store_true", help="print the plan and the config diff; change nothing")
    p.add_argument("--uninstall", action="store_true", help="remove what install laid down, restore moved configs")
    add_output(p, "the build, the CNI dirs, every step and warning")


def _conf_name(text: str) -> str:
    """--conf-name's type: a file name in the conf dir that libcni loads. A path would be written
    outside the conf dir, where the next install's manifest check refuses it and uninstall never
    removes it."""
    if not installed.plain_name(text) or not text.endswith(installed.CONF_EXTENSIONS):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a config file name in the conf dir ({', '.join(installed.CONF_EXTENSIONS)}: "
            "what containerd loads)"
        )
    return text


def _kubelet_config_default(platform: str) -> str:
    return r"C:\var\lib\kubelet\config.yaml" if platform == "win32" else "/var/lib/kubelet/config.yaml"


def _net_conf_default(platform: str) -> str:
    from tools.wincni.node.paths import default_paths

    return default_paths(platform)["net_conf"]
