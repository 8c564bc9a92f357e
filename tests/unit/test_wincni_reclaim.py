"""The node's sweep (``wincni reclaim``, once or ``--every``): the pure plan by the ownership
rule, the pass that re-plans each candidate under the store's lock (on a fake node), its bound,
the loop and its off switch. The real node, with pods starting and stopping around it, is
tests/e2e/test_sweep.py."""

from __future__ import annotations

import io
from contextlib import contextmanager
from typing import Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from plugins.cni import ownership
from tools.wincni.reclaim import command as reclaim
from tools.wincni.reclaim.holdings import Delegate, HeldEndpoint, Reservation
from tools.wincni.reclaim.plan import DELEGATE, ENDPOINT, RESERVATION, Seen, act, plan
from tools.wincni.reclaim.runtime import Runtime

NET = "cbr0"
OLD, YOUNG, MIN = 3600.0, 5.0, ownership.IN_FLIGHT_SECONDS


def ep(pod: str, in_use: bool = False, name: str = "") -> HeldEndpoint:
    return HeldEndpoint(name or f"{pod}_{NET}", f"id-{pod}", ("10.244.4.9",), in_use)


def freed(seen: Seen) -> list[tuple[str, str]]:
    return [(f.kind, f.name) for f in plan(seen, MIN)[0]]


def test_a_gone_sandbox_loses_its_endpoint_its_reservation_and_its_saved_config_in_that_order() -> None:
    seen = Seen(
        NET,
        reservations=(Reservation("10.244.4.9", "gone", OLD),),
        endpoints=(ep("gone"),),
        delegates=(Delegate("gone", OLD),),
    )
    assert freed(seen) == [(ENDPOINT, f"gone_{NET}"), (RESERVATION, "10.244.4.9"), (DELEGATE, "gone")]
    frees, _ = plan(seen, MIN)
    assert "its sandbox gone is gone (no namespace or container holds it)" in frees[0].why


@pytest.mark.parametrize(
    ("seen", "kept"),
    [
        # a live sandbox holds its endpoint, and so its reservation and its saved config
        (
            Seen(NET, (Reservation("10.244.4.9", "live", OLD),), (ep("live", in_use=True),), (Delegate("live", OLD),)),
            {
                (ENDPOINT, f"live_{NET}"): ownership.ATTACHED,
                (RESERVATION, "10.244.4.9"): ownership.LIVE_ENDPOINT,
                (DELEGATE, "live"): ownership.HELD,
            },
        ),
        # an ADD in flight: reserved a moment ago, its endpoint made but not attached yet
        (
            Seen(NET, (Reservation("10.244.4.9", "adding", YOUNG),), (ep("adding"),)),
            {(ENDPOINT, f"adding_{NET}"): ownership.IN_FLIGHT, (RESERVATION, "10.244.4.9"): ownership.LIVE_ENDPOINT},
        ),
        # an ADD in flight that has only saved its delegate config yet
        (Seen(NET, delegates=(Delegate("saving", YOUNG),)), {(DELEGATE, "saving"): ownership.IN_FLIGHT}),
        # the node's own reservation, however old
        (
            Seen(NET, (Reservation("10.244.4.2", "_wincni-source-vip", OLD),)),
            {(RESERVATION, "10.244.4.2"): ownership.NODE_OWNED},
        ),
        # the runtime lists the sandbox: its DEL is owed, the sweep keeps all of it
        (
            Seen(
                NET,
                (Reservation("10.244.4.9", "listed", OLD),),
                (ep("listed"),),
                (Delegate("listed", OLD),),
                frozenset({"listed"}),
            ),
            {
                (ENDPOINT, f"listed_{NET}"): ownership.RUNTIME_LISTS,
                (RESERVATION, "10.244.4.9"): ownership.LIVE_ENDPOINT,
                (DELEGATE, "listed"): ownership.HELD,
            },
        ),
        (
            Seen(NET, (Reservation("10.244.4.9", "listed", OLD),), runtime=frozenset({"listed"})),
            {(RESERVATION, "10.244.4.9"): ownership.RUNTIME_LISTS},
        ),
    ],
)
def test_what_the_rule_keeps_and_why(seen: Seen, kept: dict) -> None:
    frees, why = plan(seen, MIN)
    assert frees == [] and why == kept


