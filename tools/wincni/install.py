"""``wincni install``: the release folder into containerd's CNI bin dir, the rendered config into
its conf dir, shadowing configs moved aside; ``--uninstall`` undoes exactly that.

The imperative shell: it reads the node, asks ``layout`` and ``render`` (pure) what to do, and
does it through a ``Disk``. The upgrade rules (why launchers are renamed aside, when an old build's
contents folder goes) are in ``layout``'s docstring.

A folder install finds may have been prepared by a user (on Windows anyone may create folders at
the root of C:). So before anything is read from or laid into the bin or conf dir, the folder is
taken over (``Disk.claim``: admin-owned, nobody else may write) and every entry in it an
administrator did not lay is removed (bin dir) or moved to a fresh admin-only quarantine folder
(conf dir), never followed; only then is the manifest read, and believed only when it is an
admin's file whose paths all lie in the bin and conf dirs.
"""

from __future__ import annotations

import argparse
import difflib
import hashlib
import json
import os
from dataclasses import dataclass, field
from typing import Callable, Mapping, TextIO

from basics.errors import UnsafePath

from . import layout
from .disk import Disk
from .flagfile import FlagFileError, Reader, named, quote
from .flagfile import read as read_flag
from .layout import Manifest, Step
from .trust import read_manifest

MAX_CONF = 1 << 20
MAX_LAUNCHER = 64 << 20
MAX_ZIP_BYTES, MAX_ZIP_ENTRIES = 512 << 20, 20000
EXIT_OK, EXIT_FAILED = 0, 1


class InstallError(Exception):
    """Install cannot go on: the message names the input or file and the way out (exit status 1)."""


@dataclass
class Outcome:
    steps: list[Step] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    diff: str = ""
    dns: dict = field(default_factory=dict)  # the cluster DNS the config was rendered with, and whence
    build: str = ""
    bin_dir: str = ""
    conf_path: str = ""
    dirs_from: str = ""  # why these bin and conf dirs (containerd.locate's answer)
    containerd_version: int = 0  # config.toml's version (containerd.CniDirs.version), which picks the cniVersion
    install: tuple[str, ...] = ()  # this install's arguments, as the manifest records them (rerun_args)


def add_arguments(p: argparse.ArgumentParser, platform: str) -> None:
    from basics.cli import DIR, FILE, FILE_OR_DIR, add_output

    from .containerd import CONF_NAME, add_config_argument

    p.add_argument(
        "--from",
        dest="source",
        type=FILE_OR_DIR,
        metavar="DIR|ZIP",
        help="the release folder or zip (default: the folder this wincni runs from)",
    )
    p.add_argument(
        "--cni-bin-dir",
        type=DIR,
        metavar="DIR",
        help="default: containerd's bin_dir(s), else its own default (wincni dirs says)",
    )
    p.add_argument(
        "--cni-conf-dir",
        type=DIR,
        metavar="DIR",
        help="default: containerd's conf_dir, else its own default (wincni dirs says)",
    )
    add_config_argument(p, platform)
    p.add_argument(
        "--net-conf",
        type=FILE,
        default=_net_conf_default(platform),
        metavar="FILE",
        help="flanneld's net-conf.json (the kube-flannel-cfg ConfigMap; default %(default)s)",
    )
    p.add_argument(
        "--service-cidr",
        default="10.96.0.0/12",
        metavar="CIDR",
        help="the cluster's service range: the config excepts it from SNAT and routes it, and the cluster "
        "DNS defaults to its tenth address (default %(default)s, kubeadm's)",
    )
    p.add_argument(
        "--kubelet-config",
        type=FILE,
        default=_kubelet_config_default(platform),
        metavar="FILE",
        help="the kubelet's config, for clusterDNS and clusterDomain (default %(default)s)",
    )
    p.add_argument(
        "--cluster-dns",
        action="append",
        default=[],
        metavar="IP",
        help="the cluster DNS service's address (default: the kubelet config's clusterDNS, else the "
        "service CIDR's tenth address); repeat for more",
    )
    p.add_argument(
        "--cluster-domain",
        default="",
        metavar="DOMAIN",
        help="(default: the kubelet config's clusterDomain, else cluster.local)",
    )
    p.add_argument(
        "--template",
        type=FILE,
        default="",
        metavar="FILE",
        help="a conflist template the operator owns (e.g. from a ConfigMap): its __TOKENS__ filled in, "
        "nothing else changed; default: wincni's own config",
    )
    p.add_argument(
        "--node-ip",
        default="",
        metavar="IP[/PREFIX]",
        help="the node's management IP (host-gw; default: the address of the default route's interface)",
    )
    p.add_argument(
        "--conf-name",
        default=CONF_NAME,
        type=_conf_name,
        metavar="NAME",
        help="the config's file name in the conf dir; containerd loads the first by name, so configs "
        "sorting before it are moved aside unless --keep-others (default %(default)s)",
    )
    p.add_argument("--keep-others", action="store_true", help="leave configs that sort before ours in place")
    p.add_argument("--dry-run", action="store_true", help="print the plan and the config diff; change nothing")
    p.add_argument("--uninstall", action="store_true", help="remove what install laid down, restore moved configs")
    add_output(p, "the build, the CNI dirs, every step and warning")


