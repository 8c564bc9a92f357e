"""``wincni install``'s steps without a disk: the pure planners (``plan``), the one executor over a
``Disk`` with Windows' rules for files in use (``executor``), the words the operator reads (``report``)."""

from __future__ import annotations

import os
import typing
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from basics.takeover import Takeover
from test_wincni_install import WindowsDisk
from tools.wincni.install import plan, report, steps
from tools.wincni.install.executor import StepExecutor
from tools.wincni.install.package import PackageFolder
from tools.wincni.node import installed
from tools.wincni.node.installed import Manifest

BIN = os.path.join(os.sep, "bin")
PACKAGE = PackageFolder(os.path.join(os.sep, "rel"), "0.1.0-bbb-2", ("flannel", "host-local", "wincni"))

# ---------------------------------------------------------------- plan


def test_a_fresh_bin_dir_gets_the_contents_then_every_launcher() -> None:
    planned = plan.bin_steps(PACKAGE, BIN, [], lambda n: False, Manifest(), laid=False)
    assert planned == [
        steps.CopyFolder(f"{BIN}/_wincni-0.1.0-bbb-2", "/rel/_wincni-0.1.0-bbb-2", "build 0.1.0-bbb-2"),
        *(steps.CopyExe(f"{BIN}/{n}", f"/rel/{n}", new=True) for n in PACKAGE.launchers),
    ]


@given(
    present=st.sets(st.sampled_from(["flannel", "host-local", "wincni", "hnsctl", "_wincni-0.1.0-bbb-2", "nat"])),
    same=st.sets(st.sampled_from(["flannel", "host-local", "wincni"])),
    previous=st.sets(st.sampled_from(["flannel", "hnsctl", "nat-old"])),
    laid=st.booleans(),
)
def test_each_launcher_gets_one_step_and_only_the_previous_builds_launchers_go(present, same, previous, laid) -> None:
    planned = plan.bin_steps(PACKAGE, BIN, present, same.__contains__, Manifest(launchers=tuple(previous)), laid)
    by_name = {}
    for step in planned:
        assert os.path.basename(step.path) not in by_name, planned  # one step per entry
        by_name[os.path.basename(step.path)] = step
    for name in PACKAGE.launchers:
        kept = name in present and name in same
        assert isinstance(by_name[name], steps.Keep if kept else steps.CopyExe)
        assert kept or by_name[name].new == (name not in present)
    gone = {n for n, s in by_name.items() if isinstance(s, steps.RemoveFile)}
    assert gone == (previous - set(PACKAGE.launchers)) & present
    assert all(
        s.in_use == "aside" for s in by_name.values() if isinstance(s, steps.RemoveFile)
    )  # a running one is parked
    contents = by_name[PACKAGE.contents]
    assert isinstance(contents, steps.Keep) == ("_wincni-0.1.0-bbb-2" in present and laid)


def test_configs_sorting_before_ours_are_disabled_unless_kept() -> None:
    names = ["0-nat.json", "05-x.conf", "10-flannel.conflist", "99-later.conf", "README"]
    planned = plan.conf_steps("/c", names, "10-flannel.conflist", b"new", b"old", keep_others=False)
    assert [type(s) for s in planned] == [steps.WriteFile, steps.Disable, steps.Disable]
    assert [os.path.basename(s.path) for s in planned[1:]] == ["0-nat.json", "05-x.conf"]
    assert plan.conf_steps("/c", names, "10-flannel.conflist", b"new", b"new", keep_others=True) == [
        steps.Keep("/c/10-flannel.conflist")
    ]


def test_what_a_claim_found_is_removed_by_its_kind_or_quarantined() -> None:
    done = [Takeover("/b", "is writable by others (mode 0777)"), Takeover("/b/x", "is owned by u", "/b/x.q")]
    foreign = [("/b/file", "owned by u"), ("/b/dir", "owned by u")]
    planned = plan.claim_steps(done, foreign, False, "", "/b/dir".__eq__)
    assert [type(s) for s in planned] == [steps.ClaimFolder, steps.ClaimFolder, steps.RemoveFile, steps.PurgeFolder]
    assert planned[1].moved and not planned[0].moved and planned[0].detail.endswith(": made admin-only")
    quarantined = plan.claim_steps([], foreign, True, "/c/q", "/b/dir".__eq__)
    assert quarantined == [
        steps.Quarantine(p, "/c/q", f"{why}: not laid by an administrator; moved to /c/q") for p, why in foreign
    ]
    assert "would be made admin-only" in plan.claim_steps(done[:1], [], True, "", bool)[0].detail


