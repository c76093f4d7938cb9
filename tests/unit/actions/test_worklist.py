"""The queue worklist of enqueue, reclaim and the gang evictions: with no job to work for it holds
no queue (the loop would pop each and pass over it; an idle period then asks no queue order), and
with one it holds every queue that has a job, pushed in the order they were met."""

from __future__ import annotations

import random

from scheduler.actions.worklist import queue_worklist
from scheduler.framework.cycle import open_session
from scheduler.framework.pqueue import PriorityQueue
from scheduler.framework.session import Session, SessionOptions
from scheduler.model.cluster import ClusterState
from scheduler.model.job import JobInfo
from scheduler.model.objects import QueueInfo
from scheduler.registry import parse
from scheduler.sim.bench import CAPACITY_TREE_CONF, gen_nodes, gen_queues, gen_running
from tests.builders import pod, podgroup


def _session(state: ClusterState) -> Session:
    return open_session(state.snapshot(), parse(CAPACITY_TREE_CONF), SessionOptions(), random.Random(0))


def _idle_state() -> tuple[ClusterState, list[str]]:
    state = ClusterState()
    gen_nodes(state, 20)
    leaves = gen_queues(state, 12, 3, 20)
    gen_running(state, 200, 20, leaves)
    return state, leaves


def test_no_job_to_work_for_leaves_no_queue_and_asks_no_order() -> None:
    state, _ = _idle_state()
    ssn = _session(state)
    asked = 0
    compare = ssn.queue_compare

    def counting(left: QueueInfo, right: QueueInfo) -> int:
        nonlocal asked
        asked += 1
        return compare(left, right)

    ssn.queue_compare = counting  # type: ignore[method-assign]
    queues, jobs = queue_worklist(ssn, ssn.jobs.values(), JobInfo.is_pending, ssn.queues_in_job_order())
    assert not jobs and queues.empty() and asked == 0


def test_a_job_to_work_for_brings_every_queue_in_the_order_met() -> None:
    state, leaves = _idle_state()
    state.apply_podgroup(podgroup("late", min_member=1, queue=leaves[-1], phase="Pending"))
    state.apply_pod(pod("late-0", group="late"))
    ssn = _session(state)
    met = ssn.queues_in_job_order()
    queues, jobs = queue_worklist(ssn, ssn.jobs.values(), JobInfo.is_pending, met)
    assert list(jobs) == [leaves[-1]]
    # the same pushes as a heap filled while the jobs were walked: the same pops
    every: PriorityQueue[QueueInfo] = PriorityQueue(ssn.queue_compare)
    seen = {q.name for q in met}
    for q in met:
        every.push(q)
    for j in ssn.jobs.values():
        if j.queue not in seen and j.queue in ssn.queues:
            seen.add(j.queue)
            every.push(ssn.queues[j.queue])
    got = [queues.pop().name for _ in range(len(queues))]
    assert got == [every.pop().name for _ in range(len(every))]
    assert len(got) == len(seen)