def _conf_name(text: str) -> str:
    """--conf-name's type: a file name in the conf dir that libcni loads. A path would be written
    outside the conf dir, where the next install's manifest check refuses it and uninstall never
    removes it."""
    if not layout.plain_name(text) or not text.endswith(layout.CONF_EXTENSIONS):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a config file name in the conf dir ({', '.join(layout.CONF_EXTENSIONS)}: "
            "what containerd loads)"
        )
    return text


def run(
    args: argparse.Namespace,
    stdout: TextIO,
    platform: str,
    cwd: str,
    disk: Disk | None = None,
    env: Mapping[str, str] | None = None,
) -> int:
    """0 done (warnings allowed), 1 failed; the steps done so far are printed either way. ``env``
    gives %ProgramFiles% (containerd's folder on Windows)."""
    disk = disk or Disk()
    out = Outcome()
    try:
        bin_dir, conf_dir = _dirs(args, platform, env or {}, out)
        out.bin_dir, out.conf_path = bin_dir, os.path.join(conf_dir, args.conf_name)
        if args.uninstall:
            _uninstall(args, bin_dir, conf_dir, disk, platform, cwd, out)
        else:
            _install(args, bin_dir, conf_dir, disk, platform, cwd, out)
    except InstallError as exc:
        _print(args, out, stdout, error=str(exc))
        return EXIT_FAILED
    finally:
        disk.release()
    _print(args, out, stdout)
    return EXIT_OK


def _kubelet_config_default(platform: str) -> str:
    return r"C:\var\lib\kubelet\config.yaml" if platform == "win32" else "/var/lib/kubelet/config.yaml"


def _net_conf_default(platform: str) -> str:
    from .facts import default_paths

    return default_paths(platform)["net_conf"]


def _dirs(
    args: argparse.Namespace, platform: str, env: Mapping[str, str], out: Outcome, read: Reader | None = None
) -> tuple[str, str]:
    """The flags, else where ``containerd.locate`` says containerd looks (its defaults even on a
    node without containerd yet: install lays for containerd); config.toml is read once, for its
    version too (``out.containerd_version``, which picks the rendered cniVersion). A config.toml
    it cannot use fails install when it had to name a folder, else is a warning (1.0.0 suits every
    containerd). ``read``: the config's reader (default: --containerd-config's, on the node's files)."""
    from .containerd import CniDirs, ConfigError, locate, said

    given = [
        flag for flag, value in (("--cni-bin-dir", args.cni_bin_dir), ("--cni-conf-dir", args.cni_conf_dir)) if value
    ]
    read = read or Reader("--containerd-config")
    try:
        found = locate(platform, env, read, os.path.isdir, args.containerd_config)
    except (ConfigError, FlagFileError) as exc:
        if len(given) < 2:
            raise InstallError(f"{read.quote(str(exc))}: fix it, or pass --cni-bin-dir and --cni-conf-dir") from None
        out.warnings.append(
            f"{read.quote(str(exc))}: the config is rendered at cniVersion 1.0.0, for which containerd 2.x "
            "never asks the plugins' STATUS"
        )
        found = CniDirs(args.cni_bin_dir, args.cni_conf_dir)
    out.containerd_version = found.version
    out.dirs_from = said(given, found)
    return (os.path.normpath(args.cni_bin_dir or found.bin_dir), os.path.normpath(args.cni_conf_dir or found.conf_dir))


# ---------------------------------------------------------------------------- install