def test_uninstall_removes_what_the_manifest_names_keeps_a_changed_config_and_restores_what_it_moved() -> None:
    conf = b'{"name": "vxlan0"}'
    manifest = Manifest(
        build="0.1.0-aaa-1",
        launchers=("flannel", "gone"),
        conf="/c/10-flannel.conflist",
        conf_digest=__import__("hashlib").sha256(conf).hexdigest(),
        moved=(("/c/0-nat.json", "/c/0-nat.json.disabled-by-wincni"), ("/c/1-back.json", "/c/1-back.json.d")),
    )
    there = {f"{BIN}/flannel", "/c/0-nat.json.disabled-by-wincni", "/c/1-back.json", "/c/1-back.json.d"}
    planned = plan.uninstall_steps(manifest, BIN, conf, there.__contains__)
    assert planned == [
        steps.RemoveFile("/c/10-flannel.conflist"),
        steps.Restore("/c/0-nat.json", "/c/0-nat.json.disabled-by-wincni"),
        steps.RemoveFile(f"{BIN}/flannel", in_use="aside"),
    ]
    assert plan.uninstall_steps(manifest, BIN, b"{}", there.__contains__)[0] == steps.Keep(
        "/c/10-flannel.conflist", "changed since install"
    )
    assert plan.uninstalled_contents(manifest, BIN) == [
        steps.PurgeFolder(f"{BIN}/_wincni-0.1.0-aaa-1", "the uninstalled build")
    ]
    assert plan.uninstalled_contents(Manifest(), BIN) == []


BUILDS = ["0.1.0-aaa-1", "0.1.0-bbb-2", "0.1.0-ccc-3"]


@given(
    parked=st.dictionaries(st.sampled_from(BUILDS), st.lists(st.sampled_from(["flannel", "wincni"]), unique=True)),
    still=st.sets(st.sampled_from(["flannel", "wincni"])),
    present=st.sets(
        st.sampled_from(
            [installed.CONTENTS_PREFIX + b for b in BUILDS]
            + ["_wincni-0.1.0-aaa-1.partial", "_wincni-0.1.0-aaa-1.trash", "_wincni-x.wincni-trash.1", "other"]
        )
    ),
    current=st.sampled_from(["", *BUILDS]),
)
def test_cleanup_never_deletes_what_a_running_launcher_needs(parked, still, present, current) -> None:
    aside = os.path.join(BIN, installed.ASIDE_DIR)
    unpark = plan.unpark_steps(aside, parked)
    assert {s.path for s in unpark} == {os.path.join(aside, b, n) for b, names in parked.items() for n in names}
    done = [steps.Held(s.path, "") if os.path.basename(s.path) in still else s for s in unpark]
    running = plan.still_parked(done)
    assert set(running) == {b for b, names in parked.items() if set(names) & still}
    dirs = sorted(present | ({installed.ASIDE_DIR} if parked else set()))
    tidy = plan.tidy_steps(BIN, dirs, parked, running)
    purged = {s.path for s in tidy}
    assert not any(os.path.join(aside, b) in purged for b in running)
    assert (aside in purged) == (bool(parked) and not running)
    stale = plan.stale_steps(BIN, dirs, running, current)
    gone = {os.path.basename(s.path) for s in stale if isinstance(s, steps.PurgeFolder)}
    kept = {os.path.basename(s.path) for s in stale if isinstance(s, steps.Held)}
    assert kept == {installed.CONTENTS_PREFIX + b for b in running} & present
    assert not gone & kept and installed.CONTENTS_PREFIX + current not in gone
    assert {n for n in present if installed.is_contents(n)} - gone <= kept | {installed.CONTENTS_PREFIX + current}
    assert all(installed.DISCARDED not in n for n in gone)  # those are tidied, unannounced
    assert all(
        s.in_use == "hold" for s in [*unpark, *tidy, *stale] if isinstance(s, (steps.RemoveFile, steps.PurgeFolder))
    )


@pytest.mark.parametrize(
    "name, current, uninstalled, said",
    [
        ("_wincni-0.1.0-aaa-1", "", "0.1.0-aaa-1", "the uninstalled build"),
        ("_wincni-0.1.0-aaa-1.partial", "0.1.0-bbb-2", "", "left by an interrupted install"),
        ("_wincni-0.1.0-aaa-1", "0.1.0-bbb-2", "", "an older build, no longer used"),
        ("_wincni-0.1.0-ccc-3", "0.1.0-bbb-2", "", "a newer build, no longer used"),
    ],
)
def test_a_contents_folder_removed_is_said_for_what_it_was(name, current, uninstalled, said) -> None:
    assert plan.contents_detail(name, current, uninstalled) == said


