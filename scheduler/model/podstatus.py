"""Recognise a pod update that changes only its status (the watch echo of a Binding, the kubelet's
reports) so it is applied without converting the whole pod again.

A pod we schedule comes back from the watch two or three times after its Binding: once with
`spec.nodeName` set to the node we chose, then with the kubelet's status. Each used to be converted
in full (containers, labels, affinity, a new TaskInfo), which at a 5,000-pod burst was a fifth of
the daemon's CPU per pod. `PodSeen` keeps what the conversion read outside `status` (shallow
references: the nested values are the decoded objects' own, not copies), and `status_only` says
whether a new version of the pod differs from it in nothing but status and resourceVersion. Every
field `pod_to_task` reads outside `status` is compared, so any change the model could notice (spec
edits, in-place resizes, labels, annotations, owners, deletion) takes the full conversion.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from scheduler.model.convert import scheduled_condition

# PodSeen.meta holds these metadata fields, in this order (name and namespace make the key)
_META = ("uid", "labels", "annotations", "ownerReferences", "creationTimestamp")


@dataclass(slots=True)
class PodSeen:
    """The parts of a pod's last converted version that a status update must leave alone."""

    meta: tuple[Any, ...]
    spec: dict[str, Any]  # without nodeName: the node is compared with what the model holds


@dataclass(frozen=True, slots=True)
class StatusUpdate:
    phase: str
    nominated_node: str
    scheduled_condition: tuple[str, str, str] | None
    resource_version: str


def pod_seen(pod: dict[str, Any]) -> PodSeen | None:
    """What to compare later's versions with; None when a pod's shape does not allow the shortcut
    (then each of its updates is converted in full, as before)."""
    md, spec = pod.get("metadata"), pod.get("spec")
    if type(md) is not dict or type(spec) is not dict or md.get("deletionTimestamp"):
        return None
    if spec.get("priority") is None:
        # the priority would come from the PriorityClasses as they are at conversion time
        return None
    spec = dict(spec)
    spec.pop("nodeName", None)
    g = md.get  # _META spelled out, as in status_only: every new pending pod of a burst comes here
    return PodSeen(
        (g("uid"), g("labels"), g("annotations"), g("ownerReferences"), g("creationTimestamp")), spec
    )


def with_bind_annotations(seen: PodSeen, annotations: dict[str, str]) -> PodSeen:
    """The version the API server will show after our Binding wrote these annotations."""
    if not annotations:
        return seen
    uid, labels, old, owners, created = seen.meta
    merged = {**(old if isinstance(old, dict) else {}), **annotations}
    return PodSeen((uid, labels, merged, owners, created), seen.spec)


def status_only(pod: dict[str, Any], seen: PodSeen, node_name: str) -> StatusUpdate | None:
    """The new status when `pod` differs from `seen` only there (and its node is `node_name`, the
    node the model already holds); None when anything else the conversion reads changed."""
    md, spec, status = pod.get("metadata"), pod.get("spec"), pod.get("status")
    if type(md) is not dict or type(spec) is not dict or type(status) is not dict:
        return None
    if md.get("deletionTimestamp") or (spec.get("nodeName") or "") != node_name:
        return None
    g = md.get  # spelled out, not a loop over _META: this runs for every echo of a burst
    if (g("uid"), g("labels"), g("annotations"), g("ownerReferences"), g("creationTimestamp")) != seen.meta:
        return None
    rest = dict(spec)
    rest.pop("nodeName", None)
    if rest != seen.spec:
        return None
    if type(status.get("conditions") or []) is not list:
        return None
    return StatusUpdate(
        str(status.get("phase") or "Pending"),
        str(status.get("nominatedNodeName") or ""),
        scheduled_condition(status),
        str(md.get("resourceVersion") or ""),
    )


def _select_status_only() -> Callable[[dict[str, Any], PodSeen, str], StatusUpdate | None]:
    from scheduler._native import select

    return select("podconvert", sys.modules[__name__]).status_only  # type: ignore[no-any-return]


# compiled when built (native/podconvert.pyx: `status_only`), `status_only` above otherwise
status_only_impl: Callable[[dict[str, Any], PodSeen, str], StatusUpdate | None] = _select_status_only()
