"""libhns.deadline: the per-call and per-command deadline and the retry of "try again" HRESULTs,
against a tiny RawHns fake whose calls hang, fail or answer as told."""

from __future__ import annotations

import _thread
import json
import threading
import time

import pytest

from libhns import deadline, errors
from libhns.deadline import DeadlineBackend, Limits
from libhns.sim.faults import parse_faults

RPC_UNAVAILABLE = 0x800706BA


class Script:
    """RawHns.hcn_enumerate / hns_call answering from a list: a number is an HRESULT to fail
    with (hns_call: a Success:false envelope), a float a hang in seconds, a string the answer."""

    def __init__(self, *steps):
        self.steps = list(steps)
        self.calls = 0

    def _next(self):
        self.calls += 1
        step = self.steps.pop(0) if len(self.steps) > 1 else self.steps[0]
        if isinstance(step, float):
            time.sleep(step)
            return "late"
        return step

    def hcn_enumerate(self, kind, query):
        step = self._next()
        if isinstance(step, int):
            raise errors.from_hresult("HcnEnumerateEndpoints", step)
        return step

    def hns_call(self, method, path, request):
        step = self._next()
        if isinstance(step, int):
            return json.dumps({"Success": False, "Error": "x", "ErrorCode": step})
        return step


def bounded(script, call=0.3, command=5.0, undo=1.0):
    return DeadlineBackend(script, Limits(call, command, undo))


def test_transient_failures_are_retried_until_the_call_succeeds():
    script = Script(RPC_UNAVAILABLE, RPC_UNAVAILABLE, "[]")
    assert bounded(script).hcn_enumerate("Endpoint", "") == "[]"
    assert script.calls == 3


def test_other_failures_are_raised_at_once():
    script = Script(0x80004005)
    with pytest.raises(errors.HnsError) as e:
        bounded(script).hcn_enumerate("Endpoint", "")
    assert e.value.hresult == 0x80004005 and script.calls == 1
    assert not errors.try_later(e.value)


def test_a_v1_envelope_with_a_transient_code_is_retried_and_others_are_returned():
    script = Script(RPC_UNAVAILABLE, '{"Success":true}')
    assert bounded(script).hns_call("GET", "/networks/", "") == '{"Success":true}'
    assert script.calls == 2
    failed = json.dumps({"Success": False, "Error": "Element not found.", "ErrorCode": 0x80070490})
    assert bounded(Script(failed)).hns_call("GET", "/networks/x", "") == failed


def test_a_hung_call_raises_timeout_naming_the_call_and_the_wait():
    start = time.monotonic()
    with pytest.raises(errors.Timeout) as e:
        bounded(Script(2.0)).hns_call("POST", "/endpoints/", "{}")
    assert time.monotonic() - start < 1.0
    assert "HNSCall POST /endpoints/" in str(e.value) and "per-call timeout 0.3 s" in str(e.value)
    assert errors.try_later(e.value)


class CountingThreads:
    """libhns.deadline's ``_thread``, counting the threads it starts."""

    def __init__(self):
        self.started = 0

    def start_new_thread(self, fn, args):
        self.started += 1
        return _thread.start_new_thread(fn, args)

    def __getattr__(self, name):
        return getattr(_thread, name)


def test_a_commands_calls_share_one_worker_thread_until_one_hangs(monkeypatch):
    """Starting a thread per call cost ~1.5 ms each under Wine; a hung call's thread is left
    inside HNS and the next call gets a new one."""
    threads = CountingThreads()
    monkeypatch.setattr(deadline, "_thread", threads)
    raw = bounded(Script("[]", "[]", "[]", 2.0, "[]", "[]"))
    assert [raw.hcn_enumerate("Endpoint", "") for _ in range(3)] == ["[]"] * 3
    assert threads.started == 1
    with pytest.raises(errors.Timeout):
        raw.hcn_enumerate("Endpoint", "")
    assert [raw.hcn_enumerate("Endpoint", "") for _ in range(2)] == ["[]"] * 2
    assert threads.started == 2


class LateThreads:
    """libhns.deadline's ``_thread``, whose threads start only once ``go`` is set."""

    def __init__(self):
        self.go, self.ended = threading.Event(), threading.Event()

    def start_new_thread(self, fn, args):
        def late():
            self.go.wait()
            fn(*args)
            self.ended.set()

        return _thread.start_new_thread(late, ())

    def __getattr__(self, name):
        return getattr(_thread, name)


