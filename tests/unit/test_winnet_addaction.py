"""ADD's one action on what HNS holds under the pod's endpoint name, as a table: every place the
endpoint may be, attached or not, for a command of its own or one joining its pod's endpoint, and
every verdict of the ownership rule on who holds it (``ownership.endpoint_kept`` gives it here
from the endpoint's name and whether a live sandbox holds it)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from plugins.cni.ownership import ATTACHED, FLANNELD, NOT_OURS, endpoint_kept
from plugins.winnet.addaction import (
    ACTIONS,
    ELSEWHERE,
    HERE,
    NOWHERE,
    PLACES,
    STALE_ELSEWHERE,
    STALE_HERE,
    Create,
    Facts,
    Join,
    LeaveAlone,
    NoPodEndpoint,
    Replace,
    Reuse,
    decide,
    needs_holder,
)

POD = ("pod1_cbr0", "cbr0")  # (the endpoint's name, the pod's network): the pod's own name
FLANNELDS = ("ep_ep", "ep")  # a sandbox "ep" on network "ep": its name is flanneld's host endpoint's
STRANGER = ("_cbr0", "cbr0")  # no sandbox part: not <sandbox>_<network>

# (shared, place, attached, (name, network), live sandbox holds it) -> action;
# None for a fact the choice does not read.
TABLE = [
    # nothing under the pod's name
    (False, NOWHERE, None, None, None, Create()),
    (True, NOWHERE, None, None, None, NoPodEndpoint()),
    # on the pod's network, attached to this sandbox: a retried ADD
    (False, HERE, True, None, None, Reuse(attach=False)),
    # an app container joins its pause container's endpoint, attached to it or not yet
    (True, HERE, True, None, None, Join()),
    (True, HERE, False, None, None, Join()),
    # on the pod's network, not attached here
    (False, HERE, False, POD, True, Reuse(attach=True)),  # rule 5: a live sandbox holds it
    (False, HERE, False, POD, False, Replace(STALE_HERE)),  # stale: ours, nothing alive holds it
    (False, HERE, False, FLANNELDS, False, LeaveAlone(FLANNELD, elsewhere=False)),  # rule 4
    (False, HERE, False, STRANGER, False, LeaveAlone(NOT_OURS, elsewhere=False)),  # rule 4
    # on another network
    (False, ELSEWHERE, False, POD, True, LeaveAlone(ATTACHED, elsewhere=True)),  # rule 5
    (False, ELSEWHERE, True, POD, True, LeaveAlone(ATTACHED, elsewhere=True)),  # rule 5
    (False, ELSEWHERE, False, POD, False, Replace(STALE_ELSEWHERE)),
    (False, ELSEWHERE, False, FLANNELDS, False, LeaveAlone(FLANNELD, elsewhere=True)),  # rule 4
    (False, ELSEWHERE, False, STRANGER, False, LeaveAlone(NOT_OURS, elsewhere=True)),  # rule 4
    (True, ELSEWHERE, False, POD, True, LeaveAlone(ATTACHED, elsewhere=True)),  # rule 5
    (True, ELSEWHERE, False, POD, False, NoPodEndpoint(STALE_ELSEWHERE)),  # the stale one goes first
    (True, ELSEWHERE, False, FLANNELDS, True, LeaveAlone(ATTACHED, elsewhere=True)),  # rule 5 before 4
    (True, ELSEWHERE, False, STRANGER, False, LeaveAlone(NOT_OURS, elsewhere=True)),  # rule 4
]


@pytest.mark.parametrize("shared, place, attached, named, alive, action", TABLE)
def test_the_action_for_each_case(shared, place, attached, named, alive, action):
    attached = bool(attached)
    asked = needs_holder(shared, place, attached)
    assert asked == (named is not None)  # who holds it is asked exactly where the table reads it
    kept = endpoint_kept(named[0], named[1], alive) if asked else None
    assert decide(Facts(shared, place, attached, kept)) == action


def test_the_table_has_every_place_every_action_and_every_verdict_of_the_rule():
    assert {row[1] for row in TABLE} == set(PLACES)
    assert {type(row[-1]) for row in TABLE} == set(ACTIONS)
    verdicts = {endpoint_kept(row[3][0], row[3][1], row[4]) for row in TABLE if row[3] is not None}
    assert verdicts == {"", ATTACHED, FLANNELD, NOT_OURS}


def test_the_choice_that_needs_who_holds_the_endpoint_refuses_to_guess():
    with pytest.raises(ValueError, match="who holds"):
        decide(Facts(False, ELSEWHERE, False, None))


VERDICTS = st.sampled_from(["", ATTACHED, FLANNELD, NOT_OURS])


@st.composite
def facts(draw):
    shared, place, attached = draw(st.booleans()), draw(st.sampled_from(PLACES)), draw(st.booleans())
    kept = draw(VERDICTS) if needs_holder(shared, place, attached) else None
    return Facts(shared, place, attached, kept)


@given(facts())
def test_every_case_has_one_action_and_a_kept_endpoint_is_never_removed_or_replaced(f):
    action = decide(f)
    assert isinstance(action, ACTIONS)
    removes = isinstance(action, Replace) or (isinstance(action, NoPodEndpoint) and action.why)
    if f.kept:
        assert not removes, (f, action)
    if f.place != NOWHERE:
        assert not isinstance(action, Create), (f, action)  # the pod's name is taken: never a plain create
    if removes:
        assert f.kept == "" and (f.place == ELSEWHERE or not f.attached), (f, action)


@given(facts())
def test_only_an_app_container_joins_and_it_never_makes_an_endpoint(f):
    action = decide(f)
    if f.shared:
        assert isinstance(action, (Join, LeaveAlone, NoPodEndpoint)), (f, action)
    else:
        assert not isinstance(action, (Join, NoPodEndpoint)), (f, action)


@given(st.booleans(), st.sampled_from(PLACES), st.booleans(), VERDICTS)
def test_who_holds_the_endpoint_changes_nothing_where_it_is_not_asked(shared, place, attached, kept):
    if not needs_holder(shared, place, attached):
        assert decide(Facts(shared, place, attached, kept)) == decide(Facts(shared, place, attached, None))
