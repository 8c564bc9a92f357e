"""The doctor's reads only the node itself can answer: who may write its folders, its bin dir and who laid it, the plugins' STATUS."""

from __future__ import annotations

import json
import os
from typing import Any, Mapping

from libhns.backend import simulated_on_windows
from tools.wincni.node.build import frozen_dir, running_build
from tools.wincni.node.podnetwork import first_plugin


def read_live(
    opts: Any,  # doctor.options.NodeFiles
    conf: dict | None,
    conf_path: str,
    ipam_dir: str,
    fconf: Any,
    plugins: tuple[str, str],
    env: Mapping[str, str],
    platform: str,
) -> dict[str, Any]:
    """The facts only the node itself can give, as NodeFacts fields: who may write its folders, what
    its bin dir holds and who laid it, the plugins' STATUS answer, the runtime's environment."""
    quick = opts.quick
    bin_files = _listdir(opts.cni_bin_dir)
    return {
        "open_dirs": read_open_dirs(
            {
                "CNI bin dir": opts.cni_bin_dir,
                "CNI conf dir": os.path.dirname(conf_path),
                "IPAM data dir": os.path.dirname(ipam_dir) if ipam_dir else "",
                "flannel data dir": getattr(fconf, "data_dir", ""),
            }
        ),
        "bin_files": bin_files,
        "status": read_status(conf, opts.cni_bin_dir, env, platform) if conf is not None and not quick else None,
        "simulated": simulated_on_windows(env, platform),
        "tools": frozen_dir(),
        "bin_audit": read_bin_audit(
            opts.cni_bin_dir, bin_files, os.path.dirname(conf_path), *plugins, digests=not quick
        ),
        **(read_install(opts.cni_bin_dir, conf_path) if not quick else {}),  # reading it may fix its mode
        "running_build": running_build(),
    }


#: The version STATUS is asked at whatever the config says: no earlier one has the command.
STATUS_VERSION = "1.1.0"


def read_status(conf: dict, bin_dir: str, env: Mapping[str, str], platform: str) -> tuple[int, str, str] | None:
    """What the config's plugin answers CNI STATUS now, as the runtime would get it: run in-process
    through the plugin's own ``skel``, its delegates found in ``bin_dir``; (code, msg, details),
    code 0 when ready; None for a plugin not ours. STATUS writes and locks nothing; the config's
    ``logFile`` is left out, so the doctor appends to no debug log."""
    import importlib
    import io

    from basics import jsontext
    from plugins.cni import skel
    from plugins.registry import PLUGINS, entry_module

    doc = {k: v for k, v in first_plugin(conf).items() if k != "logFile"}
    if doc.get("type") not in PLUGINS:
        return None
    if isinstance(doc.get("delegate"), dict):
        doc["delegate"] = {k: v for k, v in doc["delegate"].items() if k != "logFile"}
    doc["cniVersion"] = STATUS_VERSION
    plugin = importlib.import_module(entry_module(doc["type"])).PLUGIN
    out = io.StringIO()
    run_env = {**env, "CNI_COMMAND": "STATUS", "CNI_PATH": bin_dir}
    if skel.run(plugin, run_env, io.BytesIO(jsontext.dumps(doc).encode()), out, io.StringIO(), platform) == 0:
        return (0, "", "")
    try:
        err = json.loads(out.getvalue())
        return (int(err["code"]), str(err.get("msg", "")), str(err.get("details", "") or ""))
    except (ValueError, KeyError, TypeError):
        return (999, f"STATUS printed no CNI error: {out.getvalue()[:200]!r}", "")


def read_bin_audit(
    bin_dir: str, files: frozenset[str] | None, conf_dir: str, *plugins: str, digests: bool = True
) -> tuple[str, ...]:
    """``files``: the bin dir's listing, already read for ``NodeFacts.bin_files``. ``digests`` off
    (--quick, the readiness probe every 30 s): who may write the folder and the launchers, without
    hashing every contents folder (16 MiB each) against the manifest."""
    from tools.wincni.node.installed import audit

    names = [n for p in dict.fromkeys((*plugins, "host-local")) if p for n in (p, f"{p}.exe") if n in (files or ())]
    return audit(bin_dir, conf_dir, names, digests=digests)


def read_install(bin_dir: str, conf_path: str) -> dict:
    """What ``wincni install``'s manifest in ``bin_dir`` (believed as install believes it) says of
    this node, as NodeFacts fields: the build it laid (else ``build_problem``, why none can be named)
    and, when it names ``conf_path``, how install ran (``install``: its arguments, () when the
    manifest does not record them; left None when no install manages the config, which the
    operator then edits where it is)."""
    from tools.wincni.node import installed
    from tools.wincni.node.disk import Disk
    from tools.wincni.node.installed import read_manifest

    disk, path = Disk(), os.path.join(bin_dir, installed.MANIFEST)
    if not disk.exists(path):
        return {"build_problem": f"no {installed.MANIFEST} in {bin_dir}: the plugins were not laid by wincni install"}
    manifest, why = read_manifest(disk, path, os.path.dirname(conf_path), suspicious=False)
    found: dict = (
        {"installed_build": manifest.build} if manifest.build else {"build_problem": why or f"{path} names no build"}
    )
    if not why and manifest.conf and installed.same_file(manifest.conf, conf_path):
        found["install"] = manifest.install
    return found


def read_open_dirs(folders: Mapping[str, str]) -> tuple[tuple[str, str, str], ...]:
    """(what, folder, who else may write it) for each folder the plugins run from or trust that
    someone besides administrators may write (mode bits on Linux, the DACL on Windows)."""
    from basics.safefs import writable_by_others

    out = []
    for label, path in folders.items():
        try:
            who = writable_by_others(path) if path else None
        except OSError:
            who = None  # absent or unreadable: the other checks say so where it matters
        if who:
            out.append((label, path, who))
    return tuple(out)


def _listdir(path: str) -> frozenset[str] | None:
    try:
        return frozenset(os.listdir(path))
    except OSError:
        return None
