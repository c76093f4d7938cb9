"""preempt: starving jobs take resources from lower-priority work in their own queue (spec 6.4).

Inter-job first (victims from other jobs of the same queue), then intra-job (a job's own
lower-priority tasks). The preemptor is pipelined onto the node, not bound: it is allocated in a
later cycle once the victims are gone. A job's evictions are committed only if it becomes
pipelined; otherwise they are undone.
"""

from __future__ import annotations

from collections.abc import Callable

from scheduler.actions.victims import candidate_nodes, evict_until_fit, sorted_by_score, victims_cover
from scheduler.framework.pqueue import PriorityQueue
from scheduler.framework.session import Session
from scheduler.framework.statement import Statement
from scheduler.model.job import JobInfo
from scheduler.model.objects import PREEMPTABLE_STATUSES, QueueInfo, TaskInfo, TaskStatus

Filter = Callable[[TaskInfo], bool]


def _starving_jobs(ssn: Session) -> dict[str, list[JobInfo]]:
    by_queue: dict[str, list[JobInfo]] = {}
    for job in ssn.jobs.values():
        if not job.task_status_index.get(TaskStatus.PENDING):
            continue
        if job.is_pending() or ssn.job_valid(job) is not None:
            continue
        if job.queue not in ssn.queues:
            continue
        if not ssn.job_starving(job):
            continue
        # as Volcano (its issue 4374): a job with a network topology does not preempt
        if job.network_topology is not None or any(p.network_topology for p in job.subgroup_policies):
            continue
        by_queue.setdefault(job.queue, []).append(job)
    return by_queue


def _pending(job: JobInfo) -> list[TaskInfo]:
    return [t for t in job.task_status_index.get(TaskStatus.PENDING, {}).values() if not t.scheduling_gated]


def preempt(ssn: Session) -> None:
    starving = _starving_jobs(ssn)
    queues = sorted((ssn.queues[q] for q in starving), key=ssn.queue_key)
    for queue in queues:
        jobs = starving[queue.name]
        preemptors: PriorityQueue[JobInfo] = PriorityQueue(ssn.job_compare, jobs)
        task_heaps = {j.uid: PriorityQueue(ssn.task_compare, _pending(j)) for j in jobs}
        while not preemptors.empty():
            job = preemptors.pop()
            stmt = Statement(ssn)
            assigned = False
            tasks = task_heaps[job.uid]
            while ssn.job_starving(job) and not tasks.empty():
                task = tasks.pop()

                def other_job(v: TaskInfo, task: TaskInfo = task, qname: str = queue.name) -> bool:
                    vj = ssn.jobs.get(v.job)
                    return vj is not None and vj.queue == qname and v.job != task.job

                if _preempt_task(ssn, stmt, queue, task, other_job):
                    assigned = True
            if ssn.job_pipelined(job):
                stmt.commit()
            else:
                stmt.discard()
                continue
            if assigned and not tasks.empty():
                preemptors.push(job)

        for job in jobs:
            if not ssn.job_starving(job):
                continue
            for task in sorted(_pending(job), key=ssn.task_key):
                stmt = Statement(ssn)

                def same_job(v: TaskInfo, task: TaskInfo = task) -> bool:
                    return v.job == task.job

                if _preempt_task(ssn, stmt, queue, task, same_job):
                    stmt.commit()
                else:
                    stmt.discard()
                    break


def _base_filter(preemptor: TaskInfo, victim: TaskInfo) -> bool:
    if victim.status not in PREEMPTABLE_STATUSES or not victim.preemptable:
        return False
    return not (preemptor.best_effort and not victim.best_effort)


def _preempt_task(ssn: Session, stmt: Statement, queue: QueueInfo, task: TaskInfo, extra: Filter) -> bool:
    if task.pod.preemption_policy == "Never":
        return False
    if ssn.pre_predicate(task) is not None:
        return False
    nodes = sorted_by_score(ssn, task, candidate_nodes(ssn, task))
    for node in nodes:
        preemptees = [v for v in node.tasks.values() if _base_filter(task, v) and extra(v)]
        if not preemptees:
            continue
        victims = ssn.preemptable(task, preemptees)
        ssn.last_preemption_victims = len(victims)
        if not victims or not victims_cover(task, node, victims):
            continue
        if evict_until_fit(ssn, stmt, queue, task, node, victims, "preempt"):
            return True
    return False
