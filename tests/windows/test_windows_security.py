"""On Windows: ``basics.safefs`` through the real Win32 security API, and the package's
executables refusing the simulator and device names.

The safefs cases run our source under the lane's Windows CPython (the embeddable one the package
is built with) in the node's Wine prefix: CreateDirectoryW / CreateFileW with a security
descriptor made from SDDL, FILE_FLAG_OPEN_REPARSE_POINT, GetFileInformationByHandle,
GetSecurityInfo / SetSecurityInfo, ConvertSecurityDescriptorToStringSecurityDescriptorW,
OpenProcessToken, LockFileEx with LOCKFILE_FAIL_IMMEDIATELY.

``wincni install``'s side: ``claim_dir`` (owner Administrators and the protected install DACL
on a folder others may write, what in it no administrator laid listed), ``open_new``
(CREATE_NEW with FILE_FLAG_OPEN_REPARSE_POINT refusing a name that exists, a link included) and
``purge`` (a tree others may write taken over folder by folder, then deleted).

What Wine 8 does not honour, so these cases cannot show it: it keeps no real DACLs (a descriptor
given at creation, or set later, is reduced to the Unix mode bits: Administrators reads back as the
prefix's user, a ``P`` protection flag is not kept, and "other" write bits read back as an
Everyone ACE), every file is owned by the prefix's user, and it has no reparse points
(CreateSymbolicLinkW makes a plain file; a Unix symlink is followed without being reported). So
the owner refusal is shown by no longer trusting the process's own SID, the "writable by others"
detection and repair by Unix mode bits, and the reparse-point refusal is left to Windows itself.
"""

from __future__ import annotations

import json
import os

from winenode import ROOT, WineNode, toolchain

