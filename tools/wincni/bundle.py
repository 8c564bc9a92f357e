"""``wincni bundle``: one bounded file of what the doctor reads on this node, to attach to an issue
and diagnose anywhere (``wincni doctor --replay``).

What is read is an allow-list, never a folder's contents: the files the doctor's own readers open
(the CNI config the runtime picks, flanneld's subnet.env and net-conf.json, kube-proxy's source
VIP), install's manifest and the template it names, the tail of the debug log the config names,
host-local's and flannel's stores as names and owners (IP -> container, container -> interface,
host-local's sandbox records: IP -> container, interface, CNI_NETNS; never a file's content), every HNS document both APIs list, and the tools' build and the OS. So a
kubeconfig, token or key beside any of those is never opened, whatever it is called. Every file is
read by ``flagfile.read`` (no FIFO waited on, no link a user planted followed, a size cap), and the
output is written through its folder made admin-only and held (``Disk.secure``), temp + rename.

The archive is a gzip'd tar: ``MANIFEST.json`` first (what was read from where, what was left
out and why), each member at most ``MEMBER_CAP`` bytes and all of them ``TOTAL_CAP``.
"""

from __future__ import annotations

import io
import json
import os
import tarfile
import time
from typing import Any, Mapping, TextIO

from .facts import LiveNode, Problem

FORMAT = "wincni-bundle/1"
MANIFEST = "MANIFEST.json"
MEMBER_CAP = 8 << 20
TOTAL_CAP = 48 << 20
#: How much of the debug log's end is kept, and the largest log read at all (it rotates at 10 MiB).
LOG_TAIL = 1 << 20
MAX_LOG = 256 << 20
#: HCN kinds -> their member under hns/v2/; V1 collections are members under hns/v1/.
V2_MEMBERS = {
    "Network": "networks",
    "Endpoint": "endpoints",
    "Namespace": "namespaces",
    "LoadBalancer": "loadbalancers",
}
V1_MEMBERS = ("networks", "endpoints", "namespaces", "policylists")
VERSION_MEMBER = "hns/version.json"
HCS_MEMBER = "hns/compute-systems.json"
STORE_MEMBER = "stores/host-local.json"
SANDBOX_MEMBER = "stores/host-local-sandboxes.json"
FLANNEL_MEMBER = "stores/flannel.json"


class Recorder(LiveNode):
    """The live node, remembering what the doctor asked of it and what it answered: the replay
    source answers the same questions from this record."""

    def __init__(self) -> None:
        self.listings: dict[str, list[str] | None] = {}
        self.existing: dict[str, bool] = {}
        self.files: dict[str, tuple[str, Any]] = {}  # path -> (flag, Input | Problem | None)
        self.store_read: dict[str, Any] = {}
        self.sandboxes_read: dict[str, Any] = {}

    def configs(self, path: str) -> list[str] | None:
        self.listings[path] = found = super().configs(path)
        return found

    def exists(self, path: str) -> bool:
        self.existing[path] = found = super().exists(path)
        return found

    def read(self, flag: str, path: str, cap: int) -> Any:
        found = super().read(flag, path, cap)
        self.files[path] = (flag, found)
        return found

    def refused(self) -> list[str]:
        """Why each file a flag names that the reader refused was refused (a FIFO, another user's
        link, a folder, a device, too large): the command says so and exits 1."""
        return [got.message for _, got in self.files.values() if isinstance(got, Problem)]

    def store(self, ipam_dir: str, platform: str) -> Any:
        found = super().store(ipam_dir, platform)
        reservations, ages, problem = found
        self.store_read = {
            "dir": ipam_dir,
            "reservations": None
            if reservations is None
            else [{"ip": ip, "container": cid, "ageSeconds": round(ages.get(ip, 0.0), 1)} for ip, cid in reservations],
            "problem": _problem(problem),
        }
        return found

    def sandbox_records(self, ipam_dir: str, platform: str) -> Any:
        found = super().sandbox_records(ipam_dir, platform)
        self.sandboxes_read = {
            "dir": ipam_dir,
            "records": None
            if found is None
            else [{"ip": ip, "container": cid, "ifname": ifname, "netns": netns} for ip, cid, ifname, netns in found],
        }
        return found


