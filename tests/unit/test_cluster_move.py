"""`ClusterState.move_task` (a task's new status and node, in place: a bind assumed or
forgotten, a pod's new phase) leaves the same state compiled as its pure-Python twin: every map,
set, total, index, counter and order, move after move."""

from __future__ import annotations

import contextlib
import copy
import os
import random
from typing import Any

import pytest

from scheduler.model import podconvert_impl
from scheduler.model.cluster import ClusterState, convert_pod, implicit_group_name
from scheduler.model.convert import job_with_status, podgroup_to_job
from scheduler.model.job import JobInfo
from scheduler.model.objects import TaskStatus
from tests.builders import pod, podgroup
from tests.unit.test_cluster_bulk import _REFUSED, _base, _by_apply, _many, _pods, flat, picture

_NATIVE = getattr(podconvert_impl.native_module(), "move_task", None)
_FORMS = {"pure": ClusterState.move_task_py, **({"compiled": _NATIVE} if _NATIVE else {})}
_STATUSES = list(TaskStatus)
_NODES = ["", "n0", "n1", "n2", "n3"]  # n3 is not there


def _moves(state: ClusterState, seed: int, n: int) -> list[tuple[str, TaskStatus, str]]:
    """Moves a burst makes (pending -> bound -> running on the same node) and odd ones."""
    rng = random.Random(seed)
    uids = sorted(state.tasks)
    out = []
    for _ in range(n):
        uid = rng.choice(uids)
        if rng.random() < 0.6:
            out.append((uid, rng.choice([TaskStatus.BOUND, TaskStatus.RUNNING, TaskStatus.PENDING]), "n1"))
        else:
            out.append((uid, rng.choice(_STATUSES), rng.choice(_NODES)))
    return out


def test_the_compiled_form_is_used_when_built() -> None:
    if _NATIVE is None or os.environ.get("VC_SCHEDULER_PURE", "") not in ("", "0"):
        pytest.skip("scheduler._native.podconvert is not built, or not chosen")
    assert ClusterState.move_task is _NATIVE


@pytest.mark.skipif(_NATIVE is None, reason="scheduler._native.podconvert is not built")
@pytest.mark.parametrize("pods", ["kinds", "many0", "many1", "many2"])
def test_each_move_leaves_the_state_the_twin_leaves(pods: str) -> None:
    objs = _pods() if pods == "kinds" else _many(int(pods[-1]))
    compiled, pure = _by_apply(copy.deepcopy(objs)), _by_apply(copy.deepcopy(objs))
    assert _NATIVE is not None
    for uid, status, node in _moves(pure, sum(map(ord, pods)), 150):
        _NATIVE(compiled, compiled.tasks[uid], status, node)
        ClusterState.move_task_py(pure, pure.tasks[uid], status, node)
        assert picture(compiled) == picture(pure), (uid, status, node)


@pytest.mark.parametrize("form", sorted(_FORMS))
def test_a_burst_pod_bound_then_running_is_counted_on_its_node_and_in_its_job(form: str) -> None:
    state = _by_apply(copy.deepcopy(_pods()))
    task = state.tasks[state.pod_keys["c1/p0"]]
    idle = state.nodes["n1"].idle.milli_cpu
    _FORMS[form](state, task, TaskStatus.BOUND, "n1")
    _FORMS[form](state, task, TaskStatus.RUNNING, "n1")
    node, job = state.nodes["n1"], state.jobs[task.job]
    assert node.tasks[task.uid] is task and node.idle.milli_cpu == idle - task.resreq.milli_cpu
    assert task.uid in job.task_status_index[TaskStatus.RUNNING]
    assert task.uid not in job.task_status_index.get(TaskStatus.PENDING, {})


def _attached(pods: list[Any]) -> ClusterState:
    """Each pod converted and attached by `_detach`/`_attach`, the accounting `apply_pod`'s
    inline one must equal."""
    state = ClusterState()
    _base(state)
    for p in pods:
        with contextlib.suppress(_REFUSED):
            task = convert_pod(p, state.priority_classes)
            if not task.job and state._ours(task):
                task.job = f"{task.namespace}/{implicit_group_name(task)}"
            old = state.tasks.get(state.pod_keys.get(task.key, ""))
            if old is not None:
                state._detach(old)
            state._attach(task, task.key)
            state.generation += 1
    return state


@pytest.mark.parametrize("pods", ["kinds", "kinds reversed", "many0", "many1", "many2"])
def test_apply_pod_leaves_the_state_detach_and_attach_leave(pods: str) -> None:
    objs = _pods() if pods.startswith("kinds") else _many(int(pods[-1]))
    if pods.endswith("reversed"):
        objs = objs[::-1]
    # with a burst's pending pods among them: new, on no node, in a job that is there
    objs += [pod(f"burst{i}", group="g2") for i in range(5)]
    assert picture(_by_apply(copy.deepcopy(objs))) == picture(_attached(copy.deepcopy(objs)))


