"""reclaim: starving jobs of under-served queues take back resources from other queues (spec 6.5).

Victims are Running tasks of jobs in other, reclaimable queues, chosen by the Reclaimable votes
(proportion: queues above their deserved share). Nodes are tried in predicate order, unscored.
"""

from __future__ import annotations

from scheduler.actions.victims import candidate_nodes, evict_until_fit, victims_cover
from scheduler.actions.worklist import queue_worklist
from scheduler.framework.pqueue import PriorityQueue
from scheduler.framework.session import Session
from scheduler.framework.statement import Statement
from scheduler.model.job import JobInfo
from scheduler.model.objects import QueueInfo, TaskInfo, TaskStatus


def reclaim(ssn: Session) -> None:
    task_heaps: dict[str, PriorityQueue[TaskInfo]] = {}

    def reclaimer(job: JobInfo) -> bool:
        if not ssn.job_starving(job):
            return False
        pending = [
            t for t in job.task_status_index.get(TaskStatus.PENDING, {}).values() if not t.scheduling_gated
        ]
        if pending:
            task_heaps[job.uid] = PriorityQueue(ssn.task_compare, pending)
        return bool(pending)

    candidates = (
        j
        for j in ssn.jobs.values()
        # a job with nothing pending has nothing to reclaim for
        if j.task_status_index.get(TaskStatus.PENDING) and not j.is_pending() and ssn.job_valid(j) is None
    )
    queues, preemptors = queue_worklist(ssn, candidates, reclaimer)

    while not queues.empty():
        queue = queues.pop()
        if ssn.overused(queue):
            continue
        jobs = preemptors.get(queue.name)
        if jobs is None or jobs.empty():
            continue
        job = jobs.pop()
        stmt = Statement(ssn)
        tasks = task_heaps[job.uid]
        while ssn.job_starving(job) and not tasks.empty():
            task = tasks.pop()
            if task.pod.preemption_policy == "Never":
                continue
            if not ssn.preemptive(queue, task):
                continue
            if ssn.pre_predicate(task) is not None:
                continue
            _reclaim_for_task(ssn, stmt, queue, task)
        if ssn.job_pipelined(job):
            stmt.commit()
        else:
            stmt.discard()
        if not jobs.empty():
            queues.push(queue)


def _reclaim_for_task(ssn: Session, stmt: Statement, queue: QueueInfo, task: TaskInfo) -> bool:
    for node in candidate_nodes(ssn, task):
        reclaimees: list[TaskInfo] = []
        for v in node.tasks.values():
            if v.status != TaskStatus.RUNNING or not v.preemptable:
                continue
            vj = ssn.jobs.get(v.job)
            if vj is None or vj.queue == queue.name:
                continue
            vq = ssn.queues.get(vj.queue)
            if vq is None or not vq.reclaimable:
                continue
            reclaimees.append(v)
        if not reclaimees:
            continue
        victims = ssn.reclaimable(task, reclaimees)
        if not victims or not victims_cover(task, node, victims):
            continue
        if evict_until_fit(ssn, stmt, queue, task, node, victims, "reclaim"):
            return True
    return False
