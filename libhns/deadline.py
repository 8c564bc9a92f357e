"""A deadline on every raw HNS call, and bounded retries of the "try again" HRESULTs.

HNS calls hang under load and fail for a while when the service restarts. ``DeadlineBackend``
wraps any ``RawHns`` (outside the journal, so every attempt is journaled) and gives each call at
most ``call`` seconds and the whole command at most ``command`` seconds from the wrapper's
creation; a call that passes either raises ``errors.Timeout`` naming the call and the time waited.
A failure whose HRESULT ``errors.RETRY_SECONDS`` lists is sent again with doubling backoff
(50 ms … 1 s) while both its own retry allowance and the deadline leave room; anything else is
raised at once. ``grace()`` gives the undo of a failed command a fresh, short deadline. Closing a
handle only frees it, typically in a ``finally`` after a timeout: it is never refused for the
deadline, is waited on for at most the undo limit, and at interpreter exit it is skipped (the
handles die with the process).

A blocked DLL call cannot be cancelled on Windows, so the calls run in a worker thread and the
caller only waits for each (``_thread``'s primitives: ``threading`` would be one more import on
every pod command). One worker serves a command's calls in turn (``_Worker``): a thread started
per call cost ~1.5 ms each under Wine, a dozen per V2 ADD. When a wait ends first, the worker is
abandoned inside HNS and the next call gets a new one: Python does not join such threads at exit,
and process exit (ExitProcess) ends it, so the plugin still prints its error and exits on time. HNS may still complete the call afterwards; its late
answer is dropped (a handle it returns dies with the process), and an object it created is what
the next command finds by name: the retried ADD replaces an unattached endpoint of the pod's
name, DEL deletes it by name.
"""

from __future__ import annotations

import _thread
import sys
import time

from libhns import errors
from libhns.raw import Handle, RawHns, hcn_function

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable, Mapping, TypeVar

    T = TypeVar("T")

#: Defaults, in seconds (see the README's "When HNS misbehaves"): a healthy HNS call takes
#: milliseconds and a loaded node's tens of seconds; the kubelet gives StopPodSandbox (DEL) its
#: --runtime-request-timeout, 2 minutes by default, and RunPodSandbox (ADD) twice that, so the
#: command and its undo answer inside the shorter one.
CALL_SECONDS = 30.0
COMMAND_SECONDS = 100.0
UNDO_SECONDS = 10.0
#: The most CNI STATUS waits on HNS: containerd calls it with no timeout of its own and holds the
#: node's NetworkReady on the answer, so a hung HNS must be a quick "not available".
STATUS_SECONDS = 3.0
#: Config key (plugins) / environment variable for each limit.
LIMITS = (
    ("call", "LIBHNS_CALL_TIMEOUT", CALL_SECONDS),
    ("command", "LIBHNS_COMMAND_TIMEOUT", COMMAND_SECONDS),
    ("undo", "LIBHNS_UNDO_TIMEOUT", UNDO_SECONDS),
)
_FIRST_BACKOFF, _MAX_BACKOFF = 0.05, 1.0


class Limits:
    """Seconds for one call, the whole command, and the undo after a failure."""

    __slots__ = ("call", "command", "undo")

    def __init__(
        self, call: float = CALL_SECONDS, command: float = COMMAND_SECONDS, undo: float = UNDO_SECONDS
    ) -> None:
        self.call, self.command, self.undo = call, command, undo

    @classmethod
    def resolve(cls, env: Mapping[str, str], conf: Mapping[str, Any] | None = None) -> "Limits":
        """Each limit from the config (a validated ``{"call","command","undo"}`` mapping) when it
        names it, else from its ``LIBHNS_*_TIMEOUT`` variable, else the default."""
        values = {}
        for key, var, default in LIMITS:
            if conf and conf.get(key) is not None:
                values[key] = float(conf[key])
            elif (env.get(var) or "").strip():
                values[key] = _seconds(var, env[var])
            else:
                values[key] = default
        return cls(**values)

    def capped(self, seconds: float) -> "Limits":
        """These limits, none above ``seconds`` (a lower configured one stays)."""
        return Limits(min(self.call, seconds), min(self.command, seconds), min(self.undo, seconds))


