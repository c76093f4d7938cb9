"""The compiled check that a pod's new version changed only its status (native/podconvert.pyx
`status_only` vs scheduler/model/podstatus.status_only) gives the same answer as its Python twin:
the same StatusUpdate, or None, over versions that change the status, the node, the spec, the
metadata the conversion reads, or that have sections of the wrong kind.

CI sets VC_SCHEDULER_REQUIRE_NATIVE=1: then a missing compiled module is a failure, not a skip.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from scheduler._native import compiled
from scheduler.model import podstatus as twin
from tests.builders import pod

native = compiled("podconvert")
needs_native = pytest.mark.skipif(native is None, reason="scheduler._native.podconvert is not built")


def _base() -> dict[str, Any]:
    p = pod("p", group="g", priority=0, labels={"app": "a"})
    p["metadata"]["uid"] = "uid-p"
    p["metadata"]["resourceVersion"] = "7"
    p["metadata"]["creationTimestamp"] = "2026-01-01T00:00:00Z"
    p["spec"]["tolerations"] = [{"key": "k", "operator": "Exists"}]
    return p


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    section, _, key = path.partition(".")

    def change(p: dict[str, Any]) -> None:
        if not key:
            p[section] = value
        elif value == "absent":
            p[section].pop(key, None)
        else:
            p[section][key] = value

    return change


_BOUND = {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "True"}]}
_RUNNING = {
    "phase": "Running",
    "conditions": [{"type": t, "status": "True"} for t in ("PodScheduled", "Ready")],
    "containerStatuses": [{"name": "main", "ready": True}],
}
_CHANGES: dict[str, list[Callable[[dict[str, Any]], None]]] = {
    "bound": [_set("spec.nodeName", "n1"), _set("status", copy.deepcopy(_BOUND))],
    "running": [_set("spec.nodeName", "n1"), _set("status", copy.deepcopy(_RUNNING))],
    "nominated": [_set("status", {"nominatedNodeName": "n2"})],
    "no phase": [_set("status", {"phase": None, "conditions": None})],
    "conditions not a list": [_set("status", {"phase": "Pending", "conditions": {"a": 1}})],
    "other node": [_set("spec.nodeName", "n2")],
    "spec edit": [_set("spec.priority", 5)],
    "spec key gone": [_set("spec.tolerations", "absent")],
    "spec key added": [_set("spec.hostNetwork", True)],
    "spec key swapped": [_set("spec.tolerations", "absent"), _set("spec.hostNetwork", [])],
    "labels": [_set("metadata.labels", {"app": "b"})],
    "annotations": [_set("metadata.annotations", {})],
    "owners": [_set("metadata.ownerReferences", [{"kind": "Job", "uid": "j"}])],
    "uid": [_set("metadata.uid", "other")],
    "created": [_set("metadata.creationTimestamp", "2026-01-02T00:00:00Z")],
    "deleting": [_set("metadata.deletionTimestamp", "2026-01-02T00:00:00Z")],
    "metadata not a dict": [_set("metadata", ["x"])],
    "spec not a dict": [_set("spec", None)],
    "status absent": [_set("status", None)],
    "version": [_set("metadata.resourceVersion", 8)],
}


@needs_native
@pytest.mark.parametrize("node", ["", "n1"])
@pytest.mark.parametrize("change", sorted(_CHANGES))
def test_both_forms_answer_alike(change: str, node: str) -> None:
    assert native is not None
    seen = twin.pod_seen(_base())
    assert seen is not None
    new = _base()  # equal values, other objects: compared by value as the twin does
    for step in _CHANGES[change]:
        step(new)
    expected = twin.status_only(new, seen, node)
    assert native.status_only(new, seen, node) == expected
    if change in ("bound", "running"):
        assert (expected is not None) == (node == "n1")  # the cases this test is for were met


@needs_native
def test_a_status_update_is_what_the_twin_reads() -> None:
    assert native is not None
    p = _base()
    seen = twin.pod_seen(p)
    assert seen is not None
    p["spec"]["nodeName"] = "n1"
    p["status"] = copy.deepcopy(_RUNNING)
    update = native.status_only(p, seen, "n1")
    assert update == twin.StatusUpdate("Running", "", ("True", "", ""), "7")
