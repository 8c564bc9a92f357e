"""``wincni install`` in folders a local user prepared, tried as that user would.

The attacker is real (``test_security.as_nobody``: a child dropped to uid 65534): it creates the
bin and conf dirs in a world-writable sticky folder (``arena``, like C:\\ on Windows where every
user may create folders) and plants links, folders and files in them; then root runs install.
Each test checks the victim (root-only files and folders) is untouched, that no installed path is
a link or another user's, and what install printed.
"""

from __future__ import annotations

import hashlib
import json
import os
import pwd
import shutil
import stat
from pathlib import Path

import pytest

from hnsnode import SUBNET, Node, package_folder
from test_security import NOBODY, _flannel_conf, _mkdir, _symlink, _write, as_nobody, flannel_node, root_only
from testdata import FIXTURES

BUILD = "0.1.0-aaa-1"
pytestmark = root_only


def _makedirs(*paths: Path) -> None:
    for path in paths:
        for p in reversed([path, *path.parents]):
            if not p.exists():
                _mkdir(p)


def _made(theirs: bool, tmp_path: Path, arena: Path) -> Node:
    node = Node(tmp_path / "node").write_net_conf(json.loads((FIXTURES / "net-conf.vxlan.json").read_text()))
    node.cni_bin, node.conf_dir = arena / "opt" / "cni" / "bin", arena / "etc" / "cni" / "net.d"
    if theirs:
        as_nobody(_makedirs, node.cni_bin, node.conf_dir)
    else:
        _makedirs(node.cni_bin, node.conf_dir)
    return node


@pytest.fixture
def prepared(tmp_path: Path, arena: Path) -> Node:
    """A node whose bin and conf dirs an administrator made open to every user (root's, mode
    0777: what C:\\ hands down on Windows), so the attacker can plant entries in them."""
    return _made(False, tmp_path, arena)


@pytest.fixture
def theirs(tmp_path: Path, arena: Path) -> Node:
    """A node whose bin and conf dirs the attacker created first, in the arena, as theirs."""
    return _made(True, tmp_path, arena)


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    """A root-only folder with files: where the attacker would like root to delete or write."""
    path = tmp_path / "vault"
    (path / "keys").mkdir(parents=True)
    (path / "keys" / "id").write_text("key\n")
    path.chmod(0o700)
    return path


def assert_admins_only(*tops: Path) -> None:
    """Every path under ``tops`` (and every folder on the way up to the arena) is root's, not a link."""
    for top in tops:
        for p in [top, *top.parents[:2]]:
            st = p.lstat()
            assert not stat.S_ISLNK(st.st_mode) and st.st_uid == 0 and not st.st_mode & 0o022, p
        for folder, dirs, files in os.walk(top):
            for name in dirs + files:
                st = os.lstat(os.path.join(folder, name))
                assert not stat.S_ISLNK(st.st_mode) and st.st_uid == 0, os.path.join(folder, name)


def steps(done: dict) -> set[tuple[str, str]]:
    return {(s["action"], s["path"]) for s in done["steps"]}


def test_links_planted_under_installs_temporary_names_are_removed_never_followed(
    prepared, tmp_path, arena, victim, vault
) -> None:
    """``.flannel.wincni-new`` -> the attacker's program, ``.wincni-old`` -> a root-only
    folder, the config's temporary name -> a root-only file."""
    node = prepared
    program = arena / "evil"
    as_nobody(_write, program, "#!/bin/sh\necho attacker\n")
    as_nobody(_symlink, program, node.cni_bin / ".flannel.wincni-new")
    as_nobody(_symlink, vault, node.cni_bin / ".wincni-old")
    as_nobody(_symlink, victim, node.conf_dir / ".10-flannel.conflist.wincni-tmp")
    done = node.install("--from", str(package_folder(tmp_path, BUILD)))
    assert {
        ("takeover", str(node.cni_bin)),
        ("takeover", str(node.conf_dir)),
        ("remove", str(node.cni_bin / ".flannel.wincni-new")),
        ("remove", str(node.cni_bin / ".wincni-old")),
        ("quarantine", str(node.conf_dir / ".10-flannel.conflist.wincni-tmp")),
    } <= steps(done), done["steps"]
    assert program.read_text() == "#!/bin/sh\necho attacker\n" and victim.read_text() == "secret\n"
    assert (vault / "keys" / "id").read_text() == "key\n"
    assert (node.cni_bin / "flannel").read_bytes().startswith(f"flannel {BUILD}".encode())
    assert node.read_cni_conf()["name"] == "vxlan0"
    [quarantine] = node.conf_dir.glob(".wincni-quarantine*")
    assert os.path.islink(quarantine / ".10-flannel.conflist.wincni-tmp")
    assert stat.S_IMODE(quarantine.lstat().st_mode) == 0o700
    (quarantine / ".10-flannel.conflist.wincni-tmp").unlink()  # the one link left, where nobody can reach it
    assert_admins_only(node.cni_bin, node.conf_dir)


