"""A session's node view shares the cluster node's fields until the session changes them: a
plain placement copies only the task map, idle and used, and the affinity set, the port counts
and the releasing and pipelined totals are copied later, before a task that needs them. Whatever
the order of changes, the cluster node must keep its state, another view of it must not see the
change, and the view must end as a node that owned every field from the start ends."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from scheduler.model.node import NodeInfo
from scheduler.model.objects import PodInfo, TaskInfo, TaskStatus
from scheduler.model.resources import Resource

S = TaskStatus


def _task(i: int, status: TaskStatus, ports: bool = False, affinity: bool = False) -> TaskInfo:
    pod = PodInfo(uid=f"p{i}", name=f"p{i}", namespace="ns")
    if ports:
        pod.host_ports = [("TCP", "", 80), ("TCP", "", 8000 + i)]
    if affinity:
        pod.affinity = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": []}}
    req = Resource(100.1 + i, 0.3 * (i + 1), {"example.com/x": 0.7 + i}, pods=1)
    return TaskInfo(pod, "ns/job", req, req, status)


def _cluster_node() -> NodeInfo:
    node = NodeInfo("n1", Resource(4000.3, 1e9 + 0.1, {"example.com/x": 10.1}, pods=110))
    node.add_task(_task(0, S.RUNNING, ports=True))
    node.add_task(_task(1, S.RUNNING, affinity=True))
    node.add_task(_task(2, S.RELEASING))
    node.add_task(_task(3, S.PIPELINED))
    node.add_task(_task(4, S.RUNNING))
    return node


def _state(node: NodeInfo) -> tuple:
    def figures(r: Resource) -> tuple:
        return r.milli_cpu, r.memory, r.pods, tuple(r.scalars.items())

    return (
        [(uid, t.status) for uid, t in node.tasks.items()],
        figures(node.idle),
        figures(node.used),
        figures(node.releasing),
        figures(node.pipelined),
        list(node.used_ports.items()),
        sorted(node.affinity_tasks),
    )


def _restatus(node: NodeInfo, task: TaskInfo, status: TaskStatus) -> None:
    old = task.status
    task.status = status
    node.restatus(task, old)


# each: what a session does on the node after a plain placement made its view private
CHANGES: dict[str, Callable[[NodeInfo, dict[str, TaskInfo]], None]] = {
    "add with ports": lambda n, t: n.add_task(_task(10, S.ALLOCATED, ports=True)),
    "add with affinity": lambda n, t: n.add_task(_task(11, S.ALLOCATED, affinity=True)),
    "add releasing": lambda n, t: n.add_task(_task(12, S.RELEASING)),
    "add pipelined": lambda n, t: n.add_task(_task(13, S.PIPELINED)),
    "remove with ports": lambda n, t: n.remove_task(t["p0"]),
    "remove with affinity": lambda n, t: n.remove_task(t["p1"]),
    "remove releasing": lambda n, t: n.remove_task(t["p2"]),
    "remove pipelined": lambda n, t: n.remove_task(t["p3"]),
    "evict": lambda n, t: n.update_task(t["p4"], S.RELEASING),
    "restatus with ports": lambda n, t: _restatus(n, t["p0"], S.BINDING),
    "restatus with affinity": lambda n, t: _restatus(n, t["p1"], S.BINDING),
    "plain only": lambda n, t: None,
}


@pytest.mark.parametrize("change", list(CHANGES))
def test_a_view_changed_in_any_order_leaks_nothing_and_ends_as_a_private_node(change: str) -> None:
    cluster = _cluster_node()
    before = _state(cluster)
    other = cluster.session_view()

    view = cluster.session_view()
    # the session's own copies of the tasks (as Session.own swaps them in)
    mine = {uid: t.clone() for uid, t in cluster.tasks.items()}
    for uid in list(mine):
        view.replace_task(cluster.tasks[uid], mine[uid])
    view.add_task(_task(9, S.ALLOCATED))  # a plain placement: the view is private now
    CHANGES[change](view, mine)

    reference = _cluster_node()  # owns every field from the start
    theirs = {uid: t.clone() for uid, t in reference.tasks.items()}
    for uid in list(theirs):
        reference.replace_task(reference.tasks[uid], theirs[uid])
    reference.add_task(_task(9, S.ALLOCATED))
    CHANGES[change](reference, theirs)

    assert _state(view) == _state(reference)
    assert _state(cluster) == before
    assert _state(other) == before
    for field in ("tasks", "idle", "used", "releasing", "pipelined", "used_ports", "affinity_tasks"):
        if getattr(view, field) is getattr(cluster, field):
            assert getattr(view, field) == getattr(cluster, field), field
