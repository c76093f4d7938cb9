"""allocate: place pending tasks job by job, committing a gang only when it is ready (spec 6.2).

Queues are served in queue order, jobs in job order within their queue, tasks in task order within
their job. A job's placements go into one Statement: committed (bound) once JobReady holds, kept
uncommitted when the job is only pipelined, discarded otherwise. A ready job gets one more task per
turn and goes back into its queue's heap, so surplus tasks interleave fairly between jobs.
"""

from __future__ import annotations

import contextlib

from scheduler.framework.fiterrors import FitErrors
from scheduler.framework.placement import PlacementCache, allocate_predicate, prioritize
from scheduler.framework.pqueue import PriorityQueue
from scheduler.framework.session import Session
from scheduler.framework.statement import Statement
from scheduler.framework.status import AllocateError
from scheduler.model.job import JobInfo
from scheduler.model.objects import PodGroupPhase, QueueInfo, TaskInfo, TaskStatus


def _pending_tasks(job: JobInfo) -> list[TaskInfo]:
    return [
        t
        for t in job.task_status_index.get(TaskStatus.PENDING, {}).values()
        if not t.scheduling_gated and not t.best_effort
    ]


def allocate(ssn: Session) -> None:
    has_enqueue = "enqueue" in ssn.conf.actions
    queues: PriorityQueue[QueueInfo] = PriorityQueue(ssn.queue_compare)
    queued: set[str] = set()
    jobs_by_queue: dict[str, PriorityQueue[JobInfo]] = {}
    task_heaps: dict[str, PriorityQueue[TaskInfo]] = {}

    for job in ssn.jobs.values():
        if not job.task_status_index.get(TaskStatus.PENDING):
            continue
        if job.is_pending():
            if has_enqueue:
                continue
            job.pod_group_status.phase = PodGroupPhase.INQUEUE
        vr = ssn.job_valid(job)
        if vr is not None:
            job.fit_error = vr.message
            continue
        q = ssn.queues.get(job.queue)
        if q is None:
            continue
        tasks = _pending_tasks(job)
        if not tasks:
            continue
        task_heaps[job.uid] = PriorityQueue(ssn.task_compare, tasks)
        jobs_by_queue.setdefault(q.name, PriorityQueue(ssn.job_compare)).push(job)
        if q.name not in queued:
            queued.add(q.name)
            queues.push(q)

    check = allocate_predicate(ssn)
    cache = PlacementCache(ssn, check)
    while not queues.empty():
        q = queues.pop()
        if ssn.overused(q):
            continue
        jobs = jobs_by_queue.get(q.name)
        if jobs is None or jobs.empty():
            continue
        job = jobs.pop()
        tasks = task_heaps[job.uid]
        stmt = Statement(ssn)
        try:
            kept = _allocate_tasks(ssn, stmt, q, job, tasks, check, cache)
            ready = kept and ssn.job_ready(job)
        except Exception as exc:  # one job's plugin bug costs that job this session, not the session
            with contextlib.suppress(Exception):
                stmt.discard()
            job.fit_error = str(ssn.contain("allocate", f"job {job.key}", exc))
            queues.push(q)
            continue
        if ready:
            stmt.commit()
            if not tasks.empty():
                jobs.push(job)
        queues.push(q)


def _allocate_tasks(
    ssn: Session,
    stmt: Statement,
    queue: QueueInfo,
    job: JobInfo,
    tasks: PriorityQueue[TaskInfo],
    check: object,
    cache: PlacementCache,
) -> bool:
    """Place the job's tasks in `stmt`; True when they are kept (ready or pipelined), else discarded."""
    failed_roles: set[str] = set()
    nodes = ssn.node_list
    while not tasks.empty():
        task = tasks.pop()
        if not ssn.allocatable(queue, task):
            why = ssn.denials.pop(task.uid, "")
            fe = FitErrors(f"queue {queue.name} resource quota insufficient" + (f": {why}" if why else ""))
            ssn.record_fit_errors(job, task, fe)
            continue
        if task.role and task.role in failed_roles:
            fe = FitErrors(f"Task {task.name} with role spec {task.role} has already predicated failed, skip")
            ssn.record_fit_errors(job, task, fe)
            continue
        errors = FitErrors()
        pre = ssn.pre_predicate(task)
        if pre is not None:
            for n in nodes:
                errors.set_node_error(n.name, pre.reason)
            ssn.record_fit_errors(job, task, errors)
            if job.need_continue_allocating():
                continue
            break
        candidates = _nominated_first(ssn, task, check, errors)
        from_cache = not candidates
        if from_cache:
            candidates = cache.feasible(task, errors)
        if not candidates:
            ssn.record_fit_errors(job, task, errors)
            if task.role:
                failed_roles.add(task.role)
            if job.need_continue_allocating():
                continue
            break
        placed = _place(ssn, stmt, task, candidates, errors, cache, from_cache)
        if not placed:
            ssn.record_fit_errors(job, task, errors)
            continue
        if ssn.job_ready(job):
            break
    if ssn.job_ready(job) or ssn.job_pipelined(job):
        return True
    stmt.discard()
    return False


def _nominated_first(ssn: Session, task: TaskInfo, check: object, errors: FitErrors) -> list:
    name = task.pod.nominated_node
    if not name:
        return []
    node = ssn.nodes.get(name)
    if node is None or not task.init_resreq.less_equal(node.future_idle()):
        return []
    return [node] if check(task, node) is None else []  # type: ignore[operator]


def _place(
    ssn: Session,
    stmt: Statement,
    task: TaskInfo,
    candidates: list,
    errors: FitErrors,
    cache: PlacementCache,
    from_cache: bool = False,
) -> bool:
    """Try the best node; if a device handler refuses it, drop it and try the next best."""
    remaining = list(candidates)
    first = from_cache
    while remaining:
        # the cache answers for the very list its feasible() gave; after a refusal, prioritize
        best = cache.best(task, remaining) if first else prioritize(ssn, task, remaining, cache)
        first = False
        if best is None:
            return False
        try:
            if task.init_resreq.less_equal(best.idle):
                stmt.allocate(task, best)
            elif task.init_resreq.less_equal(best.future_idle()):
                stmt.pipeline(task, best)
            else:
                errors.set_node_error(best.name, "Insufficient resources")
                remaining.remove(best)
                continue
            return True
        except AllocateError as exc:
            errors.set_node_error(best.name, str(exc))
            remaining.remove(best)
    return False
