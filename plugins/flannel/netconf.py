"""flanneld's ``net-conf.json``: which HNS network flanneld builds, checked against what Windows accepts.

The reference plugin never reads it, so a node whose CNI config names ``cbr0`` while flanneld made
``vxlan0``, or whose VXLAN settings Windows refuses, fails far away in HNS. Reading it here turns
those into one config error naming the fix, and lets the delegate type follow the backend.
"""

from __future__ import annotations

from basics import jsontext
from basics.jsonci import get_ci
from plugins.cni.errors import INVALID_CONFIG, IO_FAILURE, CniError
from plugins.cni.record import FrozenRecord

VXLAN_PORT = 4789  # the only UDP port the Windows VXLAN stack uses
MIN_VNI = 4096  # Windows reserves lower VSIDs; also flanneld's Windows default
LINUX_VNI, LINUX_PORT = 1, 8472  # flanneld's vxlan defaults on Linux
DELEGATES = {"vxlan": "win-overlay", "host-gw": "win-bridge"}
_HNS_TYPES = {"vxlan": "Overlay", "host-gw": "L2Bridge"}


class Backend(FrozenRecord):
    __slots__ = ("path", "type", "name", "vni", "port", "unset", "network")

    def __init__(
        self,
        path: str,
        type: str,
        name: str,
        vni: int = MIN_VNI,
        port: int = 0,
        unset: tuple[str, ...] = (),
        network: str = "",
    ) -> None:
        self.path = path
        self.type = type  # Backend.Type, lower-case ("" when absent)
        self.name = name  # Backend.Name as written ("" when absent)
        self.vni = vni
        self.port = port  # 0: flanneld's default, which is VXLAN_PORT on Windows
        self.unset = unset  # "VNI", "Port" when absent: defaults differ between Linux and Windows
        self.network = network  # the top-level "Network" (the cluster CIDR), as written

    @property
    def network_name(self) -> str:
        """The HNS network flanneld creates: Backend.Name, else its per-backend default."""
        if self.name:
            return self.name
        return f"flannel.{self.vni}" if self.type == "vxlan" else "cbr0"

    def delegate_type(self) -> str:
        """The plugin for this backend; only vxlan and host-gw exist on Windows."""
        if self.type not in DELEGATES:
            raise _invalid(
                self.path,
                f"Backend.Type {jsontext.dumps(self.type or None)} has no Windows plugin",
                'flanneld on Windows supports "vxlan" (win-overlay) and "host-gw" (win-bridge); '
                'fix net-conf.json or set "delegate": {"type": ...}',
            )
        return DELEGATES[self.type]


#: flanneld's net-conf.json is a few hundred bytes; a larger file is not one (and is never read whole).
MAX_NET_CONF = 1 << 20


def load(path: str) -> Backend | None:
    """None when the file is absent: a node may run without it (the reference never needs it).
    Opened as ``subnet_env.load`` opens the lease: never waited on, a regular file, no user's link
    followed, read no further than the cap."""
    from basics.inputfile import ANY_SIZE, open_file

    try:
        with open(open_file(path, ANY_SIZE)[0], "rb") as f:
            raw = f.read(MAX_NET_CONF + 1)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise CniError(
            IO_FAILURE,
            f"cannot read flanneld's net-conf.json {path}: {exc.strerror or exc}",
            'fix its permissions, or set "netConf" to the file flanneld reads',
        ) from exc
    if len(raw) > MAX_NET_CONF:
        raise _invalid(
            path, f"over {MAX_NET_CONF >> 10} KiB", "flanneld's net-conf.json is a few hundred bytes: fix the file"
        )
    return parse(raw, path)


