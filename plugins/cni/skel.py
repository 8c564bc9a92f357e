"""Command dispatch: the one place a CNI invocation is checked, routed, and printed.

``run`` parses in the order that is cheapest first (env, stdin, JSON, version, name) and asks
the plugin for its ``Handlers`` only once the command has a decoded config it may run, so
VERSION and input rejected here never import the plugin's modules (its config model and schema,
libhns). The config's schema is the handler's to check: a plugin knows which fields each
command needs (``plugins.cni.config.validate_for``).
"""

from __future__ import annotations

import sys
import time

from basics import jsontext
from basics.closedpipe import StdoutClosed, StdoutFailed, end_closed, end_failed, failed

from . import log
from . import version as ver
from .buildinfo import VERSION as WINCNI_VERSION  # noqa: F401 - kept for importers
from .errors import DECODE_FAILURE, INCOMPATIBLE_VERSION, INTERNAL, IO_FAILURE, CniError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable, Mapping, Sequence, TextIO

    from .env import CmdArgs
    from .result import Result


# The lowest config version that allows each command (CNI 0.4.0 CHECK, 1.1.0 GC/STATUS).
_MIN_VERSION = {"CHECK": "0.4.0", "GC": "1.1.0", "STATUS": "1.1.0"}
#: The most stdin a command reads: real configs (with a node's GC attachment list) are tens of KiB.
MAX_STDIN = 4 << 20


def _ready(req: Request) -> None:
    """GC or STATUS of a plugin without one: like the Go skel, nothing to collect, and ready."""


class Handlers:
    """What a plugin does for each command, each taking the ``Request``: ``add`` returns the
    result, the others nothing. Named fields, so no order is a contract, and frozen: a plugin's
    handlers are fixed once built. A plain class: ``dataclasses`` and ``typing`` cost more to
    import than a VERSION."""

    __slots__ = ("add", "delete", "check", "gc", "status")

    def __init__(
        self,
        *,
        add: Callable[[Request], Any],
        delete: Callable[[Request], None],
        check: Callable[[Request], None],
        gc: Callable[[Request], None] = _ready,
        status: Callable[[Request], None] = _ready,
    ) -> None:
        for name, handler in zip(self.__slots__, (add, delete, check, gc, status)):
            object.__setattr__(self, name, handler)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"Handlers are frozen: {name} cannot be replaced")


class Plugin:
    """A plugin: its name, ``handlers`` (a function importing the plugin's command code and
    returning its ``Handlers``: called only once a command has a config it may run), its one-line
    description, and what the core may not import itself: ``backend`` (env, platform -> the HNS
    backend's name, for the debug log's start line) and ``siblings`` (plugin type -> the entry module
    of that plugin of ours, or None: in-process delegation). A plain class: ``dataclasses`` costs
    more to import than a VERSION."""

    __slots__ = ("name", "handlers", "description", "backend", "siblings")

    def __init__(
        self,
        name: str,
        handlers: Callable[[], Handlers],
        description: str,
        backend: Callable[[Mapping[str, str], str], str] | None = None,
        siblings: Callable[[str], str | None] | None = None,
    ) -> None:
        self.name = name
        self.handlers = handlers
        self.description = description
        self.backend = backend
        self.siblings = siblings

    def __repr__(self) -> str:
        return f"Plugin(name={self.name!r})"

    def main(self, env: Mapping[str, str], stdin: Any, stdout: TextIO) -> int:
        """The plugin's in-process entry point (tests, in-process delegation)."""
        return run(self, env, stdin, stdout)

    def entry(self) -> None:
        """The console script / ``python -m`` / frozen exe entry point."""
        console_entry(self)


class Request:
    """Everything a handler may read; nothing below it touches os.environ or sys.stdin. The
    ``CNI_*`` arguments a handler reads at every step are plain attributes (a property each was
    a call into this module per read); what costs an import stays a lazy property."""

    __slots__ = (
        "cmd",
        "command",
        "container_id",
        "netns",
        "ifname",
        "env",
        "stdin",
        "conf",
        "cni_version",
        "platform",
        "siblings",
        "_cache",
    )

    def __init__(
        self,
        cmd: CmdArgs,
        stdin: bytes,
        conf: dict,
        cni_version: str,
        platform: str = sys.platform,
        siblings: Callable[[str], str | None] | None = None,
    ) -> None:
        self.cmd = cmd
        self.command = cmd.command
        self.container_id = cmd.container_id
        self.netns = cmd.netns
        self.ifname = cmd.ifname
        self.env = cmd.env
        self.siblings = siblings
        self.stdin = stdin
        self.conf = conf
        self.cni_version = cni_version
        self.platform = platform
        self._cache: dict = {}

    @property
    def cni_args(self) -> dict[str, str]:
        if "args" not in self._cache:
            from .cniargs import parse_cni_args

            self._cache["args"] = parse_cni_args(self.cmd.args)
        return self._cache["args"]

    @property
    def runtime_config(self):
        if "rc" not in self._cache:
            from .runtimeconfig import RuntimeConfig

            self._cache["rc"] = RuntimeConfig.from_conf(self.conf)
        return self._cache["rc"]

    @property
    def prev_result(self) -> Result | None:
        from .result import Result

        prev = self.conf.get("prevResult")
        return Result.from_dict(prev, self.cni_version) if prev else None

    def exec_plugin(self, name: str, command: str | None = None, stdin: bytes | None = None) -> dict | None:
        """Run another plugin (IPAM, delegate) from CNI_PATH with this request's environment."""
        from .invoke import Executor, exec_plugin

        return exec_plugin(
            name,
            command or self.command,
            self.stdin if stdin is None else stdin,
            self.env,
            self.cmd.path,
            self.cni_version,
            Executor(run, self.siblings),
            self.platform,
        )


