"""The doctor's security checks (README "Security model"): would the plugins run on the HNS
simulator, and may anyone but administrators write the folders they run from or trust?

``gather`` adds the facts (``libhns.backend`` decides the backend as the plugins would; the
ownership and mode bits on Linux, the owner and DACL on Windows, via ``libhns.safefs``); the two
checks are pure functions of them and say nothing when all is well.
"""
from __future__ import annotations

import os
from typing import Any, Mapping

from .checks import FAIL, WARN, Check
from .facts import Facts


def gather(facts: Facts, env: Mapping[str, str], platform: str, flannel_conf: Any) -> None:
    from libhns.backend import simulated_on_windows
    facts.simulated = simulated_on_windows(env, platform)
    folders = {"CNI bin dir": facts.bin_dir,
               "CNI conf dir": os.path.dirname(facts.conf_path),
               "IPAM data dir": os.path.dirname(facts.ipam_dir) if facts.ipam_dir else "",
               "flannel data dir": getattr(flannel_conf, "data_dir", "")}
    facts.open_dirs = [(label, path, who) for label, path in folders.items() if path and (who := _writers(path))]


def _writers(path: str) -> str | None:
    from libhns.safefs import writable_by_others
    try:
        return writable_by_others(path)
    except OSError:
        return None  # absent or unreadable: the other checks say so where it matters


def backend(f: Facts) -> Check | None:
    if not f.simulated:
        return None
    return Check("backend", FAIL, "LIBHNS_BACKEND=sim: the plugins would run on the HNS simulator, so pods get no "
                 "real network", "remove LIBHNS_BACKEND (and WINCNI_ALLOW_SIMULATOR) from the kubelet's / "
                 "containerd's environment")


def permissions(f: Facts) -> Check | None:
    if not f.open_dirs:
        return None
    listed = "; ".join(f"{label} {path} is writable by {who}" for label, path, who in f.open_dirs)
    return Check("permissions", WARN, listed,
                 "the plugins run as SYSTEM/root from and with these folders: give them an admin-only ACL "
                 "(build.ps1 -Install does it for the bin dir; icacls <dir> /inheritance:r /grant:r "
                 "SYSTEM:(OI)(CI)F Administrators:(OI)(CI)F Users:(OI)(CI)RX) or chmod go-w")
