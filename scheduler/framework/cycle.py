"""Open a session, run the actions, close it into a `SessionResult` (spec section 3).

The result is everything a caller must carry out or show: binds with their annotations, evictions,
PodGroup statuses that changed, and for each pod not placed the condition message a user reads.
"""

from __future__ import annotations

import contextlib
import gc
import random
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

from scheduler.conf import SchedulerConfiguration
from scheduler.framework.fiterrors import ALL_NODES_UNAVAILABLE, FitErrors
from scheduler.framework.messages import job_fit_error
from scheduler.framework.session import PluginError, Session, SessionOptions
from scheduler.model.job import JobInfo
from scheduler.model.objects import ALLOCATED_STATUSES, PodGroupPhase, PodGroupStatus, TaskInfo, TaskStatus
from scheduler.model.snapshot import Snapshot

# the members themselves, not a lookup on the enum class per job and per unplaced pod at close
# (a member looked up on TaskStatus goes through EnumType's __getattr__ hook: ~900 instructions)
_RUNNING, _SUCCEEDED, _FAILED, _BOUND = (
    TaskStatus.RUNNING,
    TaskStatus.SUCCEEDED,
    TaskStatus.FAILED,
    TaskStatus.BOUND,
)
_PIPELINED, _ALLOCATED, _PENDING = TaskStatus.PIPELINED, TaskStatus.ALLOCATED, TaskStatus.PENDING
_RELEASING = TaskStatus.RELEASING
# the phases whose job gets the "tasks in gang unschedulable" event when tasks are left
_UNREADY_PHASES = (PodGroupPhase.PENDING, PodGroupPhase.INQUEUE, PodGroupPhase.UNKNOWN)
_NONE: dict[str, TaskInfo] = {}
_NO_TASKS: list[TaskInfo] = []


@dataclass(slots=True)
class BindDecision:
    task: TaskInfo
    node: str
    annotations: dict[str, str]


def bind_decision(task: TaskInfo) -> BindDecision:
    """The bind of a task the session dispatched (at its commit or in the result)."""
    return BindDecision(task, task.node_name, dict(task.bind_annotations))


@dataclass(slots=True)
class PodCondition:
    task: TaskInfo
    reason: str
    message: str
    nominated_node: str = ""


