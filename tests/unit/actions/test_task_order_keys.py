"""allocate's task heaps ordered by sort keys (Session.task_order_keys) pop the tasks task_compare
pops: the keys order every pair as task_compare does, a queue made from them pops as a
compare-ordered one, the keys step aside where task_compare is not a plain lexicographic order
(a mix of indexed and unindexed tasks, a NaN creation time, a plugin without a key), and a whole
allocation binds the same with them as without them."""

from __future__ import annotations

import random
from typing import Any

import pytest

from scheduler.framework.cycle import open_session, run_session
from scheduler.framework.pqueue import PriorityQueue
from scheduler.framework.session import Session, SessionOptions
from scheduler.model.cluster import ClusterState
from scheduler.model.objects import TaskInfo
from scheduler.registry import default_configuration
from scheduler.sim.bench import _pod, gen_nodes, gen_queues


def _state(seed: int, indexed: bool = True) -> ClusterState:
    """Gangs whose pods have three priorities, creation times that tie, and (when `indexed`) task
    indexes that are not in creation order; small nodes, so that not every pod is placed."""
    rng = random.Random(seed)
    state = ClusterState()
    gen_nodes(state, 6, cpu=8, mem_gi=16)
    queues = gen_queues(state, 2)
    idx = 0
    for j in range(24):
        name = f"job-{j:03d}"
        state.apply_podgroup(
            {
                "kind": "PodGroup",
                "metadata": {"name": name, "namespace": "ns", "creationTimestamp": float(j)},
                "spec": {"minMember": rng.randint(1, 3), "queue": queues[j % 2]},
                "status": {"phase": "Inqueue"},
            }
        )
        for k in range(rng.randint(3, 6)):
            pod = _pod(f"{name}-{k}", "ns", name, rng.choice(("500m", "1", "2")), "1Gi", idx=idx // 3)
            pod["spec"]["priority"] = rng.choice((0, 10, 100))
            if indexed:
                pod["metadata"]["annotations"]["volcano.sh/task-index"] = str(rng.randrange(4))
            state.apply_pod(pod)
            idx += 1
    return state


def _sign(x: int) -> int:
    return (x > 0) - (x < 0)


def _pending(ssn: Session) -> list[list[TaskInfo]]:
    return [list(job.tasks.values()) for job in ssn.jobs.values()]


@pytest.mark.parametrize("indexed", [True, False])
def test_keys_order_every_pair_as_task_compare(indexed: bool) -> None:
    ssn = open_session(_state(1, indexed).snapshot(), default_configuration(), SessionOptions())
    checked = 0
    for tasks in _pending(ssn):
        keys = ssn.task_order_keys(tasks)
        assert keys is not None
        assert all((t.index is not None) == indexed for t in tasks)
        for a, ka in zip(tasks, keys, strict=True):
            for b, kb in zip(tasks, keys, strict=True):
                by_key = -1 if ka < kb else (1 if kb < ka else 0)
                assert by_key == _sign(ssn.task_compare(a, b)), (a.uid, b.uid)
                checked += 1
    assert checked > 300


def test_a_queue_from_keys_pops_as_the_compare_queue() -> None:
    ssn = open_session(_state(2).snapshot(), default_configuration(), SessionOptions())
    for tasks in _pending(ssn):
        keys = ssn.task_order_keys(tasks)
        assert keys is not None
        keyed = PriorityQueue.from_keys(ssn.task_compare, tasks, keys)
        plain = PriorityQueue(ssn.task_compare, tasks)
        # a push after the first pop turns the keyed queue back to the compare, in the same order
        first = keyed.pop()
        assert first is plain.pop()
        keyed.push(first)
        plain.push(first)
        assert [keyed.pop() for _ in tasks] == [plain.pop() for _ in tasks]


def test_keys_step_aside_where_task_compare_is_not_lexicographic() -> None:
    ssn = open_session(_state(3).snapshot(), default_configuration(), SessionOptions())
    tasks = max(_pending(ssn), key=len)
    assert ssn.task_order_keys(tasks) is not None
    # task_compare compares indexes only between two indexed tasks: a mix has no key order
    tasks[0].index = None
    assert ssn.task_order_keys(tasks) is None
    assert ssn.task_order_keys([tasks[0]]) is not None
    tasks[0].index = 1
    tasks[1].pod.creation = float("nan")
    assert ssn.task_order_keys(tasks) is None


def test_a_task_order_plugin_without_key_leaves_the_compare() -> None:
    ssn = open_session(_state(1).snapshot(), default_configuration(), SessionOptions())
    ssn.add_task_order_fn("priority", lambda a, b: 0)
    ssn.finish_registration()
    assert ssn.task_order_keys(_pending(ssn)[0]) is None


def _binds(monkeypatch: pytest.MonkeyPatch, keyed: bool, seed: int, indexed: bool) -> list[Any]:
    if not keyed:
        monkeypatch.setattr(Session, "task_order_keys", lambda self, tasks: None)
    res = run_session(
        _state(seed, indexed).snapshot(), default_configuration(), SessionOptions(), rng=random.Random(seed)
    )
    monkeypatch.undo()
    return [(b.task.key, b.node) for b in res.binds]


@pytest.mark.parametrize(("seed", "indexed"), [(1, True), (2, True), (3, False)])
def test_allocate_binds_the_same_with_keys(seed: int, indexed: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    keyed = _binds(monkeypatch, True, seed, indexed)
    plain = _binds(monkeypatch, False, seed, indexed)
    assert 10 < len(keyed) < 90  # a real allocation that does not place everything
    assert keyed == plain
