"""``wincni install`` racing a local user who swaps a folder for a link at the moment install touches it.

The attacker is another uid (``nobody``) in a world-writable sticky folder (``arena``, like C:\\
where any user may create folders). It makes the bin and conf dirs (or plants a folder of its own
in an administrator's folders left open to everyone), watches them with inotify and, at the first
event of the step under test (install opening, taking over, removing from, creating in or renaming
in a folder), renames the watched folder away and puts a symlink to the victim in its place. Two
busy loops load the machine, which widens the window. Whatever install answers, nothing outside
the bin and conf dirs may change: the victim (root's files, another user's key, a root-owned
subfolder) stays as it was, the attacker's own files stay theirs, and nothing of install's lands
anywhere but in its own folders.

``RACE_RUNS`` sets the runs per step: 40 (200 in all) in the suite, 200 in ``make soak``.
"""

from __future__ import annotations

import ctypes
import hashlib
import io
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from hnsnode import Node, package_folder
from test_security import NOBODY, root_only
from testdata import FIXTURES
from tools.wincni.cli.context import Context
from tools.wincni.cli.main import build_parser
from tools.wincni.install.command import run as install_run
from tools.wincni.install.options import InstallOptions

pytestmark = [root_only, pytest.mark.slow]

BUILD = "0.1.0-aaa-1"
ALICE = 1001
RUNS = int(os.environ.get("RACE_RUNS", "40"))

IN_ACCESS, IN_ATTRIB, IN_MOVED_FROM, IN_MOVED_TO = 0x1, 0x4, 0x40, 0x80
IN_OPEN, IN_CREATE, IN_DELETE, IN_MOVE_SELF = 0x20, 0x100, 0x200, 0x800

#: step -> (who made the folders: "theirs", the attacker; "open", an administrator, mode 0777,
#: the attacker planting a folder of its own in the bin dir; the folder watched; the inotify
#: events; the folder swapped for a link; where in the victim the link points)
STEPS = {
    "listing": ("open", "opt", IN_OPEN | IN_ACCESS, "opt/cni", "cni"),
    "takeover": ("theirs", "opt", IN_OPEN | IN_ATTRIB | IN_MOVE_SELF, "opt", ""),
    "removal": (
        "open",
        "opt/cni/bin/_wincni-x/sub",
        IN_OPEN | IN_DELETE | IN_ATTRIB | IN_MOVE_SELF,
        "opt/cni/bin/_wincni-x/sub",
        "sub",
    ),
    "creation": ("theirs", ".", IN_CREATE | IN_MOVED_FROM | IN_MOVED_TO, "opt", ""),
    "rename": ("theirs", "etc", IN_MOVED_FROM | IN_MOVED_TO | IN_MOVE_SELF | IN_OPEN, "etc", "cni"),
}
#: The attacker's files that must still be theirs afterwards, wherever they are: in an open bin dir
#: install removes what they planted unless they moved it away themselves.
LEFT = {"theirs": {"05-evil.conflist", "planted"}, "open": {"05-evil.conflist"}}


@pytest.fixture(scope="module")
def busy():
    """Two busy loops for the whole module: a loaded node widens every window."""
    loops = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    yield
    for p in loops:
        p.kill()
        p.wait()


def _victim(root: Path) -> Path:
    """Root's folder with another user's key, a root file and a root-owned subfolder, laid out so
    that every path install walks (``cni/bin``, ``cni/net.d``) resolves inside it."""
    v = root / "victim"
    for sub in ("cni/bin", "cni/net.d", "bin/keep", "home-alice/.ssh", "sub/_wincni-x"):
        (v / sub).mkdir(parents=True, exist_ok=True)
    for rel in ("home-alice/.ssh/id_ed25519", "cni/bin/alice.key", "cni/net.d/alice.conf", "bin/alice.key"):
        (v / rel).write_text("alice's\n")
        os.chown(v / rel, ALICE, ALICE)
    for rel in ("root.txt", "bin/keep/root.txt", "cni/bin/root.exe", "sub/_wincni-x/root.txt"):
        (v / rel).write_text("root's\n")
    os.chown(v / "home-alice", ALICE, ALICE)
    return v


def snapshot(top: Path) -> dict[str, tuple]:
    """Every path below ``top``: kind, owner, mode, content or link target."""
    out = {}
    for folder, dirs, files in os.walk(top):
        for name in dirs + files:
            p = os.path.join(folder, name)
            st = os.lstat(p)
            what = (
                os.readlink(p)
                if stat.S_ISLNK(st.st_mode)
                else hashlib.sha256(Path(p).read_bytes()).hexdigest()
                if stat.S_ISREG(st.st_mode)
                else ""
            )
            out[os.path.relpath(p, top)] = (stat.S_IFMT(st.st_mode), st.st_uid, stat.S_IMODE(st.st_mode), what)
    return out


