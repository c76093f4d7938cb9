"""allocate: place pending tasks job by job, committing a gang only when it is ready (spec 6.2).

Queues are served in queue order, jobs in job order within their queue, tasks in task order within
their job. A job's placements go into one Statement: committed (bound) once JobReady holds, kept
uncommitted when the job is only pipelined, discarded otherwise. A ready job gets one more task per
turn and goes back into its queue's heap, so surplus tasks interleave fairly between jobs.
"""

from __future__ import annotations

import contextlib

from scheduler.actions.allocate_topology import (
    Placer,
    TopologyJob,
    allocate_for_job,
    job_ready,
    needs_topology,
    prepare,
)
from scheduler.actions.tasksteps import SKIP, STOP, place_best, task_gate
from scheduler.framework.fiterrors import FitErrors
from scheduler.framework.placement import (
    PlacementCache,
    allocate_predicate,
    allocate_predicate_many,
    allocate_predicate_many_idle,
)
from scheduler.framework.pqueue import PriorityQueue
from scheduler.framework.session import Session
from scheduler.framework.statement import Statement
from scheduler.model.job import JobInfo
from scheduler.model.objects import PodGroupPhase, QueueInfo, TaskInfo, TaskStatus
from scheduler.model.topology import CLUSTER_TOP

_NO_TASKS: dict[str, TaskInfo] = {}
# a job's pending tasks as allocate takes them: true while one is left, pop() the next in task
# order (PriorityQueue.__len__, or a list of one task)
TaskQueue = PriorityQueue[TaskInfo] | list[TaskInfo]
# the member itself: a member looked up on TaskStatus goes through EnumType's __getattr__ hook
# (~900 instructions), and this is asked per job
_PENDING = TaskStatus.PENDING


def _pending_tasks(job: JobInfo) -> list[TaskInfo]:
    # a loop, not a comprehension: no frame of its own (this runs for every job allocate queues)
    out = []
    for t in job.task_status_index.get(_PENDING, _NO_TASKS).values():
        if not t.scheduling_gated and not t.best_effort:
            out.append(t)
    return out


def allocate(ssn: Session) -> None:
    has_enqueue = "enqueue" in ssn.conf.actions
    queues: PriorityQueue[QueueInfo] = PriorityQueue(ssn.queue_compare)
    queued: set[str] = set()
    jobs_by_queue: dict[str, PriorityQueue[JobInfo]] = {}
    task_heaps: dict[str, TaskQueue] = {}
    topo_jobs: dict[str, TopologyJob] = {}
    # Only the popped job changes while allocate runs (its placements and their events), so a
    # queued job's order key stays true: a key per push instead of job_compare per comparison.
    job_key = ssn.job_order_key()

    for job in ssn.unquiet_jobs():
        if not job.task_status_index.get(_PENDING):
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
        if needs_topology(job):
            tj = prepare(ssn, job, tasks)
            if tj is None:
                continue
            topo_jobs[job.uid] = tj
        else:
            # a single task needs no order (see _task_heap)
            task_heaps[job.uid] = tasks if len(tasks) == 1 else _task_heap(ssn, tasks)
        jobs = jobs_by_queue.get(q.name)
        if jobs is None:
            jobs = jobs_by_queue[q.name] = PriorityQueue.keyed(ssn.job_compare, job_key)
        jobs.push(job)
        if q.name not in queued:
            queued.add(q.name)
            queues.push(q)

    check = allocate_predicate(ssn)
    check_many, check_many_idle = allocate_predicate_many(ssn), allocate_predicate_many_idle(ssn)
    cache = PlacementCache(ssn, check, check_many=check_many, check_many_idle=check_many_idle)
    placer = Placer(ssn, check, {CLUSTER_TOP: cache}, check_many, check_many_idle)
    # A queue served goes back into the heap before the next pop. When it is the only queue
    # left, that push and pop give it back without a comparison: it is kept in hand instead
    # (one queue serving a backlog of one-pod jobs made both per job).
    held: QueueInfo | None = None
    # A job's statement ends committed or discarded, both of which empty it, or kept for its
    # pipelined tasks: an empty one serves the next job (a Statement made per one-pod job was a
    # Python call each).
    spare = Statement(ssn)
    while True:
        if held is not None and queues.empty():
            q = held
        else:
            if held is not None:
                queues.push(held)
            if queues.empty():
                break
            q = queues.pop()
        held = None
        if ssn.overused(q):
            continue
        jobs = jobs_by_queue.get(q.name)
        if jobs is None or jobs.empty():
            continue
        job = jobs.pop()
        tj = topo_jobs.get(job.uid)
        if spare.operations:
            spare = Statement(ssn)
        stmt = spare
        try:
            if tj is not None:
                found = allocate_for_job(ssn, q, tj, placer)
                stmt = found or stmt
                ready = found is not None and job_ready(ssn, tj)
            else:
                ready = _allocate_tasks(ssn, stmt, q, job, task_heaps[job.uid], check, cache)
        except Exception as exc:  # one job's plugin bug costs that job this session, not the session
            with contextlib.suppress(Exception):
                stmt.discard()
            job.fit_error = str(ssn.contain("allocate", f"job {job.key}", exc))
            held = q
            continue
        if ready:
            stmt.commit()
            if tj is not None:
                if tj.unit.allocated_hypernode:
                    ssn.job_hypernodes[job.uid] = tj.unit.allocated_hypernode
                if not tj.worksheet.empty():
                    jobs.push(job)
            elif task_heaps[job.uid]:
                jobs.push(job)
        held = q
    cache.carry_over()