def _install(
    args: argparse.Namespace, bin_dir: str, conf_dir: str, disk: Disk, platform: str, cwd: str, out: Outcome
) -> None:
    rendered = _render(args, platform, cwd, out)
    with _bundle(args.source, disk) as bundle:
        out.build = bundle.build
        try:
            previous, _ = _take(bin_dir, conf_dir, disk, out, args.dry_run)
            files, dirs = disk.listdir(bin_dir)
            out.warnings += _missing_plugins(rendered, bundle.launchers + tuple(files), bin_dir)
            laid = (
                bool(previous.digest(bundle.contents))
                and bundle.contents in dirs
                and disk.digest(os.path.join(bin_dir, bundle.contents)) == previous.digest(bundle.contents)
            )
            bin_steps = layout.plan_bin(
                bundle,
                bin_dir,
                files + dirs,
                lambda n: disk.same(os.path.join(bundle.root, n), os.path.join(bin_dir, n)),
                previous,
                laid,
            )
            if not args.dry_run:
                for step in bin_steps:
                    out.steps.append(_lay(step, bin_dir, previous.build, disk))
                out.steps += cleanup(bin_dir, bundle.build, disk)
            _folder(conf_dir, disk, out, args.dry_run, quarantine=True)
            conf_files, _ = disk.listdir(conf_dir)
            existing = _read(disk.read_entry, out.conf_path, MAX_CONF)
            conf_steps = layout.plan_conf(conf_dir, conf_files, args.conf_name, rendered, existing, args.keep_others)
            if existing != rendered:
                out.diff = "".join(
                    difflib.unified_diff(
                        (existing or b"").decode("utf-8", "replace").splitlines(True),
                        rendered.decode().splitlines(True),
                        out.conf_path if existing is not None else "/dev/null",
                        out.conf_path,
                    )
                )
            if args.dry_run:
                out.steps += bin_steps + conf_steps
                return
            moved = []
            for step in conf_steps:
                if step.action == "write":
                    disk.write_atomic(step.path, rendered)
                elif step.action == "disable":
                    target = step.path + layout.DISABLED
                    disk.replace(step.path, target)
                    moved.append((step.path, target))
                out.steps.append(step)
            contents = previous.digest(bundle.contents) if laid else disk.digest(os.path.join(bin_dir, bundle.contents))
            manifest = Manifest(
                build=bundle.build,
                launchers=bundle.launchers,
                conf=out.conf_path,
                install=out.install,
                conf_digest=hashlib.sha256(rendered).hexdigest(),
                moved=tuple(dict.fromkeys(previous.moved + tuple(moved))),
                contents=tuple(
                    (n, d)
                    for n, d in previous.contents
                    if n != bundle.contents and disk.exists(os.path.join(bin_dir, n))
                )
                + ((bundle.contents, contents),),
            )
            disk.write_atomic(os.path.join(bin_dir, layout.MANIFEST), manifest.encode())
        except UnsafePath as exc:
            raise InstallError(f"{exc}; nothing was laid through it") from None
        except OSError as exc:
            raise InstallError(
                f"{exc.filename or ''}: {exc.strerror or exc}; the steps above were done, "
                "running install again finishes the job"
            ) from None


def _missing_plugins(rendered: bytes, present: tuple[str, ...], bin_dir: str) -> list[str]:
    """A plugin the config chains after flannel that is neither laid by install nor in the bin dir
    (a template's ``{"type": "portmap"}``): containerd fails every pod's ADD on it."""
    have = {n[:-4] if n.lower().endswith(".exe") else n for n in present}
    chained = [p.get("type") for p in json.loads(rendered).get("plugins", [])[1:] if isinstance(p, dict)]
    return [
        f"the config chains plugin {t!r}, which is not in {bin_dir}: every pod's ADD fails until it is "
        "there (or remove it from the template)"
        for t in dict.fromkeys(chained)
        if t not in have
    ]