def _attacker(arena: Path, owner: str, watched: str, events: int, swapped: str, link: Path, ready: int) -> None:
    """As nobody: make the folders (``theirs``) or plant a folder in the admin's open ones, watch
    ``watched``, and at the first event swap ``swapped`` for a link to ``link``; then exit."""
    os.setgroups([])
    os.setgid(NOBODY)
    os.setuid(NOBODY)
    os.umask(0)
    made = ["opt/cni/bin", "etc/cni/net.d"] if owner == "theirs" else ["opt/cni/bin/_wincni-x/sub"]
    for rel in made:
        os.makedirs(arena / rel, 0o777, exist_ok=True)
    for rel in ("opt/cni/bin/planted", "etc/cni/net.d/05-evil.conflist", "opt/cni/bin/_wincni-x/sub/payload"):
        if (arena / rel).parent.exists():
            (arena / rel).write_text("the attacker's\n")
    libc = ctypes.CDLL(None, use_errno=True)
    fd = libc.inotify_init1(os.O_CLOEXEC)
    assert fd >= 0 and libc.inotify_add_watch(fd, str(arena / watched).encode(), events) >= 0
    os.write(ready, b"x")
    os.read(fd, 4096)  # the first event of the step
    target = arena / swapped
    try:
        os.rename(target, f"{target}.gone")
    except OSError:
        pass  # install moved it first: put the link where it was all the same
    try:
        os.symlink(link, target)
    except OSError:
        pass


def _race(arena: Path, step: tuple, link: Path, node: Node) -> tuple[int, dict]:
    """One install against one attacker (``STEPS``); (install's exit status, its JSON)."""
    owner, watched, events, swapped, _ = step
    ready_r, ready_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 1
        try:
            _attacker(arena, owner, watched, events, swapped, link, ready_w)
            code = 0
        finally:
            os._exit(code)
    os.close(ready_w)
    try:
        assert os.read(ready_r, 1) == b"x", "the attacker never got ready"
        out = io.StringIO()
        argv = node.install_argv("--from", str(package_folder(node.root, BUILD)))
        options = InstallOptions.of(build_parser("linux").parse_args(argv))
        rc = install_run(options, Context(out, io.StringIO(), {}, "linux", str(node.root)))
    finally:
        os.close(ready_r)
        os.kill(pid, 9)
        os.waitpid(pid, 0)
    return rc, json.loads(out.getvalue())


def _open_folders(room: Path) -> None:
    """The bin and conf dirs as an administrator made them, open to everyone (mode 0777)."""
    for rel in ("opt/cni/bin", "etc/cni/net.d"):
        for p in reversed([room / rel, *(room / rel).parents]):
            if p.is_relative_to(room) and p != room and not p.exists():
                p.mkdir()
                p.chmod(0o777)


def _roots(room: Path) -> dict[tuple[int, int], Path]:
    """Root's files and folders in the room (not links), by identity: what install may have made."""
    out = {}
    for folder, dirs, files in os.walk(room):
        for name in dirs + files:
            st = os.lstat(os.path.join(folder, name))
            if st.st_uid == 0 and not stat.S_ISLNK(st.st_mode):
                out[(st.st_dev, st.st_ino)] = Path(folder) / name
    return out


def _theirs(arena: Path) -> dict[str, set[int]]:
    """The attacker's files anywhere in the arena (wherever install or they moved their folders):
    name -> the owners found."""
    found: dict[str, set[int]] = {}
    for folder, _, files in os.walk(arena):
        for name in files:
            if name in ("planted", "05-evil.conflist", "payload"):
                found.setdefault(name, set()).add(os.lstat(os.path.join(folder, name)).st_uid)
    return found


@pytest.mark.parametrize("step", STEPS)
def test_a_folder_swapped_for_a_link_mid_install_changes_nothing_outside(step, tmp_path, arena, busy) -> None:
    owner, inside = STEPS[step][0], STEPS[step][-1]
    victim = _victim(tmp_path)
    before = snapshot(victim)
    outcomes: dict[str, int] = {}
    for n in range(RUNS):
        room = arena / f"run{n}"  # the attacker's C:\\ for this run (the pytest tmp_path is root-only)
        room.mkdir()
        room.chmod(0o1777)
        node = Node(tmp_path / f"node{n}").write_net_conf(json.loads((FIXTURES / "net-conf.vxlan.json").read_text()))
        node.cni_bin, node.conf_dir = room / "opt" / "cni" / "bin", room / "etc" / "cni" / "net.d"
        if owner == "open":
            _open_folders(room)
        admins = _roots(room)
        rc, done = _race(room, STEPS[step], victim / inside, node)
        assert rc in (0, 1), done
        swapped = any(p.is_symlink() for p in room.rglob("*")) or any(room.rglob("*.gone"))
        key = ("swapped, " if swapped else "not swapped, ") + ("exit 0" if rc == 0 else "refused")
        outcomes[key] = outcomes.get(key, 0) + 1
        assert snapshot(victim) == before, (step, n, done)
        theirs = _theirs(room)
        assert LEFT[owner] <= set(theirs) and set().union(*theirs.values()) == {NOBODY}, (step, n, theirs, done)
        for key, p in _roots(room).items():  # nothing install made lies outside its own two folders
            if key not in admins:
                assert any(p == d or d in p.parents or p in d.parents for d in (node.cni_bin, node.conf_dir)), p
        if rc == 0:
            assert json.loads((node.cni_bin / ".wincni-install.json").read_text())["build"] == BUILD
            assert not (node.cni_bin.is_symlink() or node.conf_dir.is_symlink())
    print(f"{step}: {RUNS} runs, {outcomes}")
