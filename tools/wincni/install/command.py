"""``wincni install``: the package folder into containerd's CNI bin dir, the rendered config into
its conf dir, shadowing configs moved aside; ``--uninstall`` undoes exactly that.

The imperative shell: it reads the node through a ``Disk``, asks ``plan`` (pure) for the steps,
has ``executor.StepExecutor`` carry them out (a dry run only collects them) and ``report`` print
them. The config comes from ``conf``, the package from ``package``; the upgrade rules
(why launchers are renamed aside, when an old build's contents folder goes) are in ``node.installed``'s
docstring.

A folder install finds may have been prepared by a user (on Windows anyone may create folders at
the root of C:). So before anything is read from or laid into the bin or conf dir, the folder is
taken over (``Disk.claim``: admin-owned, nobody else may write) and every entry in it an
administrator did not lay is removed (bin dir) or moved to a fresh admin-only quarantine folder
(conf dir), never followed; only then is the manifest read, and believed only when it is an
admin's file whose paths all lie in the bin and conf dirs.
"""

from __future__ import annotations

import argparse
import os
from typing import Callable, Iterable, Mapping

from basics.cli import Manual
from basics.errors import UnsafePath
from tools.wincni.cli.context import Context
from tools.wincni.install import conf as installconf
from tools.wincni.install import plan, report
from tools.wincni.install.executor import StepExecutor
from tools.wincni.install.options import InstallOptions
from tools.wincni.install.options import add_arguments as add_arguments
from tools.wincni.install.package import PackageFolder, open_package
from tools.wincni.install.report import EXIT_FAILED, EXIT_OK, InstallError, Outcome
from tools.wincni.install.steps import PurgeFolder, RemoveFile, Step, WriteFile
from tools.wincni.node import installed
from tools.wincni.node.disk import Disk
from tools.wincni.node.flagfile import FlagFileError, Reader
from tools.wincni.node.installed import Manifest, read_manifest

MANUAL = Manual(
    does="Lay the plugins into the runtime's CNI bin folder and the rendered flannel config into its conf "
    "folder (`wincni dirs` says which), moving configs that would shadow ours aside; safe to run again "
    "to upgrade while pods start. --dry-run: the plan and the config diff; --uninstall: undo exactly that.",
    elevated=True,
    exits=(
        (0, "installed (or the plan printed, or removed)"),
        (1, "nothing or only part done: the report says what and why"),
        (2, "a usage error"),
    ),
    examples=("wincni install --from C:\\wincni --service-cidr 10.96.0.0/12 --dry-run",),
)


MAX_CONF = 1 << 20


def options(args: argparse.Namespace, ctx: Context) -> InstallOptions:
    return InstallOptions.of(args)


def run(options: InstallOptions, ctx: Context, disk: Disk | None = None) -> int:
    """0 done (warnings allowed), 1 failed; the steps done so far are printed either way. The
    context's ``env`` gives %ProgramFiles% (containerd's folder on Windows)."""
    stdout, platform, cwd, env = ctx.stdout, ctx.platform, ctx.cwd, ctx.env
    disk = disk or Disk()
    out = Outcome()
    try:
        bin_dir, conf_dir = _dirs(options, platform, env or {}, out, disk.is_folder)
        out.bin_dir, out.conf_path = bin_dir, os.path.join(conf_dir, options.conf_name)
        (_uninstall if options.uninstall else _install)(options, bin_dir, conf_dir, disk, platform, cwd, out)
    except InstallError as exc:
        report.write(options, out, stdout, error=str(exc))
        return EXIT_FAILED
    finally:
        disk.close()
    report.write(options, out, stdout)
    return EXIT_OK


