"""The Go programs wincni's build, tests and Windows lane use: one table, one way to build them.

Every program comes from the Go module proxy at a pinned version (no Go source is in this
repository but our own few-line ``main`` packages under ``winbuild/gomain/``, each with the
``go.mod``/``go.sum`` that pin what it calls). A published module is built in its own
module-cache folder, so its own ``go.mod``/``go.sum`` pick every dependency as its published build
does (``-mod=readonly``: never a vendor folder or a rewritten ``go.mod``).

The cache is ``$WINCNI_GO_CACHE``, else ``~/.cache/wincni-go``: Go's module and build caches and
one folder per program whose name carries a digest of what was built (its table row and our
``main``'s files), with a ``BUILT`` stamp saying it in words; a program is reused while that
stays, without running Go. ``python -m winbuild.gobuild NAME...`` builds and prints the paths
(``.ci/run`` does, so no test waits on a build).

The Go reference plugins (``REFERENCE_PLUGINS``: what ``bench/windows.py`` times ours against):
the Go module proxy refuses ``github.com/flannel-io/cni-plugin`` (every version, "403 This module
version is not available"), so flannel comes from ``containernetworking/plugins`` v0.9.1, the
last version that held it (``plugins/meta/flannel``, whose code flannel-io/cni-plugin continued).
Its CNI library predates CNI 1.0, so the timed chain runs at 0.4.0 on both sides.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from winbuild.toolchain import ToolchainError

GOMAIN = Path(__file__).resolve().parent / "gomain"
GO_FALLBACK = Path("/usr/local/go/bin/go")  # where the machine's Go is installed, when not on PATH
GO_TIMEOUT_S = 1800.0  # one `go` call; a cold etcd build takes minutes on a shared machine
GO_INSTALL = "install Go 1.26 or later (https://go.dev/dl, or Debian's golang-go) and put `go` on PATH"


class GoBuildError(ToolchainError):
    """A Go program is not built and cannot be: the message says why and what to install."""


@dataclass(frozen=True)
class Program:
    """One executable: ``package`` of ``module`` at ``version`` for ``goos``/``goarch``; with
    ``main``, our own main package in ``winbuild/gomain/<main>`` whose go.mod requires that
    module at that version."""

    module: str
    version: str
    package: str = "."
    goos: str = "linux"
    goarch: str = "amd64"
    main: str | None = None


_CNI_PLUGINS = "github.com/containernetworking/plugins"
_CNI = "github.com/containernetworking/cni"
_KUBERNETES = "k8s.io/kubernetes"
PROGRAMS = {
    # deploy/'s variants rendered as `kubectl apply -k` would (tests/unit/test_deploy.py); v5.8.3 needs Go 1.27
    "kustomize": Program("sigs.k8s.io/kustomize/kustomize/v5", "v5.8.2"),
    # the image's OCI archive (winbuild/image.py)
    "crane": Program("github.com/google/go-containerregistry", "v0.22.1", "cmd/crane"),
    # flannel's own daemon, the one the Dockerfile names
    "flanneld.exe": Program("github.com/flannel-io/flannel", "v0.27.4", goos="windows"),
    # the store flanneld's etcd mode reads its network config and leases from
    "etcd": Program("go.etcd.io/etcd/server/v3", "v3.6.16", main="etcd"),
    # a runtime that is not ours: libcni as containerd's go-cni drives it
    "cnidriver.exe": Program(_CNI, "v1.3.0", goos="windows", main="cnidriver"),
    "cnidriver": Program(_CNI, "v1.3.0", main="cnidriver"),
    # a container runtime's CRI service, ListPodSandbox from a JSON file: what tools/wincni/cri is tested against
    "crifake": Program("k8s.io/cri-api", "v0.37.2", main="crifake"),
    # the node's service proxy and the control plane it reads Services from (Windows lane); the
    # staging modules k8s.io/kubernetes points at ./staging come from their own releases (go.mod)
    "kube-proxy.exe": Program(_KUBERNETES, "v1.34.4", goos="windows", main="kubeproxy"),
    "kube-apiserver": Program(_KUBERNETES, "v1.34.4", main="kubeapiserver"),
    # the workflow linter that checks .github/workflows/ (tests/unit/test_workflows.py)
    "actionlint": Program("github.com/rhysd/actionlint", "v1.7.12", "cmd/actionlint"),
    # the NetworkPolicy judges (tests/netpol): cyclonus's generated cases with its truth tables,
    # and kube-network-policies' evaluator answering single packets; each its own module, as
    # cyclonus pins k8s.io v0.30 and kube-network-policies v0.36
    "cyclonus": Program("github.com/mattfenwick/cyclonus", "v0.5.6", main="cyclonus"),
    "knp": Program("sigs.k8s.io/kube-network-policies", "v1.1.1", main="knp"),
    # the Go reference plugins (REFERENCE_PLUGINS)
    "win-bridge.exe": Program(_CNI_PLUGINS, "v1.9.1", "plugins/main/windows/win-bridge", goos="windows"),
    "win-overlay.exe": Program(_CNI_PLUGINS, "v1.9.1", "plugins/main/windows/win-overlay", goos="windows"),
    "host-local.exe": Program(_CNI_PLUGINS, "v1.9.1", "plugins/ipam/host-local", goos="windows"),
    "flannel.exe": Program(_CNI_PLUGINS, "v0.9.1", "plugins/meta/flannel", goos="windows"),
}
REFERENCE_PLUGINS = ("win-bridge.exe", "win-overlay.exe", "host-local.exe", "flannel.exe")


def cache(env: dict[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    return Path(env.get("WINCNI_GO_CACHE") or Path.home() / ".cache" / "wincni-go")


def find_go(env: dict[str, str] | None = None) -> str:
    """``$GO``, else ``go`` on PATH, else /usr/local/go/bin/go."""
    env = os.environ if env is None else env
    found = (
        env.get("GO")
        or shutil.which("go", path=env.get("PATH"))
        or (str(GO_FALLBACK) if os.access(GO_FALLBACK, os.X_OK) else None)
    )
    if not found:
        raise GoBuildError(f"Go is not installed: {GO_INSTALL} (or at {GO_FALLBACK}, or set GO=/path/to/go)")
    return found


def main_files(program: Program) -> list[Path]:
    """Our own main package's files (the build's input besides the table row)."""
    if program.main is None:
        return []
    folder = GOMAIN / program.main
    return sorted(p for p in folder.iterdir() if p.suffix in (".go", ".mod", ".sum"))


def built_text(name: str, program: Program) -> str:
    """What the stamp says was built; its digest names the program's folder."""
    source = f"our main winbuild/gomain/{program.main} over " if program.main else ""
    lines = [
        f"{name}: {source}{program.module}@{program.version} ./{program.package} for {program.goos}/{program.goarch}"
    ]
    lines += [f"{p.name} {hashlib.sha256(p.read_bytes()).hexdigest()}" for p in main_files(program)]
    return "\n".join(lines) + "\n"