def test_flanneld_s_endpoint_and_strangers_are_never_candidates_nor_reported() -> None:
    seen = Seen(NET, endpoints=(ep("", name=f"{NET}_ep"), ep("", name="someone-else")))
    assert plan(seen, MIN) == ([], {})


def test_a_runtime_that_does_not_list_the_pod_says_so_in_the_why() -> None:
    frees, _ = plan(Seen(NET, endpoints=(ep("gone"),), runtime=frozenset({"other"})), MIN)
    assert frees[0].why.endswith("and the runtime does not list it)")


pods = st.sampled_from(["a", "b", "c", "_wincni-vip", ""])
ages = st.sampled_from([0.0, YOUNG, MIN - 1, MIN, OLD])
seens = st.builds(
    Seen,
    st.just(NET),
    st.lists(
        st.builds(Reservation, st.sampled_from(["10.0.0.1", "10.0.0.2", "10.0.0.3"]), pods, ages, st.booleans()),
        max_size=4,
        unique_by=lambda r: r.ip,
    ).map(tuple),
    st.lists(
        st.builds(lambda p, u: ep(p, u), pods.filter(bool), st.booleans()), max_size=3, unique_by=lambda e: e.name
    ).map(tuple),
    st.lists(st.builds(Delegate, pods.filter(bool), ages), max_size=3).map(tuple),
    st.one_of(st.none(), st.frozensets(pods, max_size=2)),
)


@given(seens)
def test_the_plan_never_frees_what_the_rule_says_is_in_use(seen: Seen) -> None:
    frees, _ = plan(seen, MIN)
    listed = seen.runtime or frozenset()
    young = {r.owner for r in seen.reservations if r.age < MIN} | {d.key for d in seen.delegates if d.age < MIN}
    kept_eps = {e.name for e in seen.endpoints} - {f.name for f in frees if f.kind == ENDPOINT}
    holders = {ownership.pod_of(n, NET) for n in kept_eps}
    for f in frees:
        assert f.pod not in listed and not ownership.pinned(f.pod)
        if f.kind == ENDPOINT:
            assert not next(e for e in seen.endpoints if e.name == f.name).in_use and f.pod not in young
        elif f.kind == RESERVATION:
            r = next(r for r in seen.reservations if r.ip == f.name and r.owner == f.pod)
            assert r.age >= MIN and f.pod not in holders and not r.sandbox_alive
        else:
            released = {g.name for g in frees if g.kind == RESERVATION}
            assert f.pod not in holders and all(r.ip in released for r in seen.reservations if r.owner == f.pod)
    kinds = [f.kind for f in frees]
    assert kinds == sorted(kinds, key=[ENDPOINT, RESERVATION, DELEGATE].index)


# ---------------------------------------------------------------------------- a pass, on a fake node


class FakeNode:
    """``holdings.Holdings`` in memory: what HNS and the stores hold, what was freed, and how
    whether the store is locked now. ``later`` changes what a second read sees."""

    def __init__(self, reservations: tuple = (), endpoints: tuple = (), delegates: tuple = ()) -> None:
        self.network, self.ipam_dir, self.data_dir = NET, "/store", "/flannel"
        self.res = {r.ip: r for r in reservations}
        self.eps = {e.name: e for e in endpoints}
        self.dels = {d.key: d for d in delegates}
        self.removed: list[str] = []
        self.locked_now = False
        self.later: dict[str, HeldEndpoint] = {}

    def endpoints(self) -> list[HeldEndpoint]:
        return list(self.eps.values())

    def endpoint(self, name: str) -> HeldEndpoint | None:
        return self.later.get(name) or self.eps.get(name)

    def remove_endpoint(self, name: str) -> None:
        assert self.locked_now, "freed outside the store's lock"
        self.removed.append(name)
        del self.eps[name]

    def delegates(self) -> list[Delegate]:
        return list(self.dels.values())

    def delegate(self, key: str) -> Delegate | None:
        return self.dels.get(key)

    def remove_delegate(self, key: str) -> None:
        assert self.locked_now
        self.removed.append(key)
        del self.dels[key]

    @contextmanager
    def locked(self) -> Iterator["FakeNode"]:
        self.locked_now = True
        try:
            yield self
        finally:
            self.locked_now = False

    def reservations(self, pod: str | None = None) -> list[Reservation]:
        return [r for r in self.res.values() if pod is None or r.owner == pod]

    def release(self, ip: str) -> None:
        assert self.locked_now
        self.removed.append(ip)
        del self.res[ip]


