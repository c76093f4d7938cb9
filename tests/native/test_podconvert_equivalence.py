"""The compiled pod conversion gives exactly what its Python twin gives (native/podconvert.pyx vs
scheduler/model/convert.pod_to_task): every TaskInfo and PodInfo field, with its type, or the same
error with the same message, over pods of many shapes and over runs of pods that hit and miss the
per-workload memos (including a pod dict changed in place and converted again).

CI sets VC_SCHEDULER_REQUIRE_NATIVE=1: then a missing compiled module is a failure, not a skip.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import os
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scheduler.model import convert as twin
from scheduler.model import podconvert_impl
from scheduler.model.objects import PodInfo, PriorityClassInfo, TaskInfo
from scheduler.model.resources import Resource

native = podconvert_impl.native_module()
needs_native = pytest.mark.skipif(native is None, reason="scheduler._native.podconvert is not built")


def test_native_is_built_when_required() -> None:
    if os.environ.get("VC_SCHEDULER_REQUIRE_NATIVE", "") not in ("", "0"):
        assert native is not None


def _plain(v: Any) -> Any:
    """A value with its type spelled out, Resources and records by their fields (exact floats)."""
    if isinstance(v, Resource):
        return ("Resource", v.milli_cpu, v.memory, v.pods, sorted(v.scalars.items()))
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return (type(v).__name__, [(f.name, _plain(getattr(v, f.name))) for f in dataclasses.fields(v)])
    if isinstance(v, dict):
        return ("dict", [(_plain(k), _plain(x)) for k, x in v.items()])
    if isinstance(v, list | tuple):
        return (type(v).__name__, [_plain(x) for x in v])
    return (type(v).__name__, v)


def _outcome(convert: Any, pod: Any, pcs: dict[str, PriorityClassInfo] | None) -> Any:
    try:
        task = convert(pod, pcs)
    except Exception as exc:  # the error and its message must be the same too
        return ("error", type(exc).__name__, str(exc))
    assert type(task) is TaskInfo and type(task.pod) is PodInfo
    fields = [(name, _plain(getattr(task, name))) for name in TaskInfo.__slots__ if name != "pod"]
    return ("task", fields, _plain(task.pod))


def _same(pods: list[Any], pcs: dict[str, PriorityClassInfo] | None = None) -> None:
    """Both conversions of each pod in turn, each on its own deep copy (a memo must not leak a
    value from one pod into the next: the copies are equal, not the same objects)."""
    assert native is not None
    for pod in pods:
        want = _outcome(twin.pod_to_task, copy.deepcopy(pod), pcs)
        got = _outcome(native.pod_to_task, copy.deepcopy(pod), pcs)
        assert got == want, json.dumps(pod, default=str)[:400]


def _pod(**over: Any) -> dict[str, Any]:
    pod: dict[str, Any] = {
        "metadata": {
            "name": "p-0",
            "namespace": "ns",
            "uid": "u-0",
            "resourceVersion": "12",
            "creationTimestamp": "2026-01-01T00:00:00Z",
            "labels": {"volcano.sh/job-name": "g", "app": "x"},
            "annotations": {"scheduling.k8s.io/group-name": "g", "volcano.sh/task-spec": "worker"},
        },
        "spec": {
            "schedulerName": "volcano",
            "containers": [
                {
                    "name": "main",
                    "resources": {"requests": {"cpu": "1", "memory": "2Gi"}, "limits": {"cpu": "1"}},
                }
            ],
            "tolerations": [
                {"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
            ],
        },
        "status": {"phase": "Pending"},
    }
    for path, value in over.items():
        where = pod
        *parents, last = path.split("__")
        for p in parents:
            where = where.setdefault(p, {})
        if type(where) is not dict:  # an earlier variation replaced the section: nothing to vary
            continue
        if value is _DELETE:
            where.pop(last, None)
        else:
            where[last] = value
    return pod


_DELETE = object()

# one variation of a field at a time: each row is (path, value), applied to the base pod
VARIATIONS: list[tuple[str, Any]] = [
    ("metadata__name", ""),
    ("metadata__name", 5),
    ("metadata__namespace", _DELETE),
    ("metadata__namespace", 7),
    ("metadata__uid", _DELETE),
    ("metadata__uid", 12),
    ("metadata__labels", None),
    ("metadata__labels", {"a": None, "b": 3}),
    ("metadata__labels", "nope"),
    ("metadata__labels", {"volcano.sh/task-index": "3", "volcano.sh/preemptable": "yes"}),
    ("metadata__labels", {"volcano.sh/task-index": "x", "volcano.sh/task-spec": "ps"}),
    ("metadata__annotations", {"volcano.sh/preemptable": "false", "volcano.sh/task-index": "0"}),
    ("metadata__annotations", {"long": "v" * 100}),
    ("metadata__annotations", []),
    ("metadata__annotations", {}),
    ("metadata__deletionTimestamp", "2026-01-01T00:00:01Z"),
    ("metadata__creationTimestamp", ""),
    ("metadata__creationTimestamp", "not a time"),
    ("metadata__creationTimestamp", 1234),
    ("metadata__creationTimestamp", _DELETE),
    ("metadata__resourceVersion", 44),
    (
        "metadata__ownerReferences",
        [{"uid": "o1", "controller": False}, {"uid": "o2", "controller": True}, "junk"],
    ),
    ("metadata__ownerReferences", {"uid": "o"}),
    ("metadata", None),
    ("metadata", []),
    ("spec", None),
    ("spec", "x"),
    ("status", None),
    ("status", 3),
    ("spec__containers", []),
    ("spec__containers", None),
    ("spec__containers", {"name": "c"}),
    ("spec__containers", ["notadict"]),
    ("spec__containers", [{"name": "c", "resources": {"requests": {"cpu": "bad"}}}]),
    ("spec__containers", [{"name": "c", "resources": {"requests": {"cpu": "-1"}}}]),
    ("spec__containers", [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "2", "cpu": "500m"}}}]),
    (
        "spec__containers",
        [
            {"name": "a", "resources": {"requests": {"cpu": "1", "huawei.com/Ascend910-memory": "4"}}},
            {"name": "b", "resources": {"requests": {"memory": "1Gi"}}, "ports": [{"hostPort": 80}]},
        ],
    ),
    ("spec__containers", [{"name": "c", "ports": [{"hostPort": "x"}]}]),
    (
        "spec__containers",
        [{"name": "c", "ports": [{"hostPort": 8080, "protocol": "UDP", "hostIP": "1.2.3.4"}]}],
    ),
    ("spec__containers", [{"name": "c", "resources": "bad"}]),
    ("spec__initContainers", [{"name": "i", "resources": {"requests": {"cpu": "4"}}}]),
    ("spec__initContainers", "bad"),
    ("spec__initContainers", None),
    ("spec__overhead", {"cpu": "250m", "memory": "120Mi"}),
    ("spec__overhead", {"cpu": "x"}),
    ("spec__overhead", "bad"),
    ("spec__priority", 1000),
    ("spec__priority", "7"),
    ("spec__priority", "high"),
    ("spec__priority", None),
    ("spec__priorityClassName", "high"),
    ("spec__priorityClassName", "missing"),
    ("spec__nodeName", "node-1"),
    ("spec__nodeName", 3),
    ("spec__nodeSelector", {"zone": "a"}),
    ("spec__nodeSelector", "bad"),
    ("spec__nodeSelector", {"zone": None}),
    ("spec__affinity", {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": []}}),
    ("spec__affinity", "bad"),
    ("spec__affinity", {}),
    ("spec__tolerations", None),
    ("spec__tolerations", []),
    ("spec__tolerations", "bad"),
    ("spec__tolerations", [{"key": "a"}, "junk", {"key": "b", "value": "c"}]),
    ("spec__topologySpreadConstraints", [{"maxSkew": 1}, 3]),
    ("spec__topologySpreadConstraints", "bad"),
    ("spec__schedulingGates", [{"name": "gate"}, {"other": 1}, "junk"]),
    ("spec__schedulingGates", {"name": "gate"}),
    ("spec__schedulerName", _DELETE),
    ("spec__schedulerName", "default-scheduler"),
    ("spec__preemptionPolicy", "Never"),
    ("status__phase", "Running"),
    ("status__phase", "Succeeded"),
    ("status__phase", "Failed"),
    ("status__phase", "Weird"),
    ("status__phase", _DELETE),
    ("status__nominatedNodeName", "node-2"),
    (
        "status__conditions",
        [{"type": "Ready", "status": "True"}, {"type": "PodScheduled", "status": "False", "reason": "U"}],
    ),
    ("status__conditions", [{"type": "PodScheduled", "status": True}]),
    ("status__conditions", ["junk", {"type": "PodScheduled", "status": "True", "message": "m"}]),
    ("status__conditions", []),
]

PRIORITY_CLASSES = {
    "high": PriorityClassInfo("high", 1000, False, "PreemptLowerPriority"),
    "base": PriorityClassInfo("base", 5, True, "Never"),
}


@needs_native
@pytest.mark.parametrize("pcs", [None, {}, PRIORITY_CLASSES])
def test_each_variation_alone_and_after_the_base_pod(pcs: dict[str, PriorityClassInfo] | None) -> None:
    for path, value in VARIATIONS:
        # the base pod first: the variation then compares with the memos of the base pod
        _same([_pod(), _pod(**{path: value}), _pod(**{path: value}), _pod()], pcs)


@needs_native
def test_not_a_dict() -> None:
    _same([None, [], "pod", 3])


@needs_native
def test_a_pod_changed_in_place_and_converted_again() -> None:
    assert native is not None
    for path, value in VARIATIONS:
        for convert in (twin.pod_to_task, native.pod_to_task):
            pod = _pod()
            before = _outcome(convert, pod, None)
            changed = _pod(**{path: value})
            pod.clear()
            pod.update(changed)  # the same dict, changed: the memos must not answer for the old one
            after = _outcome(convert, pod, None)
            assert after == _outcome(twin.pod_to_task, copy.deepcopy(changed), None)
            assert before == _outcome(twin.pod_to_task, _pod(), None)


variation = st.sampled_from(VARIATIONS)
pods = st.lists(variation, max_size=4).map(lambda vs: _pod(**{p: v for p, v in vs}))


@needs_native
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(pods, min_size=1, max_size=8), st.sampled_from([None, PRIORITY_CLASSES]))
def test_runs_of_pods_with_several_variations(run: list[dict[str, Any]], pcs: Any) -> None:
    _same(run, pcs)


@needs_native
def test_a_workload_of_pods_shares_what_the_twin_shares() -> None:
    """Pods of one gang: the memos answer for all but the first, as in the twin."""
    assert native is not None
    run = [_pod(metadata__name=f"p-{i}", metadata__uid=f"u-{i}") for i in range(5)]
    _same(run)
    a, b = native.pod_to_task(run[0]), native.pod_to_task(run[1])
    assert a.pod.labels is b.pod.labels  # shared, read-only
    assert a.pod.annotations is not b.pod.annotations  # written on when a bind is assumed
    assert a.pod.tolerations is b.pod.tolerations
    assert a.resreq is b.resreq and a.pod.containers is b.pod.containers
