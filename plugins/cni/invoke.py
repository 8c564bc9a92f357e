"""Executing another CNI plugin (IPAM or delegate) the way libcni's pkg/invoke does."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from typing import Any, Mapping, Sequence

from . import log
from .errors import INTERNAL, INVALID_CONFIG, CniError


def find_plugin(name: str, paths: Sequence[str], platform: str = sys.platform) -> str:
    """First ``<name>.exe`` (Windows) or ``<name>`` in the CNI_PATH directories."""
    if not name:
        raise CniError(INVALID_CONFIG, "no plugin name provided", 'set the "type" of the IPAM or delegate config')
    if os.sep in name or (platform == "win32" and "/" in name):
        raise CniError(INVALID_CONFIG, f"invalid plugin name {name!r}", "a plugin type is a file name, not a path")
    candidates = [name + ".exe", name] if platform == "win32" else [name]
    for directory in paths:
        for cand in candidates:
            full = os.path.join(directory, cand)
            if os.path.isfile(full) and (platform == "win32" or os.access(full, os.X_OK)):
                return full
    shown = "[" + " ".join(paths) + "]"
    raise CniError(INTERNAL, f'failed to find plugin "{name}" in path {shown}',
                   "install the plugin into a directory listed in CNI_PATH")


def exec_plugin(name: str, command: str, stdin: bytes, env: Mapping[str, str], paths: Sequence[str],
                cni_version: str, platform: str = sys.platform) -> dict[str, Any] | None:
    """Run plugin ``name`` with ``command``; return its parsed result (None when it prints nothing).

    The parent's environment goes along with CNI_COMMAND replaced. The child's error JSON is
    re-raised with its code kept; a non-JSON failure is reported with its stderr.
    """
    exe = find_plugin(name, paths, platform)
    child_env = dict(env)
    child_env["CNI_COMMAND"] = command
    started = time.perf_counter()
    try:
        proc = subprocess.run([exe], input=stdin, env=child_env, capture_output=True, timeout=600)
    except (OSError, subprocess.SubprocessError) as exc:
        raise CniError(INTERNAL, f"failed to execute plugin {name}: {exc}", exe) from exc
    ms = round((time.perf_counter() - started) * 1000, 1)
    stderr_text = proc.stderr.decode(errors="replace")
    if stderr_text:
        # Forward the child's diagnostics to ours so the runtime's log shows them.
        log.forward(stderr_text)
    log.event("exec", child=name, command=command, path=exe, rc=proc.returncode, ms=ms,
              stderr=stderr_text[-2000:] or None)
    out = proc.stdout.strip()
    if proc.returncode != 0:
        try:
            err = json.loads(out)
            code = int(err["code"])
        except (ValueError, KeyError, TypeError):
            raise CniError(INTERNAL, f'netplugin failed: "{stderr_text.strip()}": exit status {proc.returncode}',
                           out.decode(errors="replace")[:2000]) from None
        raise CniError(code, str(err.get("msg", "")), str(err.get("details", "") or ""))
    if not out:
        return None
    try:
        result = json.loads(out)
    except ValueError as exc:
        raise CniError(INTERNAL, f"plugin {name} printed a result that is not JSON", out.decode(errors="replace")[:500]) from exc
    if isinstance(result, dict) and not result.get("cniVersion"):
        result["cniVersion"] = cni_version
    return result