def test_a_folder_renamed_to_be_purged_is_no_build() -> None:
    assert not installed.is_contents("_wincni-0.1.0-aaa-1.wincni-trash")
    assert not installed.is_contents("_wincni-0.1.0-aaa-1.wincni-trash.2")
    assert installed.doomed("_wincni-0.1.0-aaa-1.trash") and not installed.doomed("_wincni-0.1.0-aaa-1")


# ---------------------------------------------------------------- report


def test_every_kind_of_step_has_its_word() -> None:
    """The set is closed: a new kind of step the printer does not name fails here."""
    for kind in typing.get_args(steps.Step):
        fields = {"path": "/p", "source": "/s", "new": True, "data": b"", "folder": "/q"}
        step = kind(**{f: v for f, v in fields.items() if f in kind.__dataclass_fields__})
        assert report.action(step) in (
            "copy install replace keep aside remove held write disable restore takeover quarantine".split()
        ), kind


# ---------------------------------------------------------------- executor


@pytest.fixture
def claimed(tmp_path: Path) -> tuple[WindowsDisk, Path]:
    disk = WindowsDisk()
    disk.claim(str(tmp_path / "bin"))
    yield disk, tmp_path / "bin"
    disk.close()


def test_a_running_launcher_to_remove_is_parked_under_its_build(claimed) -> None:
    disk, bin_dir = claimed
    (bin_dir / "flannel").write_bytes(b"MZ\0pyi-contents-directory _wincni-0.1.0-aaa-1\0")
    disk.held = {str(bin_dir / "flannel")}
    done = StepExecutor(disk, str(bin_dir), "ignored").do(steps.RemoveFile(str(bin_dir / "flannel"), in_use="aside"))
    parked = bin_dir / installed.ASIDE_DIR / "0.1.0-aaa-1" / "flannel"
    assert done == steps.Aside(str(bin_dir / "flannel"), f"in use: moved to {parked}") and parked.is_file()
    with pytest.raises(PermissionError):  # the others fail, or are held
        StepExecutor(disk, str(bin_dir)).do(steps.RemoveFile(str(parked)))
    assert StepExecutor(disk, str(bin_dir)).do(steps.RemoveFile(str(parked), in_use="hold")) == steps.Held(
        str(parked), "still running: removed by a later install"
    )


def test_a_folder_is_purged_through_a_trash_name_and_one_in_use_is_held(claimed) -> None:
    disk, bin_dir = claimed
    for name in ("old", "busy"):
        (bin_dir / name / "sub").mkdir(parents=True)
        (bin_dir / name / "sub" / "f.dll").write_text("x")
    disk.held = {str(bin_dir / "busy" / "sub" / "f.dll")}
    run = StepExecutor(disk, str(bin_dir))
    assert run.do(steps.PurgeFolder(str(bin_dir / "old"))) == steps.PurgeFolder(str(bin_dir / "old"))
    assert run.do(steps.PurgeFolder(str(bin_dir / "busy"), in_use="hold")) == steps.Held(
        str(bin_dir / "busy"), "in use: removed by a later install"
    )
    assert sorted(p.name for p in bin_dir.iterdir()) == ["busy"]  # nothing half renamed either


def test_the_quarantine_folder_is_made_once_and_never_overwritten(claimed) -> None:
    disk, bin_dir = claimed
    for name in ("a.conf", "b.conf"):
        (bin_dir / name).write_text(name)
    run, folder = StepExecutor(disk, str(bin_dir)), str(bin_dir / "q")
    for name in ("a.conf", "b.conf"):
        run.do(steps.Quarantine(str(bin_dir / name), folder))
    assert sorted(p.name for p in (bin_dir / "q").iterdir()) == ["a.conf", "b.conf"]
    assert oct((bin_dir / "q").stat().st_mode & 0o777) == "0o700"


def test_a_link_to_remove_is_removed_itself(claimed, tmp_path: Path) -> None:
    disk, bin_dir = claimed
    (tmp_path / "target").mkdir()
    (bin_dir / "link").symlink_to(tmp_path / "target")
    assert not disk.is_folder(str(bin_dir / "link"))
    StepExecutor(disk, str(bin_dir)).do(steps.RemoveFile(str(bin_dir / "link")))
    assert not os.path.lexists(bin_dir / "link") and (tmp_path / "target").is_dir()
