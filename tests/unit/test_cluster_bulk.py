"""`ClusterState.add_listed_pod` (a first list's pods, accounted inline) leaves the state that
`apply_pod` leaves, pod for pod: every map, set, total, index, counter and order."""

from __future__ import annotations

import contextlib
import copy
import os
import random
from enum import Enum
from typing import Any

import pytest

from scheduler.model import podconvert_impl
from scheduler.model.cluster import ClusterState, convert_pod
from scheduler.model.job import JobInfo
from scheduler.model.node import NodeInfo
from scheduler.model.objects import TaskInfo
from scheduler.model.resources import Resource
from tests.builders import node, pod, podgroup, priority_class

# what apply_pod's callers (the daemon's cache) refuse a pod for
_REFUSED = (ValueError, TypeError, AttributeError, KeyError)


def flat(v: Any) -> Any:
    """A comparable picture of a state value: records by their fields, maps in their order."""
    if isinstance(v, Resource):
        return ("R", v.milli_cpu, v.memory, v.pods, tuple(v.scalars.items()))
    if isinstance(v, TaskInfo):
        return ("T", v.uid, v.job, v.status, v.node_name, v.key)
    if isinstance(v, NodeInfo | JobInfo):
        slots = [s for s in type(v).__slots__ if s not in ("_origin", "_touched")]
        return (type(v).__name__, tuple((s, flat(getattr(v, s))) for s in slots))
    if isinstance(v, dict):
        return ("d", tuple((flat(k), flat(x)) for k, x in v.items()))
    if isinstance(v, set | frozenset):
        return ("s", tuple(sorted(repr(flat(x)) for x in v)))
    if isinstance(v, list | tuple):
        return (type(v).__name__, tuple(flat(x) for x in v))
    if isinstance(v, Enum | str | int | float | bool) or v is None:
        return v
    return repr(v)


def picture(state: ClusterState) -> dict[str, Any]:
    return {name: flat(value) for name, value in vars(state).items() if name != "options"}


def _base(state: ClusterState) -> None:
    state.apply_priority_class(priority_class("high", 1000))
    for i in range(3):
        state.apply_node(node(f"n{i}", cpu="8", memory="16Gi", extra={"nvidia.com/gpu": "4"}))
    state.apply_podgroup(podgroup("g1", 2))
    state.apply_podgroup(podgroup("g2", 1))


