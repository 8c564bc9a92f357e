"""A Windows node under Wine: the package zip in ``C:\\k\\cni``, fake HNS DLLs in system32.

``WineNode`` is ``tests/hnsnode.Node`` with the plugins run as Windows processes: Wine runs
the PyInstaller-built ``.exe`` files of the package zip with ``CNI_PATH=C:\\k\\cni`` and the
current directory on drive C:, so every default path is the Windows one (``C:\\run\\flannel``,
``C:\\var\\lib\\cni\\networks``). ``computenetwork.dll`` / ``vmcompute.dll`` are
tests/fakedll/hnsbridge.c built with mingw, forwarding every call to ``hnsserver.Server`` in this
process, which runs libhns.sim on the node's state directory — the one the Linux-side ``hnsctl``
(``Node.hnsctl``) reads. Stdin, stdout and stderr of each Wine process are pipes (Windows CPython
fails to start on a file or /dev/null handle).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
FAKEDLL = ROOT / "tests" / "fakedll"
for extra in (ROOT, ROOT / "tests", FAKEDLL):  # tests/: hnsnode, testdata
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

import hnsserver
from gotool import go_tool
from hnsnode import Node, Run
from libcni import Driver
from winbuild import toolchain

CNI_DIR = r"C:\k\cni"
LIBCNI_DRIVER = r"C:\libcni\cnidriver.exe"
LIBCNI_CACHE = r"C:\var\lib\cni"  # libcni's default cache dir, where containerd leaves it
DLLS = ("computenetwork.dll", "vmcompute.dll")


def mingw(source: Path, target: Path, *flags: str) -> Path:
    """Compile a tests/fakedll source into a Windows binary."""
    subprocess.run(
        [toolchain.MINGW_CC, "-O1", "-Wall", "-Werror", "-s", "-o", str(target), str(source), *flags],
        check=True,
        capture_output=True,
        text=True,
    )
    return target


class WineNode(Node):
    """One Wine prefix = one Windows node; HNS is the simulator behind the fake DLLs."""

    def __init__(self, root: Path, package_zip: Path, sim_env: dict[str, str] | None = None) -> None:
        """``sim_env``: more of libhns.sim's variables for this node's HNS (e.g. its adapters),
        seen by the fake DLLs' server and the Linux-side hnsctl alike."""
        super().__init__(root)
        self.env.update(sim_env or {})
        self.prefix = toolchain.ensure_prefix(root / "prefix")
        self.drive_c = self.prefix / "drive_c"
        cni = self.drive_c / "k" / "cni"
        with zipfile.ZipFile(package_zip) as zf:
            zf.extractall(cni)
        system32 = self.drive_c / "windows" / "system32"
        built = mingw(FAKEDLL / "hnsbridge.c", root / "hnsbridge.dll", "-shared", "-lws2_32", "-lole32")
        for name in DLLS:
            shutil.copy(built, system32 / name)
        # Wine 8 has no bcryptprimitives.dll (Windows 10+ does); see the source's comment.
        mingw(FAKEDLL / "bcryptprimitives.c", system32 / "bcryptprimitives.dll", "-shared", "-lbcrypt")
        self.trivial = mingw(FAKEDLL / "trivial.c", cni / "trivial.exe")
        self.server = hnsserver.Server(env={"LIBHNS_SIM_DIR": self.env["LIBHNS_SIM_DIR"], **(sim_env or {})}).start()
        # What differs under Wine: the node's files are at their Windows default paths on drive C:.
        self.ipam_dir = self.path(r"C:\var\lib\cni\networks")
        self.flannel_dir = self.path(r"C:\var\lib\cni\flannel")
        self.subnet_env = self.path(r"C:\run\flannel\subnet.env")
        self.net_conf = self.path(r"C:\etc\kube-flannel\net-conf.json")
        self.conf_dir = self.path(r"C:\k\cni\config")
        self.win_env = toolchain.wine_env(
            self.prefix, FAKEHNS_PORT=str(self.server.port), CNI_PATH=CNI_DIR, CNI_IFNAME="eth0"
        )
        for name in ("LIBHNS_BACKEND", "LIBHNS_SIM_DIR", "LIBHNS_SIM_FAULTS", "LIBHNS_JOURNAL"):
            self.win_env.pop(name, None)  # the exes use their Windows default: the DLLs

    def keep_server(self) -> None:
        """Keep the Wine server running between programs, as Windows has no server to start: a
        program's time is then its own. Windows CPython will not start on file or /dev/null handles
        under Wine (``init_sys_streams``: invalid handle), so runs use pipes; Wine's services are
        started first by the trivial program with /dev/null handles, so none of them inherits (and
        holds open) a later run's pipe."""
        wineserver = str(toolchain.WINE.parent / "wineserver")
        quiet = {"stdin": subprocess.DEVNULL, "stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
        subprocess.run([wineserver, "-w"], env=self.win_env, timeout=60, **quiet)  # services of piped runs gone
        subprocess.run([wineserver, "-p"], env=self.win_env, check=True, **quiet)
        subprocess.run([str(toolchain.WINE), str(self.trivial)], env=self.win_env, timeout=120, **quiet)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        subprocess.run(
            [str(toolchain.WINE.parent / "wineserver"), "-k"], env=self.win_env, capture_output=True, check=False
        )

    def path(self, windows: str) -> Path:
        """The Linux path of a ``C:\\...`` path in this prefix."""
        drive, _, rest = windows.partition(":")
        assert drive.upper() == "C", windows
        return self.drive_c.joinpath(*[p for p in rest.split("\\") if p])

    def wine(self, program: str, *args: str, stdin: bytes = b"", **env: str) -> subprocess.CompletedProcess:
        """Run a Windows program (``C:\\...``) from ``C:\\k``, all three standard handles piped;
        a start Wine botched is made again once (``toolchain.run_wine``)."""
        return toolchain.run_wine(
            self.prefix, [program, *args], input=stdin, cwd=self.drive_c / "k", env={**self.win_env, **env}, timeout=300
        )

    def libcni(self, conf_dir: str, bin_dir: str) -> Driver:
        """libcni (``cnidriver.exe``) on this node over containerd's ``conf_dir`` and ``bin_dir``,
        with libcni's default cache dir, as containerd runs it."""
        driver = go_tool("cnidriver.exe", "drive the plugins through libcni under Wine")
        target = self.path(LIBCNI_DRIVER)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(driver, target)
        return Driver(lambda argv, env: self.wine(LIBCNI_DRIVER, *argv, **env), conf_dir, bin_dir, LIBCNI_CACHE)

    def exe(self, name: str) -> str:
        return f"{CNI_DIR}\\{name}.exe"

    def run(
        self,
        command: str,
        conf: Any,
        cid: str = "",
        netns: str = "",
        plugin: str | None = None,
        bin_dir: str = CNI_DIR,
        **env: str,
    ) -> Run:
        """A CNI command of ``plugin`` in ``bin_dir`` (where ``wincni install`` put it, say), which
        is also its CNI_PATH unless ``env`` says otherwise."""
        stdin = conf if isinstance(conf, bytes) else json.dumps(conf).encode()
        proc = self.wine(
            f"{bin_dir}\\{plugin or self.plugin}.exe",
            stdin=stdin,
            CNI_COMMAND=command,
            CNI_CONTAINERID=cid,
            CNI_NETNS=netns,
            **{"CNI_PATH": bin_dir, **env},
        )
        text = proc.stdout.decode()
        return Run(proc.returncode, json.loads(text) if text.strip() else None, proc.stderr.decode())

    def hnsctl_exe(self, *args: str) -> Any:
        """hnsctl.exe (through the fake DLLs), JSON output parsed."""
        proc = self.wine(self.exe("hnsctl"), *args, "-o", "json")
        assert proc.returncode == 0, proc.stderr.decode()
        return json.loads(proc.stdout)

    def timed(self, program: str, stdin: bytes = b"", **env: str) -> float:
        start = time.perf_counter()
        proc = self.wine(program, stdin=stdin, **env)
        elapsed = time.perf_counter() - start
        assert proc.returncode == 0, proc.stderr.decode()
        return elapsed
