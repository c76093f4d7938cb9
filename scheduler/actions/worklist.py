"""The loop head Volcano's enqueue, reclaim, gangpreempt and gangreclaim share: every queue that
has a job, once, in queue order; and per queue the jobs the action works for, in job order. With
no job to work for, no queue: the loop would pop each one and pass over it."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from scheduler.framework.pqueue import PriorityQueue
from scheduler.framework.session import Session
from scheduler.model.job import JobInfo
from scheduler.model.objects import QueueInfo


def queue_worklist(
    ssn: Session,
    jobs: Iterable[JobInfo],
    wanted: Callable[[JobInfo], bool],
    queue_order: Iterable[QueueInfo] | None = None,
) -> tuple[PriorityQueue[QueueInfo], dict[str, PriorityQueue[JobInfo]]]:
    """The queues of `jobs` (jobs of unknown queues are left out) and, by queue name, the jobs
    for which `wanted` is true. `queue_order`, when given, are the queues instead (in the order
    a walk over every job meets them), for a caller that passes only the jobs it may want."""
    queues: PriorityQueue[QueueInfo] = PriorityQueue(ssn.queue_compare)
    # The queues are pushed once the jobs are known, in the order they were met: the same pushes,
    # so the same heap. When no job is wanted (an idle period) there are none: every caller would
    # only pop the queues and pass over them, and the queue order's ~6 comparisons a queue were
    # most of an idle enqueue (a queue tree's order more so).
    order: list[QueueInfo] = []
    seen: set[str] = set()
    by_queue: dict[str, PriorityQueue[JobInfo]] = {}
    if queue_order is not None:
        for queue in queue_order:
            seen.add(queue.name)
            order.append(queue)
    for job in jobs:
        queue = ssn.queues.get(job.queue)
        if queue is None:
            continue
        if queue.name not in seen:
            seen.add(queue.name)
            order.append(queue)
        if wanted(job):
            # not setdefault: its default, a new queue, would be made for every wanted job
            jobs_of = by_queue.get(queue.name)
            if jobs_of is None:
                jobs_of = by_queue[queue.name] = PriorityQueue(ssn.job_compare)
            jobs_of.push(job)
    if by_queue:
        for queue in order:
            queues.push(queue)
    return queues, by_queue
