"""Label and field selectors with the real API server's grammar and supported fields.

Label selectors: `a=b`, `a==b`, `a!=b`, `a in (x,y)`, `a notin (x,y)`, `a`, `!a`, comma = AND.
Field selectors: `f=v`, `f==v`, `f!=v` over the few fields the server indexes; any other field
is a 400 as in the real server, so code that relies on an unsupported field fails here first.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from scheduler.sim.apiserver.errors import ApiError, bad_request

Obj = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Requirement:
    key: str
    op: str  # "=", "!=", "in", "notin", "exists", "!exists"
    values: frozenset[str] = frozenset()

    def matches(self, labels: dict[str, str]) -> bool:
        if self.op == "exists":
            return self.key in labels
        if self.op == "!exists":
            return self.key not in labels
        present = self.key in labels
        if self.op in ("=", "in"):
            return present and labels[self.key] in self.values
        # "!=" and "notin" match objects without the label, as in Kubernetes
        return not present or labels[self.key] not in self.values


_KEY = r"[A-Za-z0-9]([-A-Za-z0-9_./]*[A-Za-z0-9])?"
_VALUE = r"([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?"
_SET_RE = re.compile(rf"^\s*({_KEY})\s+(in|notin)\s+\(([^)]*)\)\s*$")
_EQ_RE = re.compile(rf"^\s*({_KEY})\s*(==|=|!=)\s*({_VALUE})\s*$")
_EXISTS_RE = re.compile(rf"^\s*(!?)\s*({_KEY})\s*$")
_VALUE_RE = re.compile(rf"^{_VALUE}$")


def _split_top(text: str) -> list[str]:
    """Split on commas that are not inside a parenthesised value set."""
    parts: list[str] = []
    depth = 0
    cur: list[str] = []
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return [p for p in parts if p.strip()]


def parse_label_selector(text: str | None) -> tuple[Requirement, ...]:
    if not text or not text.strip():
        return ()
    reqs: list[Requirement] = []
    for part in _split_top(text):
        if m := _SET_RE.match(part):
            values = [v.strip() for v in m.group(4).split(",") if v.strip()]
            for v in values:
                if not _VALUE_RE.match(v):
                    raise _bad_label(text, f"invalid label value: {v!r}")
            reqs.append(Requirement(m.group(1), m.group(3), frozenset(values)))
        elif m := _EQ_RE.match(part):
            op = "!=" if m.group(3) == "!=" else "="
            reqs.append(Requirement(m.group(1), op, frozenset([m.group(4)])))
        elif m := _EXISTS_RE.match(part):
            reqs.append(Requirement(m.group(2), "!exists" if m.group(1) else "exists"))
        else:
            raise _bad_label(text, f"unable to parse requirement: {part.strip()!r}")
    return tuple(reqs)


def selector_terms(selector: Obj, sort_labels: bool = False) -> list[str | None]:
    """A LabelSelector object (matchLabels, then matchExpressions) as terms of the grammar above;
    None stands for an expression whose operator that grammar lacks, for the caller to judge."""
    labels = (selector.get("matchLabels") or {}).items()
    terms: list[str | None] = [f"{k}={v}" for k, v in (sorted(labels) if sort_labels else labels)]
    for e in selector.get("matchExpressions") or []:
        op, key, values = e.get("operator"), e.get("key"), ",".join(e.get("values") or [])
        if op == "In":
            terms.append(f"{key} in ({values})")
        elif op == "NotIn":
            terms.append(f"{key} notin ({values})")
        elif op == "Exists":
            terms.append(str(key))
        elif op == "DoesNotExist":
            terms.append(f"!{key}")
        else:
            terms.append(None)
    return terms


def _bad_label(text: str, why: str) -> ApiError:
    return bad_request(f"unable to parse requirement: {why} (labelSelector {text!r})")


def labels_match(reqs: tuple[Requirement, ...], obj: Obj) -> bool:
    if not reqs:
        return True
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return all(r.matches(labels) for r in reqs)


def _md(field: str) -> Callable[[Obj], str]:
    return lambda o: str((o.get("metadata") or {}).get(field) or "")


def _path(*keys: str) -> Callable[[Obj], str]:
    def get(o: Obj) -> str:
        cur: Any = o
        for k in keys:
            cur = (cur or {}).get(k) if isinstance(cur, dict) else None
        if isinstance(cur, bool):
            return "true" if cur else "false"
        return "" if cur is None else str(cur)

    return get


COMMON_FIELDS: dict[str, Callable[[Obj], str]] = {
    "metadata.name": _md("name"),
    "metadata.namespace": _md("namespace"),
}

# extra selectable fields per store key, as the real server registers them
EXTRA_FIELDS: dict[str, dict[str, Callable[[Obj], str]]] = {
    "pods": {
        "spec.nodeName": _path("spec", "nodeName"),
        "spec.schedulerName": _path("spec", "schedulerName"),
        "spec.serviceAccountName": _path("spec", "serviceAccountName"),
        "spec.restartPolicy": _path("spec", "restartPolicy"),
        "status.phase": _path("status", "phase"),
        "status.podIP": _path("status", "podIP"),
        "status.nominatedNodeName": _path("status", "nominatedNodeName"),
    },
    "nodes": {"spec.unschedulable": _path("spec", "unschedulable")},
    "namespaces": {"status.phase": _path("status", "phase")},
    "events": {
        "involvedObject.kind": _path("involvedObject", "kind"),
        "involvedObject.name": _path("involvedObject", "name"),
        "involvedObject.namespace": _path("involvedObject", "namespace"),
        "involvedObject.uid": _path("involvedObject", "uid"),
        "involvedObject.apiVersion": _path("involvedObject", "apiVersion"),
        "involvedObject.resourceVersion": _path("involvedObject", "resourceVersion"),
        "involvedObject.fieldPath": _path("involvedObject", "fieldPath"),
        "reportingComponent": _path("reportingComponent"),
        "source": _path("source", "component"),
        "reason": _path("reason"),
        "type": _path("type"),
    },
}


@dataclass(frozen=True, slots=True)
class FieldRequirement:
    field: str
    equal: bool
    value: str
    getter: Callable[[Obj], str]

    def matches(self, obj: Obj) -> bool:
        return (self.getter(obj) == self.value) == self.equal


def parse_field_selector(text: str | None, resource_key: str) -> tuple[FieldRequirement, ...]:
    if not text or not text.strip():
        return ()
    fields = {**COMMON_FIELDS, **EXTRA_FIELDS.get(resource_key, {})}
    reqs: list[FieldRequirement] = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        if "!=" in part:
            name, value = part.split("!=", 1)
            equal = False
        elif "==" in part:
            name, value = part.split("==", 1)
            equal = True
        elif "=" in part:
            name, value = part.split("=", 1)
            equal = True
        else:
            raise bad_request(f"invalid selector: '{text}'; can't understand '{part}'")
        name = name.strip()
        getter = fields.get(name)
        if getter is None:
            raise bad_request(f"field label not supported: {name}")
        reqs.append(FieldRequirement(name, equal, value.strip(), getter))
    return tuple(reqs)


def fields_match(reqs: tuple[FieldRequirement, ...], obj: Obj) -> bool:
    return all(r.matches(obj) for r in reqs)


@dataclass(frozen=True, slots=True)
class Selector:
    """Both selectors of one request, and the namespace the URL scoped it to."""

    labels: tuple[Requirement, ...] = ()
    fields: tuple[FieldRequirement, ...] = ()
    namespace: str | None = None

    @property
    def empty(self) -> bool:
        return not self.labels and not self.fields and self.namespace is None

    @property
    def namespace_only(self) -> bool:
        return not self.labels and not self.fields and self.namespace is not None

    def matches(self, obj: Obj) -> bool:
        if self.namespace is not None and (obj.get("metadata") or {}).get("namespace") != self.namespace:
            return False
        return labels_match(self.labels, obj) and fields_match(self.fields, obj)

    @classmethod
    def parse(
        cls, label_text: str | None, field_text: str | None, resource_key: str, namespace: str | None = None
    ) -> Selector:
        return cls(
            parse_label_selector(label_text), parse_field_selector(field_text, resource_key), namespace
        )
