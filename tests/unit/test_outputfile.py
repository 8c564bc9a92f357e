"""``basics.outputfile``: a file of ours written into a folder as it is. A shared folder keeps its
mode, owner and group; the file is admin-only; nothing is ever written through a link a user put
at the name or swapped for our temp file, tried by a real attacker (a child that became
``nobody``) racing the writes."""

from __future__ import annotations

import os
import shutil
import signal
import stat
import tempfile
import time
from pathlib import Path

import pytest

from basics import outputfile
from basics.errors import UnsafePath

NOBODY = 65534
root_only = pytest.mark.skipif(os.geteuid() != 0, reason="the attacker drops from root to nobody: needs root")
#: (mode, group) of the folders written into: /tmp's, a group's setgid folder, one anyone may write.
SHARED = [(0o1777, 0), (0o2775, 100), (0o777, 0)]


@pytest.fixture
def arena() -> Path:
    """A folder nobody can reach (pytest's own tmp_path is root's 0700)."""
    path = Path(tempfile.mkdtemp(prefix="wincni-outputfile-", dir="/tmp"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path)


def shared(arena: Path, mode: int, group: int) -> Path:
    folder = arena / f"shared-{mode:o}"
    folder.mkdir()
    os.chown(folder, 0, group)
    folder.chmod(mode)
    return folder


def look(path: Path) -> tuple[int, int, int]:
    st = os.lstat(path)
    return st.st_mode, st.st_uid, st.st_gid


@pytest.mark.parametrize("mode, group", SHARED, ids=lambda v: f"{v:o}")
def test_a_shared_folder_is_left_as_it_is_and_the_file_is_ours_alone(arena: Path, mode: int, group: int) -> None:
    folder = shared(arena, mode, group)
    before = look(folder)
    outputfile.write(str(folder / "out.prom"), b"data")
    outputfile.write(str(folder / "out.prom"), b"again")  # over our own file too
    assert look(folder) == before
    assert (folder / "out.prom").read_bytes() == b"again"
    assert stat.S_IMODE(look(folder / "out.prom")[0]) == 0o600 and look(folder / "out.prom")[1] == os.geteuid()
    assert os.listdir(folder) == ["out.prom"]  # no temp left


@root_only
def test_a_users_link_at_the_name_is_replaced_never_written_through(arena: Path) -> None:
    folder, victim = shared(arena, 0o1777, 0), arena / "victim"
    victim.write_bytes(b"keep me")
    (folder / "out.prom").symlink_to(victim)
    os.lchown(folder / "out.prom", NOBODY, NOBODY)
    outputfile.write(str(folder / "out.prom"), b"data")
    assert victim.read_bytes() == b"keep me"
    assert not (folder / "out.prom").is_symlink() and (folder / "out.prom").read_bytes() == b"data"


@root_only
def test_a_folder_reached_through_a_users_link_is_refused(arena: Path) -> None:
    target = arena / "target"
    target.mkdir()
    (arena / "via").symlink_to(target)
    os.lchown(arena / "via", NOBODY, NOBODY)
    with pytest.raises(UnsafePath, match="is a link owned by uid 65534"):
        outputfile.write(str(arena / "via" / "out.prom"), b"data")
    assert os.listdir(target) == []


def test_a_missing_folder_is_made_admin_only(arena: Path) -> None:
    outputfile.write(str(arena / "new" / "out.prom"), b"data")
    assert stat.S_IMODE(look(arena / "new")[0]) == 0o755 and (arena / "new" / "out.prom").read_bytes() == b"data"


def test_a_name_that_is_no_file_or_in_no_folder_is_refused(arena: Path) -> None:
    (arena / "d").mkdir()
    (arena / "f").write_bytes(b"")
    with pytest.raises(IsADirectoryError):
        outputfile.write(str(arena / "d"), b"data")
    with pytest.raises(UnsafePath, match="is not a folder"):
        outputfile.write(str(arena / "f" / "x"), b"data")
    assert sorted(os.listdir(arena / "d") + os.listdir(arena)) == ["d", "f"]  # no temp left


def _race(folder: Path, victim: Path, stop: float) -> None:  # pragma: no cover - the attacker's child
    """As nobody until ``stop``: the output's name, and every temp file seen beside it, swapped for
    a link to ``victim`` (the folder lets anyone remove anyone's entries)."""
    os.setgroups([])
    os.setgid(NOBODY)
    os.setuid(NOBODY)
    while time.monotonic() < stop:
        for name in os.listdir(folder):
            tmp = folder / ".swap"
            try:
                os.symlink(victim, tmp)
                os.rename(tmp, folder / name)
            except OSError:
                pass
        try:
            os.symlink(victim, folder / "out.prom")
        except OSError:
            pass


@root_only
def test_an_attacker_swapping_names_for_links_never_gets_a_write_through_them(arena: Path) -> None:
    folder, victim = shared(arena, 0o777, 0), arena / "victim"
    victim.write_bytes(b"keep me")
    stop = time.monotonic() + 3
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            _race(folder, victim, stop)
        finally:
            os._exit(0)
    wrote = refused = 0
    try:
        while time.monotonic() < stop:
            try:
                outputfile.write(str(folder / "out.prom"), b"x" * 4096)
                wrote += 1
            except OSError:  # our temp file swapped before the rename: refused, nothing written through it
                refused += 1
    finally:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    assert victim.read_bytes() == b"keep me" and stat.S_IMODE(victim.stat().st_mode) == 0o644
    assert look(folder)[0] & 0o7777 == 0o777
    assert wrote + refused > 20, (wrote, refused)