def _render(args: argparse.Namespace, platform: str, cwd: str, out: Outcome) -> bytes:
    """The config to install, loaded by the plugins' own parsers, then judged as the doctor judges
    it on the node (``judge``): InstallError (nothing changed yet) for anything a plugin would
    refuse or the doctor would fail, quoting no file an administrator does not own; the doctor's
    warnings become install's."""
    from plugins.cni.errors import INVALID_CONFIG, CniError
    from plugins.flannel import netconf

    from . import judge, render
    from .facts import endpoint_policies, flavor_of, frozen_dir

    read: list = []  # (flag, what was read) for quote
    try:
        found = read_flag("--net-conf", args.net_conf, netconf.MAX_NET_CONF)
        if found is None:
            raise InstallError(
                f"{args.net_conf} does not exist: pass --net-conf with flanneld's net-conf.json "
                "(the kube-flannel-cfg ConfigMap's net-conf.json)"
            )
        read.append(("--net-conf", found))
        backend = netconf.parse(found.data, args.net_conf)
        template = read_flag("--template", args.template, render.MAX_TEMPLATE) if args.template else None
        if args.template and template is None:
            raise InstallError(f"--template {args.template} does not exist")
        read.append(("--template", template))
        uses_node = template is not None and {"__NODE_IP__", "__NODE_SUBNET__"} & render.template_tokens(template.data)
        node_ip = args.node_ip or (_default_node_ip() if backend.type == "host-gw" or uses_node else "")
        servers, domain = _cluster_dns(args, out)
        values = render.values(backend, args.service_cidr, node_ip, servers, domain)
        out.dns = {"servers": [values["__DNS_SERVER__"]], "domain": values["__DNS_DOMAIN__"], **out.dns}
        doc = (
            render.conflist(values, render.cni_version(out.containerd_version))
            if template is None
            else render.from_template(template.data, args.template, values)
        )
        built, loaded = render.validate(doc, backend, platform, cwd)
        policies, problem = endpoint_policies(out.conf_path, flavor_of(built["type"]), loaded, None, None)
        if problem is not None:
            raise CniError(INVALID_CONFIG, problem.message, problem.fix)
    except CniError as exc:
        raise InstallError(quote(str(exc), *read)) from None
    except FlagFileError as exc:
        raise InstallError(str(exc)) from None
    out.install = rerun_args(args, out, cwd)
    origin = judge.Origin(out.conf_path, out.install, platform == "win32", frozen_dir())
    config = judge.Config(origin, built["name"], built["type"], policies, backend, values["__CLUSTER_CIDR__"], node_ip)
    _verdict(judge.judge(config), out, read)
    return render.encode(doc)


def _verdict(findings: list, out: Outcome, read: list) -> None:
    """The judge's findings on what install would lay: a failure refuses it (InstallError, nothing
    changed yet), a warning is said and counted; each with its fix, as the doctor prints it."""

    def said(status: str) -> list[str]:
        return [quote(f"{c.message}; fix: {c.fix}", *read) for c in findings if c.status == status]

    if said("fail"):
        raise InstallError("\n".join(said("fail")))
    out.warnings += said("warn")


def rerun_args(args: argparse.Namespace, out: Outcome, cwd: str) -> tuple[str, ...]:
    """This install as arguments that render the same config again from anywhere (paths made
    absolute, the dirs it chose named): what the manifest records for the doctor's fixes."""
    from .facts import frozen_dir

    def path(p: str) -> str:
        return os.path.normpath(os.path.join(cwd, p))

    source = path(args.source) if args.source else frozen_dir()
    argv = ["install"] + (["--from", source] if source else [])
    argv += ["--cni-bin-dir", path(out.bin_dir), "--cni-conf-dir", path(os.path.dirname(out.conf_path))]
    argv += ["--net-conf", path(args.net_conf), "--service-cidr", args.service_cidr]
    argv += ["--kubelet-config", path(args.kubelet_config)]
    argv += [a for ip in args.cluster_dns for a in ("--cluster-dns", ip)]
    for flag, value in (("--cluster-domain", args.cluster_domain), ("--node-ip", args.node_ip)):
        argv += [flag, value] if value else []
    argv += ["--template", path(args.template)] if args.template else []
    argv += ["--conf-name", args.conf_name] + (["--keep-others"] if args.keep_others else [])
    return tuple(argv)


def _take(bin_dir: str, conf_dir: str, disk: Disk, out: Outcome, dry_run: bool) -> tuple[Manifest, bool]:
    """Take the bin dir over (a dry run: say what that would do) and read the manifest in it;
    True when one was there but ignored (the warning says why)."""
    suspicious = _folder(bin_dir, disk, out, dry_run, quarantine=False)
    manifest, why = read_manifest(disk, os.path.join(bin_dir, layout.MANIFEST), conf_dir, suspicious)
    if why:
        out.warnings.append(why)
    return manifest, bool(why)


def _folder(path: str, disk: Disk, out: Outcome, dry_run: bool, quarantine: bool) -> bool:
    """Make ``path`` install's (``Disk.claim``) and rid it of what an administrator did not lay
    (removed; with ``quarantine``, moved into a fresh admin-only folder in it instead), saying so;
    a dry run only says. True when a folder on the way had to be taken over (or would be)."""
    done, foreign = disk.survey(path) if dry_run else disk.claim(path)
    would = "would be " if dry_run else ""
    for t in done:
        if t.aside:
            out.steps.append(
                Step("quarantine", t.path, detail=f"{t.why}: {would}moved to {t.aside}, a new admin-only one made")
            )
        else:
            out.steps.append(Step("takeover", t.path, detail=f"{t.why}: {would}made admin-only"))
    folder = ""
    for entry, problem in foreign:
        if not quarantine:
            if not dry_run:
                disk.discard(entry)
            out.steps.append(Step("remove", entry, detail=f"{problem}: not laid by an administrator"))
            continue
        if not folder:
            folder = disk.fresh_name(os.path.join(path, layout.QUARANTINE))
            if not dry_run:
                disk.fresh_dir(folder)
        if not dry_run:
            disk.rename(entry, disk.fresh_name(os.path.join(folder, os.path.basename(entry))))
        out.steps.append(
            Step("quarantine", entry, detail=f"{problem}: not laid by an administrator; moved to {folder}")
        )
    return bool(done)