def _dirs(
    options: InstallOptions,
    platform: str,
    env: Mapping[str, str],
    out: Outcome,
    is_folder: Callable[[str], bool],
    read: Reader | None = None,
) -> tuple[str, str]:
    """The flags, else where ``containerd.locate`` says containerd looks (its defaults even on a
    node without containerd yet: install lays for containerd); config.toml is read once, for its
    version too (``out.containerd_version``, which picks the rendered cniVersion). A config.toml
    it cannot use fails install when it had to name a folder, else is a warning (1.0.0 suits every
    containerd). ``read``: the config's reader (default: --containerd-config's, on the node's files)."""
    from tools.wincni.node.containerd import CniDirs, ConfigError, locate, said

    bin_flag, conf_flag = options.cni_bin_dir, options.cni_conf_dir
    given = [flag for flag, value in (("--cni-bin-dir", bin_flag), ("--cni-conf-dir", conf_flag)) if value]
    read = read or Reader("--containerd-config")
    try:
        found = locate(platform, env, read, is_folder, options.containerd_config or None)
    except (ConfigError, FlagFileError) as exc:
        if len(given) < 2:
            raise InstallError(f"{read.quote(str(exc))}: fix it, or pass --cni-bin-dir and --cni-conf-dir") from None
        out.warnings.append(
            f"{read.quote(str(exc))}: the config is rendered at cniVersion 1.0.0, for which containerd 2.x "
            "never asks the plugins' STATUS"
        )
        found = CniDirs(bin_flag, conf_flag)
    out.containerd_version = found.version
    out.dirs_from = said(given, found)
    return (os.path.normpath(bin_flag or found.bin_dir), os.path.normpath(conf_flag or found.conf_dir))


# ---------------------------------------------------------------------------- install


def _install(
    options: InstallOptions, bin_dir: str, conf_dir: str, disk: Disk, platform: str, cwd: str, out: Outcome
) -> None:
    conf = installconf.rendered(options, platform, cwd, out)
    package = open_package(options.source, disk)
    out.build = package.build
    try:
        previous, bin_steps, contents = _bin(options, package, conf, bin_dir, conf_dir, disk, out)
        _claim(conf_dir, disk, out, options.dry_run, quarantine=True)
        conf_steps = _conf(options, conf, conf_dir, disk, out)
        if options.dry_run:
            out.steps += bin_steps + conf_steps
            return
        run = StepExecutor(disk, bin_dir)
        done = _carry_out(run, conf_steps, out)
        files, dirs = disk.listdir(bin_dir)
        laid = plan.manifest(package, out.conf_path, out.install, conf, previous, done, contents, files + dirs)
        run.do(WriteFile(os.path.join(bin_dir, installed.MANIFEST), laid.encode()))  # bookkeeping: not a step shown
    except UnsafePath as exc:
        raise InstallError(f"{exc}; nothing was laid through it") from None
    except OSError as exc:
        raise InstallError(
            f"{exc.filename or ''}: {exc.strerror or exc}; the steps above were done, "
            "running install again finishes the job"
        ) from None


def _bin(
    options: InstallOptions, package: PackageFolder, conf: bytes, bin_dir: str, conf_dir: str, disk: Disk, out: Outcome
) -> tuple[Manifest, list[Step], str]:
    """The bin dir taken over, the package laid into it and what is no longer needed cleaned up (a
    dry run: the steps it would take); (the previous manifest, the planned steps, the digest of
    the contents folder laid)."""
    previous, _ = _take(bin_dir, conf_dir, disk, out, options.dry_run)
    files, dirs = disk.listdir(bin_dir)
    out.warnings += installconf.missing_plugins(conf, package.launchers + tuple(files), bin_dir)
    contents, vouched = os.path.join(bin_dir, package.contents), previous.digest(package.contents)
    laid = bool(vouched) and package.contents in dirs and disk.digest(contents) == vouched
    steps = plan.bin_steps(
        package,
        bin_dir,
        files + dirs,
        lambda n: disk.same(os.path.join(package.root, n), os.path.join(bin_dir, n)),
        previous,
        laid,
    )
    if options.dry_run:
        return previous, steps, ""
    run = StepExecutor(disk, bin_dir, previous.build)
    _carry_out(run, steps, out)
    _cleanup(bin_dir, package.build, disk, run, out)
    return previous, steps, vouched if laid else disk.digest(contents)


