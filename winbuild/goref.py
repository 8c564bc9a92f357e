"""The Go reference plugins for windows/amd64, built from their published modules.

The Windows lane times our executables against them (``bench/windows.py``), so it builds them
here like the rest of its toolchain: with Go, from the Go module proxy, into the cache beside the
Windows CPython (``$WINCNI_WINDOWS_CACHE/goref``, stamped with what was built), never from source
in this repository. Each module is built in its own module-cache folder, so its own ``go.mod`` and
``go.sum`` pick every dependency, as its release build does (``-mod=readonly``: never its vendor
folder, never a rewritten ``go.mod``).

flannel is the one not built from its own repository: the Go module proxy this machine reaches
refuses ``github.com/flannel-io/cni-plugin`` (every version, "403 This module version is not
available"), so flannel comes from ``containernetworking/plugins`` v0.9.1, the last release that
held it (``plugins/meta/flannel``, whose code flannel-io/cni-plugin continued; its Windows
delegate construction is the same). Its CNI library predates CNI 1.0: it accepts configs up to
0.4.0, so the timed chain runs at 0.4.0 on both sides.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

from winbuild.toolchain import ToolchainError, cache_dir

# (module, version, {executable: package in the module}): what the lane builds.
SOURCES = (
    (
        "github.com/containernetworking/plugins",
        "v1.9.1",
        {
            "win-bridge": "plugins/main/windows/win-bridge",
            "win-overlay": "plugins/main/windows/win-overlay",
            "host-local": "plugins/ipam/host-local",
        },
    ),
    ("github.com/containernetworking/plugins", "v0.9.1", {"flannel": "plugins/meta/flannel"}),
)
GO_FALLBACK = Path("/usr/local/go/bin/go")  # where the machine's Go is installed, when not on PATH


def find_go(env: dict[str, str] | None = None) -> str:
    """``$GO``, else ``go`` on PATH, else /usr/local/go/bin/go; ToolchainError saying how to get it."""
    env = os.environ if env is None else env
    found = (
        env.get("GO")
        or shutil.which("go", path=env.get("PATH"))
        or (str(GO_FALLBACK) if os.access(GO_FALLBACK, os.X_OK) else None)
    )
    if not found:
        raise ToolchainError(
            "the Windows lane builds the Go reference plugins with Go, which is not installed: "
            f"put `go` on PATH (or at {GO_FALLBACK}), or set GO=/path/to/go, then rerun"
        )
    return found


def go_env(cache: Path) -> dict[str, str]:
    """Cross-compiling for windows/amd64 with the Go found, module and build caches under ``cache``."""
    return dict(
        os.environ,
        GOOS="windows",
        GOARCH="amd64",
        CGO_ENABLED="0",
        GOTOOLCHAIN="local",
        GOMODCACHE=str(cache / "go" / "mod"),
        GOCACHE=str(cache / "go" / "build"),
        GOFLAGS="-mod=readonly -trimpath -buildvcs=false -modcacherw",
    )  # rm -rf clears the cache


def _go(go: str, args: list[str], env: dict[str, str], cwd: Path | None = None) -> str:
    proc = subprocess.run([go, *args], env=env, cwd=cwd, capture_output=True, text=True)
    if proc.returncode:
        why = (proc.stderr + proc.stdout).strip()  # `go mod download -json` says why on stdout
        raise ToolchainError(f"`go {' '.join(args)}` failed (exit {proc.returncode}):\n{why}")
    return proc.stdout


def ensure_go_plugins(cache: Path | None = None) -> Path:
    """The folder holding ``<name>.exe`` for every executable in ``SOURCES`` (built once per cache)."""
    cache = cache_dir() if cache is None else cache
    target = cache / "goref"
    go = find_go()
    env = go_env(cache)
    stamp_text = _go(go, ["version"], env).strip() + "\n" + repr(SOURCES)
    stamp = target / ".wincni-stamp"
    if stamp.exists() and stamp.read_text() == stamp_text:
        return target
    staging = cache / "goref.tmp"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    for module, version, packages in SOURCES:
        source = Path(json.loads(_go(go, ["mod", "download", "-json", f"{module}@{version}"], env))["Dir"])
        for exe, package in packages.items():
            _go(go, ["build", "-o", str(staging / f"{exe}.exe"), f"./{package}"], env, cwd=source)
    (staging / ".wincni-stamp").write_text(stamp_text)
    shutil.rmtree(target, ignore_errors=True)
    staging.rename(target)
    return target


if __name__ == "__main__":
    import sys

    try:
        print(ensure_go_plugins())
    except ToolchainError as e:
        sys.exit(f"error: {e}")