PROBE = r"""
import json, os, sys
sys.path.insert(0, sys.argv[1])
from basics import safefs, win32sec as w32, winfolder, winfs, winhandle as wh, winwalk
from basics.sddl import TRUSTED_SIDS
from plugins.cni.errors import CniError
from plugins.cni.lock import FileLock
out = {}
base = sys.argv[2]

def refusal(fn, *args):
    try:
        fn(*args)
    except safefs.UnsafePath as exc:
        return exc.problem
    return None

def sddl(path, folder):
    h = wh.open_handle(path, w32.READ_CONTROL, w32.OPEN_EXISTING, w32.FLAG_BACKUP_SEMANTICS if folder else 0, None)
    try:
        return wh.handle_sddl(h)
    finally:
        w32.CloseHandle(h)

step = sys.argv[3]
if step == "create":
    safefs.secure_dir(base + "\\locks")  # CreateDirectoryW with the protected DACL
    os.close(safefs.open_lock(base + "\\locks\\network-x.lock"))
    fd = safefs.open_append(base + "\\wincni.log")
    os.write(fd, b"line\n")
    os.close(fd)
    out["own_sid"] = wh.own_sid()
    from basics import _winsec  # the names it held, found where they were

    out["kept"] = [_winsec.open_plain is wh.open_plain, _winsec.seize_tree is winfolder.seize_tree, _winsec.walk is winwalk.walk]
    out["folder"] = sddl(base + "\\locks", True)
    out["lock"] = sddl(base + "\\locks\\network-x.lock", False)
    out["log"] = sddl(base + "\\wincni.log", False)
    out["folder_writers"] = safefs.writable_by_others(base + "\\locks")
    os.link(base + "\\wincni.log", base + "\\hard.log")
    out["hard_link"] = refusal(safefs.open_append, base + "\\hard.log")
    with FileLock(base + "\\locks\\network-x.lock"):
        try:
            FileLock(base + "\\locks\\network-x.lock", timeout=0.3).lock()
            out["deadline"] = None
        except CniError as err:
            out["deadline"] = [err.code, err.msg, err.details]
elif step == "opened-up":  # the test gave "other" write access from the Linux side
    out["writers"] = safefs.writable_by_others(base + "\\locks")
    out["check_dir"] = refusal(safefs.check_dir, base + "\\locks")
    safefs.secure_dir(base + "\\locks")  # ours: SetSecurityInfo takes it back
    out["writers_after"] = safefs.writable_by_others(base + "\\locks")
    wh.TRUSTED[:] = [TRUSTED_SIDS]  # as if the prefix's user were another user
    out["foreign_folder"] = refusal(safefs.secure_dir, base + "\\locks")
    out["foreign_file"] = refusal(safefs.open_lock, base + "\\locks\\network-x.lock")
    wh.TRUSTED[:] = []
elif step == "claim":  # the test gave the folder itself "other" write access and planted a link in it
    folder, done, foreign = safefs.claim_dir(base)  # the install ACL: owner Administrators, protected DACL
    out["claimed"] = [[(t.why, t.aside) for t in done], foreign]
    out["protected"] = sddl(base, True)
    for name in ("wincni.log", "planted.lnk"):  # CREATE_NEW + the reparse-point flag: never through what is there
        try:
            os.close(folder.open_new(name))
            out["new_" + name] = "created"
        except FileExistsError:
            out["new_" + name] = "exists"
    os.close(folder.open_new("fresh.tmp"))
    out["fresh"] = sddl(base + "\\fresh.tmp", False)
    folder.close()
    out["pinned"] = refusal(wh.pin, base, (0, 0, 0))  # a pin proves the folder is the one judged
elif step == "purge":  # a user's tree (others may write every folder of it) deleted as a discarded entry is
    tree = base + "\\tree"
    winfolder.seize_tree(tree, safefs.ADMIN_ONLY)  # each folder taken over before it is listed
    out["writers"] = [safefs.writable_by_others(p) for p in (tree, tree + "\\a", tree + "\\a\\b")]
    os.chmod(tree + "\\a\\file", 0o444)  # read-only: even SYSTEM's DeleteFileW fails until it is cleared
    folder = safefs.secure_folder(base)
    folder.purge("tree")
    folder.close()
    out["gone"] = not os.path.lexists(tree)
elif step == "theirs":  # another user's folders on the way: moved aside by their handle, made anew
    wh.TRUSTED[:] = [TRUSTED_SIDS]  # as if the prefix's user were another user
    folder, done, foreign = safefs.claim_dir(base + "\\bin")
    out["done"] = [(t.path, t.why, t.aside) for t in done]
    out["entries"] = [name for name, _ in folder.scan()]
    folder.close()
    survey, planned, _ = safefs.survey_dir(base + "\\bin")  # made anew: theirs again as Wine sees it
    out["survey"] = [survey is None, [(t.path, t.aside) for t in planned]]
    try:
        safefs.claim_dir(winwalk.homes()[-1][1] + "\\cni\\bin")
        out["home"] = None
    except safefs.UnsafePath as exc:
        out["home"] = exc.problem
    wh.TRUSTED[:] = []
elif step == "paths":  # the test made base + "-link" a Unix symlink to base: Wine's stand-in for a junction
    import subprocess

    from basics import inputfile
    from plugins.cni import procs

    def said(fn, *args):
        try:
            fn(*args)
        except (OSError, ValueError) as exc:
            return getattr(exc, "problem", None) or f"{type(exc).__name__}: {exc}"
        return None

    fd = safefs.open_read(base + "\\f.json")
    out["store"] = os.read(fd, 100).decode()
    os.close(fd)
    out["store_link"] = said(safefs.open_read, base + "-link\\f.json")
    out["flag"] = inputfile.read(base + "\\f.json", 100).data.decode()
    out["flag_link"] = said(inputfile.read, base + "-link\\f.json", 100)
    out["flag_folder"] = said(inputfile.read, base, 100)
    out["flag_nul"] = said(inputfile.read, "NUL", 100)
    out["flag_big"] = said(inputfile.read, base + "\\f.json", 1)
    out["store_dir_link"] = said(safefs.check_dir, base + "-link")  # a store's folder: judged, then pinned
    safefs.check_dir(base)
    out["held"] = [f.path for f in winfs.HELD]
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    out["alive"] = [procs.alive(os.getpid()), procs.alive(child.pid)]
elif step == "output":  # the test opened base\\shared to everyone and planted a Unix link in it
    from basics import outputfile

    shared = base + "\\shared"
    out["before"] = sddl(shared, True)
    outputfile.write(shared + "\\wincni.prom", b"one")
    outputfile.write(shared + "\\wincni.prom", b"two")  # over our own: renamed by its handle, replacing
    outputfile.write(shared + "\\planted.prom", b"ours")  # over the link: replaced, never written through
    out["after"] = sddl(shared, True)
    out["file"] = sddl(shared + "\\wincni.prom", False)
    out["names"] = sorted(os.listdir(shared))
    outputfile.write(base + "\\made\\wincni.prom", b"new")  # a folder not there: made admin-only
    out["made"] = sddl(base + "\\made", True)
    out["own_sid"] = wh.own_sid()
elif step == "store":  # host-local's and flannel's stores through the handle paths; the test planted links
    from basics import ipaddr
    from plugins.flannel.store import Attachment, Store
    from plugins.ipam_host_local.allocator import Owner
    from plugins.ipam_host_local.store import load_index, open_store

    net = base + "\\net"
    with open_store(net, "win32") as s:
        out["allocations"] = [[str(ip), owner and owner.container_id] for ip, owner in s.allocations()]
        out["problem"] = s.problem("10.1.2.4")
        out["reserved"] = s.reserve(Owner("pod1", "eth0"), ipaddr.ip_address("10.1.2.2"), 0)
    reader = safefs.checked_folder(net)
    held = reader.open_read(".wincni-index")  # a doctor or STATUS reading while an ADD replaces it
    with open_store(net, "win32") as s:
        s.reserve(Owner("pod2", "eth0"), ipaddr.ip_address("10.1.2.5"), 0)
    os.close(held)
    out["index_current"] = load_index(reader) is not None
    reader.close()
    with open_store(net, "win32") as s:
        s.release("10.1.2.4")
        out["after"] = [[str(ip), owner and owner.container_id] for ip, owner in s.allocations()]
    flannel = Store(base + "\\flannel")
    flannel.save("c1", b"{}", Attachment("c1", "eth0"))
    out["flannel"] = [flannel.load("c1").decode(), flannel.keys()]
print(json.dumps(out))
"""


