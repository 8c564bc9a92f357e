"""What the bundle records: the doctor's reads on the live node (``Recorder``), every HNS document, flannel's store, the debug log's tail."""

from __future__ import annotations

import os
from typing import Any, Mapping

from tools.wincni.doctor.archive.members import (
    HCS_MEMBER,
    LOG_TAIL,
    MAX_LOG,
    V2_MEMBERS,
    VERSION_MEMBER,
    Members,
    problem_doc,
)
from tools.wincni.node.source import LiveNode, Problem


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
            "problem": problem_doc(problem),
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


def member_base(path: str, platform: str) -> str:
    from tools.wincni.node.paths import node_path

    return node_path(platform).basename(path) or "file"


def file_entry(members: Members, name: str, flag: str, got: Any) -> dict:
    """How the doctor found one file: read (its member, and whose it was), absent, or refused."""
    if got is None:
        return {"flag": flag, "absent": True}
    if isinstance(got, Problem):
        return {"flag": flag, "problem": problem_doc(got)}
    if not members.add(name, got.data):
        return {"flag": flag, "problem": {"message": f"{got.path}: {members.omitted[name]}", "fix": ""}}
    return {"flag": flag, "member": name, "owner": got.owner}


def extra_file(members: Members, name: str, path: str, cap: int) -> dict:
    """A file only the bundle reads (not the doctor), by the doctor's reader's rules."""
    from tools.wincni.node.source import LIVE

    if not path:
        return {"absent": True}
    return {"path": path, **file_entry(members, name, "", LIVE.read(name, path, cap))}


def manifest_path(found: Any) -> str:
    from tools.wincni.node.installed import MANIFEST as INSTALLED

    return os.path.join(found.bin_dir, INSTALLED) if found.bin_dir else ""


def template_path(found: Any) -> str:
    """The template install rendered the config from, as its recorded arguments name it."""
    args = list(found.install or ())
    return args[args.index("--template") + 1] if "--template" in args[:-1] else ""


def log_path(found: Any, recorder: Recorder) -> str:
    """The debug log the config turns on (``logFile``, on flannel's level or its delegate's)."""
    from plugins.cni.config import decode
    from tools.wincni.node.podnetwork import first_plugin

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


def log_tail(members: Members, path: str) -> dict:
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
