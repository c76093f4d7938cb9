"""Taints and tolerations as kube-scheduler's TaintToleration and NodeUnschedulable judge them.

A toleration tolerates a taint when its effect is empty or equal, its key is empty or equal, and
its operator is Exists, or Equal (the default) with an equal value. So an empty key with Exists
tolerates every taint (of its effect, or of all effects when the effect is empty).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

NO_SCHEDULE = "NoSchedule"
NO_EXECUTE = "NoExecute"
PREFER_NO_SCHEDULE = "PreferNoSchedule"
# The filter only looks at the effects that keep pods off a node.
DO_NOT_SCHEDULE = frozenset({NO_SCHEDULE, NO_EXECUTE})
UNSCHEDULABLE_TAINT = {"key": "node.kubernetes.io/unschedulable", "effect": NO_SCHEDULE}


def tolerates(toleration: dict[str, Any], taint: dict[str, Any]) -> bool:
    effect = toleration.get("effect") or ""
    if effect and effect != (taint.get("effect") or ""):
        return False
    key = toleration.get("key") or ""
    if key and key != (taint.get("key") or ""):
        return False
    op = toleration.get("operator") or "Equal"
    if op == "Exists":
        return True
    if op == "Equal":
        return (toleration.get("value") or "") == (taint.get("value") or "")
    return False


def tolerated(tolerations: Iterable[dict[str, Any]], taint: dict[str, Any]) -> bool:
    return any(tolerates(t, taint) for t in tolerations)


def find_untolerated_taint(
    taints: list[dict[str, Any]], tolerations: list[dict[str, Any]], effects: frozenset[str] = DO_NOT_SCHEDULE
) -> dict[str, Any] | None:
    """The first taint (in the node's order) with one of `effects` that no toleration tolerates."""
    for taint in taints:
        if (taint.get("effect") or "") in effects and not tolerated(tolerations, taint):
            return taint
    return None


def untolerated_taint_reason(taint: dict[str, Any]) -> str:
    return f"node(s) had untolerated taint {{{taint.get('key') or ''}: {taint.get('value') or ''}}}"


def tolerates_unschedulable(tolerations: list[dict[str, Any]]) -> bool:
    """A pod tolerating the unschedulable taint may go to a cordoned node (NodeUnschedulable)."""
    return tolerated(tolerations, UNSCHEDULABLE_TAINT)


def prefer_no_schedule_tolerations(tolerations: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Only tolerations with an empty or PreferNoSchedule effect count for scoring."""
    return [t for t in tolerations if (t.get("effect") or "") in ("", PREFER_NO_SCHEDULE)]


def count_intolerable_prefer_no_schedule(
    taints: list[dict[str, Any]], tolerations: list[dict[str, Any]]
) -> int:
    """TaintToleration's raw score: PreferNoSchedule taints the (filtered) tolerations miss."""
    n = 0
    for taint in taints:
        if (taint.get("effect") or "") == PREFER_NO_SCHEDULE and not tolerated(tolerations, taint):
            n += 1
    return n