def run(
    plugin: Plugin,
    env: Mapping[str, str],
    stdin: Any,
    stdout: TextIO,
    stderr: TextIO | None = None,
    platform: str = sys.platform,
    argv: Sequence[str] = (),
) -> int:
    """Execute one CNI command; returns the process exit status (0 ok, 1 CNI error, 2 arguments a
    plugin run without ``CNI_COMMAND`` does not take). ``argv``: the command line after the
    program, read only without ``CNI_COMMAND`` (the runtime passes none)."""
    with log.scope():
        return _run(plugin, env, stdin, stdout, stderr, platform, argv)


def _run(
    plugin: Plugin,
    env: Mapping[str, str],
    stdin: Any,
    stdout: TextIO,
    stderr: TextIO | None,
    platform: str,
    argv: Sequence[str],
) -> int:
    stderr = stderr if stderr is not None else sys.stderr
    log.configure(
        plugin.name, stderr=stderr, log_file=env.get("WINCNI_LOG_FILE"), max_bytes=env.get("WINCNI_LOG_MAX_BYTES")
    )
    command = env.get("CNI_COMMAND")
    if not command:
        return _about(plugin, argv, stdout, stderr)
    started = time.perf_counter()
    version = ver.LATEST  # what an error is written in until the config names its own version
    try:
        if command == "VERSION":
            _write(stdout, _version_doc(_read(stdin)))
            return 0
        req = _parse(env, stdin, platform, plugin.siblings)
        version = req.cni_version
        _admit(req)
        _log_start(plugin, req)
        _reply(stdout, req, _route(plugin.handlers(), command)(req))
        log.event("done", ms=_ms_since(started))
        return 0
    except (StdoutClosed, StdoutFailed):
        raise
    except CniError as err:
        return _refuse(stdout, err, version, started)
    except Exception as exc:  # noqa: BLE001 - the last line of defence: never a traceback on stdout
        return _crash(stdout, stderr, exc, version)


def _parse(env: Mapping[str, str], stdin: Any, platform: str, siblings: Callable[[str], str | None] | None) -> Request:
    """The command's environment and decoded config: codes 4 and 6, and 1 for a version we do not
    speak, before anything of the plugin is imported."""
    from .config import cni_version, decode
    from .env import parse_env

    cmd = parse_env(env, platform)
    data = _read(stdin)
    conf = decode(data)
    return Request(cmd=cmd, stdin=data, conf=conf, cni_version=cni_version(conf), platform=platform, siblings=siblings)


def _admit(req: Request) -> None:
    """What the config must allow before its plugin runs (errors in the config's own version): a
    network name, and a version new enough for the command."""
    from .config import check_name

    check_name(req.conf)
    minimum = _MIN_VERSION.get(req.command)
    if minimum and not ver.at_least(req.cni_version, minimum):
        raise CniError(
            INCOMPATIBLE_VERSION,
            f"config version does not allow {req.command}",
            f'cniVersion "{req.cni_version}" is older than {minimum}, the first version with {req.command}',
        )


def _log_start(plugin: Plugin, req: Request) -> None:
    """The debug log learns the command and the container; its start line is written only when
    logging is on (it reads the build and the HNS backend)."""
    log_file = req.conf.get("logFile")
    log.configure(
        plugin.name,
        log_file=log_file if isinstance(log_file, str) else None,
        command=req.command,
        containerID=req.container_id,
        netns=req.netns,
        ifname=req.ifname,
    )
    if log.enabled():
        from . import buildinfo

        log.event(
            "start",
            cniVersion=req.cni_version,
            network=req.conf.get("name"),
            version=buildinfo.VERSION,
            commit=buildinfo.commit() or None,
            build=buildinfo.build() or None,
            backend=plugin.backend(req.env, req.platform) if plugin.backend else None,
        )


def _route(handlers: Handlers, command: str) -> Callable[[Request], Any]:
    """The handler of ``command`` (one ``parse_env`` accepted, VERSION aside)."""
    return {
        "ADD": handlers.add,
        "DEL": handlers.delete,
        "CHECK": handlers.check,
        "GC": handlers.gc,
        "STATUS": handlers.status,
    }[command]


