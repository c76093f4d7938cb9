"""nodeSelector and node affinity, as kube-scheduler's NodeAffinity plugin matches and scores them.

Required: every nodeSelector label must be equal, and (when present) at least one of the
requiredDuringScheduling nodeSelectorTerms must match; a term matches when all its label
requirements (In/NotIn/Exists/DoesNotExist/Gt/Lt) and field requirements (only `metadata.name`,
In/NotIn with one value) hold. An empty term matches nothing, and so does an invalid one (the
API would refuse it; kube-scheduler skips terms it cannot parse). Preferred: the node's raw score
is the sum of the weights of the preferred terms it matches (terms of weight 0 are ignored).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

_LABEL_OPS = frozenset({"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"})
FIELD_NODE_NAME = "metadata.name"

# (key, operator, values) with values a frozenset for In/NotIn, an int for Gt/Lt, None otherwise
Requirement = tuple[str, str, Any]


class Term:
    """One compiled nodeSelectorTerm."""

    __slots__ = ("fields", "labels")

    def __init__(self, labels: tuple[Requirement, ...], fields: tuple[Requirement, ...]) -> None:
        self.labels = labels
        self.fields = fields

    def matches(self, node_name: str, node_labels: Mapping[str, str]) -> bool:
        for key, op, values in self.labels:
            if not _label_requirement_holds(op, key, values, node_labels):
                return False
        return all((node_name in values) == (op == "In") for _key, op, values in self.fields)


def _label_requirement_holds(op: str, key: str, values: Any, labels: Mapping[str, str]) -> bool:
    if op == "In":
        return key in labels and labels[key] in values
    if op == "NotIn":
        return key not in labels or labels[key] not in values
    if op == "Exists":
        return key in labels
    if op == "DoesNotExist":
        return key not in labels
    v = labels.get(key)
    if v is None:
        return False
    try:
        n = int(v)
    except ValueError:
        return False
    return n > values if op == "Gt" else n < values


def _compile_label_req(raw: Any) -> Requirement | None:
    if not isinstance(raw, dict):
        return None
    key, op, values = raw.get("key"), raw.get("operator"), raw.get("values") or []
    if not isinstance(key, str) or op not in _LABEL_OPS or not isinstance(values, list):
        return None
    if op in ("In", "NotIn"):
        return (key, op, frozenset(str(v) for v in values)) if values else None
    if op in ("Exists", "DoesNotExist"):
        return None if values else (key, op, None)
    if len(values) != 1:
        return None
    try:
        return (key, op, int(str(values[0])))
    except ValueError:
        return None


def _compile_field_req(raw: Any) -> Requirement | None:
    if not isinstance(raw, dict):
        return None
    key, op, values = raw.get("key"), raw.get("operator"), raw.get("values") or []
    if (
        key != FIELD_NODE_NAME
        or op not in ("In", "NotIn")
        or not isinstance(values, list)
        or len(values) != 1
    ):
        return None
    return (key, op, frozenset(str(v) for v in values))


def compile_term(raw: Any) -> Term | None:
    """A matchable term, or None for an empty or invalid one (which matches no node)."""
    if not isinstance(raw, dict):
        return None
    exprs = raw.get("matchExpressions") or []
    fields = raw.get("matchFields") or []
    if not isinstance(exprs, list) or not isinstance(fields, list) or not (exprs or fields):
        return None
    labels = tuple(_compile_label_req(e) for e in exprs)
    fls = tuple(_compile_field_req(f) for f in fields)
    if any(r is None for r in labels) or any(r is None for r in fls):
        return None
    return Term(labels, fls)  # type: ignore[arg-type]


class RequiredNodeAffinity:
    """nodeSelector AND required node affinity of one pod, compiled."""

    __slots__ = ("node_selector", "terms")

    def __init__(self, node_selector: Mapping[str, str], terms: list[Term | None] | None) -> None:
        self.node_selector = tuple(node_selector.items())
        # None: no required node affinity; a list (possibly of Nones): at least one must match
        self.terms = terms

    @property
    def empty(self) -> bool:
        return not self.node_selector and self.terms is None

    def matches(self, node_name: str, node_labels: Mapping[str, str]) -> bool:
        for k, v in self.node_selector:
            if node_labels.get(k) != v:
                return False
        if self.terms is None:
            return True
        return any(t is not None and t.matches(node_name, node_labels) for t in self.terms)


def _node_affinity(affinity: Mapping[str, Any]) -> dict[str, Any]:
    na = affinity.get("nodeAffinity") if affinity else None
    return na if isinstance(na, dict) else {}


def required_node_affinity(
    node_selector: Mapping[str, str], affinity: Mapping[str, Any]
) -> RequiredNodeAffinity:
    required = _node_affinity(affinity).get("requiredDuringSchedulingIgnoredDuringExecution")
    terms: list[Term | None] | None = None
    if isinstance(required, dict):
        raw_terms = required.get("nodeSelectorTerms") or []
        terms = [compile_term(t) for t in raw_terms] if isinstance(raw_terms, list) else []
    return RequiredNodeAffinity(node_selector or {}, terms)


def weighted_entries(section: Mapping[str, Any]) -> Iterator[tuple[int, dict[str, Any]]]:
    """(weight, entry) of a `preferredDuringSchedulingIgnoredDuringExecution` list (node, pod and
    pod anti-affinity share its shape); entries that are not objects or whose weight is not a
    number are skipped, as they can never add to a score."""
    raw = section.get("preferredDuringSchedulingIgnoredDuringExecution") or []
    if not isinstance(raw, list):
        return
    for entry in raw:
        if not isinstance(entry, dict):
            continue
        try:
            weight = int(entry.get("weight") or 0)
        except (TypeError, ValueError):
            continue
        yield weight, entry


def preferred_terms(affinity: Mapping[str, Any]) -> list[tuple[int, Term]]:
    """(weight, term) of the preferred node affinity terms that can ever match."""
    out: list[tuple[int, Term]] = []
    for weight, p in weighted_entries(_node_affinity(affinity)):
        term = compile_term(p.get("preference"))
        if weight != 0 and term is not None:
            out.append((weight, term))
    return out


def preferred_score(terms: list[tuple[int, Term]], node_name: str, node_labels: Mapping[str, str]) -> int:
    return sum(w for w, t in terms if t.matches(node_name, node_labels))
