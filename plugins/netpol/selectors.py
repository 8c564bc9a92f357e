"""Label selectors (``metav1.LabelSelector``) as the API server validates them and as Kubernetes
matches them (apimachinery ``LabelSelectorAsSelector``): every ``matchLabels`` pair and every
``matchExpressions`` requirement must hold; an empty selector selects everything. Pure."""

from __future__ import annotations

from plugins.netpol.errors import BadObject

#: matchExpressions operators (apimachinery LabelSelectorOperator); In / NotIn need values,
#: Exists / DoesNotExist must have none.
_WITH_VALUES = ("In", "NotIn")
_WITHOUT_VALUES = ("Exists", "DoesNotExist")


class Selector:
    """A parsed label selector: ``labels`` (matchLabels) and ``expressions`` (key, operator,
    values) tuples, both sorted so that equal selectors compare equal."""

    __slots__ = ("labels", "expressions")

    def __init__(self, labels: tuple = (), expressions: tuple = ()) -> None:
        self.labels = tuple(sorted(labels))
        self.expressions = tuple(sorted(expressions))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Selector) and (self.labels, self.expressions) == (other.labels, other.expressions)

    def __hash__(self) -> int:
        return hash((self.labels, self.expressions))

    def __repr__(self) -> str:
        return f"Selector(labels={self.labels!r}, expressions={self.expressions!r})"

    def matches(self, labels: dict) -> bool:
        """Whether an object with ``labels`` is selected."""
        if any(labels.get(key) != value for key, value in self.labels):
            return False
        return all(_holds(op, labels, key, values) for key, op, values in self.expressions)


#: The selector that selects everything (``{}``).
EVERYTHING = Selector()


def _holds(op: str, labels: dict, key: str, values: tuple) -> bool:
    if op == "In":
        return key in labels and labels[key] in values
    if op == "NotIn":  # an object without the key is not "in" the set, so NotIn holds
        return key not in labels or labels[key] not in values
    if op == "Exists":
        return key in labels
    return key not in labels  # DoesNotExist


def parse(raw, where: str) -> Selector:
    """``raw`` (a LabelSelector object, or None for an absent one) → Selector; BadObject naming
    ``where`` for what the API server would have refused."""
    if raw is None:
        return EVERYTHING
    if not isinstance(raw, dict):
        raise BadObject(where, f"{raw!r} is not a label selector", "give an object with matchLabels / matchExpressions")
    labels = raw.get("matchLabels") or {}
    if not isinstance(labels, dict) or not all(isinstance(v, str) for v in labels.values()):
        raise BadObject(f"{where}.matchLabels", f"{labels!r} is not a map of strings", 'write {"key": "value"}')
    expressions = []
    for i, req in enumerate(raw.get("matchExpressions") or ()):
        at = f"{where}.matchExpressions[{i}]"
        op = req.get("operator") if isinstance(req, dict) else None
        key = req.get("key") if isinstance(req, dict) else None
        values = req.get("values") or [] if isinstance(req, dict) else []
        if not isinstance(key, str) or not key:
            raise BadObject(f"{at}.key", f"{key!r} is not a label key", "name the label the requirement tests")
        if op in _WITH_VALUES and not (values and all(isinstance(v, str) for v in values)):
            raise BadObject(f"{at}.values", f"{op} needs a non-empty list of strings", "list the values")
        if op in _WITHOUT_VALUES and values:
            raise BadObject(f"{at}.values", f"{op} takes no values", "remove values")
        if op not in _WITH_VALUES + _WITHOUT_VALUES:
            raise BadObject(f"{at}.operator", f"{op!r} is not an operator", "use In, NotIn, Exists or DoesNotExist")
        expressions.append((key, op, tuple(sorted(set(values)))))
    return Selector(tuple(labels.items()), tuple(expressions))
