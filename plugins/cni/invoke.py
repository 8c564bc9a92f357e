"""Running another CNI plugin (IPAM or delegate) the way libcni's pkg/invoke does.

When the plugin CNI_PATH resolves to is one of ours from this very installation (a sibling
executable of this frozen build, or this venv's console script), it runs in-process through its
``main(env, stdin, stdout)`` with the same environment, stdout/stderr split, error mapping and log
lines: a flannel ADD then costs one process start instead of three. Anything else is executed;
``WINCNI_NO_INPROCESS=1`` forces execution.
"""

from __future__ import annotations

import os
import sys
import time

from basics import jsontext

from . import log
from .errors import INTERNAL, INVALID_CONFIG, CniError
from .names import file_name_problem, is_name

#: A plugin type is a name (``names.is_name``: no drive, separator or leading dot), so no saved
#: or delegated config can turn it into a path outside CNI_PATH.
MAX_PLUGIN_NAME = 64


def find_plugin(name, paths, platform=sys.platform):
    """First ``<name>.exe`` (Windows) or ``<name>`` in the CNI_PATH directories; the name is
    checked as a name first (``D:evil`` would be drive-relative once joined on Windows)."""
    if not name:
        raise CniError(INVALID_CONFIG, "no plugin name provided", 'set the "type" of the IPAM or delegate config')
    problem = (
        None if is_name(name) else "may hold only letters, digits and _.- (no drive, path separator or leading dot)"
    )
    problem = problem or file_name_problem(name, MAX_PLUGIN_NAME)
    if problem:
        raise CniError(
            INVALID_CONFIG,
            f"invalid plugin name {str(name)[:80]!r}: it {problem}",
            "a plugin type is the file name of a plugin in CNI_PATH, e.g. host-local or win-bridge",
        )
    candidates = [name + ".exe", name] if platform == "win32" else [name]
    for directory in paths:
        for cand in candidates:
            full = os.path.join(directory, cand)
            if os.path.isfile(full) and (platform == "win32" or os.access(full, os.X_OK)):
                return full
    shown = "[" + " ".join(paths) + "]"
    raise CniError(
        INTERNAL,
        f'failed to find plugin "{name}" in path {shown}',
        "install the plugin into a directory listed in CNI_PATH",
    )


def _same_dir(a, b):
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def inprocess_module(name, exe, env, siblings, platform=sys.platform):
    """The module to run ``name`` from in-process, or None when ``exe`` must be executed.
    ``siblings`` (plugin type -> our entry module, or None) is handed in by the plugin: the CNI
    core does not know which plugins we ship.

    Frozen: ``exe`` lies in our own package folder. Source: ``exe`` is this interpreter's console
    script (in ``sys.prefix``'s script folder, and, where it is a text script, launching our entry
    point with this very interpreter), so another installation of ours on CNI_PATH is executed.
    """
    module = siblings(name) if siblings else None
    if module is None or env.get("WINCNI_NO_INPROCESS") == "1":
        return None
    folder = os.path.dirname(os.path.realpath(exe))
    if getattr(sys, "frozen", False):
        return module if _same_dir(folder, os.path.dirname(sys.executable)) else None
    scripts = os.path.join(sys.prefix, "Scripts" if platform == "win32" else "bin")
    if not _same_dir(folder, scripts):
        return None
    try:
        with open(exe, "rb") as f:
            head = f.read(4096)
    except OSError:
        return None
    if head.startswith(b"MZ"):
        return module  # a pip-made Windows launcher in this venv's Scripts folder
    first = head.split(b"\n", 1)[0]
    interp = first[2:].strip().split(b" ", 1)[0].decode(errors="replace") if first.startswith(b"#!") else ""
    if not (interp and _same_dir(interp, sys.executable)) or f"from {module} import".encode() not in head:
        return None
    return module


class Executor:
    """How a found plugin runs: one of ours from this installation in-process, anything else as a
    process. ``run`` is skel's ``run``, handed in by the caller so this module never imports skel,
    and ``siblings`` the plugin's table of in-process plugins (``inprocess_module``); a test
    replaces the whole executor, as an httpx transport."""

    __slots__ = ("run", "siblings")

    def __init__(self, run, siblings=None):
        self.run = run
        self.siblings = siblings

    def spawn(self, name, exe, stdin, env):
        import subprocess

        try:
            proc = subprocess.run([exe], input=stdin, env=env, capture_output=True, timeout=600)
        except (OSError, subprocess.SubprocessError) as exc:
            raise CniError(INTERNAL, f"failed to execute plugin {name}: {exc}", exe) from exc
        return proc.returncode, proc.stdout, proc.stderr.decode(errors="replace")

    def call(self, module, stdin, env, platform):
        """The child's ``main`` on its own stdin/stdout/stderr buffers; ``run`` scopes its log
        state and reads nothing but ``env``, so nothing leaks between parent and child."""
        import io

        __import__(module)  # as skel imports handlers: no importlib package on the pod path
        plugin = sys.modules[module].PLUGIN
        out, err = io.StringIO(), io.StringIO()
        rc = self.run(plugin, env, io.BytesIO(stdin), out, err, platform)
        return rc, out.getvalue().encode(), err.getvalue()


def exec_plugin(name, command, stdin, env, paths, cni_version, executor, platform=sys.platform):
    """Run plugin ``name`` with ``command``; return its parsed result (None when it prints nothing).

    The parent's environment goes along with CNI_COMMAND replaced. The child's error JSON is
    re-raised with its code kept; a non-JSON failure is reported with its stderr.
    """
    exe = find_plugin(name, paths, platform)
    child_env = dict(env)
    child_env["CNI_COMMAND"] = command
    module = inprocess_module(name, exe, env, executor.siblings, platform)
    started = time.perf_counter()
    if module is None:
        rc, out, stderr_text = executor.spawn(name, exe, stdin, child_env)
    else:
        rc, out, stderr_text = executor.call(module, stdin, child_env, platform)
    ms = round((time.perf_counter() - started) * 1000, 1)
    if stderr_text:
        # Forward the child's diagnostics to ours so the runtime's log shows them.
        log.forward(stderr_text)
    log.event(
        "exec",
        child=name,
        command=command,
        path=exe,
        rc=rc,
        ms=ms,
        stderr=stderr_text[-2000:] or None,
        **({"inprocess": True} if module else {}),
    )
    out = out.strip()
    if rc != 0:
        try:
            err = jsontext.loads(out)
            code = int(err["code"])
        except (ValueError, KeyError, TypeError, OverflowError):  # OverflowError: a code of 1e999
            raise CniError(
                INTERNAL,
                f'netplugin failed: "{stderr_text.strip()}": exit status {rc}',
                out.decode(errors="replace")[:2000],
            ) from None
        raise CniError(code, str(err.get("msg", "")), str(err.get("details", "") or ""))
    if not out:
        return None
    try:
        result = jsontext.loads(out)
    except ValueError as exc:
        raise CniError(
            INTERNAL, f"plugin {name} printed a result that is not JSON", out.decode(errors="replace")[:500]
        ) from exc
    if isinstance(result, dict) and not result.get("cniVersion"):
        result["cniVersion"] = cni_version
    return result