def _lay(step: Step, bin_dir: str, previous_build: str, disk: Disk) -> Step:
    """One launcher or the contents folder into place; a running launcher is renamed aside."""
    if step.action == "copy":
        partial = step.path + layout.PARTIAL
        if disk.exists(partial):
            disk.rmtree(partial)
        disk.copy_tree(step.source, partial)
        # One there is not the folder install laid: swapped for the fresh copy (two renames apart).
        doomed = _trash(step.path, disk) if disk.exists(step.path) else ""
        disk.rename(partial, step.path)
        if doomed:
            disk.rmtree(doomed)
    elif step.action in ("install", "replace"):
        name = os.path.basename(step.path)
        new = os.path.join(bin_dir, f".{name}.wincni-new")
        if disk.exists(new):  # an interrupted run's
            disk.remove(new)
        disk.copy_file(step.source, new)
        try:
            disk.replace(new, step.path)
        except PermissionError:  # running: Windows lets it be renamed, not replaced
            aside = _aside(step.path, bin_dir, previous_build, disk)
            disk.replace(new, step.path)
            return Step("replace", step.path, step.source, f"in use: the running one moved to {aside}")
    elif step.action == "remove":
        try:
            disk.remove(step.path)
        except PermissionError:
            return Step(
                "aside", step.path, detail=f"in use: moved to {_aside(step.path, bin_dir, previous_build, disk)}"
            )
    return step


def _discard_contents(path: str, disk: Disk) -> None:
    """A contents folder deleted, after a rename proved nothing holds a file in it (Windows
    refuses the rename then); a later cleanup finishes what a crash left."""
    disk.rmtree(_trash(path, disk))


def _trash(path: str, disk: Disk) -> str:
    """``path`` renamed to ``<name>.trash`` (an older one deleted first); the new name."""
    doomed = path + layout.TRASH
    if disk.exists(doomed):
        disk.rmtree(doomed)
    disk.rename(path, doomed)
    return doomed


def _aside(path: str, bin_dir: str, build: str, disk: Disk) -> str:
    """Park a running launcher under the build it loads (read from the file; else ``build``, the
    manifest's): that build's contents folder stays while it is parked."""
    own = layout.embedded_build(disk.read_entry(path, MAX_LAUNCHER) or b"")
    aside = layout.aside_path(bin_dir, own or build, os.path.basename(path), disk.exists)
    disk.makedirs(os.path.dirname(aside))
    disk.rename(path, aside)
    return aside


def cleanup(bin_dir: str, current: str, disk: Disk, uninstalled: str = "") -> list[Step]:
    """Delete parked launchers nothing runs any more, then the contents folders no launcher needs
    (``uninstalled``: the build uninstall removes, named as such)."""
    steps: list[Step] = []
    parked: dict[str, int] = {}
    aside_root = os.path.join(bin_dir, layout.ASIDE_DIR)
    for build in disk.listdir(aside_root)[1]:
        folder = os.path.join(aside_root, build)
        for name in disk.listdir(folder)[0]:
            path = os.path.join(folder, name)
            try:
                disk.remove(path)
                steps.append(Step("remove", path, detail="no longer running"))
            except OSError:
                parked[build] = parked.get(build, 0) + 1
                steps.append(Step("held", path, detail="still running: removed by a later install"))
        if not parked.get(build):
            _quietly(disk.rmdir, folder)
    if not disk.listdir(aside_root)[1]:
        _quietly(disk.rmdir, aside_root)
    steps += [
        Step("held", os.path.join(bin_dir, layout.CONTENTS_PREFIX + build), detail="kept for its running launchers")
        for build in sorted(parked)
        if disk.exists(os.path.join(bin_dir, layout.CONTENTS_PREFIX + build))
    ]
    for name in disk.listdir(bin_dir)[1]:  # what an interrupted Disk.discard left
        if layout.DISCARDED in name:
            _quietly(disk.purge, os.path.join(bin_dir, name))
    for name in layout.stale_contents(disk.listdir(bin_dir)[1], parked, current):
        path = os.path.join(bin_dir, name)
        try:
            if name.endswith((layout.TRASH, layout.PARTIAL)):
                disk.rmtree(path)
            else:
                _discard_contents(path, disk)
            steps.append(Step("remove", path, detail=_contents_detail(name, current, uninstalled)))
        except OSError:
            steps.append(Step("held", path, detail="in use: removed by a later install"))
    return steps


