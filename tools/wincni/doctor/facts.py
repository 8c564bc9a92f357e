"""What the doctor's checks look at: ``NodeFacts`` (built once by ``gather``) and the node's HNS ``Inventory``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from tools.wincni.node.source import Problem


@dataclass(frozen=True)
class CheckFile:
    """A file of the node that a check reads beyond the pods' network, declared by the check's
    entry (``checks.registry.DoctorCheck.reads``): its flag, what it is, its default path on
    Windows and elsewhere, its size cap. The doctor, the bundle and the metrics take the flag; the
    doctor reads it through its source, so the bundle records it and replay answers it."""

    flag: str
    what: str
    windows: str
    posix: str
    cap: int = 1 << 20
    #: Where the file's writer puts it, when that follows the environment (its override, its
    #: folder's): the doctor then reads the file the writer wrote, not the usual place.
    placed: Callable[[Mapping[str, str], str], str] | None = None

    def default(self, platform: str, env: Mapping[str, str] | None = None) -> str:
        """Its place on ``platform``: as ``placed`` finds it in ``env`` when both are given (help
        text, which has no environment, shows the usual place)."""
        if self.placed is not None and env is not None:
            return self.placed(env, platform)
        return self.windows if platform == "win32" else self.posix


@dataclass(frozen=True)
class NodeFacts:
    """What the checks look at, built once by ``gather`` (or by hand in a test); ``None`` with a
    ``*_problem`` means "could not be read"."""

    files: Mapping[str, Any] = field(default_factory=dict)  # flag -> each CheckFile as read: Input | Problem | None
    conf_path: str = ""
    conf_problem: Problem | None = None
    plugin: str = ""  # the config's "type" (flannel, win-bridge, win-overlay)
    name: str = ""  # the config's "name" = the HNS network
    delegate_type: str = ""  # the plugin that talks to HNS
    netconf: Any = None  # plugins.winnet.config.NetConf of the effective win-bridge/win-overlay config
    flavor: Any = None  # plugins.winnet.lifecycle.Flavor of the delegate plugin, when it is one of ours (even if its config does not load)
    ipam_dir: str = ""  # host-local's store directory for this network
    flannel_dir: str = ""  # flannel's dataDir (its saved delegate configs); "" without flannel
    bin_dir: str = ""
    bin_files: frozenset[str] | None = None
    subnet_env_path: str = ""
    lease: Any = None  # plugins.flannel.subnet_env.Lease
    lease_problem: Problem | None = None
    net_conf_path: str = ""
    backend: Any = None  # plugins.flannel.netconf.Backend
    backend_problem: Problem | None = None
    hns_problem: Problem | None = None
    hns_version: tuple[int, int] | None = None
    features: Any = None  # libhns.client.Features
    network: Any = None  # libhns.objects.HostComputeNetwork
    endpoints: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (name, IPs) of the local endpoints on the network
    stale_endpoints: tuple[tuple[str, str, tuple[str, ...]], ...] = ()  # ours, no live sandbox: (name, ID, IPs)
    policies: tuple[dict, ...] = ()  # the endpoint policies the plugin would apply (winnet.policies.endpoint_policies)
    source_vip_path: str = ""
    source_vip: tuple[str, ...] | None = None  # its addresses; None when absent
    source_vip_problem: Problem | None = None
    reservations: tuple[tuple[str, str], ...] | None = None  # host-local (IP, container ID)
    store_problem: Problem | None = None
    reach: str = ""
    simulated: bool = False  # the plugins would run on the HNS simulator on Windows
    open_dirs: tuple[tuple[str, str, str], ...] = ()  # (what, folder, who else may write it)
    bin_audit: tuple[str, ...] = ()  # what in the bin dir no administrator vouches for (trust.audit)
    young: frozenset[str] = frozenset()  # reserved too recently to call stale: an ADD may be in flight
    windows: bool = False  # the node's platform: how a fix command is quoted and named
    tools: str = ""  # the folder of the running frozen wincni (hnsctl beside it); "" = found on PATH
    installed_build: str = ""  # the build the bin dir's install manifest names; "" = none (build_problem says why)
    build_problem: str = ""
    running_build: str = ""  # this wincni's (``running_build``)
    install: tuple[str, ...] | None = (
        None  # the arguments of the wincni install that laid the config (() unrecorded); None: nobody manages it
    )
    cni_version: str = ""  # the config's cniVersion
    containerd_version: int | None = None  # config.toml's (containerd.CniDirs.version); None: not read
    status: tuple[int, str, str] | None = (
        None  # the plugin's STATUS answer (code, msg, details), 0 ready; None: not asked
    )
    replayed: str = ""  # the bundle these facts were read from ("" on the live node)
    now: float = 0.0  # wall time the node was read (a bundle's: when it was taken)
    inventory: Any = None  # Inventory: every HNS object of the node, by kind; None: not read
    sandboxes: tuple | None = None  # sandboxes.PodSandbox of each recorded reservation; None: not read
