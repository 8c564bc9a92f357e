"""The Go programs wincni's build and tests use, built from the Go module proxy with ``go install``
into a cache outside the repository (their source is never in it), at pinned versions:

- ``kustomize``: renders deploy/'s variants (tests/unit/test_deploy.py), as ``kubectl apply -k`` would;
- ``crane`` (go-containerregistry): writes the image's OCI archive (``make image``, winbuild/image.py);
- ``flanneld.exe``: flannel's own daemon, cross-built for windows/amd64, for the image.

``python -m winbuild.gotools kustomize crane flanneld`` builds them (``.ci/run`` does, so no test
waits on a build) and prints their paths. The cache is ``$WINCNI_GO_CACHE``, else
``~/.cache/wincni-go``; a built tool is reused while its version stays.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

TOOLS = {  # name -> (package, version)
    "kustomize": ("sigs.k8s.io/kustomize/kustomize/v5", "v5.8.2"),  # v5.8.3 needs Go 1.27
    "crane": ("github.com/google/go-containerregistry/cmd/crane", "v0.22.1"),
}
FLANNEL = ("github.com/flannel-io/flannel", "v0.27.4")  # the flanneld the Dockerfile names
BUILD_TIMEOUT_S = 1800


class ToolUnavailable(Exception):
    """The tool is not built and cannot be: the message says why and what to install."""


def cache() -> Path:
    return Path(os.environ.get("WINCNI_GO_CACHE") or Path.home() / ".cache" / "wincni-go")


def tool(name: str) -> Path:
    """The path of ``name`` (a key of TOOLS), built first when it is not in the cache."""
    package, version = TOOLS[name]
    target = cache() / f"{name}-{version}"
    exe = target / name
    if not exe.is_file():
        _go("install", f"{package}@{version}", env={"GOBIN": str(target)})
    return exe


def flanneld() -> Path:
    """flanneld.exe for windows/amd64. ``go install`` puts a cross-built program under GOPATH's
    bin/windows_amd64 (it refuses GOBIN then), so this build has a GOPATH of its own."""
    package, version = FLANNEL
    exe = cache() / f"flanneld-{version}" / "flanneld.exe"
    if not exe.is_file():
        gopath = cache() / "gopath"
        modcache = _go_env("GOMODCACHE")  # the user's module cache, not one under this GOPATH
        _go(
            "install",
            f"{package}@{version}",
            env={
                "GOOS": "windows",
                "GOARCH": "amd64",
                "GOPATH": str(gopath),
                "GOMODCACHE": modcache,
                "GOBIN": "",
                "CGO_ENABLED": "0",
            },
        )
        exe.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(gopath / "bin" / "windows_amd64" / "flannel.exe", exe)
    return exe


def _go_env(key: str) -> str:
    return subprocess.run([_go_binary(), "env", key], capture_output=True, text=True, check=True).stdout.strip()


def _go_binary() -> str:
    found = shutil.which("go")
    if not found:
        raise ToolUnavailable(
            "`go` is not on PATH: install Go (https://go.dev/dl, or Debian's golang-go) "
            "so that the build tools build from the Go module proxy"
        )
    return found


def _go(*args: str, env: dict[str, str]) -> None:
    full = {**os.environ, **env}
    full = {k: v for k, v in full.items() if v != "" or k not in env}  # "" in env: unset it
    try:
        proc = subprocess.run([_go_binary(), *args], env=full, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise ToolUnavailable(
            f"go {' '.join(args)} did not finish in {BUILD_TIMEOUT_S:g} s: is the Go module proxy reachable (GOPROXY)?"
        ) from None
    if proc.returncode != 0:
        raise ToolUnavailable(f"go {' '.join(args)} failed:\n{proc.stderr[-2000:]}")


def main(names: list[str]) -> int:
    unknown = [n for n in names if n not in TOOLS and n != "flanneld"]
    if unknown:
        print(
            f"winbuild.gotools: no tool {unknown[0]!r}: choose from {', '.join([*TOOLS, 'flanneld'])}", file=sys.stderr
        )
        return 2
    try:
        for name in names or [*TOOLS, "flanneld"]:
            print(flanneld() if name == "flanneld" else tool(name))
    except ToolUnavailable as exc:
        print(f"winbuild.gotools: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