def _allocate_tasks(
    ssn: Session,
    stmt: Statement,
    queue: QueueInfo,
    job: JobInfo,
    tasks: TaskQueue,
    check: object,
    cache: PlacementCache,
) -> bool:
    """Place the job's tasks in `stmt`; True when the job is ready. The placements are kept when it
    is ready or pipelined, else discarded. Readiness is asked once of the final state: nothing
    changes between the placement that made the job ready and the caller's use of the answer (a
    one-pod job asked it three times)."""
    failed_roles: set[str] = set()
    nodes = ssn.node_list
    # asked once: placements change no task's membership of the job, nor its minimum
    go_on = job.need_continue_allocating()
    while tasks:
        task = tasks.pop()
        errors = FitErrors()
        gate = task_gate(ssn, queue, job, task, failed_roles, nodes, errors, go_on)
        if gate is STOP:
            break
        if gate is SKIP:
            continue
        candidates = _nominated_first(ssn, task, check, errors) if task.pod.nominated_node else []
        from_cache = not candidates
        if from_cache:
            candidates = cache.feasible(task, errors)
        if not candidates:
            ssn.record_fit_errors(job, task, errors)
            if task.role:
                failed_roles.add(task.role)
            if go_on:
                continue
            break
        placed = place_best(ssn, stmt, task, candidates, errors, cache, from_cache)
        if not placed:
            ssn.record_fit_errors(job, task, errors)
            continue
        if ssn.job_ready(job):
            return True
    if ssn.job_ready(job):
        return True
    if not ssn.job_pipelined(job):
        stmt.discard()
    return False


def _task_heap(ssn: Session, tasks: list[TaskInfo]) -> TaskQueue:
    """The job's pending tasks in task order: by sort keys when the task order plugins give them
    (a tuple comparison in C per heap step instead of task_compare's plugin calls, ~3 % of a
    gang backlog's session), else compared by task_compare. Both pop the same order: the keys
    order the tasks exactly as task_compare does and no two tie. (A single task, a one-pod job's,
    is never compared: the caller keeps it in its list, which pops it and is then empty, without
    a queue's three Python calls.)"""
    keys = ssn.task_order_keys(tasks)
    if keys is None:
        return PriorityQueue(ssn.task_compare, tasks)
    return PriorityQueue.from_keys(ssn.task_compare, tasks, keys)


def _nominated_first(ssn: Session, task: TaskInfo, check: object, errors: FitErrors) -> list:
    name = task.pod.nominated_node
    if not name:
        return []
    node = ssn.nodes.get(name)
    if node is None or not task.init_resreq.less_equal(node.future_idle()):
        return []
    return [node] if check(task, node) is None else []  # type: ignore[operator]
