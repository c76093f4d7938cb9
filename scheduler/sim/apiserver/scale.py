"""The `scale` subresource of Deployments, ReplicaSets and StatefulSets (`kubectl scale`).

It reads and writes an `autoscaling/v1 Scale` whose `spec.replicas` is the owner's; a write
changes only the owner's `spec.replicas` (a stale resourceVersion is a 409 as on the owner).
"""

from __future__ import annotations

from typing import Any

from scheduler.sim.apiserver.errors import ApiError, bad_request
from scheduler.sim.apiserver.patch import json_patch, merge_patch
from scheduler.sim.apiserver.resources import ResourceInfo
from scheduler.sim.apiserver.selectors import selector_terms
from scheduler.sim.apiserver.store import Store

Obj = dict[str, Any]


def selector_text(selector: Any) -> str:
    """A LabelSelector as the label-selector string a Scale reports (matchLabels sorted; an
    expression with an unknown operator is left out)."""
    if not isinstance(selector, dict):
        return ""
    return ",".join(t for t in selector_terms(selector, sort_labels=True) if t is not None)


def to_scale(obj: Obj) -> Obj:
    md, spec = obj["metadata"], obj.get("spec") or {}
    return {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {
            k: md[k] for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp") if k in md
        },
        "spec": {"replicas": int(spec.get("replicas", 1))},
        "status": {
            "replicas": int((obj.get("status") or {}).get("replicas") or 0),
            "selector": selector_text(spec.get("selector")),
        },
    }


def write_scale(store: Store, res: ResourceInfo, ns: str | None, name: str, scale: Any) -> Obj:
    """Set the owner's replicas from a Scale body; returns the new Scale."""
    if not isinstance(scale, dict) or not isinstance(scale.get("spec"), dict):
        raise bad_request("the body must be an autoscaling/v1 Scale with a spec")
    replicas = scale["spec"].get("replicas")
    if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
        raise ApiError(
            422,
            "Invalid",
            f'Scale "{name}" is invalid: spec.replicas: Invalid value: {replicas!r}: must be >= 0',
        )
    precondition = (
        {"resourceVersion": rv} if (rv := (scale.get("metadata") or {}).get("resourceVersion")) else {}
    )
    obj = store.patch(res, ns, name, {"metadata": precondition, "spec": {"replicas": replicas}})
    return to_scale(obj)


def patch_scale(store: Store, res: ResourceInfo, ns: str | None, name: str, patch: Any, ptype: str) -> Obj:
    current = to_scale(store.must_get(res, ns, name))
    if ptype == "json":
        new = json_patch(current, patch)
    elif isinstance(patch, dict):
        new = merge_patch(current, patch)  # a Scale has no lists: strategic and merge agree
    else:
        raise bad_request("a merge patch must be a JSON object")
    return write_scale(store, res, ns, name, new)