def _conf(options: InstallOptions, conf: bytes, conf_dir: str, disk: Disk, out: Outcome) -> list[Step]:
    """The steps laying ``conf`` into the conf dir; the diff to what is there, for a dry run."""
    names, _ = disk.listdir(conf_dir)
    existing = _read_conf(disk, out.conf_path)
    if existing != conf:
        out.diff = installconf.diff(existing, conf, out.conf_path)
    return plan.conf_steps(conf_dir, names, options.conf_name, conf, existing, options.keep_others)


# ---------------------------------------------------------------------------- uninstall


def _uninstall(
    options: InstallOptions, bin_dir: str, conf_dir: str, disk: Disk, platform: str, cwd: str, out: Outcome
) -> None:
    if not disk.is_folder(bin_dir):
        out.warnings.append(f"no {bin_dir}: nothing installed by wincni install there")
        return
    manifest, ignored = _take_both(bin_dir, conf_dir, disk, out, options.dry_run)
    if manifest.build:
        out.build, out.conf_path = manifest.build, manifest.conf
        conf = _read_conf(disk, manifest.conf) if manifest.conf else None
        steps = plan.uninstall_steps(manifest, bin_dir, conf, disk.exists)
    elif ignored:
        steps = _provable(options, bin_dir, conf_dir, disk, platform, cwd, out)
    else:
        out.warnings.append(f"no {installed.MANIFEST} in {bin_dir}: nothing installed by wincni install there")
        return
    if options.dry_run:
        out.steps += steps + plan.uninstalled_contents(manifest, bin_dir)
    else:
        _remove_laid(steps, manifest, bin_dir, disk, out)


def _take_both(bin_dir: str, conf_dir: str, disk: Disk, out: Outcome, dry_run: bool) -> tuple[Manifest, bool]:
    """``_take``, and the conf dir claimed when there is one (uninstall creates neither)."""
    try:
        found = _take(bin_dir, conf_dir, disk, out, dry_run)
        if disk.is_folder(conf_dir):
            _claim(conf_dir, disk, out, dry_run, quarantine=True)
    except UnsafePath as exc:
        raise InstallError(f"{exc}; nothing was removed through it") from None
    except OSError as exc:
        raise InstallError(f"{exc.filename or ''}: {exc.strerror or exc}") from None
    return found


def _remove_laid(steps: list[Step], manifest: Manifest, bin_dir: str, disk: Disk, out: Outcome) -> None:
    """Uninstall's ``steps`` carried out; with a manifest, then its build's contents folder and the
    manifest itself."""
    try:
        run = StepExecutor(disk, bin_dir, manifest.build)
        _carry_out(run, steps, out)
        if manifest.build:
            _cleanup(bin_dir, "", disk, run, out, manifest.build)
            run.do(RemoveFile(os.path.join(bin_dir, installed.MANIFEST)))  # bookkeeping: not a step shown
    except OSError as exc:
        raise InstallError(f"{exc.filename or ''}: {exc.strerror or exc}") from None


