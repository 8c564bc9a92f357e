"""``make dist``: specs/wincni.spec built by PyInstaller with this machine's Python into ``dist/``,
one line a step, PyInstaller's full log in ``build/pyinstaller.log`` and only the warnings that
matter shown (``winbuild/progress.py``)."""

from __future__ import annotations

import os
import subprocess
import sys

from winbuild import buildid, progress, toolchain

ROOT = toolchain.ROOT
LOG = ROOT / "build" / "pyinstaller.log"


def main() -> int:
    LOG.unlink(missing_ok=True)
    try:
        with progress.step("build ID (winbuild/buildid.py)"):
            build = buildid.encode(*buildid.identify())
        argv = [sys.executable, "-m", "PyInstaller", "--noconfirm", "--distpath", "dist"]
        argv += ["--workpath", str(ROOT / "build" / "pyinstaller"), str(ROOT / "specs" / "wincni.spec")]
        with progress.step(f"PyInstaller: dist/wincni/, build {build.split()[0]}"):
            proc = progress.logged(argv, LOG, cwd=ROOT, env=dict(os.environ, **{buildid.ENV: build}))
    except buildid.BuildIdError as e:
        print(f"make dist: {e}", file=sys.stderr)
        return 1
    except subprocess.CalledProcessError as e:
        print(f"make dist: PyInstaller failed with exit status {e.returncode}; full log: {LOG}", file=sys.stderr)
        return 1
    for line in progress.actionable(proc.stdout + proc.stderr):
        print(f"  {line}")
    print(f"full log: {LOG.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
