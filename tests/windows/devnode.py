"""``make node`` / ``make node-stop``: the flanneld lane's node left running for a person on Linux.

``start`` runs a daemon in a session of its own that brings the node up as the lane does
(``flannelnode.flannel_node``: the network namespace, the fake HNS, etcd, flanneld.exe under Wine,
wincni installed into containerd's folders, libcni's driver), writes ``ROOT/sh`` (a command run
inside the node: its network namespace, where the fake HNS server, etcd and flanneld listen, and
its Wine environment) and last ``ROOT/state.json`` (the daemon's pid, the namespace, the processes
in it); the starting process waits for that, prints commands to try and returns. The namespace
lives while its processes do. ``stop`` asks the daemon to end (SIGTERM: it stops what it started),
then kills by pid whatever still runs in the node's namespace or is named in the state file.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import signal
import subprocess
import sys
import threading
import time
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: the lane's shared modules

from flannelnode import BACKENDS, CONTAINERD_CONFIG, NET_D, OPT_BIN, flannel_node
from winenode import LIBCNI_CACHE, LIBCNI_DRIVER, toolchain

START_TIMEOUT_S = 900.0  # a fresh Wine prefix, then flanneld's own waits
STOP_TIMEOUT_S = 60.0


def processes_in(netns: int) -> list[int]:
    """The processes whose network namespace is ``netns`` (its inode)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and alive(int(entry.name)):
            try:
                if os.stat(entry / "ns" / "net").st_ino == netns:
                    found.append(int(entry.name))
            except OSError:
                continue  # ended meanwhile
    return found


def session_of(sid: int) -> list[int]:
    """The running processes of session ``sid`` (the daemon's: everything it started that did not
    leave it, the Wine processes included)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # not a process, or ended meanwhile
        if fields[0] != "Z" and int(fields[3]) == sid:
            found.append(int(entry.name))
    return found


def alive(pid: int) -> bool:
    """Running (a zombie nobody reaped has ended)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def wrapper(pid: int, env: dict[str, str], cwd: Path) -> str:
    """``ROOT/sh``: its arguments run inside the node, from ``cwd`` (the node's ``C:\\k``, so a
    Windows program's default paths are on drive C:, as the lane runs them). Windows CPython
    starts only on pipes, so the command's standard handles are pipes whatever the caller's are."""
    node_env = [f"{k}={v}" for k, v in sorted(env.items()) if os.environ.get(k) != v]
    path = f"PATH={toolchain.WINE.parent}:{os.environ['PATH']}"  # wine64 on PATH
    enter = ["nsenter", f"--net=/proc/{pid}/ns/net", f"--wd={cwd}", "--", "env"]
    enter += ["-u", "LIBHNS_BACKEND", "-u", "LIBHNS_SIM_DIR"]
    run = 'set -o pipefail; : | "$@" 2> >(cat >&2) | cat'
    return (
        "#!/bin/bash\n# The node's own: written by `make node`, gone with `make node-stop`.\n"
        f"exec {shlex.join([*enter, *node_env, path, 'bash', '-c', run, 'node-sh'])} " + '"$@"\n'
    )


def serve(root: Path, backend: str, package_zip: Path) -> None:
    """The daemon: the node up until SIGTERM, then stopped (the context manager's way out)."""
    asked = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: asked.set())
    with flannel_node(root / "node", package_zip, backend) as up:
        netns = os.stat("/proc/thread-self/ns/net").st_ino
        sh = root / "sh"
        sh.write_text(wrapper(os.getpid(), up.node.win_env, up.node.drive_c / "k"))
        sh.chmod(0o755)
        state = {"pid": os.getpid(), "netns": netns, "backend": backend, "pids": processes_in(netns)}
        partial = root / "state.json.tmp"
        partial.write_text(json.dumps(state))
        partial.replace(root / "state.json")  # last: the node is up
        asked.wait()