def leaked(n: int) -> FakeNode:
    return FakeNode(
        tuple(Reservation(f"10.0.0.{i}", f"p{i}", OLD) for i in range(n)),
        tuple(ep(f"p{i}") for i in range(n)),
        tuple(Delegate(f"p{i}", OLD) for i in range(n)),
    )


def test_a_pod_whose_sandbox_runs_keeps_its_address_without_an_endpoint_whatever_its_age() -> None:
    seen = Seen(NET, reservations=(Reservation("10.0.0.1", "lost", OLD, True), Reservation("10.0.0.2", "gone", OLD)))
    frees, kept = plan(seen, MIN)
    assert [f.name for f in frees] == ["10.0.0.2"]
    assert kept[(RESERVATION, "10.0.0.1")] == ownership.SANDBOX_ALIVE


def test_a_pass_frees_at_most_its_bound_and_the_next_pass_the_rest() -> None:
    node = leaked(3)  # 9 things
    first = act(node, None, MIN, 4, False)
    assert len(first.freed) == 4 and first.deferred == 5
    assert node.removed == [f"p{i}_{NET}" for i in range(3)] + ["10.0.0.0"]
    second = act(node, None, MIN, 4, False)
    third = act(node, None, MIN, 4, False)
    assert (len(second.freed), second.deferred, len(third.freed), third.deferred) == (4, 1, 1, 0)
    assert not node.res and not node.eps and not node.dels


def test_the_re_check_keeps_what_changed_since_the_first_read() -> None:
    node = leaked(1)
    node.later[f"p0_{NET}"] = ep("p0", in_use=True)  # the sandbox came back: attached meanwhile
    done = act(node, None, MIN, 10, False)
    assert done.freed == [] and [(f.kind, why) for f, why in done.kept] == [
        (ENDPOINT, ownership.ATTACHED),
        (RESERVATION, ownership.LIVE_ENDPOINT),
        (DELEGATE, ownership.HELD),
    ]
    assert node.removed == []


def test_a_dry_run_frees_nothing_and_lists_everything() -> None:
    node = leaked(2)
    done = act(node, None, MIN, 10, True)
    assert len(done.freed) == 6 and node.removed == []


def test_the_runtime_s_list_keeps_a_pod_the_rule_alone_would_free() -> None:
    node = leaked(2)
    act(node, frozenset({"p1"}), MIN, 10, False)
    assert set(node.eps) == {f"p1_{NET}"} and set(node.res) == {"10.0.0.1"} and set(node.dels) == {"p1"}


# ---------------------------------------------------------------------------- the runtime's list, the loop


class Sandbox:
    def __init__(self, id_: str) -> None:
        self.id = id_


def test_the_runtime_is_said_once_per_change_and_its_failure_falls_back_to_the_rule() -> None:
    from tools.wincni.node.cri.errors import Unreachable

    answers = [[Sandbox("a")], [Sandbox("a"), Sandbox("b")], Unreachable("gone"), Unreachable("still gone")]

    def ask(endpoint: str) -> list[Sandbox]:
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    runtime = Runtime("unix:///run/cri.sock", ask)
    said = []
    for _ in range(4):
        listed, note = runtime.pods()
        said.append((listed, runtime.news))
    assert said[0] == (frozenset({"a"}), "runtime lists 1 sandbox(es) at unix:///run/cri.sock: kept")
    assert said[1] == (frozenset({"a", "b"}), "")
    assert said[2][0] is None and said[2][1].startswith(
        "runtime's pod list not available at unix:///run/cri.sock (gone)"
    )
    assert said[3] == (None, "")
    assert Runtime("none").pods()[0] is None