def parse(raw: bytes, path: str) -> Backend:
    try:
        doc = jsontext.loads(raw.removeprefix(b"\xef\xbb\xbf").decode())  # a BOM; not "utf-8-sig": one module less
    except ValueError as exc:  # UnicodeDecodeError is a ValueError
        raise _invalid(path, f"not JSON: {exc}", "flanneld cannot read it either: fix the file") from exc
    backend = get_ci(doc, "Backend", {}) if isinstance(doc, dict) else None
    if not isinstance(backend, dict):
        raise _invalid(path, "Backend must be an object", 'e.g. "Backend": {"name": "vxlan0", "type": "vxlan"}')
    kind, name = get_ci(backend, "Type", ""), get_ci(backend, "Name", "")
    if not isinstance(kind, str) or not isinstance(name, str):
        raise _invalid(path, "Backend.Type and Backend.Name must be strings", jsontext.dumps(backend)[:200])
    wrong = [
        f"Backend.{k} must be an integer (got {jsontext.dumps(v)[:80]})"
        for k in ("VNI", "Port")
        if (v := get_ci(backend, k)) is not None and (isinstance(v, bool) or not isinstance(v, int))
    ]
    network = get_ci(doc, "Network", "")
    if not isinstance(network, str):
        wrong.append(f"Network must be a string (got {jsontext.dumps(network)[:80]})")
    if wrong:
        raise _invalid(
            path,
            "; ".join(wrong),
            f'e.g. "Network": "10.244.0.0/16", "Backend": {{"Type": "vxlan", "VNI": {MIN_VNI}, "Port": {VXLAN_PORT}}}',
        )
    vni, port = get_ci(backend, "VNI"), get_ci(backend, "Port")
    return Backend(
        path=path,
        type=kind.lower(),
        name=name,
        vni=MIN_VNI if vni is None else vni,
        port=port or 0,
        unset=tuple(k for k, v in (("VNI", vni), ("Port", port)) if v is None),
        network=network,
    )


def check(backend: Backend, conf_name: str) -> None:
    """Reject what flanneld + HNS on Windows would fail on later, every problem in one error."""
    found = problems(backend, conf_name)
    if found:
        raise CniError(INVALID_CONFIG, "; ".join(msg for msg, _ in found), "; ".join(fix for _, fix in found))


def problems(
    backend: Backend, conf_name: str, conf_path: str = "", hns_has_conf_name: bool = False, rename: str = ""
) -> list[tuple[str, str]]:
    """(message, fix) for each thing Windows refuses, in terms an operator can act on; the doctor
    says where the CNI config is, whether HNS holds a network of its name and (``rename``) how to
    give the config Backend.Name's network where the operator owns it."""
    if backend.type not in DELEGATES:
        return []
    found = []
    where = f"flanneld's net-conf.json {backend.path}"
    if backend.type == "vxlan":
        if backend.vni < MIN_VNI:
            found.append(
                (
                    f"{where}: Backend.VNI {backend.vni} is not allowed on Windows",
                    f"Windows VXLAN needs a VNI of at least {MIN_VNI} (flanneld's Windows default); "
                    f"set Backend.VNI to {MIN_VNI} or more",
                )
            )
        if backend.port not in (0, VXLAN_PORT):
            found.append(
                (
                    f"{where}: Backend.Port {backend.port} is not allowed on Windows",
                    f"the Windows VXLAN stack only uses UDP port {VXLAN_PORT}; "
                    f"remove Backend.Port or set it to {VXLAN_PORT}",
                )
            )
    if backend.network_name != conf_name:
        made, config = _HNS_TYPES[backend.type], f"the CNI config {conf_path}".rstrip()
        if hns_has_conf_name:  # the network flanneld made is the config's: net-conf.json is the odd one out
            found.append(
                (
                    f"{where}: Backend.Name is {backend.network_name}, but HNS holds the {made} network "
                    f"{conf_name} {config} names",
                    f'set Backend.Name to "{conf_name}" in {backend.path} (flanneld names its network after it)',
                )
            )
        else:
            found.append(
                (
                    f"{where}: Backend.Name is {backend.network_name}, {config} names {conf_name}",
                    f'flanneld names its {made} network after Backend.Name (or set it to "{conf_name}" in '
                    f"{backend.path}): " + (rename or f'set "name": "{backend.network_name}" in {config}'),
                )
            )
    return found


def linux_mismatch(backend: Backend) -> tuple[str, str] | None:
    """net-conf.json is read by the Linux flanneld nodes too: without explicit VNI/Port they use
    VNI 1 and UDP 8472 where Windows uses 4096/4789, and cross-OS pod traffic is lost."""
    if backend.type != "vxlan" or not backend.unset:
        return None
    return (
        f"{backend.path} sets no Backend.{' or Backend.'.join(backend.unset)}: Linux flanneld then uses "
        f"VNI {LINUX_VNI} and UDP port {LINUX_PORT}, Windows VNI {backend.vni} and port {VXLAN_PORT}; "
        "pod traffic between Linux and Windows nodes is lost",
        f'set "VNI": {max(backend.vni, MIN_VNI)} and "Port": {VXLAN_PORT} in net-conf.json\'s Backend '
        "(the kube-flannel-cfg ConfigMap) and restart flanneld on every node",
    )


def _invalid(path: str, what: str, fix: str) -> CniError:
    return CniError(INVALID_CONFIG, f"flanneld's net-conf.json {path}: {what}", fix)