def _problem(problem: Problem | None) -> dict | None:
    return None if problem is None else {"message": problem.message, "fix": problem.fix}


class Members:
    """The archive's members in the order they are offered, within the caps; what did not fit is
    named in ``omitted`` with why."""

    def __init__(self, member_cap: int = MEMBER_CAP, total_cap: int = TOTAL_CAP) -> None:
        self.member_cap, self.total_cap = member_cap, total_cap
        self.data: dict[str, bytes] = {}
        self.omitted: dict[str, str] = {}
        self.total = 0

    def add(self, name: str, data: bytes) -> bool:
        if len(data) > self.member_cap:
            self.omitted[name] = f"{len(data)} bytes, over the member cap of {self.member_cap}"
        elif self.total + len(data) > self.total_cap:
            self.omitted[name] = f"{len(data)} bytes, past the bundle's cap of {self.total_cap}"
        else:
            self.data[name] = data
            self.total += len(data)
            return True
        return False

    def json(self, name: str, doc: Any) -> bool:
        return self.add(name, (json.dumps(doc, indent=2) + "\n").encode())


def collect(
    opts: Mapping[str, Any], env: Mapping[str, str], platform: str, cwd: str, recorder: Recorder
) -> tuple[dict, Members]:
    """Everything the bundle holds: (its manifest, its members). The doctor runs on the live node
    through ``recorder``; its report goes in beside what it read."""
    from . import checks, facts

    found = facts.gather(opts, env, platform, cwd, recorder)
    members = Members()
    files: dict[str, dict] = {}
    for n, (path, (flag, got)) in enumerate(recorder.files.items()):
        files[path] = _file_entry(members, f"files/{n}-{_base(path, platform)}", flag, got)
    members.json(STORE_MEMBER, recorder.store_read)
    members.json(SANDBOX_MEMBER, recorder.sandboxes_read)
    pause = [p.sandbox.id for p in found.sandboxes or () if p.sandbox is not None and p.sandbox.kind == "container"]
    hns_errors = record_hns(members, env, pause)
    from .layout import MAX_MANIFEST
    from .render import MAX_TEMPLATE

    extras = {
        "install manifest": _extra(members, "node/install-manifest.json", _manifest_path(found), MAX_MANIFEST),
        "template": _extra(members, "node/template", _template_path(found), MAX_TEMPLATE),
        "debug log": _log_tail(members, _log_path(found, recorder)),
    }
    members.json(FLANNEL_MEMBER, flannel_store(found.flannel_dir))
    members.json("node/doctor.json", [vars(c) for c in checks.run(found)])
    manifest = {
        "format": FORMAT,
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "platform": platform,
        "cwd": cwd,
        "tools": _tools(),
        "os": _os(),
        "doctor": {k: v for k, v in opts.items() if isinstance(v, (str, int, bool)) or v is None},
        "configs": recorder.listings,
        "exists": recorder.existing,
        "files": files,
        "extras": extras,
        "hnsErrors": hns_errors,
        "omitted": members.omitted,
    }
    return manifest, members


def _base(path: str, platform: str) -> str:
    from .facts import node_path

    return node_path(platform).basename(path) or "file"


def _file_entry(members: Members, name: str, flag: str, got: Any) -> dict:
    """How the doctor found one file: read (its member, and whose it was), absent, or refused."""
    if got is None:
        return {"flag": flag, "absent": True}
    if isinstance(got, Problem):
        return {"flag": flag, "problem": _problem(got)}
    if not members.add(name, got.data):
        return {"flag": flag, "problem": {"message": f"{got.path}: {members.omitted[name]}", "fix": ""}}
    return {"flag": flag, "member": name, "owner": got.owner}