def _reply(stdout: TextIO, req: Request, result: Any) -> None:
    """ADD prints its result (a ``Result``, or a document a delegate already wrote) in the config's
    version; the other commands print nothing on success."""
    if req.command == "ADD":
        _write(stdout, result if isinstance(result, dict) else result.to_dict(req.cni_version))


def _refuse(stdout: TextIO, err: CniError, version: str, started: float) -> int:
    log.event("error", code=err.code, msg=err.msg, details=err.details, ms=_ms_since(started))
    _write(stdout, err.to_dict(version))
    return 1


def _crash(stdout: TextIO, stderr: TextIO, exc: Exception, version: str) -> int:
    """An exception nobody meant (called while it is handled): its first line as error 999 on
    stdout, the traceback on stderr and in the debug log."""
    import traceback

    tb = traceback.format_exc()
    one_line = f"{type(exc).__name__}: {exc}".splitlines()[0] if str(exc) else type(exc).__name__
    log.event("crash", error=one_line, traceback=tb)
    try:
        stderr.write(tb)
    except (OSError, ValueError):
        pass
    error = CniError(INTERNAL, one_line, "internal error; the traceback is in the plugin's stderr log")
    _write(stdout, error.to_dict(version))
    return 1


def _ms_since(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 1)


def _read(stdin: Any) -> bytes:
    """stdin, up to ``MAX_STDIN``: more is code 6 before anything is parsed or kept."""
    try:
        data = stdin.read(MAX_STDIN + 1)
    except (OSError, ValueError) as exc:
        raise CniError(IO_FAILURE, f"error reading from stdin: {exc}") from exc
    data = data.encode() if isinstance(data, str) else data
    if len(data) > MAX_STDIN:
        raise CniError(
            DECODE_FAILURE,
            f"the network configuration on stdin is over {MAX_STDIN >> 20} MiB",
            "a CNI config is a few KiB: check what generates it (runtimeConfig, prevResult)",
        )
    return data


def _version_doc(data: bytes) -> dict:
    version = ver.LATEST
    try:
        doc = jsontext.loads(data) if data.strip() else {}
        if isinstance(doc, dict) and isinstance(doc.get("cniVersion"), str) and doc["cniVersion"]:
            version = doc["cniVersion"]
    except ValueError:
        pass
    return {"cniVersion": version, "supportedVersions": list(ver.SUPPORTED)}


def _about(plugin: Plugin, argv: Sequence[str], stdout: TextIO, stderr: TextIO) -> int:
    """A plugin run by hand (no ``CNI_COMMAND``): ``--version`` / ``version`` prints the build on
    stdout; bare, the about text goes to stderr as the Go plugins write it; anything else is a usage
    error. CNI's own ``VERSION`` command is the runtime's and unchanged."""
    from . import buildinfo  # reads .git in a checkout: only when asked

    if list(argv) in (["--version"], ["version"]):
        _print(stdout, buildinfo.about(plugin.name))
        return 0
    if argv:
        stderr.write(
            f"{plugin.name}: unknown arguments {' '.join(argv)!r}\n"
            f"usage: {plugin.name} [--version | version] (the runtime runs it with CNI_COMMAND set, no arguments)\n"
        )
        return 2
    stderr.write(
        f"{plugin.name} {buildinfo.describe()}: {plugin.description}\n"
        f"CNI protocol versions supported: {', '.join(ver.SUPPORTED)}\n"
    )
    return 0


def _write(stdout: TextIO, doc: dict) -> None:
    _print(stdout, jsontext.dumps(doc, indent=4) + "\n")


def _print(stdout: TextIO, text: str) -> None:
    """A result the runtime cannot read any more (its end of stdout closed) is ``StdoutClosed``, not a
    CNI error: nobody would read that either; ``console_entry`` ends the process quietly. Any other
    failure to write it is ``StdoutFailed`` (said on stderr, status 1): a CNI error could not be
    written either."""
    try:
        stdout.write(text)
        stdout.flush()
    except OSError as exc:
        raise failed(exc) from None


def console_entry(plugin: Plugin) -> None:
    """What a console script / ``python -m`` / frozen exe calls: real env, stdin, stdout.

    The process ends with ``os._exit`` once stdout and stderr are flushed, skipping the
    interpreter's finalization: every file a command writes (result, log, journal, stores) is
    written and closed before ``run`` returns, HNS calls still blocked in their daemon threads die
    with the process either way, and tearing down the sixty-odd modules and their objects a pod
    command loaded cost ~2 ms of every frozen command (more than any one import)."""
    import os

    stdin = getattr(sys.stdin, "buffer", sys.stdin)
    try:
        status = run(plugin, os.environ, stdin, sys.stdout, argv=sys.argv[1:])
    except StdoutClosed:
        end_closed()
    except StdoutFailed as exc:
        end_failed(exc)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # the reader went away: nothing more can reach it
            pass
    os._exit(status)
