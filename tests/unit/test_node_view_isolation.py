"""A session's node view shares the cluster node's fields until the session changes them: a
plain placement copies only the task map, idle and used, and the affinity set, the port counts
and the releasing and pipelined totals are copied later, before a task that needs them. Whatever
the order of changes, the cluster node must keep its state, another view of it must not see the
change, and the view must end as a node that owned every field from the start ends."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from scheduler.model.node import NodeInfo
from scheduler.model.objects import TaskInfo, TaskStatus
from scheduler.model.resources import Resource
from tests.unit.test_node_restatus import _state, _task

S = TaskStatus


def _cluster_node() -> NodeInfo:
    node = NodeInfo("n1", Resource(4000.3, 1e9 + 0.1, {"example.com/x": 10.1}, pods=110))
    node.add_task(_task(0, S.RUNNING, ports=True, affinity=False))
    node.add_task(_task(1, S.RUNNING, affinity=True, ports=False))
    node.add_task(_task(2, S.RELEASING, ports=False, affinity=False))
    node.add_task(_task(3, S.PIPELINED, ports=False, affinity=False))
    node.add_task(_task(4, S.RUNNING, ports=False, affinity=False))
    return node


def _figures_of(node: NodeInfo) -> tuple:
    """The node's state without its version (a view counts its own changes from 0)."""
    state = _state(node)
    return state[:1] + state[2:]


def _restatus(node: NodeInfo, task: TaskInfo, status: TaskStatus) -> None:
    old = task.status
    task.status = status
    node.restatus(task, old)


# each: what a session does on the node after a plain placement made its view private
CHANGES: dict[str, Callable[[NodeInfo, dict[str, TaskInfo]], None]] = {
    "add with ports": lambda n, t: n.add_task(_task(10, S.ALLOCATED, ports=True, affinity=False)),
    "add with affinity": lambda n, t: n.add_task(_task(11, S.ALLOCATED, affinity=True, ports=False)),
    "add releasing": lambda n, t: n.add_task(_task(12, S.RELEASING, ports=False, affinity=False)),
    "add pipelined": lambda n, t: n.add_task(_task(13, S.PIPELINED, ports=False, affinity=False)),
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
    view.add_task(
        _task(9, S.ALLOCATED, ports=False, affinity=False)
    )  # a plain placement: the view is private now
    CHANGES[change](view, mine)

    reference = _cluster_node()  # owns every field from the start
    theirs = {uid: t.clone() for uid, t in reference.tasks.items()}
    for uid in list(theirs):
        reference.replace_task(reference.tasks[uid], theirs[uid])
    reference.add_task(_task(9, S.ALLOCATED, ports=False, affinity=False))
    CHANGES[change](reference, theirs)

    assert _figures_of(view) == _figures_of(reference)
    assert _state(cluster) == before
    assert _figures_of(other) == before[:1] + before[2:]
    for field in ("tasks", "idle", "used", "releasing", "pipelined", "used_ports", "affinity_tasks"):
        if getattr(view, field) is getattr(cluster, field):
            assert getattr(view, field) == getattr(cluster, field), field
