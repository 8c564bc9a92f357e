"""``make dist-windows``: build specs/wincni.spec under Wine and pack the Windows package zip.

The zip holds what goes into ``C:\\k\\cni``: the one-folder bundle (``<name>.exe`` beside
``_wincni-<build>\\``), ``samples\\`` with the two documented ``cni.conf`` files and ``INSTALL.txt``.
It is written to ``dist-windows/wincni-<version>-windows-amd64.zip``. The Go reference plugins the
lane's benchmark compares with are built too (``winbuild/gobuild.py``), into its cache.
"""

from __future__ import annotations

import configparser
import shutil
import sys
import zipfile
from pathlib import Path

from plugins import registry
from winbuild import buildid, gobuild, toolchain

ROOT = toolchain.ROOT
OUT = ROOT / "dist-windows"
SPEC = ROOT / "specs" / "wincni.spec"
BUNDLE = "wincni"
EXTRAS = Path(__file__).resolve().parent / "package"  # INSTALL.txt and samples/


COMMANDS = registry.COMMANDS  # the executables the spec builds
PLUGINS = tuple(registry.PLUGINS)  # the CNI plugins; the rest are CLIs


def version() -> str:
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    return cfg["metadata"]["version"]


def zip_name() -> Path:
    return OUT / f"wincni-{version()}-windows-amd64.zip"


def newest_zip(folder: Path = OUT) -> Path | None:
    """The package zip built last in ``folder``, or None: by modification time, since names sort
    versions wrongly (0.10.0 before 0.9.0)."""
    zips = list(folder.glob("wincni-*-windows-amd64.zip"))
    return max(zips, key=lambda z: z.stat().st_mtime) if zips else None


def build(python: Path, prefix: Path) -> Path:
    """Run PyInstaller (Windows CPython under Wine) on the project's spec with the build's ID
    worked out here (``buildid``: the Windows Python finds no git); returns the bundle folder."""
    dist, work = OUT / "build" / "dist", OUT / "build" / "work"
    shutil.rmtree(dist, ignore_errors=True)
    build_env = toolchain.wine_env(prefix, **{buildid.ENV: buildid.encode(*buildid.identify())})
    toolchain.run_wine(
        prefix,
        [
            str(python),
            # What PyInstaller compiles into each executable (its bootstrap, our launcher) keeps
            # line numbers but no column ranges, as the pack's code does (specs/bootstrap/linetable.py).
            "-X",
            "no_debug_ranges",
            "-m",
            "PyInstaller",
            "--noconfirm",
            "--log-level",
            "WARN",
            "--distpath",
            toolchain.winpath(dist),
            "--workpath",
            toolchain.winpath(work),
            toolchain.winpath(SPEC),
        ],
        cwd=ROOT,
        env=build_env,
        check=True,
    )
    bundle = dist / BUNDLE
    missing = [c for c in COMMANDS if not (bundle / f"{c}.exe").is_file()]
    if missing:
        raise toolchain.ToolchainError(f"PyInstaller finished but {bundle} lacks: {', '.join(missing)}")
    return bundle


def pack(bundle: Path, target: Path) -> Path:
    """The package zip: the bundle's contents at the top, plus INSTALL.txt and samples/."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(".tmp")
    # Deflate's best level: 46 KB less than the default level, within the 5 MiB budget (bench/windows.py).
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
        for base in (bundle, EXTRAS):
            for path in sorted(base.rglob("*")):
                if path.is_file():
                    zf.write(path, path.relative_to(base).as_posix())
    tmp.replace(target)
    return target


def main() -> int:
    try:
        python, prefix = toolchain.ensure_all()
        target = pack(build(python, prefix), zip_name())
        go_plugins = [
            gobuild.build(name) for name in gobuild.REFERENCE_PLUGINS
        ]  # what the lane's benchmark times ours against
    except (toolchain.ToolchainError, buildid.BuildIdError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(f"{target.relative_to(ROOT)}: {target.stat().st_size / 2**20:.1f} MiB")
    print("Go reference plugins for the lane's benchmark:", *go_plugins, sep="\n  ")
    return 0


if __name__ == "__main__":
    sys.exit(main())
