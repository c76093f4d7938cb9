"""backfill: place BestEffort tasks (no resource request), and only them (spec 6.3)."""

from __future__ import annotations

from scheduler.framework.fiterrors import FitErrors
from scheduler.framework.placement import allocate_predicate, predicate_nodes, select_best
from scheduler.framework.session import Session
from scheduler.framework.status import AllocateError
from scheduler.model.job import JobInfo
from scheduler.model.objects import TaskInfo, TaskStatus


def backfill(ssn: Session) -> None:
    tasks: list[TaskInfo] = []
    by_queue: dict[str, list[JobInfo]] = {}
    pending, pipelined = TaskStatus.PENDING, TaskStatus.PIPELINED
    for j in ssn.unquiet_jobs():
        idx = j.task_status_index
        if not idx.get(pending) and not idx.get(pipelined):
            continue  # nothing to backfill (checked first: most jobs of a busy cluster)
        if j.is_pending():
            continue
        if any(t.best_effort for t in j.tasks_in(TaskStatus.PENDING, TaskStatus.PIPELINED)):
            by_queue.setdefault(j.queue, []).append(j)
    for q in sorted((ssn.queues[n] for n in by_queue if n in ssn.queues), key=ssn.queue_key):
        for job in sorted(by_queue[q.name], key=ssn.job_key):
            if ssn.job_valid(job) is not None:
                continue
            for t in job.tasks_in(TaskStatus.PIPELINED):
                if t.best_effort:
                    ssn.unplace(t)
            pending = [
                t
                for t in job.task_status_index.get(TaskStatus.PENDING, {}).values()
                if t.best_effort and not t.scheduling_gated
            ]
            tasks.extend(sorted(pending, key=ssn.task_key))

    check = allocate_predicate(ssn)
    for task in tasks:
        job = ssn.jobs[task.job]
        errors = FitErrors()
        pre = ssn.pre_predicate(task)
        if pre is not None:
            for n in ssn.node_list:
                errors.set_node_error(n.name, pre.reason)
            ssn.record_fit_errors(job, task, errors)
            continue
        candidates = predicate_nodes(ssn, task, ssn.node_list, check, errors)
        while candidates:
            node = select_best(ssn, task, candidates)
            if node is None:
                break
            try:
                ssn.allocate_and_maybe_dispatch(task, node)
                break
            except AllocateError as exc:
                errors.set_node_error(node.name, str(exc))
                candidates.remove(node)
        if task.status == TaskStatus.PENDING:
            ssn.record_fit_errors(job, task, errors)