@dataclass(slots=True)
class SessionResult:
    uid: str
    binds: list[BindDecision] = field(default_factory=list)
    evictions: list[tuple[TaskInfo, str]] = field(default_factory=list)
    pipelined: dict[str, str] = field(default_factory=dict)
    pod_conditions: list[PodCondition] = field(default_factory=list)
    podgroup_status: dict[str, PodGroupStatus] = field(default_factory=dict)
    podgroup_changed: set[str] = field(default_factory=set)
    job_events: list[tuple[str, str, str, str]] = field(default_factory=list)
    node_locks: list[tuple[str, str, str]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    plugin_errors: list[PluginError] = field(default_factory=list)
    node_warnings: list[tuple[str, str]] = field(default_factory=list)
    action_ms: dict[str, float] = field(default_factory=dict)
    open_ms: float = 0.0
    total_ms: float = 0.0
    plugin_open_ms: dict[str, float] = field(default_factory=dict)
    plugin_close_ms: dict[str, float] = field(default_factory=dict)
    jobs: dict[str, JobInfo] = field(default_factory=dict)
    # job uid -> the HyperNode allocate placed it in (jobs with a network topology)
    job_hypernodes: dict[str, str] = field(default_factory=dict)
    # Volcano's preemption metrics as the session's actions counted them (see Session)
    preemption_victims: int | None = None
    preemption_attempts: int = 0
    eviction_transactions: dict[str, int] = field(default_factory=dict)


def _redo(snapshot: Snapshot, step: str, key: object) -> set[str] | None:
    """The jobs `step` must redo: only those with a new view when the previous snapshot's
    session did it for every job under the same `key`; None: every job."""
    ch = snapshot.job_changes
    if ch is None:
        return None
    kept = ch.carry.get(step)
    return ch.fresh if kept is not None and kept[0] == ch.serial - 1 and kept[1] == key else None


def _done(snapshot: Snapshot, step: str, key: object) -> None:
    """`step` is done for every job of this snapshot under `key`."""
    ch = snapshot.job_changes
    if ch is not None:
        ch.carry[step] = (ch.serial, key)


def _admit_jobs(snapshot: Snapshot) -> list[tuple[TaskInfo, str]]:
    """Leave out the jobs whose queue is not in the snapshot, as Volcano does, but not in silence:
    their pending pods get a condition saying why (close_session). Returns those pods."""
    unscheduled = list(snapshot.unattached)
    queues = snapshot.queues
    key = frozenset(queues)
    redo = _redo(snapshot, "open:admit", key)
    if redo is not None and all(
        snapshot.jobs[uid].queue in queues and snapshot.jobs[uid].pg_exists for uid in redo
    ):
        _done(snapshot, "open:admit", key)  # no job was left out, and none is now
        return unscheduled
    for j in snapshot.jobs.values():
        if j.queue not in queues and j.pg_exists:
            why = snapshot.refused.get(f"Queue {j.queue}")
            reason = (
                f"queue {j.queue} of PodGroup {j.uid} is malformed and was skipped: {why}"
                if why
                else f"queue {j.queue} of PodGroup {j.uid} does not exist"
            )
            unscheduled += [(t, reason) for t in j.tasks_in(TaskStatus.PENDING) if not t.node_name]
    kept = {uid: j for uid, j in snapshot.jobs.items() if j.queue in queues and j.pg_exists}
    if len(kept) != len(snapshot.jobs):
        # what is kept between sessions covers every job: it does not fit this session's
        snapshot.job_changes = None
    snapshot.jobs = kept
    _done(snapshot, "open:admit", key)
    return unscheduled


def _set_priorities(snapshot: Snapshot) -> None:
    """Each job's priority from its class (a view handed out again keeps the one it was given)."""
    classes = snapshot.priority_classes
    key = tuple(sorted((n, p.value, p.global_default) for n, p in classes.items()))
    redo = _redo(snapshot, "open:priority", key)
    # the global default class, looked up once instead of once per job
    default_priority = next((p.value for p in classes.values() if p.global_default), 0)
    jobs = snapshot.jobs.values() if redo is None else [snapshot.jobs[uid] for uid in redo]
    for job in jobs:
        pc = classes.get(job.priority_class_name) if job.priority_class_name else None
        job.priority = pc.value if pc is not None else default_priority
    _done(snapshot, "open:priority", key)


def open_session(
    snapshot: Snapshot,
    conf: SchedulerConfiguration,
    options: SessionOptions | None = None,
    rng: random.Random | None = None,
    now: float | None = None,
) -> Session:
    opts = options or SessionOptions()
    unscheduled = _admit_jobs(snapshot)
    _set_priorities(snapshot)
    ssn = Session(snapshot, conf, rng=rng, now=now, options=opts)
    ssn.warnings.extend(ssn.topology.problems)
    ssn.unscheduled = unscheduled
    if snapshot.orphan_groups:
        shown = ", ".join(snapshot.orphan_groups[:5]) + (" ..." if len(snapshot.orphan_groups) > 5 else "")
        ssn.warn(
            f"{len(snapshot.orphan_groups)} PodGroups have no pods left and their owner pods are gone; "
            f"they reserve no queue resources: {shown}"
        )
    for tier in conf.tiers:
        for popt in tier.plugins:
            cls = popt.plugin
            if cls is None:
                continue
            t0 = time.perf_counter()
            plugin = cls(popt.arguments)
            ssn.plugins[popt.name] = plugin
            plugin.on_session_open(ssn)
            ssn.plugin_open_ms[popt.name] = (time.perf_counter() - t0) * 1000
    ssn.finish_registration()
    return ssn


def run_actions(ssn: Session, timings: dict[str, float] | None = None) -> None:
    for name in ssn.conf.actions:
        t0 = time.perf_counter()
        ssn.conf.action_steps[name](ssn)
        if timings is not None:
            timings[name] = (time.perf_counter() - t0) * 1000


def _new_phase(ssn: Session, job: JobInfo, running: int, succeeded: int, failed: int) -> str:
    """The job's phase from its task counts (its Running, Succeeded and Failed counts are the
    caller's, which writes them to the status too: counted once per job at close)."""
    st = job.pod_group_status
    # a loop, not any() over a generator: a running job's status carries a condition, and the
    # first session after a start closes every job
    if running > 0 and st.conditions:
        uid = ssn.uid
        for c in st.conditions:
            if c.type == "Unschedulable" and c.status == "True" and c.transition_id == uid:
                return PodGroupPhase.UNKNOWN
    index = job.task_status_index
    scheduled = running + len(index.get(_BOUND, _NONE)) + succeeded + failed
    if _RELEASING in index:
        scheduled += sum(1 for t in job.tasks_in(_RELEASING) if t.node_name)
    # A job with minMember 0 and nothing scheduled stays Pending/Inqueue rather than "Completed".
    if scheduled >= job.min_available and scheduled > 0:
        if scheduled == succeeded + failed:
            return PodGroupPhase.COMPLETED
        return PodGroupPhase.RUNNING
    if st.phase != PodGroupPhase.INQUEUE:
        return PodGroupPhase.PENDING
    return PodGroupPhase.INQUEUE


def _task_condition(job: JobInfo, task: TaskInfo, job_err: str, nominated: dict[str, str]) -> PodCondition:
    key = f"{task.namespace}/{task.name}"
    if task.status == _PIPELINED:
        return PodCondition(
            task,
            "Unschedulable",
            f"Pod {key} can possibly be assigned to {task.node_name}, once resource is released and minAvailable is satisfied",
            nominated.get(task.uid, ""),
        )
    if task.status == _ALLOCATED or (task.last_tx is not None and task.last_tx[0] in ALLOCATED_STATUSES):
        node = task.node_name or (task.last_tx[1] if task.last_tx else "")
        return PodCondition(
            task,
            "Schedulable",
            f"Pod {key} can possibly be assigned to {node}, once minAvailable is satisfied",
        )
    if task.last_tx is not None and task.last_tx[0] == _PIPELINED:
        return PodCondition(
            task,
            "Unschedulable",
            f"Pod {key} can possibly be assigned to {task.last_tx[1]}, once resource is released and minAvailable is satisfied",
        )
    fe = job.nodes_fit_errors.get(task.uid)
    if isinstance(fe, FitErrors) and fe:
        return PodCondition(task, "Unschedulable", fe.message())
    return PodCondition(task, "Unschedulable", job.fit_error or job_err or ALL_NODES_UNAVAILABLE)


def close_session(ssn: Session) -> SessionResult:
    for name, plugin in ssn.plugins.items():
        t0 = time.perf_counter()
        plugin.on_session_close(ssn)
        ssn.plugin_close_ms[name] = (time.perf_counter() - t0) * 1000
    res = SessionResult(
        uid=ssn.uid,
        warnings=list(ssn.warnings),
        plugin_errors=list(ssn.plugin_errors),
        node_warnings=list(ssn.node_warnings),
        jobs=ssn.jobs,
    )
    res.job_hypernodes = dict(ssn.job_hypernodes)
    res.binds = [bind_decision(task) for task in ssn.decisions.binds]
    res.evictions = [(e.task, e.reason) for e in ssn.decisions.evictions]
    res.preemption_victims = ssn.last_preemption_victims
    res.preemption_attempts = ssn.preemption_attempts
    res.eviction_transactions = dict(ssn.eviction_transactions)
    res.node_locks = list(ssn.decisions.node_locks)
    res.job_events = list(ssn.decisions.job_events)
    res.plugin_open_ms = ssn.plugin_open_ms
    res.plugin_close_ms = ssn.plugin_close_ms
    for task, why in ssn.unscheduled:
        if not task.scheduling_gated:
            res.pod_conditions.append(PodCondition(task, "Unschedulable", why))
    # the counts read from the status buckets directly: this runs for every job a session placed
    for job in ssn.active_jobs():
        st = job.pod_group_status
        index = job.task_status_index
        running = len(index.get(_RUNNING, _NONE))
        succeeded = len(index.get(_SUCCEEDED, _NONE))
        failed = len(index.get(_FAILED, _NONE))
        st.phase = _new_phase(ssn, job, running, succeeded, failed)
        st.running = running
        st.succeeded = succeeded
        st.failed = failed
        res.podgroup_status[job.uid] = st
        # the status as the cluster has it (Session.old_status of a job of the session)
        changed = not st.same(job.base_status)
        if changed:
            res.podgroup_changed.add(job.uid)
        if not job.tasks:
            continue
        pipelined = index.get(_PIPELINED)
        if pipelined:
            for t in pipelined.values():
                res.pipelined[t.key] = t.node_name
        unplaced = (
            job.tasks_in(_ALLOCATED, _PENDING, _PIPELINED)
            if pipelined or _ALLOCATED in index or _PENDING in index
            else _NO_TASKS
        )
        job_err = job_fit_error(job) if unplaced else ""
        for t in unplaced:
            if t.scheduling_gated:
                continue
            res.pod_conditions.append(_task_condition(job, t, job_err, ssn.nominated))
        if st.phase in _UNREADY_PHASES:
            if unplaced:
                n_pending = job.count(_PENDING)
                res.job_events.append(
                    (
                        job.uid,
                        "Warning",
                        "Unschedulable",
                        f"{n_pending}/{len(job.tasks)} tasks in gang unschedulable: {job_err}",
                    )
                )
        elif changed:
            res.job_events.append((job.uid, "Normal", "Scheduled", "pod group is ready"))
    return res


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """No cyclic garbage collection while a session runs (unless the caller had it off already).

    A session keeps nearly everything it allocates until it ends (node and job views, task copies,
    the placement cache), so the young collections it triggered walked the same survivors again
    and again: 68 collections, 10 % of a 20,000-node backlog session, against 21 with the pause.
    Reference counting still frees what is dropped; the cycles left are collected afterwards."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def run_session(
    snapshot: Snapshot,
    conf: SchedulerConfiguration,
    options: SessionOptions | None = None,
    rng: random.Random | None = None,
    now: float | None = None,
) -> SessionResult:
    return run_session_keep(snapshot, conf, options, rng, now)[0]


def run_session_keep(
    snapshot: Snapshot,
    conf: SchedulerConfiguration,
    options: SessionOptions | None = None,
    rng: random.Random | None = None,
    now: float | None = None,
) -> tuple[SessionResult, Session]:
    """A whole session, returning the closed session too (views and explanations read it)."""
    t0 = time.perf_counter()
    with collector_paused():
        ssn = open_session(snapshot, conf, options, rng, now)
        open_ms = (time.perf_counter() - t0) * 1000
        timings: dict[str, float] = {}
        run_actions(ssn, timings)
        res = close_session(ssn)
    res.action_ms = timings
    res.open_ms = open_ms
    res.total_ms = (time.perf_counter() - t0) * 1000
    return res, ssn