def _provable(
    options: InstallOptions, bin_dir: str, conf_dir: str, disk: Disk, platform: str, cwd: str, out: Outcome
) -> list[Step]:
    """Without a manifest to believe, what uninstall can prove install laid: the launchers and
    contents folder of this package (``--from``, else the running one) byte for byte, the config
    this install renders. Nothing is restored."""
    steps: list[Step] = []
    conf = os.path.join(conf_dir, options.conf_name)
    try:
        if _read_conf(disk, conf) == installconf.rendered(options, platform, cwd, out):
            steps.append(RemoveFile(conf, "the config this install renders"))
    except InstallError as exc:
        out.warnings.append(f"{conf} left in place: cannot render the config to compare ({exc})")
    try:
        package = open_package(options.source, disk)
    except InstallError as exc:
        out.warnings.append(f"launchers left in place: no release to compare them with ({exc})")
        return steps
    out.build = package.build
    steps += [
        RemoveFile(os.path.join(bin_dir, n), f"the launcher of build {package.build}", in_use="aside")
        for n in package.launchers
        if disk.same(os.path.join(package.root, n), os.path.join(bin_dir, n))
    ]
    contents = os.path.join(bin_dir, package.contents)
    if disk.exists(contents) and disk.digest(contents) == disk.digest(os.path.join(package.root, package.contents)):
        steps.append(PurgeFolder(contents, f"the contents of build {package.build}"))
    return steps


# ---------------------------------------------------------------------------- both


def _take(bin_dir: str, conf_dir: str, disk: Disk, out: Outcome, dry_run: bool) -> tuple[Manifest, bool]:
    """Take the bin dir over (a dry run: say what that would do) and read the manifest in it;
    True when one was there but ignored (the warning says why)."""
    suspicious = _claim(bin_dir, disk, out, dry_run, quarantine=False)
    manifest, why = read_manifest(disk, os.path.join(bin_dir, installed.MANIFEST), conf_dir, suspicious)
    if why:
        out.warnings.append(why)
    return manifest, bool(why)


def _claim(path: str, disk: Disk, out: Outcome, dry_run: bool, quarantine: bool) -> bool:
    """Make ``path`` install's (``Disk.claim``) and rid it of what an administrator did not lay
    (removed; with ``quarantine``, moved into a fresh admin-only folder in it instead), saying so;
    a dry run only says. True when a folder on the way had to be taken over (or would be)."""
    done, foreign = disk.survey(path) if dry_run else disk.claim(path)
    folder = disk.fresh_name(os.path.join(path, installed.QUARANTINE)) if quarantine and foreign else ""
    steps = plan.claim_steps(done, foreign, dry_run, folder, disk.is_folder)
    if dry_run:
        out.steps += steps
    else:
        _carry_out(StepExecutor(disk, path), steps, out)
    return bool(done)


def _cleanup(bin_dir: str, current: str, disk: Disk, run: StepExecutor, out: Outcome, uninstalled: str = "") -> None:
    """Delete parked launchers nothing runs any more, then the contents folders no launcher needs
    (``uninstalled``: the build uninstall removes, named as such)."""
    aside_root = os.path.join(bin_dir, installed.ASIDE_DIR)
    parked = {build: disk.listdir(os.path.join(aside_root, build))[0] for build in disk.listdir(aside_root)[1]}
    running = plan.still_parked(_carry_out(run, plan.unpark_steps(aside_root, parked), out))
    dirs = disk.listdir(bin_dir)[1]
    for step in plan.tidy_steps(bin_dir, dirs, parked, running):
        run.do(step)  # nobody is told: folders left empty or half deleted
    _carry_out(run, plan.stale_steps(bin_dir, dirs, running, current, uninstalled), out)


def _carry_out(run: StepExecutor, steps: Iterable[Step], out: Outcome) -> list[Step]:
    """Each step done in turn and said as done (so a failure part way still shows what was)."""
    done = []
    for step in steps:
        done.append(run.do(step))
        out.steps.append(done[-1])
    return done


def _read_conf(disk: Disk, path: str) -> bytes | None:
    """A config in the conf dir; InstallError when it is over ``MAX_CONF`` (never cut short) or
    unreadable."""
    try:
        raw = disk.read_entry(path, MAX_CONF + 1)
    except OSError as exc:
        raise InstallError(f"cannot read {path}: {exc.strerror or exc}") from None
    if raw is not None and len(raw) > MAX_CONF:
        raise InstallError(
            f"{path} is over {MAX_CONF >> 20} MiB, the most install reads: not a file install can use: move it away"
        )
    return raw
