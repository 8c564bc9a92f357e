"""basics.safefs: admin-only folders, no-follow owner-checked files, the install ACL,
the doctor's "who else may write this", and the SDDL reading the Windows side relies on."""

from __future__ import annotations

import io
import os
import stat

import pytest

from basics import safefs
from basics import sddl as ws
from basics.takeover import refuse_home

NOBODY = 65534
root_only = pytest.mark.skipif(os.geteuid() != 0, reason="files owned by another user need root to make")


def test_secure_dir_creates_an_admin_only_folder_whatever_the_umask(tmp_path):
    old = os.umask(0)
    try:
        safefs.secure_dir(str(tmp_path / "a" / "locks"))
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "a" / "locks").stat().st_mode) == 0o755


def test_secure_dir_takes_write_access_back_from_a_folder_of_ours(tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "d").chmod(0o777)
    safefs.secure_dir(str(tmp_path / "d"))
    assert stat.S_IMODE((tmp_path / "d").stat().st_mode) == 0o755


def test_secure_dir_refuses_a_symlink(tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    with pytest.raises(safefs.UnsafePath, match="symbolic link"):
        safefs.secure_dir(str(tmp_path / "link"))


@root_only
def test_secure_dir_and_check_dir_refuse_a_folder_another_user_owns(tmp_path):
    (tmp_path / "d").mkdir()
    os.chown(tmp_path / "d", NOBODY, NOBODY)
    for fn in (safefs.secure_dir, safefs.check_dir):
        with pytest.raises(safefs.UnsafePath, match="owned by uid 65534"):
            fn(str(tmp_path / "d"))


def test_check_dir_refuses_rather_than_repairs_a_folder_others_may_write(tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "d").chmod(0o757)
    with pytest.raises(safefs.UnsafePath, match="writable by others"):
        safefs.check_dir(str(tmp_path / "d"))
    assert stat.S_IMODE((tmp_path / "d").stat().st_mode) == 0o757
    with pytest.raises(FileNotFoundError):
        safefs.check_dir(str(tmp_path / "absent"))


def test_files_are_created_owner_only_and_links_are_refused(tmp_path):
    fd = safefs.open_append(str(tmp_path / "log"))
    os.close(fd)
    assert stat.S_IMODE((tmp_path / "log").stat().st_mode) == 0o600
    (tmp_path / "target").write_text("x")
    (tmp_path / "link").symlink_to(tmp_path / "target")
    for opener in (safefs.open_append, safefs.open_lock, safefs.open_read):
        with pytest.raises(safefs.UnsafePath, match="symbolic link"):
            opener(str(tmp_path / "link"))
    os.link(tmp_path / "target", tmp_path / "hard")
    with pytest.raises(safefs.UnsafePath, match="2 hard links"):
        safefs.open_lock(str(tmp_path / "hard"))
    assert (tmp_path / "target").read_text() == "x"


def test_a_file_of_ours_readable_by_others_becomes_owner_only(tmp_path):
    (tmp_path / "lock").write_text("")
    (tmp_path / "lock").chmod(0o644)
    os.close(safefs.open_lock(str(tmp_path / "lock")))
    assert stat.S_IMODE((tmp_path / "lock").stat().st_mode) == 0o600


@root_only
def test_a_file_another_user_owns_is_refused(tmp_path):
    (tmp_path / "theirs").write_text("")
    os.chown(tmp_path / "theirs", NOBODY, NOBODY)
    with pytest.raises(safefs.UnsafePath, match="owned by uid 65534"):
        safefs.open_append(str(tmp_path / "theirs"))


@root_only
def test_claim_dir_moves_a_users_folder_aside_and_makes_a_new_one(tmp_path):
    """The install folder a user prepared is never reused: moved aside as it is (nothing in it
    chowned, opened or followed) and made anew, root's and empty, held open for what follows."""
    top = tmp_path / "opt" / "bin"
    (top / "_wincni-x").mkdir(parents=True)
    (top / "_wincni-x" / "payload").write_text("")
    (top / "link").symlink_to(tmp_path)
    for p in (tmp_path / "opt", top, top / "_wincni-x", top / "_wincni-x" / "payload"):
        p.chmod(0o777)
        os.chown(p, NOBODY, NOBODY)
    folder, done, foreign = safefs.claim_dir(str(top))
    try:
        aside = tmp_path / "opt.wincni-quarantine"
        assert [(t.path, t.why, t.aside) for t in done] == [
            (str(tmp_path / "opt"), "is owned by uid 65534, not by root or this user", str(aside))
        ]
        assert foreign == [] and folder.scan() == []
        assert (aside / "bin" / "_wincni-x" / "payload").stat().st_uid == NOBODY and (
            aside / "bin" / "link"
        ).is_symlink()
        for p in (tmp_path / "opt", top):
            st = p.lstat()
            assert st.st_uid == 0 and stat.S_ISDIR(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o755, p
        assert os.fstat(folder.fd).st_ino == top.stat().st_ino
    finally:
        folder.close()
    again, done, _ = safefs.claim_dir(str(top))
    again.close()
    assert done == []


@root_only
def test_claim_dir_closes_an_admins_folder_others_may_write_and_lists_what_in_it_is_not_an_admins(tmp_path):
    """Root's folder left open to everyone: write access taken back where it stands; what others
    put in it (their files, links, a hard-linked file) is listed, never chowned or followed."""
    top = tmp_path / "opt" / "bin"
    (top / "_wincni-x").mkdir(parents=True)
    (top / "_wincni-x" / "payload").write_text("")
    (top / "ours").write_text("")
    (top / "linked").write_text("")
    os.link(top / "linked", tmp_path / "elsewhere")
    (top / "link").symlink_to(tmp_path)
    for p in (top / "_wincni-x", top / "_wincni-x" / "payload"):
        os.chown(p, NOBODY, NOBODY)
    top.chmod(0o777)
    (top / "ours").chmod(0o666)
    folder, done, foreign = safefs.claim_dir(str(top))
    folder.close()
    assert [(t.path, t.why, t.aside) for t in done] == [(str(top), "is writable by others (mode 0777)", "")]
    assert foreign == [
        (str(top / "_wincni-x"), "owned by uid 65534"),
        (str(top / "link"), "a symbolic link"),
        (str(top / "linked"), "a file with 2 hard links"),
    ]
    assert safefs.writable_by_others(str(top)) is None
    assert (top / "_wincni-x").stat().st_uid == NOBODY and not (top / "ours").stat().st_mode & 0o022


def test_a_folder_a_user_lives_in_is_refused_not_moved(tmp_path):
    """``--cni-bin-dir`` under a home (or a folder holding homes): never taken nor moved aside."""
    here = str(tmp_path / "home")
    for homes, says in (([("alice", here)], "alice's home folder is it"), ([("bob", here + "/bob")], "lies in it")):
        with pytest.raises(safefs.UnsafePath, match=says) as caught:
            refuse_home(here, "is owned by uid 1000", homes)
        assert "choose a folder outside it" in caught.value.fix
    refuse_home(here, "is owned by uid 1000", [("carol", here + "-2"), ("root", "/")])


def test_every_folder_on_the_way_is_opened_without_following_a_link(tmp_path):
    (tmp_path / "real" / "store").mkdir(parents=True)
    (tmp_path / "link").symlink_to(tmp_path / "real")
    for fn in (safefs.secure_dir, safefs.check_dir, safefs.claim_dir, safefs.survey_dir):
        with pytest.raises(safefs.UnsafePath, match="symbolic link") as caught:
            fn(str(tmp_path / "link" / "store" / "net"))
        assert caught.value.path == str(tmp_path / "link")
        assert "name the folder it points to instead" in caught.value.fix  # an admin's /opt/cni/bin -> /usr/lib/cni
    assert sorted(os.listdir(tmp_path / "real" / "store")) == []


def test_a_held_folder_never_writes_lists_or_deletes_through_a_link(tmp_path):
    """Every step in a held folder is relative to its descriptor, a link at the name or on the way
    never followed: created new, refused, or removed itself."""
    (tmp_path / "victim").mkdir()
    (tmp_path / "victim" / "key").write_text("secret")
    (tmp_path / "held").mkdir()
    (tmp_path / "held" / "link").symlink_to(tmp_path / "victim" / "key")
    (tmp_path / "held" / "dirlink").symlink_to(tmp_path / "victim")
    folder = safefs.secure_folder(str(tmp_path / "held"))
    try:
        for name in ("link", "dirlink"):
            with pytest.raises(FileExistsError):
                folder.open_new(name)
        with pytest.raises(NotADirectoryError):
            folder.open_new("dirlink/key")
        assert folder.open_read("link") is None and folder.scan("dirlink") == []
        os.close(folder.open_new("new"))
        folder.mkdir("tree/a/b", parents=True)
        os.close(folder.open_new("tree/a/b/file"))
        (tmp_path / "held" / "tree" / "a" / "escape").symlink_to(tmp_path / "victim")
        folder.purge("tree")
        folder.purge("dirlink")
        folder.rename("new", "renamed")
        with pytest.raises(FileExistsError):
            folder.rename("renamed", "link")
    finally:
        folder.close()
    assert (tmp_path / "victim" / "key").read_text() == "secret"
    assert sorted(os.listdir(tmp_path / "held")) == ["link", "renamed"]


def test_a_held_folders_files_are_read_only_when_regular_never_waited_on_and_capped(tmp_path):
    """``read_regular``: what stands at a store file's name is judged on the descriptor opened
    without following a link or waiting: a FIFO (whose open would wait for a writer), a device
    that never ends, a folder and a link are refused, saying which; a file is read to cap + 1."""
    (tmp_path / "victim").write_bytes(b"secret")
    (tmp_path / "file").write_bytes(b"x" * 10)
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "link").symlink_to(tmp_path / "victim")
    (tmp_path / "dir").mkdir()
    os.mknod(tmp_path / "zero", 0o600 | stat.S_IFCHR, os.makedev(1, 5))
    folder = safefs.checked_folder(str(tmp_path))
    try:
        assert safefs.read_regular(folder, "file", 100) == b"x" * 10
        assert safefs.read_regular(folder, "file", 4) == b"x" * 5  # cap + 1: the caller's to refuse
        for name, problem in [
            ("fifo", "is a FIFO, not a regular file"),
            ("zero", "is a device or socket, not a regular file"),
            ("dir", "is a folder, not a regular file"),
            ("link", "is a symbolic link"),
        ]:
            with pytest.raises(safefs.UnsafePath) as caught:
                safefs.read_regular(folder, name, 100)
            assert caught.value.problem == problem and caught.value.path == str(tmp_path / name)
        with pytest.raises(FileNotFoundError):
            safefs.read_regular(folder, "absent", 100)
    finally:
        folder.close()


def test_a_file_is_replaced_by_rename_never_written_through_what_stands_at_its_names(tmp_path):
    (tmp_path / "victim").write_bytes(b"secret")
    (tmp_path / "held").mkdir()
    (tmp_path / "held" / "target").symlink_to(tmp_path / "victim")
    (tmp_path / "held" / f".other.{os.getpid()}.tmp").symlink_to(tmp_path / "victim")
    os.mkfifo(tmp_path / "held" / "fifo")
    folder = safefs.secure_folder(str(tmp_path / "held"))
    try:
        for name in ("target", "other", "fifo"):
            safefs.replace_file(folder, name, b"new " + name.encode(), durable=name == "other")
    finally:
        folder.close()
    assert (tmp_path / "victim").read_bytes() == b"secret"
    assert sorted(os.listdir(tmp_path / "held")) == ["fifo", "other", "target"]
    for name in ("target", "other", "fifo"):
        path = tmp_path / "held" / name
        assert not path.is_symlink() and path.read_bytes() == b"new " + name.encode()
        assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_a_file_rewritten_in_place_is_only_ever_a_regular_file_of_one_name(tmp_path):
    """``open_rewrite``: what stands at the name is judged on the descriptor opened without
    following a link or waiting: a link, FIFO, device or hard-linked file is refused, not
    written; a missing file is made owner-only."""
    (tmp_path / "victim").write_bytes(b"secret")
    (tmp_path / "held").mkdir()
    held = tmp_path / "held"
    (held / "link").symlink_to(tmp_path / "victim")
    os.link(tmp_path / "victim", held / "hard")
    os.mkfifo(held / "fifo")
    os.mknod(held / "zero", 0o600 | stat.S_IFCHR, os.makedev(1, 5))
    folder = safefs.secure_folder(str(held))
    try:
        for name, problem in [
            ("link", "is a symbolic link"),
            ("hard", "has 2 hard links"),
            ("fifo", "is not a regular file"),
            ("zero", "is not a regular file"),
        ]:
            with pytest.raises(safefs.UnsafePath) as caught:
                safefs.open_rewrite(folder, name)
            assert caught.value.problem.startswith(problem) and caught.value.path == str(held / name)
        fd = safefs.open_rewrite(folder, "new")
        os.write(fd, b"x")
        os.close(fd)
    finally:
        folder.close()
    assert (tmp_path / "victim").read_bytes() == b"secret"
    assert (held / "new").read_bytes() == b"x" and stat.S_IMODE((held / "new").stat().st_mode) == 0o600


@root_only
def test_a_readers_folder_is_refused_unless_admin_only_and_never_repaired(tmp_path):
    (tmp_path / "open").mkdir()
    (tmp_path / "open").chmod(0o777)
    with pytest.raises(safefs.UnsafePath, match="writable by others"):
        safefs.checked_folder(str(tmp_path / "open"))
    assert stat.S_IMODE((tmp_path / "open").stat().st_mode) == 0o777
    (tmp_path / "theirs").mkdir()
    os.chown(tmp_path / "theirs", NOBODY, NOBODY)
    with pytest.raises(safefs.UnsafePath, match="owned by uid 65534"):
        safefs.checked_folder(str(tmp_path / "theirs"))
    with pytest.raises(FileNotFoundError):
        safefs.checked_folder(str(tmp_path / "absent"))


def test_writable_by_others_names_who(tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "d").chmod(0o757)
    assert safefs.writable_by_others(str(tmp_path / "d")) == "every user"
    (tmp_path / "d").chmod(0o755)
    assert safefs.writable_by_others(str(tmp_path / "d")) is None


# ---------------------------------------------------------------- the Windows side's SDDL reading


@pytest.mark.parametrize(
    "sddl, writers",
    [
        (safefs.ADMIN_ONLY, []),
        (safefs.ADMIN_WRITE_USERS_READ, []),
        ("O:BAD:P(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)(A;OICI;0x1200a9;;;BU)", []),
        # A default C:\ child: Authenticated Users may modify, CREATOR OWNER only on children (IO).
        (
            "O:SYD:AI(A;ID;FA;;;SY)(A;ID;FA;;;BA)(A;OICIID;0x1301bf;;;AU)(A;OICIIOID;GA;;;CO)(A;ID;0x1200a9;;;BU)",
            ["AU"],
        ),
        ("O:S-1-5-21-1-2-3-1001D:P(A;;FA;;;SY)", ["S-1-5-21-1-2-3-1001"]),  # a user owns it
        ("O:SYD:(A;;FW;;;WD)", ["WD"]),
        ("O:SYD:(D;;FA;;;BU)(A;;FR;;;BU)", []),  # deny and read-only ACEs give nobody write
        ("O:SYD:(A;;CCDC;;;S-1-5-21-9)", ["S-1-5-21-9"]),  # FILE_ADD_FILE as letters
        ("O:SYD:NO_ACCESS_CONTROL", ["WD"]),  # a NULL DACL: everyone
        # A conditional allow ACE: whatever its condition, it may grant write.
        ('O:SYD:(A;;FA;;;SY)(XA;;FW;;;AU;(@User.Dept == "x"))', ["AU"]),
        ("D:(A;;FA;;;SY)(A;;FW;;;BU)", ["BU"]),  # no owner part
    ],
)
def test_sddl_writers(sddl, writers):
    assert ws.sddl_writers(sddl) == writers


def test_rights_mask_reads_hex_and_letters():
    assert ws.rights_mask("0x1301bf") == 0x1301BF
    assert ws.rights_mask("FA") == 0x1F01FF
    assert ws.rights_mask("GRGX") == 0x80000000 | 0x20000000


# ---------------------------------------------------------------- the simulator on Windows


def test_the_simulator_on_windows_needs_a_second_switch_and_then_warns_every_run(tmp_path):
    from libhns.backend import open_backend
    from libhns.errors import EnvError
    from libhns.sim import Simulator

    env = {"LIBHNS_BACKEND": "sim", "LIBHNS_SIM_DIR": str(tmp_path)}
    with pytest.raises(EnvError, match="WINCNI_ALLOW_SIMULATOR=1"):
        open_backend(env, platform="win32")
    err = io.StringIO()
    assert isinstance(open_backend({**env, "WINCNI_ALLOW_SIMULATOR": "1"}, platform="win32", stderr=err), Simulator)
    assert "simulator" in err.getvalue() and "warning" in err.getvalue()
    quiet = io.StringIO()
    assert isinstance(open_backend(env, platform="linux", stderr=quiet), Simulator) and quiet.getvalue() == ""


def test_the_doctor_fails_a_windows_node_whose_plugins_would_run_on_the_simulator(tmp_path):
    from libhns.backend import simulated_on_windows
    from tools.wincni.doctor.checks import registry as checks
    from tools.wincni.doctor.facts import NodeFacts

    simulated = simulated_on_windows({"LIBHNS_BACKEND": "sim", "WINCNI_ALLOW_SIMULATOR": "1"}, "win32")
    found = {c.id: c for c in checks.run(NodeFacts(bin_dir=str(tmp_path), simulated=simulated))}
    assert found["backend"].status == "fail" and "simulator" in found["backend"].message
    simulated = simulated_on_windows({"LIBHNS_BACKEND": "sim"}, "linux")
    found = {c.id: c for c in checks.run(NodeFacts(bin_dir=str(tmp_path), simulated=simulated))}
    assert found["backend"].status == "ok"


def test_the_doctor_warns_about_folders_others_may_write(tmp_path):
    from tools.wincni.doctor.checks import registry as checks
    from tools.wincni.doctor.facts import NodeFacts
    from tools.wincni.doctor.live import read_open_dirs

    (tmp_path / "bin").mkdir()
    (tmp_path / "bin").chmod(0o757)
    folders = {"CNI bin dir": str(tmp_path / "bin"), "CNI conf dir": str(tmp_path / "conf")}
    found = {c.id: c for c in checks.run(NodeFacts(open_dirs=read_open_dirs(folders)))}
    assert found["permissions"].status == "warn"
    assert f"CNI bin dir {tmp_path / 'bin'} is writable by every user" in found["permissions"].message
    (tmp_path / "bin").chmod(0o755)
    found = {c.id: c for c in checks.run(NodeFacts(open_dirs=read_open_dirs(folders)))}
    assert found["permissions"].status == "ok"


@root_only
def test_group_write_for_group_root_is_still_admin_only(tmp_path):
    (tmp_path / "d").mkdir()
    os.chown(tmp_path / "d", 0, 0)
    (tmp_path / "d").chmod(0o775)
    assert safefs.writable_by_others(str(tmp_path / "d")) is None
    safefs.check_dir(str(tmp_path / "d"))
    os.chown(tmp_path / "d", 0, NOBODY)
    assert safefs.writable_by_others(str(tmp_path / "d")) == "its group"
    with pytest.raises(safefs.UnsafePath, match="writable by others"):
        safefs.check_dir(str(tmp_path / "d"))


def test_the_names_winsec_held_are_found_there_and_its_win32_ones_only_on_windows() -> None:
    from basics import _winsec

    assert _winsec.sddl_writers is ws.sddl_writers and _winsec.TRUSTED_SIDS is ws.TRUSTED_SIDS
    with pytest.raises(AttributeError, match="on Windows only"):
        _winsec.open_plain  # noqa: B018 - the lookup is the test
    with pytest.raises(AttributeError, match="has no attribute"):
        _winsec.no_such_name  # noqa: B018 - as above


def test_safefs_hands_out_the_platforms_own_functions() -> None:
    """A plugin's lock calls the platform's function itself: no step through safefs between."""
    from basics import posixfolder, posixfs

    assert safefs.secure_dir is posixfs.secure_dir and safefs.open_lock is posixfs.open_lock
    assert safefs.Folder is posixfolder.PosixFolder and safefs.trusted_uid is posixfs.trusted_uid
