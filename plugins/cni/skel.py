"""Command dispatch: the one place a CNI invocation is checked, routed, and printed.

``run`` validates in the order that is cheapest first (env, stdin, JSON, name, version) and
imports the plugin's handler module only when a real command needs it, so VERSION and
rejected input never pay for jsonschema or HNS.
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


# The lowest config version that allows each command (spec 0.4.0 CHECK, 1.1.0 GC/STATUS).
_MIN_VERSION = {"CHECK": "0.4.0", "GC": "1.1.0", "STATUS": "1.1.0"}
_HANDLER = {"ADD": "add", "DEL": "delete", "CHECK": "check", "GC": "gc", "STATUS": "status"}
#: The most stdin a command reads: real configs (with a node's GC attachment list) are tens of KiB.
MAX_STDIN = 4 << 20


class PluginSpec:
    """A plugin: its name, ``handlers`` (a function importing and returning the module that holds
    add/delete/check/gc/status(req): called only once a real command is valid), its one-line
    description, and what the core may not import itself: ``backend`` (env, platform -> the HNS
    backend's name, for the debug log's start line) and ``siblings`` (plugin type -> the entry module
    of that plugin of ours, or None: in-process delegation). A plain class: ``dataclasses`` costs
    more to import than a VERSION."""

    __slots__ = ("name", "handlers", "description", "backend", "siblings")

    def __init__(
        self,
        name: str,
        handlers: Callable[[], Any],
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
        return f"PluginSpec(name={self.name!r})"

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
    spec: PluginSpec,
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
        return _run(spec, env, stdin, stdout, stderr, platform, argv)


def _run(
    spec: PluginSpec,
    env: Mapping[str, str],
    stdin: Any,
    stdout: TextIO,
    stderr: TextIO | None,
    platform: str,
    argv: Sequence[str],
) -> int:
    stderr = stderr if stderr is not None else sys.stderr
    log.configure(
        spec.name, stderr=stderr, log_file=env.get("WINCNI_LOG_FILE"), max_bytes=env.get("WINCNI_LOG_MAX_BYTES")
    )
    command = env.get("CNI_COMMAND")
    if not command:
        return _about(spec, argv, stdout, stderr)
    started = time.perf_counter()
    reply_version = ver.LATEST
    try:
        if command == "VERSION":
            _write(stdout, _version_doc(_read(stdin)))
            return 0
        from .config import check_name, cni_version, decode
        from .env import parse_env

        cmd = parse_env(env, platform)
        data = _read(stdin)
        conf = decode(data)
        version = cni_version(conf)
        reply_version = version
        check_name(conf)
        minimum = _MIN_VERSION.get(command)
        if minimum and not ver.at_least(version, minimum):
            raise CniError(
                INCOMPATIBLE_VERSION,
                f"config version does not allow {command}",
                f'cniVersion "{version}" is older than {minimum}, the first version with {command}',
            )
        log.configure(
            spec.name,
            log_file=conf.get("logFile") if isinstance(conf.get("logFile"), str) else None,
            command=command,
            containerID=cmd.container_id,
            netns=cmd.netns,
            ifname=cmd.ifname,
        )
        if log.enabled():
            from . import buildinfo

            log.event(
                "start",
                cniVersion=version,
                network=conf.get("name"),
                version=buildinfo.VERSION,
                commit=buildinfo.commit() or None,
                build=buildinfo.build() or None,
                backend=spec.backend(env, platform) if spec.backend else None,
            )
        handlers = spec.handlers()
        req = Request(cmd=cmd, stdin=data, conf=conf, cni_version=version, platform=platform, siblings=spec.siblings)
        if command in ("GC", "STATUS") and not hasattr(handlers, _HANDLER[command]):
            return 0  # like the Go skel: a plugin without GC/STATUS has nothing to collect and is ready
        result = getattr(handlers, _HANDLER[command])(req)
        if command == "ADD":
            doc = result if isinstance(result, dict) else result.to_dict(version)
            _write(stdout, doc)
        log.event("done", ms=round((time.perf_counter() - started) * 1000, 1))
        return 0
    except (StdoutClosed, StdoutFailed):
        raise
    except CniError as err:
        log.event(
            "error",
            code=err.code,
            msg=err.msg,
            details=err.details,
            ms=round((time.perf_counter() - started) * 1000, 1),
        )
        _write(stdout, err.to_dict(reply_version))
        return 1
    except Exception as exc:  # noqa: BLE001 - the last line of defence: never a traceback on stdout
        import traceback

        tb = traceback.format_exc()
        one_line = f"{type(exc).__name__}: {exc}".splitlines()[0] if str(exc) else type(exc).__name__
        log.event("crash", error=one_line, traceback=tb)
        try:
            stderr.write(tb)
        except (OSError, ValueError):
            pass
        _write(
            stdout,
            CniError(INTERNAL, one_line, "internal error; the traceback is in the plugin's stderr log").to_dict(
                reply_version
            ),
        )
        return 1


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


def _about(spec: PluginSpec, argv: Sequence[str], stdout: TextIO, stderr: TextIO) -> int:
    """A plugin run by hand (no ``CNI_COMMAND``): ``--version`` / ``version`` prints the build on
    stdout; bare, the about text goes to stderr as the Go plugins write it; anything else is a usage
    error. CNI's own ``VERSION`` command is the runtime's and unchanged."""
    from . import buildinfo  # reads .git in a checkout: only when asked

    if list(argv) in (["--version"], ["version"]):
        _print(stdout, buildinfo.about(spec.name))
        return 0
    if argv:
        stderr.write(
            f"{spec.name}: unknown arguments {' '.join(argv)!r}\n"
            f"usage: {spec.name} [--version | version] (the runtime runs it with CNI_COMMAND set, no arguments)\n"
        )
        return 2
    stderr.write(
        f"{spec.name} {buildinfo.describe()}: {spec.description}\n"
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


def console_entry(spec: PluginSpec) -> None:
    """What a console script / ``python -m`` / frozen exe calls: real env, stdin, stdout.

    The process ends with ``os._exit`` once stdout and stderr are flushed, skipping the
    interpreter's finalization: every file a command writes (result, log, journal, stores) is
    written and closed before ``run`` returns, HNS calls still blocked in their daemon threads die
    with the process either way, and tearing down the sixty-odd modules and their objects a pod
    command loaded cost ~2 ms of every frozen command (more than any one import)."""
    import os

    stdin = getattr(sys.stdin, "buffer", sys.stdin)
    try:
        status = run(spec, os.environ, stdin, sys.stdout, argv=sys.argv[1:])
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