def test_a_planted_contents_folder_is_replaced_not_kept(prepared, tmp_path) -> None:
    """``_wincni-<build>`` with the attacker's payload was reported KEEP and ran as root."""
    node = prepared
    planted = node.cni_bin / f"_wincni-{BUILD}"
    as_nobody(_mkdir, planted)
    as_nobody(_write, planted / "python313.dll", "payload")
    table = node.install("--from", str(package_folder(tmp_path, BUILD)), output="table")
    assert f"REMOVE   {planted}  (owned by uid {NOBODY}: not laid by an administrator)" in table
    assert f"COPY     {planted}" in table and f"KEEP     {planted}" not in table
    assert (planted / "python313.dll").read_text() == f"python of {BUILD}"
    assert_admins_only(node.cni_bin, node.conf_dir)


def _grant_self_by_default_acl(folder: Path) -> None:
    """As the folder's owner: a default POSIX ACL giving the attacker rwx on whatever is made in it
    (the one thing chown and chmod leave; Windows' counterpart, inheritable ACEs, a protected DACL drops)."""
    import struct

    undefined = 0xFFFFFFFF
    entries = [
        (0x01, 7, undefined),
        (0x02, 7, NOBODY),
        (0x04, 5, undefined),
        (0x10, 7, undefined),
        (0x20, 5, undefined),
    ]
    os.setxattr(
        folder, "system.posix_acl_default", struct.pack("<I", 2) + b"".join(struct.pack("<HHI", *e) for e in entries)
    )


def _change(paths: list[Path]) -> None:
    """As the attacker: fail (exit 1) if any of ``paths`` can be written (a folder: added to)."""
    for path in paths:
        try:
            if path.is_dir():
                (path / "planted").write_text("x")
            else:
                with open(path, "a") as f:
                    f.write("payload")
        except OSError:
            continue
        raise AssertionError(f"wrote {path}")


@pytest.mark.parametrize("remade", [False, True], ids=["bin-dir-kept", "bin-dir-made-in-the-users-folder"])
def test_a_default_acl_the_user_set_grants_nothing_in_what_install_lays(theirs, tmp_path, remade) -> None:
    """The takeover chowned and chmodded the folders but left their default ACLs: the contents
    folder install then copied in (files 0666, folders 0777 before the mask) was the attacker's to
    change, and so was a bin dir install made inside the user's folder (it inherits the ACL)."""
    node = theirs
    try:
        as_nobody(_grant_self_by_default_acl, node.cni_bin.parent)
        as_nobody(_grant_self_by_default_acl, node.cni_bin)
    except AssertionError:
        pytest.skip("this file system keeps no POSIX ACLs")
    if remade:
        node.cni_bin.rmdir()
    node.install("--from", str(package_folder(tmp_path, BUILD)))
    laid = [node.cni_bin, *node.cni_bin.rglob("*")]
    assert len(laid) > 8
    try:
        as_nobody(_change, laid)
    except AssertionError:
        pytest.fail("the user could write in (or add to) what install laid")
    assert_admins_only(node.cni_bin, node.conf_dir)


def test_folders_a_user_made_are_moved_aside_whole_and_made_anew(theirs, tmp_path, arena, victim, vault) -> None:
    """The attacker's bin and conf dirs (their ``opt`` and ``etc``) are never reused: each is moved
    aside as it stands, nothing in it opened, chowned, deleted or followed, and install lays into
    new admin-only folders. What they planted stays theirs, where they left it."""
    node = theirs
    as_nobody(_symlink, vault, node.cni_bin / ".wincni-old")
    as_nobody(_write, node.cni_bin / ".wincni-install.json", json.dumps({"build": BUILD, "conf": str(victim)}))
    as_nobody(_write, node.conf_dir / "05-evil.conflist", '{"name": "evil"}')
    table = node.install("--from", str(package_folder(tmp_path, BUILD)), output="table")
    for top in ("opt", "etc"):
        line = f"QUARANTINE {arena / top}  (is owned by uid {NOBODY}, not by root or this user: moved to"
        assert f"{line} {arena / top}.wincni-quarantine, a new admin-only one made)" in table, table
        aside = arena / f"{top}.wincni-quarantine"
        assert aside.lstat().st_uid == NOBODY and stat.S_IMODE(aside.lstat().st_mode) == 0o777
    assert os.readlink(arena / "opt.wincni-quarantine" / "cni" / "bin" / ".wincni-old") == str(vault)
    assert (arena / "etc.wincni-quarantine" / "cni" / "net.d" / "05-evil.conflist").read_text() == '{"name": "evil"}'
    assert victim.read_text() == "secret\n" and (vault / "keys" / "id").read_text() == "key\n"
    assert sorted(p.name for p in node.conf_dir.iterdir()) == ["10-flannel.conflist"]
    assert json.loads((node.cni_bin / ".wincni-install.json").read_text())["build"] == BUILD
    assert_admins_only(node.cni_bin, node.conf_dir)


