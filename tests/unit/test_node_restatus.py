"""NodeInfo.restatus (a commit's Allocated -> Binding in one call) must leave a node exactly as
remove_task, the status change and add_task leave it: figures to the last bit, version, the order
of its tasks and ports, the pods with affinity terms."""

from __future__ import annotations

import pytest

from scheduler.model.node import NodeInfo
from scheduler.model.objects import PodInfo, TaskInfo, TaskStatus
from scheduler.model.resources import Resource

S = TaskStatus
# (status before, status after): the first two take the one-call path, the others the two calls
CHANGES = [
    (S.ALLOCATED, S.BINDING),
    (S.BINDING, S.ALLOCATED),
    (S.PIPELINED, S.ALLOCATED),
    (S.ALLOCATED, S.RELEASING),
    (S.RELEASING, S.RUNNING),
]


def _task(i: int, status: TaskStatus, ports: bool, affinity: bool) -> TaskInfo:
    pod = PodInfo(uid=f"p{i}", name=f"p{i}", namespace="ns")
    if ports:
        pod.host_ports = [("TCP", "", 80), ("TCP", "", 8000 + i)]
    if affinity:
        pod.affinity = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": []}}
    # figures whose sums round in floating point: (x + r) - r is not always x
    req = Resource(100.1 + i, 0.3 * (i + 1), {"example.com/x": 0.7 + i}, pods=1)
    return TaskInfo(pod, "ns/job", req, req, status)


def _node(shared: bool) -> tuple[NodeInfo, list[TaskInfo]]:
    node = NodeInfo("n1", Resource(4000.3, 1e9 + 0.1, {"example.com/x": 10.1}, pods=110))
    tasks = [_task(i, S.RUNNING, ports=i % 2 == 0, affinity=i == 1) for i in range(4)]
    for t in tasks:
        node.add_task(t)
    return (node.session_view() if shared else node), tasks


def _state(node: NodeInfo) -> tuple:
    def figures(r: Resource) -> tuple:
        return r.milli_cpu, r.memory, r.pods, tuple(r.scalars.items())

    return (
        [(uid, t.status) for uid, t in node.tasks.items()],
        node.version,
        figures(node.idle),
        figures(node.used),
        figures(node.releasing),
        figures(node.pipelined),
        list(node.used_ports.items()),
        sorted(node.affinity_tasks),
    )


@pytest.mark.parametrize("shared", [False, True])
@pytest.mark.parametrize(("before", "after"), CHANGES)
@pytest.mark.parametrize("which", [0, 1, 2])
def test_restatus_leaves_the_node_as_remove_and_add(
    before: TaskStatus, after: TaskStatus, which: int, shared: bool
) -> None:
    want_node, want_tasks = _node(shared)
    got_node, got_tasks = _node(shared)
    for node, tasks in ((want_node, want_tasks), (got_node, got_tasks)):
        node.update_task(tasks[which], before)  # the task as placed, last in the node's order
        node.add_task(_task(9, S.ALLOCATED, ports=True, affinity=False))  # and one after it

    want = want_tasks[which]
    want_node.remove_task(want)
    want.status = after
    want_node.add_task(want)

    got = got_tasks[which]
    got.status = after
    got_node.restatus(got, before)

    assert _state(got_node) == _state(want_node)
    assert got.status == after


def test_restatus_of_another_object_with_the_uid_takes_the_two_calls() -> None:
    want_node, want_tasks = _node(False)
    got_node, got_tasks = _node(False)
    want_node.update_task(want_tasks[2], S.ALLOCATED)
    got_node.update_task(got_tasks[2], S.ALLOCATED)
    copy = got_tasks[2].clone()  # the node still holds the original
    want_copy = want_tasks[2].clone()
    want_node.remove_task(want_copy)
    want_copy.status = S.BINDING
    want_node.add_task(want_copy)
    copy.status = S.BINDING
    got_node.restatus(copy, S.ALLOCATED)
    assert _state(got_node) == _state(want_node)