def _extra(members: Members, name: str, path: str, cap: int) -> dict:
    """A file only the bundle reads (not the doctor), by the doctor's reader's rules."""
    from .facts import LIVE

    if not path:
        return {"absent": True}
    return {"path": path, **_file_entry(members, name, "", LIVE.read(name, path, cap))}


def _manifest_path(found: Any) -> str:
    from .layout import MANIFEST as INSTALLED

    return os.path.join(found.bin_dir, INSTALLED) if found.bin_dir else ""


def _template_path(found: Any) -> str:
    """The template install rendered the config from, as its recorded arguments name it."""
    args = list(found.install or ())
    return args[args.index("--template") + 1] if "--template" in args[:-1] else ""


def _log_path(found: Any, recorder: Recorder) -> str:
    """The debug log the config turns on (``logFile``, on flannel's level or its delegate's)."""
    from plugins.cni.config import decode

    from .facts import first_plugin

    got = recorder.files.get(found.conf_path, ("", None))[1]
    if got is None or isinstance(got, Problem):
        return ""
    try:
        conf = first_plugin(decode(got.data))
    except Exception:  # noqa: BLE001 - the doctor reported the config's problem; no log to find
        return ""
    delegate = conf.get("delegate") if isinstance(conf.get("delegate"), dict) else {}
    path = conf.get("logFile") or delegate.get("logFile")
    return path if isinstance(path, str) else ""


