"""Checks of the node itself: the HNS backend, who may write its folders, the installed build."""

from __future__ import annotations

from tools.wincni.doctor.checks.common import not_checked
from tools.wincni.doctor.facts import NodeFacts
from tools.wincni.judge.verdict import FAIL, OK, WARN, Check, command_line


def build(f: NodeFacts) -> Check:
    """The installed plugins' build against this wincni's: the DaemonSet's image lays its own build,
    so they differ on a node the image has not reached, or when another build's wincni asks."""
    if not f.installed_build:
        return not_checked("build", f.build_problem or "the install manifest was not read", "")
    same = f.installed_build == f.running_build or f.installed_build.startswith(f.running_build + "-")
    if not same:
        return Check(
            "build",
            WARN,
            f"the plugins in {f.bin_dir} are build {f.installed_build}; this wincni is {f.running_build}",
            "the DaemonSet's image lays its own build when its pod starts: roll it out to this node (or run "
            f"wincni install from the release this wincni came from); the installed build's own doctor is "
            f"the wincni in {f.bin_dir}",
        )
    return Check("build", OK, f"the plugins in {f.bin_dir} are build {f.installed_build}, this wincni's")


def backend(f: NodeFacts) -> Check:
    """Fails when the plugins would run on the simulator on Windows (README "Security model")."""
    if not f.simulated:
        return Check("backend", OK, "the plugins would not run on the HNS simulator")
    return Check(
        "backend",
        FAIL,
        "LIBHNS_BACKEND=sim: the plugins would run on the HNS simulator, so pods get no real network",
        "remove LIBHNS_BACKEND (and WINCNI_ALLOW_SIMULATOR) from containerd's environment "
        "(the Environment value of HKLM\\SYSTEM\\CurrentControlSet\\Services\\containerd) and the "
        "machine's (System Properties, Environment Variables), then restart containerd",
    )


def permissions(f: NodeFacts) -> Check:
    """Warns when someone besides administrators may write a folder the plugins run from or trust."""
    if not f.open_dirs:
        return Check("permissions", OK, "only administrators may write the folders the plugins run from and trust")
    listed = "; ".join(f"{label} {path} is writable by {who}" for label, path, who in f.open_dirs)
    if f.windows:
        return Check(
            "permissions",
            WARN,
            listed,
            "the plugins run as SYSTEM from and with these folders: give each an admin-only ACL (wincni "
            "install and build.ps1 -Install do it for the bin dir): icacls <folder> /inheritance:r /grant:r "
            '"*S-1-5-18:(OI)(CI)F" "*S-1-5-32-544:(OI)(CI)F" "*S-1-5-32-545:(OI)(CI)RX" (SYSTEM, '
            "Administrators, Users by SID, as their names differ by language; quoted, or PowerShell reads "
            "(OI) as a command)",
        )
    modes = [path for _, path, who in f.open_dirs if who in ("its group", "every user", "its group and every user")]
    return Check(
        "permissions",
        WARN,
        listed,
        "the plugins run as root from and with these folders: only root may write them"
        + (
            ""
            if len(modes) == len(f.open_dirs)
            else "; give the others to root (chown root:root) and replace a symbolic link by the folder it points at"
        ),
        command_line(False, "", "chmod", "go-w", *modes) if len(modes) == len(f.open_dirs) else "",
    )