def _pods() -> list[Any]:
    """Pods of every kind a list brings, in an order where each path's branches meet."""
    running = [pod(f"r{i}", group="g1", node_name=f"n{i % 3}", phase="Running") for i in range(4)]
    gpu = pod("gpu", group="g2", node_name="n1", phase="Running", limits={"nvidia.com/gpu": "1"})
    ports = pod("ports", group="g2", node_name="n2", phase="Running")
    ports["spec"]["containers"][0]["ports"] = [{"containerPort": 80, "hostPort": 8080}]
    anti = pod("anti", group="g2", node_name="n0", phase="Running")
    anti["spec"]["affinity"] = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"a": "b"}}, "topologyKey": "kubernetes.io/hostname"}
            ]
        }
    }
    releasing = pod("leaving", group="g1", node_name="n0", phase="Running")
    releasing["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    bound = pod("bound", group="g1", node_name="n1", phase="Pending")
    done = pod("done", group="g1", node_name="n2", phase="Succeeded")
    unknown = pod("lost", group="g1", node_name="n2", phase="Weird")
    offnode = pod("away", group="g1", node_name="gone", phase="Running")
    pending = [pod(f"p{i}", group="g2", priority_class="high") for i in range(2)]
    besteffort = pod("be", cpu="", memory="", group="g2")
    bare = [pod("bare0"), pod("bare1", node_name="n1", phase="Running")]
    bare[1]["metadata"]["ownerReferences"] = [{"uid": "rs-1", "controller": True, "kind": "ReplicaSet"}]
    orphan = pod("orphan", group="missing")
    other = pod("other", node_name="n0", phase="Running", spec={"schedulerName": "default-scheduler"})
    bad = pod("bad", cpu="lots")
    again = copy.deepcopy(running[1])  # the same pod twice: a key already known
    again["status"]["phase"] = "Succeeded"
    twin = pod("twin", group="g1", node_name="n0", phase="Running")
    twin["metadata"]["uid"] = "c1/r0"  # another pod's uid on the same node: the node refuses it
    for i, p in enumerate([*running, gpu, ports, anti, releasing, bound, done, unknown, offnode]):
        p["metadata"].setdefault("uid", f"uid-{i}")
    return [
        *running,
        gpu,
        ports,
        anti,
        releasing,
        bound,
        done,
        unknown,
        offnode,
        *pending,
        besteffort,
        *bare,
        orphan,
        other,
        bad,
        again,
        twin,
    ]


def _by_apply(pods: list[Any]) -> ClusterState:
    state = ClusterState()
    _base(state)
    for p in pods:
        with contextlib.suppress(_REFUSED):
            state.apply_pod(p)
    return state


# the forms of add_listed_pod: the compiled one when built, and the pure-Python twin
_NATIVE = getattr(podconvert_impl.native_module(), "add_listed_pod", None)
_FORMS = {"pure": ClusterState.add_listed_pod_py, **({"compiled": _NATIVE} if _NATIVE else {})}


def _by_listing(pods: list[Any], form: str = "pure") -> tuple[ClusterState, list[bool]]:
    add = _FORMS[form]
    state = ClusterState()
    _base(state)
    new: list[bool] = []
    for p in pods:
        with contextlib.suppress(_REFUSED):
            new.append(add(state, convert_pod(p, state.priority_classes), None))
    return state, new


def test_the_compiled_form_is_used_when_built() -> None:
    if _NATIVE is None or os.environ.get("VC_SCHEDULER_PURE", "") not in ("", "0"):
        pytest.skip("scheduler._native.podconvert is not built, or not chosen")
    assert ClusterState.add_listed_pod is _NATIVE


@pytest.mark.parametrize("form", sorted(_FORMS))
@pytest.mark.parametrize("order", ["listed", "reversed"])
def test_a_listed_pod_leaves_the_state_apply_pod_leaves(order: str, form: str) -> None:
    pods = _pods() if order == "listed" else _pods()[::-1]
    listed, _ = _by_listing(copy.deepcopy(pods), form)
    applied = _by_apply(copy.deepcopy(pods))
    assert picture(listed) == picture(applied)
    # the branches this test is for were met: a refused pod, one off its node, an orphan, an
    # implicit gang, scalars, host ports and anti-affinity on nodes
    assert "c1/bad" not in listed.pod_keys
    assert listed._off_node and listed._orphans and listed.implicit_jobs and listed.anti_affinity_pods
    assert listed.nodes["n2"].used_ports and listed.nodes["n1"].used.scalars


def _many(seed: int) -> list[Any]:
    """Pods as a busy cluster lists them: gangs on nodes, a few pending, other statuses now and then."""
    rng = random.Random(seed)
    out = []
    for i in range(300):
        kind = rng.random()
        where = f"n{rng.randrange(4)}"  # n3 is not there: those pods wait off their node
        if kind < 0.7:
            phase = rng.choice(["Running", "Running", "Pending", "Succeeded", "Failed", "Weird"])
            p = pod(
                f"m{i}",
                cpu=rng.choice(["1", "250m", "0.1"]),
                group=rng.choice(["g1", "g2", "nope"]),
                node_name=where,
                phase=phase,
            )
        elif kind < 0.85:
            p = pod(f"m{i}", group="g2", priority=rng.randrange(3))
        else:
            p = pod(f"m{i}", node_name=where, phase="Running", cpu=rng.choice(["", "2"]), memory="")
        if rng.random() < 0.05:
            p["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
        p["metadata"]["uid"] = f"u{i}"
        out.append(p)
    return out


@pytest.mark.parametrize("form", sorted(_FORMS))
@pytest.mark.parametrize("seed", range(3))
def test_many_pods_of_a_list_leave_the_state_apply_pod_leaves(seed: int, form: str) -> None:
    pods = _many(seed)
    listed, new = _by_listing(copy.deepcopy(pods), form)
    assert picture(listed) == picture(_by_apply(copy.deepcopy(pods)))
    assert all(new) and len(new) == len(pods)


@pytest.mark.parametrize("form", sorted(_FORMS))
def test_it_says_which_pods_are_new(form: str) -> None:
    pods = _pods()
    _, new = _by_listing(pods, form)
    state = ClusterState()
    _base(state)
    expected = []
    for p in copy.deepcopy(pods):
        known = len(state.tasks)
        try:
            state.apply_pod(p)
        except _REFUSED:
            continue
        expected.append(len(state.tasks) > known)
    assert new == expected
    assert False in new and True in new


@pytest.mark.parametrize("form", sorted(_FORMS))
def test_then_a_snapshot_and_watch_changes_see_the_same_cluster(form: str) -> None:
    pods = _pods()
    listed, _ = _by_listing(copy.deepcopy(pods), form)
    applied = _by_apply(copy.deepcopy(pods))
    for state in (listed, applied):
        state.snapshot()
        state.remove_pod("c1", "r2")
        state.apply_podgroup(podgroup("missing", 1))
        state.apply_node(node("gone", cpu="8", memory="16Gi"))
    assert picture(listed) == picture(applied)
    assert flat(listed.snapshot().jobs) == flat(applied.snapshot().jobs)


class _Counted(Resource):
    """A Resource of another class: the compiled form writes only Resource's own layout."""

    __slots__ = ()


@pytest.mark.parametrize("form", sorted(_FORMS))
@pytest.mark.parametrize("where", ["idle", "used", "total_request", "allocated", "req"])
def test_totals_of_another_class_are_added_as_the_twin_adds_them(form: str, where: str) -> None:
    pods = [pod("a", cpu="1", group="g1", node_name="n0", phase="Running")]

    def swap(state: ClusterState, task: TaskInfo) -> None:
        if where == "req":
            task.resreq = _Counted(task.resreq.milli_cpu, task.resreq.memory, pods=task.resreq.pods)
            return
        owner = state.nodes["n0"] if where in ("idle", "used") else state.jobs[task.job]
        old = getattr(owner, where)
        setattr(owner, where, _Counted(old.milli_cpu, old.memory, old.scalars, old.pods))

    states = []
    for add in (_FORMS[form], ClusterState.add_listed_pod_py):
        state = ClusterState()
        _base(state)
        task = convert_pod(copy.deepcopy(pods[0]), state.priority_classes)
        swap(state, task)
        assert add(state, task, None) is True
        states.append(state)
    assert picture(states[0]) == picture(states[1])
    assert states[0].nodes["n0"].used.milli_cpu == 1000.0
    assert states[0].jobs[task.job].allocated.milli_cpu == 1000.0
