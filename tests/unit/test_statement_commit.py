"""Statement.commit: a statement of one Allocated task (a one-pod job) takes a short way to its
bind; any other statement takes the general one. Both must leave the session as the general way
would: the binds in order, told to the dispatch callback, Binding tasks on their nodes, evictions
counted once per reason and pipelined tasks left unbound."""

from __future__ import annotations

import random

from scheduler.framework.cycle import open_session
from scheduler.framework.session import EventHandler, Session, SessionOptions
from scheduler.framework.statement import Statement
from scheduler.framework.status import AllocateError
from scheduler.model.cluster import ClusterState
from scheduler.model.objects import TaskInfo, TaskStatus
from scheduler.registry import default_configuration
from tests.builders import node, pod, podgroup, queue


def _session() -> Session:
    state = ClusterState()
    state.apply_queue(queue("default"))
    for i in range(2):
        state.apply_node(node(f"n{i}", cpu="8", memory="16Gi"))
    state.apply_podgroup(podgroup("run", min_member=1, phase="Running"))
    state.apply_pod(pod("run-0", cpu="2", group="run", node_name="n0", phase="Running"))
    for name, members in (("one", 1), ("two", 2), ("wait", 1)):
        state.apply_podgroup(podgroup(name, min_member=members, phase="Inqueue"))
        for k in range(members):
            state.apply_pod(pod(f"{name}-{k}", cpu="1", group=name))
    return open_session(state.snapshot(), default_configuration(), SessionOptions(), random.Random(0))


def _pending(ssn: Session, job: str) -> list[TaskInfo]:
    return sorted(ssn.jobs[f"c1/{job}"].tasks_in(TaskStatus.PENDING), key=lambda t: t.name)


def _told(ssn: Session) -> list[str]:
    told: list[str] = []
    ssn.on_dispatch = lambda t: told.append(t.name)
    return told


def test_a_one_pod_statement_binds_its_task() -> None:
    ssn = _session()
    told = _told(ssn)
    node = ssn.nodes["n1"]
    idle = node.idle.clone()
    stmt = Statement(ssn)
    stmt.allocate(_pending(ssn, "one")[0], node)
    stmt.commit()
    assert [t.name for t in ssn.decisions.binds] == told == ["one-0"]
    task = ssn.decisions.binds[0]
    assert task.status is TaskStatus.BINDING and task.node_name == "n1"
    assert node.tasks[task.uid] is task and node.idle.milli_cpu == idle.milli_cpu - 1000
    assert ssn.jobs["c1/one"].count(TaskStatus.BINDING) == 1
    assert not stmt.operations and not ssn.eviction_transactions


def test_other_statements_bind_every_allocated_task_in_order_and_count_evictions() -> None:
    ssn = _session()
    told = _told(ssn)
    stmt = Statement(ssn)
    for t, n in zip(_pending(ssn, "two"), ("n1", "n0"), strict=True):
        stmt.allocate(t, ssn.nodes[n])
    stmt.commit()
    assert [t.name for t in ssn.decisions.binds] == told == ["two-0", "two-1"]
    assert [t.node_name for t in ssn.decisions.binds] == ["n1", "n0"]
    assert ssn.jobs["c1/two"].count(TaskStatus.BINDING) == 2

    victim = ssn.jobs["c1/run"].tasks_in(TaskStatus.RUNNING)[0]
    stmt = Statement(ssn)
    stmt.evict(victim, "make room")
    stmt.pipeline(_pending(ssn, "wait")[0], ssn.nodes["n0"])
    stmt.commit()
    # the pipelined task is not bound; the eviction is decided and counted once
    assert [t.name for t in ssn.decisions.binds] == told == ["two-0", "two-1"]
    assert [(e.task.name, e.reason) for e in ssn.decisions.evictions] == [("run-0", "make room")]
    assert ssn.eviction_transactions == {"make room": 1}
    assert ssn.jobs["c1/wait"].count(TaskStatus.PIPELINED) == 1


def test_a_one_pipelined_task_statement_binds_nothing() -> None:
    ssn = _session()
    told = _told(ssn)
    stmt = Statement(ssn)
    stmt.pipeline(_pending(ssn, "one")[0], ssn.nodes["n1"])
    stmt.commit()
    assert not ssn.decisions.binds and not told
    assert ssn.jobs["c1/one"].count(TaskStatus.PIPELINED) == 1


def test_a_refused_allocation_is_told_to_every_handler_before_its_undoing() -> None:
    """A handler that refuses (a device plugin whose node is locked) does not keep the handlers
    after it from hearing of the allocation: each hears of it and of its undoing, so their sums
    (a queue's allocated share, a HyperNode's usage) end where they began."""
    ssn = _session()
    held = {"first": 0, "last": 0}

    def refuse(_ev: object) -> None:
        held["first"] += 1
        raise AllocateError("node locked")

    def first_down(_ev: object) -> None:
        held["first"] -= 1

    def count_up(_ev: object) -> None:
        held["last"] += 1

    def count_down(_ev: object) -> None:
        held["last"] -= 1

    ssn.add_event_handler(EventHandler(refuse, first_down))
    ssn.add_event_handler(EventHandler(count_up, count_down))
    task, node = _pending(ssn, "one")[0], ssn.nodes["n1"]
    idle = node.idle.clone()
    drf_before = dict(ssn.plugins["drf"].shares)
    stmt = Statement(ssn)
    try:
        stmt.allocate(task, node)
    except AllocateError as exc:
        assert str(exc) == "node locked"
    else:
        raise AssertionError("the refusal was not raised")
    assert held == {"first": 0, "last": 0}
    assert not stmt.operations and task.uid not in node.tasks
    assert node.idle.milli_cpu == idle.milli_cpu
    assert _pending(ssn, "one")[0].node_name == ""
    assert dict(ssn.plugins["drf"].shares) == drf_before