def commands(root: Path, backend: str) -> str:
    """What ``make node`` prints: commands to try on the running node."""
    sh = shlex.quote(str(root / "sh"))
    network = "flannel.4096" if backend == "vxlan" else "cbr0"
    driver = [LIBCNI_DRIVER, "-confdir", NET_D, "-path", OPT_BIN, "-cachedir", LIBCNI_CACHE]
    wine = lambda *argv: f"  {sh} {toolchain.WINE.name} {shlex.join(argv)}"  # noqa: E731 - one line a command
    return "\n".join(
        [
            f"The node is up ({backend}: flanneld's network {network}). Try:",
            "# HNS through hnsctl.exe and the fake DLLs, as on Windows",
            wine(r"C:\k\cni\hnsctl.exe", "network", "list"),
            "# the doctor on this node",
            wine(r"C:\k\cni\wincni.exe", "doctor", "--containerd-config", CONTAINERD_CONFIG),
            "# a pod through libcni: a namespace (hnsctl.exe ends lines with CR LF), then ADD (DEL the same way)",
            "  ns=$(" + wine(r"C:\k\cni\hnsctl.exe", "namespace", "create").strip() + " | tr -d '\\r')",
            wine(*driver, "-id", "pod1", "-netns", "NS", "add").replace(" NS ", ' "$ns" '),
            f"# logs: {root / 'node' / 'flanneld.log'}, {root / 'node' / 'etcd' / 'etcd.log'}, {root / 'daemon.log'}",
            "# stop it all: make node-stop",
        ]
    )


def start(root: Path, backend: str, package_zip: Path | None) -> int:
    if (root / "state.json").exists():
        print(f"a node is already up ({root / 'state.json'}): make node-stop first", file=sys.stderr)
        return 1
    if package_zip is None:
        from winbuild.dist import newest_zip

        package_zip = newest_zip()
        if package_zip is None:
            print("no dist-windows/wincni-*-windows-amd64.zip: run `make dist-windows` first", file=sys.stderr)
            return 1
    root.mkdir(parents=True, exist_ok=True)
    subprocess.run(["rm", "-rf", str(root / "node")], check=True)  # a stopped node's files
    argv = [sys.executable, __file__, "serve", "--root", str(root), "--backend", backend, "--zip", str(package_zip)]
    with (root / "daemon.log").open("wb") as log:
        daemon = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True)
    build = next((n.split("/")[0] for n in zipfile.ZipFile(package_zip).namelist() if n.startswith("_wincni-")), "?")
    print(f"make node: {package_zip} (build {build.removeprefix('_wincni-')}; `make dist-windows` makes a newer one)")
    print(
        f"make node: bringing the {backend} node up (etcd, flanneld.exe under Wine, wincni installed) ...", flush=True
    )
    began = time.monotonic()
    deadline = began + START_TIMEOUT_S
    while not (root / "state.json").exists():
        if daemon.poll() is not None or time.monotonic() > deadline:
            if daemon.poll() is None:
                os.killpg(daemon.pid, signal.SIGTERM)
            tail = (root / "daemon.log").read_text(errors="replace")[-4000:]
            print(f"the node did not come up:\n{tail}", file=sys.stderr)
            return 1
        time.sleep(0.5)
    print(f"make node: up in {time.monotonic() - began:.0f} s")
    print(commands(root, backend))
    return 0


def stop(root: Path) -> int:
    """SIGTERM to the daemon, then SIGKILL to whatever of the node still runs (its namespace, the
    daemon's session, the state file's pids); returns once every one of them is gone."""
    try:
        state = json.loads((root / "state.json").read_text())
    except FileNotFoundError:
        print(f"no node is up ({root / 'state.json'} absent)")
        return 0
    if alive(state["pid"]):
        os.kill(state["pid"], signal.SIGTERM)
    deadline = time.monotonic() + STOP_TIMEOUT_S
    while alive(state["pid"]) and time.monotonic() < deadline:
        time.sleep(0.2)

    def running() -> list[int]:
        listed = [pid for pid in [state["pid"], *state["pids"]] if alive(pid)]
        return sorted({*processes_in(state["netns"]), *session_of(state["pid"]), *listed})

    left = running()
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            continue  # ended meanwhile
    deadline = time.monotonic() + STOP_TIMEOUT_S
    while (still := running()) and time.monotonic() < deadline:
        time.sleep(0.1)
    if still:
        print(f"the node is not stopped: processes {still} outlived SIGKILL for {STOP_TIMEOUT_S:g} s", file=sys.stderr)
        return 1
    for name in ("state.json", "sh"):
        (root / name).unlink(missing_ok=True)
    print("the node is stopped" + (f" (killed what outlived it: {left})" if left else ""))
    return 0


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="devnode", description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=("start", "serve", "stop"))
    parser.add_argument("--root", type=Path, default=Path("build/node"))
    parser.add_argument("--backend", choices=list(BACKENDS), default="vxlan")
    parser.add_argument("--zip", type=Path, help="the package zip (default: the newest in dist-windows/)")
    a = parser.parse_args(argv)
    root = a.root.resolve()
    if a.command == "serve":
        serve(root, a.backend, a.zip)
        return 0
    return start(root, a.backend, a.zip) if a.command == "start" else stop(root)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