def _contents_detail(name: str, current: str, uninstalled: str) -> str:
    """What a contents folder cleanup removes was: the uninstalled build, a leftover, or a build
    newer or older than ``current`` by its build time (a rollback removes a newer one)."""
    build = name[len(layout.CONTENTS_PREFIX) :]
    if uninstalled and build == uninstalled:
        return "the uninstalled build"
    if not layout.is_contents(name):
        return "left by an interrupted install"
    built, now = build.rpartition("-")[2], current.rpartition("-")[2]
    age = "a newer" if current and built > now else "an older" if current and built < now else "another"
    return f"{age} build, no longer used"


def _quietly(op, path: str) -> None:
    try:
        op(path)
    except OSError:
        pass


# ---------------------------------------------------------------------------- uninstall


def _uninstall(
    args: argparse.Namespace, bin_dir: str, conf_dir: str, disk: Disk, platform: str, cwd: str, out: Outcome
) -> None:
    if not os.path.isdir(bin_dir):
        out.warnings.append(f"no {bin_dir}: nothing installed by wincni install there")
        return
    try:
        manifest, ignored = _take(bin_dir, conf_dir, disk, out, args.dry_run)
        if os.path.isdir(conf_dir):
            _folder(conf_dir, disk, out, args.dry_run, quarantine=True)
    except UnsafePath as exc:
        raise InstallError(f"{exc}; nothing was removed through it") from None
    except OSError as exc:
        raise InstallError(f"{exc.filename or ''}: {exc.strerror or exc}") from None
    manifest_path = os.path.join(bin_dir, layout.MANIFEST)
    trusted = bool(manifest.build)
    if trusted:
        out.build, out.conf_path = manifest.build, manifest.conf
        plan = _laid(manifest, bin_dir, disk)
    elif ignored:
        plan = _provable(args, bin_dir, conf_dir, disk, platform, cwd, out)
    else:
        out.warnings.append(f"no {layout.MANIFEST} in {bin_dir}: nothing installed by wincni install there")
        return
    if args.dry_run:
        contents = layout.CONTENTS_PREFIX + manifest.build
        out.steps += plan + (
            [Step("remove", os.path.join(bin_dir, contents), detail=_contents_detail(contents, "", manifest.build))]
            if trusted
            else []
        )
        return
    try:
        for step in plan:
            if step.action == "restore":
                disk.rename(step.source, step.path)
                out.steps.append(step)
            elif step.action == "remove" and layout.in_folder(step.path, conf_dir):
                disk.remove(step.path)
                out.steps.append(step)
            elif step.action == "remove" and os.path.basename(step.path).startswith(layout.CONTENTS_PREFIX):
                _discard_contents(step.path, disk)
                out.steps.append(step)
            elif step.action == "remove":
                out.steps.append(_lay(step, bin_dir, manifest.build, disk))
            else:
                out.steps.append(step)
        if trusted:
            out.steps += cleanup(bin_dir, "", disk, manifest.build)
            disk.remove(manifest_path)
    except OSError as exc:
        raise InstallError(f"{exc.filename or ''}: {exc.strerror or exc}") from None
    finally:
        out.warnings += [_left(step) for step in out.steps if step.action in ("keep", "held")]


def _left(step: Step) -> str:
    """What uninstall leaves behind, as a warning: a config it keeps still names the plugins it removed."""
    if step.action == "keep":
        return (
            f"{step.path} left in place: changed since install, it still names the plugins this uninstall "
            "removed; delete it, or put back the config the node should run pods with"
        )
    return f"{step.path} left in place: {step.detail}"


def _laid(manifest: Manifest, bin_dir: str, disk: Disk) -> list[Step]:
    """What the manifest says install laid: its config unless changed since, the configs it
    moved aside, its launchers."""
    plan = []
    conf = _read(disk.read_entry, manifest.conf, MAX_CONF) if manifest.conf else None
    if conf is not None:
        ours = hashlib.sha256(conf).hexdigest() == manifest.conf_digest
        plan.append(
            Step(
                "remove" if ours else "keep",
                manifest.conf,
                detail="" if ours else "changed since install",
            )
        )
    plan += [
        Step("restore", original, disabled)
        for original, disabled in manifest.moved
        if disk.exists(disabled) and not disk.exists(original)
    ]
    return plan + [
        Step("remove", os.path.join(bin_dir, n)) for n in manifest.launchers if disk.exists(os.path.join(bin_dir, n))
    ]