def _probe(node: WineNode, step: str, base: str = r"C:\wincni-sec") -> dict:
    python = toolchain.winpath(toolchain.cache_dir() / "python" / "python.exe")
    script = node.root / "safefs_probe.py"
    script.write_text(PROBE)
    proc = node.wine(python, toolchain.winpath(script), toolchain.winpath(ROOT), base, step)
    assert proc.returncode == 0, proc.stderr.decode()[-3000:]
    return json.loads(proc.stdout.decode().strip().splitlines()[-1])


def test_admin_only_folders_owner_only_files_and_the_owner_check_through_win32(node: WineNode) -> None:
    first = _probe(node, "create")
    me = first["own_sid"]
    assert me.startswith("S-1-5-") and first["kept"] == [True, True, True]
    for key in ("folder", "lock", "log"):
        assert ws_writers(first[key], me) == [], (key, first[key])
        assert "BU" not in first[key] and "WD" not in first[key] and "AU" not in first[key], first[key]
    assert first["folder_writers"] is None
    assert "2 hard links" in first["hard_link"]
    code, msg, details = first["deadline"]
    assert code == 11 and "network-x.lock" in msg and "handle.exe" in details

    folder = node.path(r"C:\wincni-sec\locks")
    os.chmod(folder, 0o777)  # what Wine shows as Everyone: write
    second = _probe(node, "opened-up")
    assert second["writers"] == "Everyone" and "writable by Everyone" in second["check_dir"]
    assert second["writers_after"] is None and not os.stat(folder).st_mode & 0o002
    assert f"owned by {me}" in second["foreign_folder"] and f"owned by {me}" in second["foreign_file"]

    os.chmod(folder.parent, 0o777)
    victim = node.root / "victim"
    victim.write_text("secret")
    (folder.parent / "planted.lnk").symlink_to(victim)  # Wine makes no reparse points: a Unix link stands in
    third = _probe(node, "claim")
    assert ws_writers(third["protected"], me) == [], third["protected"]
    done, foreign = third["claimed"]
    assert done == [["is writable by Everyone", ""]] and not os.stat(folder.parent).st_mode & 0o002, third
    assert third["pinned"] == "was replaced while it was being checked", third
    assert {(path.rsplit("\\", 1)[1], problem) for path, problem in foreign} == {
        ("wincni.log", "a file with 2 hard links"),
        ("hard.log", "a file with 2 hard links"),
    }, foreign
    assert third["new_wincni.log"] == third["new_planted.lnk"] == "exists" and victim.read_text() == "secret"
    assert ws_writers(third["fresh"], me) == [], third["fresh"]

    tree = folder.parent / "tree"
    (tree / "a" / "b").mkdir(parents=True)
    for sub in (tree, tree / "a", tree / "a" / "b"):
        (sub / "file").write_text("x")
        os.chmod(sub, 0o777)
    fourth = _probe(node, "purge")
    assert fourth == {"writers": [None, None, None], "gone": True}, fourth