def _seconds(var: str, text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value < 86400:
        raise errors.EnvError(f"{var} must be a number of seconds above 0, not {text!r}")
    return value


class _Worker:
    """A thread that runs one call at a time for ``DeadlineBackend``, until ``stop``."""

    __slots__ = ("_go", "_done", "_job", "_box")

    def __init__(self) -> None:
        self._go, self._done = _thread.allocate_lock(), _thread.allocate_lock()
        self._go.acquire()
        self._done.acquire()
        self._job: Callable[[], Any] | None = None
        self._box: tuple[bool, Any] = (False, None)
        _thread.start_new_thread(self._serve, ())

    def _serve(self) -> None:
        while True:
            self._go.acquire()
            job = self._job
            if job is None:
                return
            try:
                self._box = (True, job())
            except BaseException as e:  # noqa: BLE001 - handed to the waiting caller
                self._box = (False, e)
            self._done.release()

    def run(self, fn: Callable[[], T], budget: float) -> tuple[bool, Any]:
        """(finished, result) of ``fn`` waited on ``budget`` s; its exception is raised here.
        After a False the worker is still inside ``fn``: stop it."""
        self._job = fn
        self._go.release()
        if not self._done.acquire(timeout=budget):
            return False, None
        ok, value = self._box
        self._box = (False, None)
        if not ok:
            raise value
        return True, value

    def stop(self) -> None:
        """The thread ends once it is idle (at once, or when its abandoned call returns); a call
        it has not taken yet (the budget ended first) it finds gone, and never makes."""
        self._job = None
        if self._go.locked():  # else the permit ``run`` gave is still there for the thread to take
            self._go.release()


class _Grace:
    """``DeadlineBackend.grace``'s block (a class: ``contextlib`` would be one more import)."""

    __slots__ = ("backend", "saved")

    def __init__(self, backend: DeadlineBackend) -> None:
        self.backend = backend

    def __enter__(self) -> None:
        b = self.backend
        self.saved = b._end, b._which
        b._end = b._clock() + b.limits.undo
        b._which = f"undo deadline {b.limits.undo:g} s"

    def __exit__(self, kind: type | None, exc: BaseException | None, tb: object) -> bool:
        self.backend._end, self.backend._which = self.saved
        return False


class DeadlineBackend:
    """RawHns that forwards to ``inner`` within the limits, retrying transient failures."""

    def __init__(
        self,
        inner: RawHns,
        limits: Limits,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.inner = inner
        self.limits = limits
        self._clock = clock
        self._sleep = sleep
        self._end = clock() + limits.command
        self._which = f"command deadline {limits.command:g} s"
        self._worker: _Worker | None = None
        self._free = _thread.allocate_lock()  # held while a call uses the worker

    def __del__(self) -> None:
        if self._worker is not None:
            self._worker.stop()

    def _bounded(self, fn: Callable[[], T], budget: float) -> tuple[bool, Any]:
        """``fn`` on the command's worker; on a worker of its own, stopped after, for a call
        made while another thread's call holds that one."""
        if not self._free.acquire(False):
            own = _Worker()
            try:
                return own.run(fn, budget)
            finally:
                own.stop()
        try:
            worker = self._worker = self._worker or _Worker()
            finished, value = worker.run(fn, budget)
            if not finished:
                worker.stop()
                self._worker = None
            return finished, value
        finally:
            self._free.release()

    def grace(self) -> _Grace:
        """Within the block, a fresh ``undo`` deadline: undoing what a failed command completed
        must not be refused because the command's own deadline (the likely failure) passed."""
        return _Grace(self)

    def _call(
        self,
        call: str | tuple[str, str],
        fn: Callable[[], T],
        transient: Callable[[T], BaseException | None] = lambda _: None,
    ) -> T:
        """``fn`` within the limits; ``transient`` finds a "try again" failure in an answer that
        is not an exception (a V1 envelope), which is retried like a raised one. ``call`` names
        the call for a timeout: its name, or HCN's (op, kind), spelled only when one is raised."""
        first = self._clock()
        backoff = _FIRST_BACKOFF
        while True:
            start = self._clock()
            left = self._end - start
            per_call = self.limits.call <= left
            budget = self.limits.call if per_call else left
            which = f"per-call timeout {self.limits.call:g} s" if per_call else self._which
            if budget <= 0:
                raise errors.Timeout(_name(call), start - first, which + " had already passed")
            try:
                finished, result = self._bounded(fn, budget)
            except errors.HnsError as err:
                if not self._may_retry(err, first, backoff):
                    raise
            else:
                if not finished:
                    raise errors.Timeout(_name(call), self._clock() - first, which)
                failure = transient(result)
                if failure is None or not self._may_retry(failure, first, backoff):
                    return result
            self._sleep(backoff)
            backoff = min(backoff * 2, _MAX_BACKOFF)

    def _may_retry(self, failure: BaseException, first: float, backoff: float) -> bool:
        """Within the failure's retry allowance and the deadline, after one more backoff."""
        after = self._clock() + backoff
        return after - first <= errors.retry_seconds(failure) and after < self._end

    # --- HCN -----------------------------------------------------------------------------------
    def hcn_enumerate(self, kind: str, query: str) -> str:
        return self._call(("Enumerate", kind), lambda: self.inner.hcn_enumerate(kind, query))

    def hcn_create(self, kind: str, id: Any, settings: str, network: Handle | None = None) -> Handle:
        return self._call(("Create", kind), lambda: self.inner.hcn_create(kind, id, settings, network))

    def hcn_open(self, kind: str, id: Any) -> Handle:
        return self._call(("Open", kind), lambda: self.inner.hcn_open(kind, id))

    def hcn_modify(self, kind: str, handle: Handle, settings: str) -> None:
        self._call(("Modify", kind), lambda: self.inner.hcn_modify(kind, handle, settings))

    def hcn_query(self, kind: str, handle: Handle, query: str) -> str:
        return self._call(("Query", kind), lambda: self.inner.hcn_query(kind, handle, query))

    def hcn_delete(self, kind: str, id: Any) -> None:
        self._call(("Delete", kind), lambda: self.inner.hcn_delete(kind, id))

    def _close(self, fn: Callable[[], None]) -> None:
        # A __del__ while the interpreter exits: no thread can start, and the call could block
        # behind an abandoned one; the process's handles die with it, so nothing is lost.
        if not sys.is_finalizing():
            self._bounded(fn, self.limits.undo)

    def hcn_close(self, kind: str, handle: Handle) -> None:
        self._close(lambda: self.inner.hcn_close(kind, handle))

    # --- vmcompute.dll -------------------------------------------------------------------------
    def hns_call(self, method: str, path: str, request: str) -> str:
        return self._call(
            f"HNSCall {method} {path}", lambda: self.inner.hns_call(method, path, request), _envelope_failure
        )

    def hcs_open_compute_system(self, id: str) -> Handle:
        return self._call("HcsOpenComputeSystem", lambda: self.inner.hcs_open_compute_system(id))

    def hcs_modify_compute_system(self, handle: Handle, configuration: str) -> None:
        self._call("HcsModifyComputeSystem", lambda: self.inner.hcs_modify_compute_system(handle, configuration))

    def hcs_close_compute_system(self, handle: Handle) -> None:
        self._close(lambda: self.inner.hcs_close_compute_system(handle))


def _name(call: str | tuple[str, str]) -> str:
    """The name a timeout reports: ``hcn_function``'s export name for an HCN (op, kind)."""
    return call if isinstance(call, str) else hcn_function(*call)


def _envelope_failure(envelope: str) -> BaseException | None:
    """The retryable failure a V1 envelope reports (``Success: false`` with a listed
    ``ErrorCode``), else None; other envelopes are the caller's to read."""
    if '"ErrorCode"' not in (envelope or ""):
        return None
    from basics import jsontext

    try:
        doc = jsontext.loads(envelope)
    except ValueError:
        return None
    code = doc.get("ErrorCode") if isinstance(doc, dict) and doc.get("Success") is False else None
    if not isinstance(code, int) or (code & 0xFFFFFFFF) not in errors.RETRY_SECONDS:
        return None
    return errors.from_hresult("HNSCall", code)