def _groups() -> list[dict[str, Any]]:
    """PodGroups of every shape conversion reads outside the status."""
    plain = podgroup("g1", 2)
    rich = podgroup(
        "rich",
        3,
        queue="q1",
        priority_class="high",
        min_task_member={"worker": 2},
        min_resources={"cpu": "2", "memory": "1Gi"},
    )
    rich["metadata"]["annotations"] = {"sla-waiting-time": "1h", "volcano.sh/preemptable": "false"}
    rich["metadata"]["labels"] = {"app": "x"}
    rich["metadata"]["creationTimestamp"] = "2026-01-01T00:00:00Z"
    rich["spec"]["networkTopology"] = {"mode": "hard", "highestTierAllowed": 1}
    rich["spec"]["subGroupPolicy"] = [{"name": "s", "subGroupSize": 2, "matchLabelKeys": ["k"]}]
    owned = podgroup("owned", 1)
    owned["metadata"]["ownerReferences"] = [{"kind": "Pod", "name": "o", "uid": "o1"}]
    return [plain, rich, owned]


def _versions(pg: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """New versions of a PodGroup: status only (the shortcut's), and others (the full conversion's)."""
    out: list[tuple[str, dict[str, Any]]] = []
    for phase in ("Inqueue", "Running", None):
        v = copy.deepcopy(pg)
        v["status"] = {"phase": phase, "running": 2, "conditions": [{"type": "Scheduled", "status": "True"}]}
        out.append((f"status {phase}", v))
    for name, status in (("bad running", {"running": "lots"}), ("status not an object", ["x"])):
        v = copy.deepcopy(pg)
        v["status"] = status
        out.append((name, v))
    v = copy.deepcopy(pg)
    v["spec"]["minMember"] = 5
    out.append(("spec", v))
    v = copy.deepcopy(pg)
    v["metadata"]["labels"] = {"volcano.sh/preemptable": "true"}
    out.append(("labels", v))
    return out


def _without_memo(state: ClusterState) -> dict[str, Any]:
    return {k: v for k, v in picture(state).items() if k != "_podgroup_inputs"}


def _apply(state: ClusterState, pg: dict[str, Any]) -> str:
    try:
        state.apply_podgroup(pg)
    except _REFUSED as exc:
        return f"{type(exc).__name__}: {exc}"
    return ""


def test_a_podgroup_whose_status_alone_changed_gives_the_job_a_full_conversion_gives() -> None:
    pods = [
        pod(f"w{i}", group=g, node_name="n0" if i % 2 else "", phase="Running" if i % 2 else "Pending")
        for i, g in enumerate(["g1", "rich", "owned", "rich"])
    ]
    short, full = ClusterState(), ClusterState()
    for state in (short, full):
        _base(state)
        for pg in _groups():
            state.apply_podgroup(copy.deepcopy(pg))
        for p in pods:
            state.apply_pod(copy.deepcopy(p))
    taken = 0
    for pg in _groups():
        for what, version in _versions(pg) + _versions(pg)[::-1]:
            before = short.jobs[f"c1/{pg['metadata']['name']}"]
            full._podgroup_inputs.clear()  # no shortcut: podgroup_to_job every time
            assert _apply(short, copy.deepcopy(version)) == _apply(full, copy.deepcopy(version)), what
            assert _without_memo(short) == _without_memo(full), what
            taken += what.startswith("status") and short.jobs[before.uid].tasks is before.tasks
    assert taken  # the shortcut was taken (and kept the job's tasks)


# JobInfo's fields by who sets them: a new field must be placed here, and a field conversion
# reads from the PodGroup outside its status must be copied by `job_with_status`
_CONVERTED = {
    "uid",
    "name",
    "namespace",
    "queue",
    "min_available",
    "task_min_available",
    "task_min_available_total",
    "min_resources",
    "priority_class_name",
    "creation",
    "waiting_time",
    "network_topology",
    "preemptable",
    "subgroup_policies",
}
_FROM_STATUS = {"pod_group_status", "base_status", "pg_exists"}
_SESSION_OR_TASKS = {
    "_origin",
    "_ready",
    "_shared",
    "_touched",
    "allocated",
    "fit_error",
    "nodes_fit_errors",
    "pending_request",
    "priority",
    "schedule_start",
    "task_status_index",
    "tasks",
    "total_request",
}


def test_every_job_field_is_either_converted_from_the_spec_from_the_status_or_the_sessions() -> None:
    slots = set(JobInfo.__slots__)
    assert slots == _CONVERTED | _FROM_STATUS | _SESSION_OR_TASKS, (
        "JobInfo's fields changed: place the new one above, and copy it in job_with_status "
        "if podgroup_to_job sets it from outside the PodGroup's status"
    )


@pytest.mark.parametrize("which", range(len(_groups())))
def test_job_with_status_gives_every_field_the_full_conversion_gives(which: int) -> None:
    pg = _groups()[which]
    for what, version in _versions(pg)[:3]:
        full = podgroup_to_job(version)
        short = job_with_status(podgroup_to_job(pg), full.pod_group_status)
        for slot in sorted(_CONVERTED | _FROM_STATUS):
            assert flat(getattr(short, slot)) == flat(getattr(full, slot)), (what, slot)
    rich = podgroup_to_job(_groups()[1])
    plain = JobInfo(uid=rich.uid, name=rich.name, namespace=rich.namespace)
    # the rich PodGroup sets every converted field away from its default, so a field the copy
    # forgot cannot pass for a default
    same = {
        s
        for s in _CONVERTED - {"uid", "name", "namespace"}
        if flat(getattr(rich, s)) == flat(getattr(plain, s))
    }
    assert not same, same