def _provable(
    args: argparse.Namespace, bin_dir: str, conf_dir: str, disk: Disk, platform: str, cwd: str, out: Outcome
) -> list[Step]:
    """Without a manifest to believe, what uninstall can prove install laid: the launchers and
    contents folder of this release (``--from``, else the running one) byte for byte, the config
    this install renders. Nothing is restored."""
    plan = []
    conf = os.path.join(conf_dir, args.conf_name)
    try:
        if _read(disk.read_entry, conf, MAX_CONF) == _render(args, platform, cwd, out):
            plan.append(Step("remove", conf, detail="the config this install renders"))
    except InstallError as exc:
        out.warnings.append(f"{conf} left in place: cannot render the config to compare ({exc})")
    try:
        with _bundle(args.source, disk) as bundle:
            out.build = bundle.build
            contents = os.path.join(bin_dir, bundle.contents)
            plan += [
                Step("remove", os.path.join(bin_dir, n), detail=f"the launcher of build {bundle.build}")
                for n in bundle.launchers
                if disk.same(os.path.join(bundle.root, n), os.path.join(bin_dir, n))
            ]
            if disk.exists(contents) and disk.digest(contents) == disk.digest(
                os.path.join(bundle.root, bundle.contents)
            ):
                plan.append(Step("remove", contents, detail=f"the contents of build {bundle.build}"))
    except InstallError as exc:
        out.warnings.append(f"launchers left in place: no release to compare them with ({exc})")
    return plan


# ---------------------------------------------------------------------------- inputs


def _read(read: Callable[[str, int], bytes | None], path: str, cap: int) -> bytes | None:
    """A file in a CNI folder by ``read`` (a ``Disk`` reader); InstallError when it is over ``cap``
    (a whole number of MiB; never cut short) or unreadable."""
    try:
        raw = read(path, cap + 1)
    except OSError as exc:
        raise InstallError(f"cannot read {path}: {exc.strerror or exc}") from None
    if raw is not None and len(raw) > cap:
        raise InstallError(
            f"{path} is over {cap >> 20} MiB, the most install reads: not a file install can use: move it away"
        )
    return raw


class _bundle:
    """The release folder to lay down: ``--from DIR``, ``--from ZIP`` (unpacked to a temp folder,
    removed afterwards), else the folder of the running frozen ``wincni``."""

    def __init__(self, source: str | None, disk: Disk) -> None:
        self.source, self.disk, self.tmp = source, disk, ""

    def __enter__(self) -> layout.Bundle:
        root = self.source
        if root and not self.disk.exists(root):
            raise InstallError(
                f"--from {root} does not exist: pass the release folder (make dist's dist/wincni, "
                "or the unpacked release zip) or the release zip"
            )
        if not root:
            from .facts import frozen_dir

            root = frozen_dir()
            if not root:
                raise InstallError("this wincni runs from source, not from a release folder: pass --from DIR|ZIP")
        elif not os.path.isdir(root):
            root = self.tmp = _unzip(root)
        files, dirs = self.disk.listdir(root)
        try:
            return layout.Bundle.of(root, files, dirs)
        except ValueError as exc:
            raise InstallError(str(exc)) from None

    def __exit__(self, *exc: object) -> None:
        if self.tmp:
            import shutil

            shutil.rmtree(self.tmp, ignore_errors=True)


def _unzip(path: str) -> str:
    """The release zip ``path`` unpacked into a temp folder: opened as ``basics.inputfile`` opens
    what a flag names (a regular file, never waited on, no user's link followed)."""
    import tempfile
    import zipfile

    from basics.inputfile import open_file

    try:
        with named("--from", path):
            fd, _ = open_file(path, MAX_ZIP_BYTES)
    except FlagFileError as exc:
        raise InstallError(str(exc)) from None
    try:
        with open(fd, "rb") as f, zipfile.ZipFile(f) as zf:
            infos = zf.infolist()
            if len(infos) > MAX_ZIP_ENTRIES or sum(i.file_size for i in infos) > MAX_ZIP_BYTES:
                raise InstallError(
                    f"{path}: more than {MAX_ZIP_ENTRIES} entries or {MAX_ZIP_BYTES >> 20} MiB: "
                    "not a wincni release zip"
                )
            tmp = tempfile.mkdtemp(prefix="wincni-release-")
            zf.extractall(tmp)  # drops absolute paths and ".." from member names
    except (OSError, zipfile.BadZipFile) as exc:
        raise InstallError(f"cannot unpack {path}: {exc}") from None
    # Executable bits are not kept by zipfile; on POSIX the launchers must run.
    if os.name != "nt":
        for name in os.listdir(tmp):
            p = os.path.join(tmp, name)
            if os.path.isfile(p) and layout.is_launcher(name):
                os.chmod(p, 0o755)
    return tmp


