"""metav1.LabelSelector matching: matchLabels plus matchExpressions In/NotIn/Exists/DoesNotExist.

Kubernetes' conventions kept here: a missing (None) selector selects nothing, an empty one `{}`
selects everything, and an invalid selector (unknown operator, In without values) selects
nothing, because kube-scheduler cannot convert it and the term then never matches.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

_SET_OPS = frozenset({"In", "NotIn"})
_EXIST_OPS = frozenset({"Exists", "DoesNotExist"})


class Selector:
    """A compiled label selector; `matches` is the hot path."""

    __slots__ = ("exprs", "match_labels", "nothing")

    def __init__(
        self,
        match_labels: tuple[tuple[str, str], ...] = (),
        exprs: tuple[tuple[str, str, frozenset[str]], ...] = (),
        nothing: bool = False,
    ) -> None:
        self.match_labels = match_labels
        self.exprs = exprs
        self.nothing = nothing

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.nothing:
            return False
        for k, v in self.match_labels:
            if labels.get(k) != v:
                return False
        for key, op, values in self.exprs:
            if op == "In":
                if key not in labels or labels[key] not in values:
                    return False
            elif op == "NotIn":
                if key in labels and labels[key] in values:
                    return False
            elif op == "Exists":
                if key not in labels:
                    return False
            elif key in labels:  # DoesNotExist
                return False
        return True

    def with_label_keys(self, keys: list[str], labels: Mapping[str, str]) -> Selector:
        """The selector narrowed by `matchLabelKeys`: key In [the pod's value] for keys it has."""
        extra = tuple((k, "In", frozenset({labels[k]})) for k in keys if k in labels)
        if not extra or self.nothing:
            return self
        return Selector(self.match_labels, self.exprs + extra)

    def __repr__(self) -> str:
        if self.nothing:
            return "<Selector nothing>"
        return f"<Selector {dict(self.match_labels)} {list(self.exprs)}>"


NOTHING = Selector(nothing=True)
EVERYTHING = Selector()


def compile_selector(raw: Any) -> Selector:
    """Compile a raw LabelSelector dict (None selects nothing, {} everything)."""
    if raw is None or not isinstance(raw, dict):
        return NOTHING
    ml = raw.get("matchLabels") or {}
    if not isinstance(ml, dict):
        return NOTHING
    exprs: list[tuple[str, str, frozenset[str]]] = []
    for e in raw.get("matchExpressions") or []:
        if not isinstance(e, dict):
            return NOTHING
        key = e.get("key")
        op = e.get("operator")
        values = e.get("values") or []
        if not isinstance(key, str) or not isinstance(values, list):
            return NOTHING
        if op in _SET_OPS:
            if not values:
                return NOTHING
        elif op in _EXIST_OPS:
            if values:
                return NOTHING
        else:
            return NOTHING
        exprs.append((key, str(op), frozenset(str(v) for v in values)))
    return Selector(tuple((str(k), str(v)) for k, v in ml.items()), tuple(exprs))


def selector_matches(raw: Any, labels: Mapping[str, str]) -> bool:
    """One-off match of a raw selector (compile once and reuse `Selector` on hot paths)."""
    return compile_selector(raw).matches(labels)
