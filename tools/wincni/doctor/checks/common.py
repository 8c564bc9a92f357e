"""What every check shares: the fix command line, and the not-checked and failed verdicts."""

from __future__ import annotations

from tools.wincni.doctor.facts import NodeFacts
from tools.wincni.judge.verdict import AFTER_FAILURE, FAIL, SKIP, Check, command_line
from tools.wincni.node.source import Problem


def command(f: NodeFacts, program: str, *args: str) -> str:
    """One command line for ``run``: ``command_line`` on the node ``f`` describes."""
    return command_line(f.windows, f.tools, program, *args)


def no_config(f: NodeFacts, id_: str) -> Check | None:
    """The check needs to know which config the pods use: not checked when it could not be read."""
    return not_checked(id_, "no CNI config") if f.conf_problem and not f.plugin else None


def not_checked(id_: str, needs: str, fix: str = AFTER_FAILURE) -> Check:
    return Check(id_, SKIP, f"not checked: {needs}", fix)


def failed(id_: str, problem: Problem) -> Check:
    return Check(id_, FAIL, problem.message, problem.fix)


def minutes() -> str:
    from plugins.cni.ownership import IN_FLIGHT_SECONDS

    return f"{IN_FLIGHT_SECONDS / 60:g} minutes"