def _cluster_dns(args: argparse.Namespace, out: Outcome) -> tuple[tuple[str, ...], str]:
    """(servers, domain): the flags, else the kubelet's own config, else ((), "") for the defaults
    ``render.values`` applies, with a warning saying so. ``out.dns["from"]`` says which."""
    from . import kubelet

    found = None
    try:
        for ip in args.cluster_dns:
            kubelet.check_server(ip, "--cluster-dns")
        if args.cluster_domain:
            kubelet.check_domain(args.cluster_domain, "--cluster-domain")
        dns = kubelet.ClusterDns((), "")
        if not (args.cluster_dns and args.cluster_domain):
            found = read_flag("--kubelet-config", args.kubelet_config, kubelet.MAX_BYTES)
            if found is not None:
                dns = kubelet.parse(found.data.decode("utf-8-sig", "replace"), args.kubelet_config)
            else:
                out.warnings.append(
                    f"no kubelet config at {args.kubelet_config}: pass --kubelet-config, or "
                    "--cluster-dns and --cluster-domain, unless kubeadm's defaults (the service "
                    "CIDR's tenth address, cluster.local) are this cluster's"
                )
    except kubelet.KubeletConfigError as exc:
        message = f"{exc}; or pass --cluster-dns and --cluster-domain"
        raise InstallError(quote(message, ("--kubelet-config", found))) from None
    servers, domain = tuple(args.cluster_dns) or dns.servers, args.cluster_domain or dns.domain
    out.dns = {
        "from": "flags"
        if args.cluster_dns and args.cluster_domain
        else args.kubelet_config
        if dns.servers or dns.domain
        else "defaults"
    }
    return servers, domain


def _default_node_ip() -> str:
    """host-gw needs it (and a template naming __NODE_IP__); vxlan does not (win-overlay takes the
    management IP from HNS). The source address the routing table picks for an outside
    destination: the default route's interface, as flannel's scripts choose it. A UDP connect
    sends nothing."""
    import socket

    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("192.0.2.1", 9))  # TEST-NET-1: never answered, never sent to
            return s.getsockname()[0]
    except OSError as exc:
        raise InstallError(f"cannot tell the node's IP (no default route?): {exc}; pass --node-ip") from None


# ---------------------------------------------------------------------------- output


def _print(args: argparse.Namespace, out: Outcome, stdout: TextIO, error: str = "") -> None:
    if args.output == "json":
        doc: dict = {
            "build": out.build,
            "binDir": out.bin_dir,
            "config": out.conf_path,
            "dirsFrom": out.dirs_from,
            "dryRun": args.dry_run,
            "steps": [{"action": s.action, "path": s.path, "detail": s.detail} for s in out.steps],
            "warnings": out.warnings,
        }
        if not args.uninstall:
            doc["dns"] = out.dns
        if args.dry_run and not args.uninstall:
            doc["diff"] = out.diff
        if error:
            doc["error"] = error
        json.dump(doc, stdout, indent=2)
        stdout.write("\n")
        return
    for s in out.steps:
        stdout.write(f"{s.action.upper():<8} {s.path}" + (f"  ({s.detail})" if s.detail else "") + "\n")
    for w in out.warnings:
        stdout.write(f"WARN     {w}\n")
    if args.dry_run and out.diff:
        stdout.write("\n" + out.diff)
    if error:
        stdout.write("".join(f"FAILED: {line}\n" for line in error.splitlines()))
        return
    changed = sum(s.action not in ("keep", "held") for s in out.steps)
    verb = "would change" if args.dry_run else ("uninstalled:" if args.uninstall else "changed")
    if out.dirs_from:
        stdout.write(f"\nCNI dirs {out.bin_dir} and {os.path.dirname(out.conf_path)}: {out.dirs_from}")
    build = f"build {out.build}" if out.build else ("no build installed" if args.uninstall else "build -")
    stdout.write(f"\n{build}: {verb} {changed} item(s), {len(out.warnings)} warning(s)\n")
