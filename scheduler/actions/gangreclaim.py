"""gangreclaim: a starving gang of an under-served queue takes room back from other queues, whole.

Volcano's gang-aware reclaim (see gangevict.py for the steps shared with gangpreempt). Victims are
Running preemptable tasks of jobs in other, reclaimable queues whose PodGroup does not set
volcano.sh/preemptable to false; queues are taken in victim-queue order. An overused queue does
not reclaim, nor one whose plugins' Preemptive vote refuses the gang's request.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from scheduler.actions.bundles import Bundle
from scheduler.actions.gangevict import GangKind, run
from scheduler.framework.session import GANG_RECLAIM, Session
from scheduler.model.job import JobInfo
from scheduler.model.objects import QueueInfo, TaskInfo, TaskStatus
from scheduler.model.resources import Resource


def _victim_job(ssn: Session, job: JobInfo, victim: JobInfo) -> bool:
    if victim.queue == job.queue:
        return False
    queue = ssn.queues.get(victim.queue)
    return queue is not None and queue.reclaimable


def _victim_task(task: TaskInfo) -> bool:
    return task.status == TaskStatus.RUNNING


def _victim_rank(ssn: Session, job: JobInfo, bundles: list[Bundle]) -> Callable[[Bundle], object]:
    """The victims' queues in victim-queue order for the reclaiming queue."""
    mine = ssn.queues.get(job.queue)
    queues = {b.job.queue: ssn.queues[b.job.queue] for b in bundles if b.job.queue in ssn.queues}
    if mine is None:
        order = sorted(queues.values(), key=ssn.queue_key)
    else:
        order = sorted(
            queues.values(), key=functools.cmp_to_key(lambda a, b: ssn.victim_queue_compare(a, b, mine))
        )
    rank = {q.name: i for i, q in enumerate(order)}
    return lambda b: rank.get(b.job.queue, len(rank))


def _may_evict(ssn: Session, queue: QueueInfo, pending: list[TaskInfo]) -> bool:
    """The plugins' Preemptive vote on the gang's whole request (Volcano asks it with the
    pending tasks together)."""
    gang = pending[0].clone()
    gang.resreq = Resource()
    gang.init_resreq = Resource()
    for t in pending:
        gang.resreq.add(t.resreq)
        gang.init_resreq.add(t.init_resreq)
    return ssn.preemptive(queue, gang)


KIND = GangKind(GANG_RECLAIM, _victim_job, _victim_task, _victim_rank, _may_evict, skip_overused=True)


def gangreclaim(ssn: Session) -> None:
    run(ssn, KIND)