def test_another_users_folder_is_moved_aside_by_its_handle_and_made_anew(node: WineNode) -> None:
    """``claim_dir`` on Windows: a folder on the way owned by another user is renamed aside through
    the handle it was judged on (SetFileInformationByHandle FileRenameInfo) and made anew with
    the install DACL, never reused; the profiles folder (where users live) is refused."""
    theirs = node.path(r"C:\wincni-theirs\bin")
    theirs.mkdir(parents=True)
    (theirs / "planted.exe").write_text("the user's")
    out = _probe(node, "theirs", r"C:\wincni-theirs")
    (path, why, aside), *rest = out["done"]
    assert (
        path == r"C:\wincni-theirs" and why.startswith("is owned by") and aside == r"C:\wincni-theirs.wincni-quarantine"
    )
    assert out["entries"] == [] and (node.path(aside) / "bin" / "planted.exe").read_text() == "the user's", out
    assert out["survey"][0] and out["survey"][1][0][1].endswith(".wincni-quarantine.1"), out
    assert out["home"] is not None and "home folder" in out["home"], out


def ws_writers(text: str, me: str) -> list[str]:
    from basics import sddl

    return sddl.sddl_writers(text, sddl.TRUSTED_SIDS | {me})


def test_the_simulator_needs_its_second_switch_on_windows(node: WineNode) -> None:
    conf = {
        "cniVersion": "1.0.0",
        "name": "cbr0",
        "type": "win-bridge",
        "ipam": {"type": "host-local", "subnet": "10.244.4.0/24"},
    }
    run = node.run("DEL", conf, "simpod", "none", plugin="win-bridge", LIBHNS_BACKEND="sim")
    run.failed(4, "WINCNI_ALLOW_SIMULATOR=1")
    run = node.run(
        "DEL",
        conf,
        "simpod",
        "none",
        plugin="win-bridge",
        LIBHNS_BACKEND="sim",
        WINCNI_ALLOW_SIMULATOR="1",
        LIBHNS_SIM_DIR=r"C:\simstate",
    )
    assert run.ok, (run.out, run.stderr)
    assert "warning" in run.stderr and "simulator" in run.stderr


def test_a_device_name_is_never_a_network_name(node: WineNode) -> None:
    conf = {
        "cniVersion": "1.0.0",
        "name": "CON",
        "type": "win-bridge",
        "network": {"subnet": "10.244.8.0/24"},
        "ipam": {"type": "host-local", "subnet": "10.244.8.0/24"},
    }
    node.run("ADD", conf, "conpod", node.sandbox("v2", "conpod")).failed(7, "reserved device name")


def test_no_file_is_opened_through_a_junction_and_a_writer_is_alive_until_it_exits(node: WineNode) -> None:
    """The Windows branches the pod path and the tools' file flags take: a store's folder is held
    once judged (``check_dir`` pins it), a store's file (``safefs.open_read``) and a flag's file
    (``inputfile.read``) are opened through no junction
    (the handle's final path: Wine resolves a Unix symlink in the prefix as Windows resolves a
    junction), a folder, ``NUL`` or an oversized file is refused at once, and ``procs.alive``
    (OpenProcess / GetExitCodeProcess) tells a live writer from one that exited."""
    base = node.path(r"C:\wincni-paths")
    base.mkdir()
    (base / "f.json").write_text('{"a": 1}')
    node.path(r"C:\wincni-paths-link").symlink_to(base)
    out = _probe(node, "paths", r"C:\wincni-paths")
    assert out["store"] == out["flag"] == '{"a": 1}', out
    assert "reached through a junction or link (it is C:\\wincni-paths\\f.json)" in out["store_link"], out
    assert "reached through a junction or link" in out["flag_link"], out
    assert "is a folder, not a regular file" in out["flag_folder"], out
    assert out["flag_nul"] and "not a regular file" in out["flag_nul"], out
    assert "is over 1 bytes" in out["flag_big"], out
    assert "reached through a junction or link (it is C:\\wincni-paths)" in out["store_dir_link"], out
    assert out["held"] == [r"C:\wincni-paths"], out
    assert out["alive"] == [True, False], out


