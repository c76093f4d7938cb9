"""The watch echo of our own Binding and the kubelet's status reports skip the full pod conversion,
and any update that changes more than status is still converted in full: the cache ends up exactly
where a full conversion of every event would have put it."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from scheduler.kube import cache as cache_module
from scheduler.kube.cache import SchedulerCache
from scheduler.model.objects import TaskStatus
from tests.builders import node, pod, podgroup, queue

KEY = "c1/p1"


def created(rv: str = "1") -> dict[str, Any]:
    p = pod("p1", group="g", priority=0, labels={"app": "a"})
    p["metadata"].update(uid="uid-p1", resourceVersion=rv, creationTimestamp="2026-11-23T10:00:00Z")
    return p


def bound(obj: dict[str, Any], node_name: str, rv: str) -> dict[str, Any]:
    """What the watch shows after a Binding: nodeName set, a new resourceVersion."""
    out = copy.deepcopy(obj)
    out["spec"]["nodeName"] = node_name
    out["metadata"]["resourceVersion"] = rv
    return out


def running(obj: dict[str, Any], rv: str) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    out["metadata"]["resourceVersion"] = rv
    out["status"] = {
        "phase": "Running",
        "podIP": "10.0.0.7",
        "conditions": [{"type": "PodScheduled", "status": "True"}, {"type": "Ready", "status": "True"}],
    }
    return out


def cluster() -> SchedulerCache:
    c = SchedulerCache()
    c.upsert_queue(queue("default"))
    c.upsert_node(node("n1"))
    c.upsert_node(node("n2"))
    c.upsert_podgroup(podgroup("g", 1))
    return c


def view(c: SchedulerCache) -> dict[str, Any]:
    """What a session would see of the pod, its node and its job."""
    task = c.state.get_task(KEY)
    assert task is not None
    p = task.pod
    job = c.state.jobs["c1/g"]
    return {
        "status": task.status,
        "node": task.node_name,
        "phase": p.phase,
        "labels": p.labels,
        "annotations": p.annotations,
        "deleting": p.deleting,
        "resreq": str(task.resreq),
        "condition": p.scheduled_condition,
        "nominated": p.nominated_node,
        "rv": p.resource_version,
        "on_nodes": sorted(n for n, info in c.state.nodes.items() if task.uid in info.tasks),
        "job_index": {s: len(ts) for s, ts in job.task_status_index.items() if ts},
        "pending_work": c.has_pending_work(),
    }


def test_the_echo_of_our_binding_and_the_kubelet_report_are_applied_without_reconverting() -> None:
    c = cluster()
    first = created()
    c.upsert_pod(first)
    task = c.state.get_task(KEY)
    assert task is not None and KEY in c.seen
    assert c.assume(KEY, "uid-p1", "n1", {}) is True
    c.bind_sent(KEY)
    c.upsert_pod(bound(first, "n1", "2"))
    # the same task object: no new conversion; the claim is confirmed
    assert c.state.get_task(KEY) is task
    assert KEY not in c.assumed
    assert view(c)["status"] == TaskStatus.BOUND and view(c)["rv"] == "2"
    c.upsert_pod(running(bound(first, "n1", "2"), "3"))
    assert c.state.get_task(KEY) is task
    v = view(c)
    assert v["status"] == TaskStatus.RUNNING and v["phase"] == "Running"
    assert v["on_nodes"] == ["n1"] and v["condition"] == ("True", "", "")
    assert v["job_index"] == {TaskStatus.RUNNING: 1}
    assert KEY not in c.seen  # running: nothing of ours is to come back


def test_bind_annotations_are_expected_in_the_echo() -> None:
    c = cluster()
    first = created()
    c.upsert_pod(first)
    task = c.state.get_task(KEY)
    c.assume(KEY, "uid-p1", "n1", {"volcano.sh/vgpu-ids": "GPU-0"})
    echo = bound(first, "n1", "2")
    echo["metadata"]["annotations"]["volcano.sh/vgpu-ids"] = "GPU-0"
    c.upsert_pod(echo)
    assert c.state.get_task(KEY) is task
    assert view(c)["annotations"]["volcano.sh/vgpu-ids"] == "GPU-0"


def _label(o: dict[str, Any]) -> None:
    o["metadata"]["labels"]["app"] = "b"


def _annotation(o: dict[str, Any]) -> None:
    o["metadata"]["annotations"]["note"] = "x"


def _resize(o: dict[str, Any]) -> None:
    o["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "3"


def _deleting(o: dict[str, Any]) -> None:
    o["metadata"]["deletionTimestamp"] = "2026-11-23T10:05:00Z"


def _other_node(o: dict[str, Any]) -> None:
    o["spec"]["nodeName"] = "n2"


def _recreated(o: dict[str, Any]) -> None:
    o["metadata"]["uid"] = "uid-p1-again"


def _toleration(o: dict[str, Any]) -> None:
    o["spec"]["tolerations"] = [{"key": "k", "operator": "Exists"}]


def _owner(o: dict[str, Any]) -> None:
    o["metadata"]["ownerReferences"] = [{"kind": "Job", "name": "j", "uid": "u", "controller": True}]


def _failed(o: dict[str, Any]) -> None:
    o["status"] = {"phase": "Failed"}


def _unschedulable(o: dict[str, Any]) -> None:
    o["status"]["conditions"] = [
        {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "0/2 nodes"}
    ]


CHANGES: list[Callable[[dict[str, Any]], None]] = [
    _label,
    _annotation,
    _resize,
    _deleting,
    _other_node,
    _recreated,
    _toleration,
    _owner,
    _failed,
    _unschedulable,
]


@pytest.mark.parametrize("change", CHANGES, ids=[f.__name__.strip("_") for f in CHANGES])
def test_an_echo_carrying_a_real_change_ends_where_a_full_conversion_does(
    change: Callable[[dict[str, Any]], None], monkeypatch: pytest.MonkeyPatch
) -> None:
    def replay(c: SchedulerCache) -> dict[str, Any]:
        first = created()
        c.upsert_pod(first)
        c.assume(KEY, "uid-p1", "n1", {})
        echo = bound(first, "n1", "2")
        change(echo)
        c.upsert_pod(echo)
        later = running(echo, "3")
        c.upsert_pod(later)
        return view(c)

    with_shortcut = replay(cluster())
    monkeypatch.setattr(cache_module, "SEEN_MAX", 0)  # every event converted in full
    full = cluster()
    assert replay(full) == with_shortcut
    assert not full.seen


def test_changes_after_the_echo_are_seen_by_the_model() -> None:
    c = cluster()
    first = created()
    c.upsert_pod(first)
    c.assume(KEY, "uid-p1", "n1", {})
    echo = bound(first, "n1", "2")
    c.upsert_pod(echo)
    before = view(c)["resreq"]
    # each watch event is a newly decoded object, as here
    resized = bound(echo, "n1", "3")
    _resize(resized)
    c.upsert_pod(resized)
    assert view(c)["resreq"] != before
    relabelled = bound(resized, "n1", "4")
    _label(relabelled)
    c.upsert_pod(relabelled)
    assert view(c)["labels"] == {"app": "b"}


def test_a_stale_event_from_before_the_binding_keeps_the_claim() -> None:
    c = cluster()
    first = created()
    c.upsert_pod(first)
    c.assume(KEY, "uid-p1", "n1", {})
    stale = copy.deepcopy(first)
    stale["metadata"]["resourceVersion"] = "2"
    c.upsert_pod(stale)  # no node yet: not the echo, the claim must hold
    v = view(c)
    assert v["status"] == TaskStatus.BOUND and v["on_nodes"] == ["n1"] and KEY in c.assumed
    task = c.state.get_task(KEY)
    c.upsert_pod(bound(first, "n1", "3"))
    assert c.state.get_task(KEY) is task and KEY not in c.assumed


def test_pods_without_a_resolved_priority_are_always_converted_in_full() -> None:
    c = cluster()
    p = created()
    del p["spec"]["priority"]
    c.upsert_pod(p)
    assert KEY not in c.seen


def test_pods_of_other_schedulers_and_deleted_pods_are_not_remembered() -> None:
    c = cluster()
    other = created()
    other["spec"]["schedulerName"] = "default-scheduler"
    c.upsert_pod(other)
    assert KEY not in c.seen
    c.upsert_pod(created(rv="2"))
    assert KEY in c.seen
    c.delete_pod(KEY, None)
    assert KEY not in c.seen and c.state.get_task(KEY) is None
