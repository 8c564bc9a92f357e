"""The NetworkPolicy library's one error hierarchy. An object the API server would not have
returned is ``BadObject`` (naming the field and the fix); what HNS cannot express is not an error
but a ``model.Refusal`` record, kept beside the pod it concerns."""

from __future__ import annotations


class PolicyError(Exception):
    """Every error of ``plugins.netpol``."""


class BadObject(PolicyError):
    """An API object of the wrong shape: ``field`` is its path (``policies[2].spec.ingress[0]``)."""

    def __init__(self, field: str, problem: str, fix: str) -> None:
        super().__init__(f"{field}: {problem} ({fix})")
        self.field, self.problem, self.fix = field, problem, fix