def test_an_output_file_leaves_a_shared_folder_as_it_is_and_is_admin_only(node: WineNode) -> None:
    """``wincni bundle --out`` and ``metrics --textfile`` (``basics.outputfile``): a folder everyone
    may write keeps its DACL (no SetSecurityInfo on it); the file is created with the protected
    admin-only DACL (CreateFileW, CREATE_NEW, the reparse-point flag), filled, and renamed over the
    name by its own handle (SetFileInformationByHandle FileRenameInfo, ReplaceIfExists): a link at
    the name is replaced, never written through."""
    shared = node.path(r"C:\wincni-out\shared")
    shared.mkdir(parents=True)
    os.chmod(shared, 0o777)  # what Wine shows as Everyone: write
    victim = node.root / "victim-out"
    victim.write_text("secret")
    (shared / "planted.prom").symlink_to(victim)  # Wine makes no reparse points: a Unix link stands in
    out = _probe(node, "output", r"C:\wincni-out")
    assert out["before"] == out["after"] and "WD" in out["after"], out
    assert os.stat(shared).st_mode & 0o777 == 0o777
    for key in ("file", "made"):
        assert ws_writers(out[key], out["own_sid"]) == [] and "WD" not in out[key] and "BU" not in out[key], out
    assert out["names"] == ["planted.prom", "wincni.prom"], out
    assert (shared / "wincni.prom").read_bytes() == b"two" and (shared / "planted.prom").read_bytes() == b"ours"
    assert victim.read_text() == "secret" and not (shared / "planted.prom").is_symlink()

    textfile = node.path(r"C:\wincni-out\textfile")  # the command itself, as the package runs it
    textfile.mkdir()
    os.chmod(textfile, 0o777)
    proc = node.wine(node.exe("wincni"), "metrics", "--textfile", r"C:\wincni-out\textfile")
    assert b"Traceback" not in proc.stderr and (textfile / "wincni.prom").is_file(), proc.stderr.decode()
    assert os.stat(textfile).st_mode & 0o777 == 0o777


def test_the_stores_files_go_through_the_held_folder_never_through_a_link(node: WineNode) -> None:
    """host-local's store under Windows' handle paths: a reservation of 16 NULs (an unclean
    shutdown's leftover) is named and no pod's; ``last_reserved_ip.0``, a link here (Wine's
    junction), is replaced by rename (``safefs.replace_file``: CREATE_NEW, then MoveFileEx), the
    index at a link removed and made anew (``safefs.open_rewrite`` refuses it), never written
    through; an index a reader holds open is still rewritten (in place: a rename over it would
    be refused); flannel's saved config round-trips through the same calls."""
    net = node.path(r"C:\wincni-store\net")
    net.mkdir(parents=True)
    victim = node.root / "victim"
    victim.write_text("secret")
    (net / "10.1.2.4").write_bytes(b"\0" * 16)
    (net / "last_reserved_ip.0").symlink_to(victim)
    (net / ".wincni-index").symlink_to(victim)
    out = _probe(node, "store", r"C:\wincni-store")
    assert out["allocations"] == [["10.1.2.4", None]], out
    assert out["problem"].startswith("holds 16 NUL bytes"), out
    assert out["reserved"] is True and out["index_current"] is True, out
    assert out["after"] == [["10.1.2.2", "pod1"], ["10.1.2.5", "pod2"]], out
    assert out["flannel"] == ["{}", ["c1"]], out
    assert victim.read_text() == "secret"
    assert not (net / "last_reserved_ip.0").is_symlink() and (net / "last_reserved_ip.0").read_text() == "10.1.2.5"
    assert not (net / ".wincni-index").is_symlink()