def target(name: str, program: Program, root: Path) -> Path:
    """Where ``name`` lives in the cache: its folder is named for what was built."""
    digest = hashlib.sha256(built_text(name, program).encode()).hexdigest()[:12]
    return root / f"{name}-{program.version}-{digest}" / name


def go_env(program: Program, root: Path) -> dict[str, str]:
    """Building for the program's platform with the local Go, module and build caches under ``root``."""
    return dict(
        os.environ,
        GOOS=program.goos,
        GOARCH=program.goarch,
        CGO_ENABLED="0",
        GOTOOLCHAIN="local",
        GOWORK="off",
        GOMODCACHE=str(root / "go" / "mod"),
        GOCACHE=str(root / "go" / "build"),
        GOFLAGS="-mod=readonly -trimpath -buildvcs=false -modcacherw",
    )  # -modcacherw: rm -rf clears the cache


def run_go(go: str, args: list[str], env: dict[str, str], cwd: Path | None = None) -> str:
    """``go ARGS``'s stdout; GoBuildError saying why when it fails or outlives GO_TIMEOUT_S (its
    whole process group is ended then: go's compilers too)."""
    shown = f"`go {' '.join(args)}`"
    try:
        pipes = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "text": True}
        proc = subprocess.Popen([go, *args], env=env, cwd=cwd, start_new_session=True, **pipes)
    except OSError as exc:
        raise GoBuildError(f"cannot run {go}: {exc.strerror}: {GO_INSTALL}") from None
    try:
        out, err = proc.communicate(timeout=GO_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise GoBuildError(
            f"{shown} did not finish in {GO_TIMEOUT_S:g} s: is the Go module proxy reachable (GOPROXY), "
            "or the machine too busy to build?"
        ) from None
    if proc.returncode:
        why = (err + out).strip()[-3000:]  # `go mod download -json` says why on stdout
        raise GoBuildError(f"{shown} failed (exit {proc.returncode}):\n{why}")
    return out


def build(name: str, root: Path | None = None) -> Path:
    """The path of ``name`` (a key of PROGRAMS), built into the cache first when it is not there."""
    program = PROGRAMS[name]
    root = cache() if root is None else root
    exe = target(name, program, root)
    if exe.is_file():
        return exe
    go = find_go()
    env = go_env(program, root)
    if program.main:
        source = GOMAIN / program.main
    else:
        fetched = run_go(go, ["mod", "download", "-json", f"{program.module}@{program.version}"], env)
        source = Path(json.loads(fetched)["Dir"])
    exe.parent.mkdir(parents=True, exist_ok=True)
    partial = exe.with_name(f"{name}.{os.getpid()}.tmp")
    run_go(go, ["build", "-o", str(partial), f"./{program.package}"], env, cwd=source)
    stamp = built_text(name, program) + run_go(go, ["version"], env)
    (exe.parent / "BUILT").write_text(stamp)
    partial.replace(exe)  # last: a folder holding the program is a finished build
    return exe


def main(names: list[str]) -> int:
    unknown = [n for n in names if n not in PROGRAMS]
    if unknown or not names:
        why = f"no program {unknown[0]!r}" if unknown else "name the programs to build"
        print(f"winbuild.gobuild: {why}: choose from {', '.join(PROGRAMS)}", file=sys.stderr)
        return 2
    try:
        for name in names:
            print(build(name))
    except GoBuildError as exc:
        print(f"winbuild.gobuild: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