def test_a_call_abandoned_before_the_worker_took_it_is_a_timeout_too(monkeypatch):
    """A budget that ends before the worker thread has even started (a loaded node, a command
    deadline all but passed) is the same Timeout; the worker then finds no job and ends."""
    threads = LateThreads()
    monkeypatch.setattr(deadline, "_thread", threads)
    script = Script("[]")
    with pytest.raises(errors.Timeout):
        bounded(script, call=0.05).hcn_enumerate("Endpoint", "")
    threads.go.set()
    assert threads.ended.wait(5) and script.calls == 0


def test_calls_from_two_threads_at_once_both_complete():
    raw = bounded(Script(0.2, "[]"))
    answers = []
    done = _thread.allocate_lock()
    done.acquire()

    def other():
        answers.append(raw.hcn_enumerate("Endpoint", ""))
        done.release()

    _thread.start_new_thread(other, ())
    time.sleep(0.05)  # the other thread's call holds the worker
    answers.append(raw.hcn_enumerate("Endpoint", ""))
    assert done.acquire(timeout=2)
    assert sorted(answers) == ["[]", "late"]


def test_retries_stop_at_the_command_deadline():
    start = time.monotonic()
    with pytest.raises(errors.HnsError) as e:
        bounded(Script(RPC_UNAVAILABLE), command=0.5).hcn_enumerate("Endpoint", "")
    assert e.value.hresult == RPC_UNAVAILABLE and errors.try_later(e.value)
    assert time.monotonic() - start < 0.6


def test_after_the_command_deadline_only_the_undo_window_lets_calls_through():
    raw = bounded(Script("[]"), command=0.1)
    time.sleep(0.15)
    with pytest.raises(errors.Timeout, match="command deadline 0.1 s had already passed"):
        raw.hcn_enumerate("Endpoint", "")
    with raw.grace():
        assert raw.hcn_enumerate("Endpoint", "") == "[]"


def test_access_denied_is_retried_for_two_seconds_only():
    assert errors.retry_seconds(errors.from_hresult("x", 0x80070005)) == 2.0
    assert errors.retry_seconds(errors.from_hresult("x", RPC_UNAVAILABLE)) == float("inf")
    assert errors.retry_seconds(errors.from_hresult("x", 0x80004005)) == 0


def test_limits_come_from_the_config_then_the_environment_then_the_defaults():
    env = {"LIBHNS_CALL_TIMEOUT": "5", "LIBHNS_COMMAND_TIMEOUT": "50"}
    limits = Limits.resolve(env, {"call": 2})
    assert (limits.call, limits.command, limits.undo) == (2.0, 50.0, 10.0)
    assert Limits.resolve({}).call == 30.0
    for bad in ("0", "-1", "soon", "nan"):
        with pytest.raises(errors.EnvError, match="LIBHNS_UNDO_TIMEOUT"):
            Limits.resolve({"LIBHNS_UNDO_TIMEOUT": bad})


def test_timeouts_survive_pickling():
    import pickle

    err = pickle.loads(pickle.dumps(errors.Timeout("HcnCreateEndpoint", 1.5, "per-call timeout 1 s")))
    assert isinstance(err, errors.Timeout) and err.waited == 1.5 and "per-call timeout 1 s" in str(err)


@pytest.mark.parametrize(
    "text, picked",
    [
        ("HcnCreateEndpoint#2=0x800706BA", [2]),
        ("HcnCreateEndpoint#2-4=0x800706BA", [2, 3, 4]),
        ("HcnCreateEndpoint=hang:1.5", [1, 2, 3, 4, 5]),
    ],
)
def test_fault_call_numbers_and_ranges(text, picked):
    [fault] = parse_faults(text)
    assert [n for n in range(1, 6) if fault.picks(n)] == picked


def test_fault_kinds():
    hang, stale, live = parse_faults(
        "HcnModifyNamespace=hang:2,HcnCreateEndpoint#1=stale-ip,HNSCall:POST /endpoints/=live-ip"
    )
    assert (hang.hang, hang.hresult) == (2.0, None)
    assert (stale.plant, live.plant) == ("stale-ip", "live-ip")


@pytest.mark.parametrize("text", ["X#3-2=1", "X#0-2=1", "X=hang:soon", "X=hang:-1", "X=stale", "X#a=1"])
def test_bad_fault_entries_name_themselves(text):
    with pytest.raises(errors.EnvError, match="LIBHNS_SIM_FAULTS"):
        parse_faults(text)


def test_capped_limits_keep_lower_configured_ones():
    capped = Limits(call=30, command=2, undo=10).capped(3)
    assert (capped.call, capped.command, capped.undo) == (3, 2, 3)