class Stop(Exception):
    pass


def test_every_runs_a_pass_each_interval_says_all_on_stderr_and_a_failure_once() -> None:
    answers = [(0, "freed a\n"), (1, "stopped: HNS\n"), (1, "stopped: HNS\n"), (0, ""), (1, "stopped: HNS\n")]
    sleeps: list[float] = []

    def one_pass(out: io.StringIO, log: io.StringIO) -> int:
        rc, text = answers[len(sleeps)]
        log.write(text)
        return rc

    def sleep(seconds: float) -> None:
        sleeps.append(seconds)
        if len(sleeps) == len(answers):
            raise Stop

    err = io.StringIO()
    with pytest.raises(Stop):
        reclaim.every(30, one_pass, err, sleep, clock=lambda: 100.0)
    assert sleeps == [30] * 5
    assert err.getvalue() == "freed a\nstopped: HNS\nstopped: HNS\n"  # again once a pass went well


def test_every_0_turns_the_sweep_off_says_so_and_never_frees() -> None:
    passes: list = []

    def sleep(seconds: float) -> None:
        raise Stop

    err = io.StringIO()
    with pytest.raises(Stop):
        reclaim.every(0, lambda out, log: passes.append(out) or 0, err, sleep)
    assert passes == [] and "the sweep is turned off (--every 0)" in err.getvalue()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--max", "0"], "'0' is not a whole number of 1 or more"),
        (["--every", "-1"], "'-1' is not a number of seconds"),
        (["--runtime-endpoint", "tcp://10.0.0.1:1234"], "a runtime endpoint starts with unix:// or npipe://, or none"),
    ],
)
def test_bad_sweep_flags_are_usage_errors(argv: list[str], message: str) -> None:
    from tools.wincni.cli.main import main

    err = io.StringIO()
    assert main(["reclaim", *argv], io.StringIO(), err, {}) == 2 and message in err.getvalue()


def test_the_real_store_gives_every_address_of_a_pod_the_sandbox_its_add_recorded(tmp_path) -> None:
    """``holdings`` reads host-local's records under the store's lock: the dual-stack pod's second
    address shares the record its first names; HNS is asked about the recorded sandboxes only."""
    from basics.ipaddr import ip_address
    from plugins.ipam_host_local.allocator import Owner
    from plugins.ipam_host_local.store import open_store
    from tools.wincni.node.sandboxes import NAMESPACE, Sandbox
    from tools.wincni.reclaim.holdings import Holdings

    guid = "5E3C8F0A-1B2C-4D5E-8F90-A1B2C3D4E5F6"
    with open_store(str(tmp_path), "linux", guid) as s:
        assert s.reserve(Owner("pod1", "eth0"), ip_address("10.0.0.2"), 0)
        assert s.reserve(Owner("pod1", "eth0"), ip_address("fd00::2"), 1)
    with open_store(str(tmp_path), "linux") as s:
        assert s.reserve(Owner("gone", "eth0"), ip_address("10.0.0.3"), 0)

    class Node(Holdings):
        asked: list = []

        def alive(self, sandboxes):
            self.asked.append(set(sandboxes))
            return {s: True for s in self.asked[-1]}

    node = Node(NET, str(tmp_path), "", "linux", {})
    with node.locked() as store:
        assert {r.ip: r.sandbox_alive for r in store.reservations()} == {
            "10.0.0.2": True,
            "fd00::2": True,
            "10.0.0.3": False,
        }
        assert [r.ip for r in store.reservations("gone")] == ["10.0.0.3"]
    assert node.asked == [{Sandbox(NAMESPACE, guid)}, set()]