def _log_tail(members: Members, path: str) -> dict:
    """The last ``LOG_TAIL`` bytes of the debug log, from its first whole line; read through the
    same checked descriptor as any flag's file (``inputfile.open_file``)."""
    from basics.errors import UnsafePath
    from basics.inputfile import open_file

    if not path:
        return {"absent": True}
    try:
        fd, owner = open_file(path, MAX_LOG)
    except FileNotFoundError:
        return {"path": path, "absent": True}
    except (UnsafePath, OSError) as exc:
        return {"path": path, "problem": {"message": str(exc), "fix": ""}}
    with open(fd, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        f.seek(max(0, size - LOG_TAIL))
        data = f.read(LOG_TAIL)
    if size > LOG_TAIL:
        data = data[data.find(b"\n") + 1 :]
    members.add("logs/debug.log", data)
    return {"path": path, "member": "logs/debug.log", "owner": owner, "size": size}


def flannel_store(data_dir: str) -> dict:
    """flannel's saved delegate configs by name and who uses each (never their content)."""
    if not data_dir:
        return {"dir": ""}
    from plugins.cni.errors import CniError
    from plugins.flannel.store import Store

    store = Store(data_dir)
    try:
        keys = store.keys()
        return {
            "dir": data_dir,
            "configs": [
                {"name": k, "owners": sorted([o.container_id, o.ifname] for o in store.owners(k))} for k in keys
            ],
        }
    except (CniError, OSError) as exc:
        return {"dir": data_dir, "problem": getattr(exc, "msg", None) or str(exc)}


def record_hns(
    members: Members, env: Mapping[str, str], sandboxes: "list[str] | tuple[str, ...]" = ()
) -> dict[str, str]:
    """Every HNS document both APIs list, HNS's version, and which containers the endpoints
    name HCS can open (a V1 endpoint's sandbox), and of the pause containers ``sandboxes``
    (host-local's records); a kind HNS would not list is named with why."""
    from libhns.client import open_clients
    from libhns.errors import EnvError, HnsError

    errors: dict[str, str] = {}
    try:
        hcn, hnscall = open_clients(env)
    except (EnvError, HnsError, OSError) as exc:
        return {"HNS": str(exc)}

    def record(name: str, read: Any) -> Any:
        try:
            found = read()
        except (HnsError, OSError) as exc:
            errors[name] = str(exc)
            return None
        members.json(name, found)
        return found

    def docs(objects: list) -> list:
        return [o.to_json() if hasattr(o, "to_json") else o for o in objects]

    record(VERSION_MEMBER, lambda: dict(zip(("Major", "Minor"), hnscall.version())))
    listers = {
        "Network": hcn.list_networks,
        "Endpoint": hcn.list_endpoints,
        "Namespace": hcn.list_namespaces,
        "LoadBalancer": hcn.list_load_balancers,
    }
    for kind, lister in listers.items():
        record(f"hns/v2/{V2_MEMBERS[kind]}.json", lambda lister=lister: docs(lister()))
    v1 = {
        "networks": hnscall.list_networks,
        "endpoints": hnscall.list_endpoints,
        "namespaces": hnscall.list_namespaces,
        "policylists": hnscall.list_policy_lists,
    }
    endpoints = None
    for coll, lister in v1.items():
        got = record(f"hns/v1/{coll}.json", lambda lister=lister: docs(lister()))
        endpoints = got if coll == "endpoints" else endpoints
    containers = sorted({c for e in endpoints or () for c in e.get("SharedContainers") or ()} | set(sandboxes))
    record(HCS_MEMBER, lambda: [c for c in containers if hnscall.compute_system_exists(c)])
    return errors


def _tools() -> dict:
    from plugins.cni.buildinfo import document

    from .facts import running_build

    return {**document(), "build": running_build()}


def _os() -> dict:
    import platform

    return {"system": platform.system(), "release": platform.release(), "version": platform.version()}


def archive(manifest: dict, members: Members) -> bytes:
    """The gzip'd tar: the manifest first, then the members in the order they were offered."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz", format=tarfile.PAX_FORMAT) as tar:
        for name, data in {MANIFEST: (json.dumps(manifest, indent=2) + "\n").encode(), **members.data}.items():
            info = tarfile.TarInfo(name)
            info.size, info.mtime, info.mode = len(data), int(time.time()), 0o600
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


def default_out(now: float | None = None) -> str:
    import socket

    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(now))
    return f"wincni-bundle-{socket.gethostname() or 'node'}-{stamp}.tar.gz"


def run(
    opts: Mapping[str, Any], out: str, env: Mapping[str, str], platform: str, cwd: str, stdout: TextIO, stderr: TextIO
) -> int:
    """Collect, then write ``out`` through its folder made admin-only and held. Prints the path,
    what was left out and what was refused; 0, or 1 when it cannot be written or a file a flag
    names was refused (the bundle is then written without it)."""
    from .disk import Disk
    from .flagfile import FlagFileError

    path = os.path.join(cwd, out)
    try:
        replaceable(path)
    except FlagFileError as exc:
        stderr.write(f"wincni bundle: {exc}\n")
        return 1
    recorder = Recorder()
    manifest, members = collect(opts, env, platform, cwd, recorder)
    data = archive(manifest, members)
    disk = Disk()
    try:
        disk.secure(os.path.dirname(os.path.abspath(path)))
        disk.write_atomic(path, data)
    except OSError as exc:
        stderr.write(f"wincni bundle: cannot write {path}: {exc}; pass --out with a file in an admin-only folder\n")
        return 1
    finally:
        disk.close()
    stdout.write(f"{path}: {len(data)} bytes, {len(members.data) + 1} files\n")
    for name, why in members.omitted.items():
        stdout.write(f"  left out {name}: {why}\n")
    for name, why in manifest["hnsErrors"].items():
        stdout.write(f"  not recorded {name}: {why}\n")
    for why in recorder.refused():
        stdout.write(f"  refused {why}\n")
    return 1 if recorder.refused() else 0


def replaceable(path: str) -> None:
    """``--out`` may be replaced: absent, or an administrator's regular file (a FIFO, a device, a
    folder or a user's link there is refused, named, as any flag's file); it is never opened for
    writing, only renamed over."""
    from basics.inputfile import open_file

    from .flagfile import named

    with named("--out", path):
        try:
            fd, _ = open_file(path, 1 << 62)
        except FileNotFoundError:
            return
    os.close(fd)