def test_a_dry_run_says_a_users_folders_would_be_moved_aside_and_reads_nothing_in_them(theirs, tmp_path, arena) -> None:
    """The plan for the attacker's folders: each would be moved aside whole, the config diffed
    against nothing (the real run lays into new, empty folders), nothing of theirs read or changed."""
    node = theirs
    as_nobody(_write, node.conf_dir / "10-flannel.conflist", '{"name": "SECRET"}')
    before = sorted(str(p) for p in arena.rglob("*"))
    table = node.install("--dry-run", "--from", str(package_folder(tmp_path, BUILD)), output="table")
    for top in ("opt", "etc"):
        assert (
            f"QUARANTINE {arena / top}  (is owned by uid {NOBODY}, not by root or this user: would be moved to" in table
        )
    assert "SECRET" not in table and "--- /dev/null" in table
    assert sorted(str(p) for p in arena.rglob("*")) == before


def test_a_home_folder_on_the_way_is_refused_and_nothing_is_laid(tmp_path, arena) -> None:
    """``--cni-bin-dir`` under another user's home: the home is neither taken nor moved aside."""
    home = Path(pwd.getpwuid(NOBODY).pw_dir)
    if home == Path("/") or not home.is_absolute():
        pytest.skip(f"uid {NOBODY} has no home folder of its own")
    node = Node(tmp_path / "node").write_net_conf(json.loads((FIXTURES / "net-conf.vxlan.json").read_text()))
    made = not home.exists()
    try:
        if made:
            home.mkdir()
            os.chown(home, NOBODY, NOBODY)
        if home.lstat().st_uid != NOBODY:
            pytest.skip(f"{home} is not uid {NOBODY}'s")
        node.cni_bin, node.conf_dir = home / "cni" / "bin", tmp_path / "net.d"
        before = sorted(os.listdir(home))
        done = node.install("--from", str(package_folder(tmp_path, BUILD)), expect=1)
        assert f"{home} is owned by uid {NOBODY}" in done["error"] and "home folder is it" in done["error"], done
        assert sorted(os.listdir(home)) == before and home.lstat().st_uid == NOBODY
    finally:
        if made:
            shutil.rmtree(home)


def test_a_config_a_user_planted_in_the_conf_dir_is_quarantined(prepared, tmp_path) -> None:
    node = prepared
    as_nobody(_write, node.conf_dir / "05-evil.conflist", '{"name": "evil"}')
    done = node.install("--from", str(package_folder(tmp_path, BUILD)))
    assert ("quarantine", str(node.conf_dir / "05-evil.conflist")) in steps(done)
    assert sorted(p.name for p in node.conf_dir.iterdir() if not p.name.startswith(".wincni-quarantine")) == [
        "10-flannel.conflist"
    ]
    assert_admins_only(node.cni_bin)


def test_a_planted_manifest_restores_and_deletes_nothing(prepared, tmp_path, arena, victim, vault) -> None:
    """``moved`` made uninstall "restore" the attacker's file into a root-only folder, and
    ``conf`` + ``confDigest`` made it delete any file whose digest the attacker could compute."""
    node = prepared
    as_nobody(_write, arena / "keys", "ssh-ed25519 attacker\n")
    manifest = {
        "build": BUILD,
        "launchers": [],
        "conf": str(victim),
        "confDigest": hashlib.sha256(victim.read_bytes()).hexdigest(),
        "moved": [[str(vault / "authorized_keys"), str(arena / "keys")]],
    }
    as_nobody(_write, node.cni_bin / ".wincni-install.json", json.dumps(manifest))
    done = node.install("--uninstall", "--from", str(package_folder(tmp_path, BUILD)))
    assert ("remove", str(node.cni_bin / ".wincni-install.json")) in steps(done)
    assert not {a for a, _ in steps(done)} & {"restore"} and not (vault / "authorized_keys").exists()
    assert victim.read_text() == "secret\n" and (arena / "keys").read_text() == "ssh-ed25519 attacker\n"
    assert_admins_only(node.cni_bin)


def test_a_planted_manifest_is_not_carried_into_the_new_one(prepared, tmp_path, arena, vault) -> None:
    node = prepared
    manifest = {"build": "0.0.1-old-1", "moved": [[str(vault / "authorized_keys"), str(arena / "keys")]]}
    as_nobody(_write, node.cni_bin / ".wincni-install.json", json.dumps(manifest))
    node.install("--from", str(package_folder(tmp_path, BUILD)))
    written = json.loads((node.cni_bin / ".wincni-install.json").read_text())
    assert written["moved"] == [] and written["build"] == BUILD


