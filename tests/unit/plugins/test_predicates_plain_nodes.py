"""The predicates plugin's shared record of plain nodes (_PlainNodes) follows the session: a node
that fills up, or whose pods are evicted, between two tasks' checks is answered from its new pod
count, as check() answers it node by node."""

from __future__ import annotations

from scheduler.framework.status import Unfit
from scheduler.model.objects import TaskStatus
from tests.unit.test_session_many import _pending, _session


def _reasons(answers: list) -> list:
    return [r.reason if isinstance(r, Unfit) else r for r in answers]


def test_a_node_filled_between_two_tasks_is_refused_then_freed_again() -> None:
    ssn = _session(nodes=10, pods=6)
    many = ssn._predicate_many["predicates"]
    one = ssn._registered["predicate"]["predicates"]
    nodes = ssn.node_list
    full = nodes[3]
    full.max_task_num = len(full.tasks) + 1  # one more pod fills it
    first, second, third = _pending(ssn)[:3]
    assert many(first, nodes) == [None] * len(nodes)  # builds the shared record: all plain
    ssn.place(first, full, TaskStatus.ALLOCATED)
    got = many(second, nodes)
    assert _reasons(got) == _reasons([one(second, n) for n in nodes])
    assert got[3] is not None and got.count(None) == len(nodes) - 1  # a stale record passes it
    # the pod evicted in the session: its node counts one pod less and is plain again
    ssn.mark_releasing(ssn.own(first))
    assert many(third, nodes) == [None] * len(nodes)
    assert [one(third, n) for n in nodes] == [None] * len(nodes)
