"""gangpreempt: a starving gang takes room from lower-priority jobs of its own queue, whole.

Volcano's gang-aware preemption (see gangevict.py for the steps shared with gangreclaim). Victims
are Running or Bound preemptable tasks of other jobs of the same queue with a lower job priority,
whose PodGroup does not set volcano.sh/preemptable to false. Unlike preempt, a BestEffort
preemptor is not limited to BestEffort victims (the plugins decide), and victim jobs are taken
in the reverse of job order, their gang-safe tasks before any that would break a gang.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from scheduler.actions.bundles import Bundle
from scheduler.actions.gangevict import GangKind, run
from scheduler.framework.session import GANG_PREEMPT, Session
from scheduler.model.job import JobInfo
from scheduler.model.objects import PREEMPTABLE_STATUSES, QueueInfo, TaskInfo


def _victim_job(ssn: Session, job: JobInfo, victim: JobInfo) -> bool:
    return victim.queue == job.queue and victim.uid != job.uid and victim.priority < job.priority


def _victim_task(task: TaskInfo) -> bool:
    return task.status in PREEMPTABLE_STATUSES


def _victim_rank(ssn: Session, job: JobInfo, bundles: list[Bundle]) -> Callable[[Bundle], object]:
    """The victim jobs in the reverse of job order: the job scheduled last loses first."""
    jobs = {b.job.uid: b.job for b in bundles}
    order = sorted(jobs.values(), key=functools.cmp_to_key(lambda a, b: -ssn.job_compare(a, b)))
    rank = {j.uid: i for i, j in enumerate(order)}
    return lambda b: rank[b.job.uid]


def _may_evict(ssn: Session, queue: QueueInfo, pending: list[TaskInfo]) -> bool:
    return True


KIND = GangKind(GANG_PREEMPT, _victim_job, _victim_task, _victim_rank, _may_evict, skip_overused=False)


def gangpreempt(ssn: Session) -> None:
    run(ssn, KIND)