def test_a_link_higher_up_the_bin_dir_is_refused_and_nothing_is_laid(tmp_path, arena, vault) -> None:
    node = Node(tmp_path / "node").write_net_conf(json.loads((FIXTURES / "net-conf.vxlan.json").read_text()))
    as_nobody(_symlink, vault, arena / "opt")
    node.cni_bin, node.conf_dir = arena / "opt" / "bin", tmp_path / "net.d"
    done = node.install("--from", str(package_folder(tmp_path, BUILD)), expect=1)
    assert f"{arena / 'opt'} is a symbolic link" in done["error"]
    assert sorted(p.name for p in vault.iterdir()) == ["keys"] and not node.conf_dir.exists()
    for args, folder in ((["--dry-run"], "bin"), (["--dry-run", "--uninstall"], "keys")):  # as the real run:
        node.cni_bin = arena / "opt" / folder  # no plan made through the link (of what lies behind it)
        done = node.install(*args, "--from", str(package_folder(tmp_path, BUILD)), expect=1)
        assert f"{arena / 'opt'} is a symbolic link" in done["error"] and not done["steps"], done


def test_a_dry_run_reads_nothing_through_what_a_user_planted(prepared, tmp_path, arena, victim) -> None:
    """A dry run takes nothing over, so the config's name may still be the user's link (to a
    root-only file, whose lines the diff printed) or FIFO (install hung in open()): neither is
    read; the plan says it would be quarantined and the diff is against nothing."""
    node = prepared
    as_nobody(_symlink, victim, node.conf_dir / "10-flannel.conflist")
    table = node.install("--dry-run", "--from", str(package_folder(tmp_path, BUILD)), output="table")
    assert "secret" not in table and f"QUARANTINE {node.conf_dir / '10-flannel.conflist'}" in table
    assert "--- /dev/null" in table
    os.unlink(node.conf_dir / "10-flannel.conflist")
    as_nobody(os.mkfifo, node.conf_dir / "10-flannel.conflist")
    done = node.install("--dry-run", "--from", str(package_folder(tmp_path, BUILD)))
    assert done["diff"].startswith("--- /dev/null") and victim.read_text() == "secret\n"


# ---------------------------------------------------------------- stores


def test_host_local_never_follows_a_link_a_user_planted_above_its_store(tmp_path, arena, vault) -> None:
    as_nobody(_symlink, vault, arena / "cni")
    node = Node(tmp_path / "node", "host-local")
    conf = {
        "cniVersion": "1.0.0",
        "name": "cbr0",
        "type": "host-local",
        "ipam": {"type": "host-local", "subnet": SUBNET, "dataDir": str(arena / "cni" / "networks")},
    }
    run = node.run("ADD", conf, "pod1", "/x")
    run.failed(5, str(arena / "cni"), "symbolic link")
    assert sorted(p.name for p in vault.iterdir()) == ["keys"]


@pytest.mark.node(build=flannel_node)
def test_flannel_never_follows_a_link_a_user_planted_above_its_data_dir(tmp_path, node, arena, vault) -> None:
    as_nobody(_symlink, vault, arena / "var")
    rc, err = node.flannel("ADD", _flannel_conf(node, arena / "var" / "flannel"))
    assert (rc, err["code"]) == (1, 5), err
    assert str(arena / "var") in err["msg"] and "symbolic link" in err["msg"]
    assert sorted(p.name for p in vault.iterdir()) == ["keys"]


def test_host_local_status_reads_no_store_a_user_could_have_filled(tmp_path, arena) -> None:
    """STATUS reads the store without its lock, so it judges the folder first: another user's is
    code 50 naming it, and one left open to everyone is not read (a FIFO planted as its index
    would hang the runtime's readiness probe); both answer at once."""
    node = Node(tmp_path / "node", "host-local")

    def conf(directory: Path) -> dict:
        ipam = {"type": "host-local", "subnet": SUBNET, "dataDir": str(directory)}
        return {"cniVersion": "1.1.0", "name": "cbr0", "type": "host-local", "ipam": ipam}

    as_nobody(_mkdir, arena / "theirs")
    as_nobody(_mkdir, arena / "theirs" / "cbr0")
    as_nobody(os.mkfifo, arena / "theirs" / "cbr0" / "index")
    node.run("STATUS", conf(arena / "theirs"), "", "").failed(50, str(arena / "theirs"), "owned by uid 65534")
    (arena / "open" / "cbr0").mkdir(parents=True)
    (arena / "open" / "cbr0").chmod(0o777)
    as_nobody(os.mkfifo, arena / "open" / "cbr0" / "index")
    assert node.run("STATUS", conf(arena / "open"), "", "").ok
