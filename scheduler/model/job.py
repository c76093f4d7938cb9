"""JobInfo: a PodGroup and its tasks, with Volcano's counters maintained incrementally.

A snapshot's jobs are copy-on-write views of the cluster's: they share the task maps and
resource totals until the session first changes them, so a cycle over 15,000 running jobs does
not copy 150,000 tasks. Every mutator calls `_own()` first.
"""

from __future__ import annotations

from scheduler.model.objects import (
    ALLOCATED_STATUSES,
    READY_STATUSES,
    PodGroupPhase,
    PodGroupStatus,
    TaskInfo,
    TaskStatus,
)
from scheduler.model.resources import Resource
from scheduler.model.topology import NetworkTopologySpec, SubGroupPolicy

# the phases of a PodGroup whose status a session leaves as it is when nothing else changed
QUIET_PHASES = (PodGroupPhase.RUNNING, PodGroupPhase.COMPLETED)
# the members themselves, not a lookup on the enum class per call (these run for every pod of a
# sync; a member looked up on TaskStatus goes through EnumType's __getattr__ hook)
_PENDING, _PIPELINED = TaskStatus.PENDING, TaskStatus.PIPELINED
# the statuses each of the role checks counts (built once: allocate asks after every placement)
_VALID_STATUSES = ALLOCATED_STATUSES | {TaskStatus.SUCCEEDED, TaskStatus.PIPELINED, TaskStatus.PENDING}
_READY_ROLE_STATUSES = ALLOCATED_STATUSES | {TaskStatus.SUCCEEDED}
_PIPELINED_STATUSES = ALLOCATED_STATUSES | {TaskStatus.SUCCEEDED, TaskStatus.PIPELINED}
_READY = frozenset(READY_STATUSES)


class JobInfo:
    __slots__ = (
        "_origin",
        "_ready",
        "_shared",
        "_touched",
        "allocated",
        "base_status",
        "creation",
        "fit_error",
        "min_available",
        "min_resources",
        "name",
        "namespace",
        "network_topology",
        "nodes_fit_errors",
        "pending_request",
        "pg_exists",
        "pod_group_status",
        "preemptable",
        "priority",
        "priority_class_name",
        "queue",
        "schedule_start",
        "subgroup_policies",
        "task_min_available",
        "task_min_available_total",
        "task_status_index",
        "tasks",
        "total_request",
        "uid",
        "waiting_time",
    )

    def __init__(
        self,
        uid: str,
        name: str,
        namespace: str,
        queue: str = "default",
        min_available: int = 1,
        task_min_available: dict[str, int] | None = None,
        min_resources: Resource | None = None,
        priority: int = 0,
        priority_class_name: str = "",
        creation: float = 0.0,
        status: PodGroupStatus | None = None,
        waiting_time: float | None = None,
    ) -> None:
        self.uid = uid
        # sla: seconds the job may wait before it is admitted and ordered first (None: no SLA)
        self.waiting_time = waiting_time
        self.name = name
        self.namespace = namespace
        self.queue = queue
        self.min_available = min_available
        self.task_min_available = dict(task_min_available or {})
        self.task_min_available_total = sum(self.task_min_available.values())
        self.min_resources = min_resources
        self.priority = priority
        self.priority_class_name = priority_class_name
        self.creation = creation
        self.pod_group_status = status or PodGroupStatus()
        # the status as the cluster has it (what the session's result is compared with)
        self.base_status = self.pod_group_status
        self.pg_exists = True
        self.tasks: dict[str, TaskInfo] = {}
        self.task_status_index: dict[TaskStatus, dict[str, TaskInfo]] = {}
        # [ready_task_num(), pending_best_effort_num()], kept as the index changes: the job order
        # asks is_ready() in every heap comparison. Shared with the index by views (session_view)
        self._ready = [0, 0]
        self.allocated = Resource()
        self.total_request = Resource()
        self.pending_request = Resource()
        self.fit_error = ""
        # task uid -> FitErrors of that task in this session
        self.nodes_fit_errors: dict[str, object] = {}
        self.schedule_start = 0.0
        # PodGroup spec.networkTopology and spec.subGroupPolicy (see model.topology)
        self.network_topology: NetworkTopologySpec | None = None
        self.subgroup_policies: tuple[SubGroupPolicy, ...] = ()
        # the PodGroup's volcano.sh/preemptable (None: not set, which the gang-aware actions
        # read as preemptable)
        self.preemptable: bool | None = None
        self._shared = False
        # the cluster's job this is a session view of (None: not a view)
        self._origin: JobInfo | None = None
        # where a view notes its uid when a session first changes it (None: nowhere)
        self._touched: set[str] | None = None

    # -- copy-on-write ------------------------------------------------------------------------
    def session_view(self, touched: set[str] | None = None) -> JobInfo:
        """A view for one session: shares tasks and totals until the session changes them, and
        then notes its uid in `touched`."""
        j = JobInfo.__new__(JobInfo)
        j.uid = self.uid
        j.name = self.name
        j.namespace = self.namespace
        j.queue = self.queue
        j.min_available = self.min_available
        j.task_min_available = self.task_min_available
        j.task_min_available_total = self.task_min_available_total
        j.min_resources = self.min_resources
        j.priority = self.priority
        j.priority_class_name = self.priority_class_name
        j.creation = self.creation
        j.waiting_time = self.waiting_time
        j.base_status = self.pod_group_status
        j.pod_group_status = self.pod_group_status.shallow_copy()
        j.pg_exists = self.pg_exists
        j.tasks = self.tasks
        j.task_status_index = self.task_status_index
        j._ready = self._ready
        j.allocated = self.allocated
        j.total_request = self.total_request
        j.pending_request = self.pending_request
        j.fit_error = ""
        j.nodes_fit_errors = {}
        j.schedule_start = self.schedule_start
        j.network_topology = self.network_topology
        j.subgroup_policies = self.subgroup_policies
        j.preemptable = self.preemptable
        j._shared = True
        j._origin = self
        j._touched = touched
        return j

    def reuse_for(self, origin: JobInfo) -> bool:
        """Make this view of `origin` what a fresh `origin.session_view()` would be, and say True;
        False (the view untouched) when it cannot be handed out again. Tasks and totals are shared with `origin` until a session
        changes them, so they follow `origin`'s changes by themselves; what a session may have
        written is checked: the shared maps and the fit errors. The status a session recomputed
        at its close is put back to `origin`'s (only the status writer acts on it): the first
        session after a restart recomputes every job's, and rebuilding 75,000 views (and every
        per-job figure kept from one session to the next) for a new condition id cost the second
        session seconds. (The priority is set by every session open; `schedule_start` only feeds
        a metric.)"""
        if not (self._origin is origin and self._shared and not self.fit_error and not self.nodes_fit_errors):
            return False
        if not self.pod_group_status.same_as(origin.pod_group_status):
            self.base_status = origin.pod_group_status
            self.pod_group_status = origin.pod_group_status.shallow_copy()
        return True

    def _own(self) -> None:
        self.tasks = dict(self.tasks)
        # a loop, not a comprehension: no frame of its own (a session owns every job it places)
        index: dict[TaskStatus, dict[str, TaskInfo]] = {}
        for s, d in self.task_status_index.items():
            index[s] = dict(d)
        self.task_status_index = index
        self._ready = list(self._ready)
        self.allocated = self.allocated.clone()
        # total_request stays the origin's: a status change leaves it as it is, and add_task and
        # delete_task copy it first (`_own_total`)
        self.pending_request = self.pending_request.clone()
        self._shared = False
        if self._touched is not None:
            self._touched.add(self.uid)

    def _own_total(self) -> None:
        """Copy the total request while it is still the origin's (a view that `_own` left it to)."""
        origin = self._origin
        if origin is not None and self.total_request is origin.total_request:
            self.total_request = self.total_request.clone()

    def replace_task(self, old: TaskInfo, new: TaskInfo) -> None:
        """Swap a task object for its session-private copy (same uid, same status)."""
        if self._shared:
            self._own()
        self.tasks[new.uid] = new
        bucket = self.task_status_index.get(old.status)
        if bucket is not None and old.uid in bucket:
            bucket[new.uid] = new

    def replace_and_update(self, old: TaskInfo, new: TaskInfo, status: TaskStatus) -> None:
        """replace_task(old, new) then update_task_status(new, status): a session's first change
        of a task (its placement) in one call. The swap in the status bucket is left out: the
        move takes the uid out of that bucket anyway, and counts the same task state."""
        if self._shared:
            self._own()
        self.tasks[new.uid] = new
        self.update_task_status(new, status)

    # -- membership ---------------------------------------------------------------------------
    def add_task(self, task: TaskInfo) -> None:
        if self._shared:
            self._own()
        self._own_total()
        self.tasks[task.uid] = task
        self._index_move(task, None, task.status)
        self.total_request.add(task.resreq)
        if task.status in ALLOCATED_STATUSES:
            self.allocated.add(task.resreq)
        elif task.status == _PENDING:
            self.pending_request.add(task.resreq)

    def delete_task(self, task: TaskInfo) -> None:
        if self._shared:
            self._own()
        t = self.tasks.pop(task.uid, None)
        if t is None:
            return
        self._own_total()
        self._index_move(t, t.status, None)
        self.total_request.sub(t.resreq)
        if t.status in ALLOCATED_STATUSES:
            self.allocated.sub(t.resreq)
        elif t.status == _PENDING:
            self.pending_request.sub(t.resreq)

    def update_task_status(self, task: TaskInfo, status: TaskStatus) -> None:
        if self._shared:
            self._own()
        old = task.status
        self._index_move(task, old, status)
        if old == _PENDING and status in ALLOCATED_STATUSES:
            # a placement: allocated.add and pending_request.sub (separate sums) in one pass
            self.pending_request.pass_on(task.resreq, self.allocated)
            task.status = status
            return
        if old in ALLOCATED_STATUSES and status not in ALLOCATED_STATUSES:
            self.allocated.sub(task.resreq)
        elif status in ALLOCATED_STATUSES and old not in ALLOCATED_STATUSES:
            self.allocated.add(task.resreq)
        if old == _PENDING and status != _PENDING:
            self.pending_request.sub(task.resreq)
        elif status == _PENDING and old != _PENDING:
            self.pending_request.add(task.resreq)
        task.status = status

    def _index_move(self, task: TaskInfo, old: TaskStatus | None, new: TaskStatus | None) -> None:
        """Take the task's uid out of the `old` bucket and put the task in the `new` one (None:
        no such bucket), uncounting and counting what was and is there: a status change is one
        call (two per placement)."""
        index = self.task_status_index
        uid = task.uid
        if old is not None:
            bucket = index.get(old)
            if bucket is not None:
                was = bucket.pop(uid, None)
                if not bucket:
                    del index[old]
                if was is not None:
                    if old in _READY:
                        self._ready[0] -= 1
                    elif old == _PENDING and was.best_effort:
                        self._ready[1] -= 1
        if new is not None:
            bucket = index.setdefault(new, {})
            if uid not in bucket:
                if new in _READY:
                    self._ready[0] += 1
                elif new == _PENDING and task.best_effort:
                    self._ready[1] += 1
            bucket[uid] = task

    def with_spec_of(self, other: JobInfo) -> JobInfo:
        """`other` (a freshly converted PodGroup) carrying over this job's tasks."""
        other.tasks = self.tasks
        other.task_status_index = self.task_status_index
        other._ready = self._ready
        other.allocated = self.allocated
        other.total_request = self.total_request
        other.pending_request = self.pending_request
        other.schedule_start = self.schedule_start
        return other

    # -- counters (spec 2.2) ------------------------------------------------------------------
    def count(self, *statuses: TaskStatus) -> int:
        idx = self.task_status_index
        n = 0
        for s in statuses:
            b = idx.get(s)
            if b:
                n += len(b)
        return n

    def tasks_in(self, *statuses: TaskStatus) -> list[TaskInfo]:
        out: list[TaskInfo] = []
        idx = self.task_status_index
        for s in statuses:
            b = idx.get(s)
            if b:
                out.extend(b.values())
        return out

    def ready_task_num(self) -> int:
        return self._ready[0]

    def waiting_task_num(self) -> int:
        return self.count(_PIPELINED)

    def pending_best_effort_num(self) -> int:
        return self._ready[1]

    def valid_task_num(self) -> int:
        # the buckets there are (one or two for most jobs), not the seven statuses looked up
        n = 0
        for s, bucket in self.task_status_index.items():
            if s in _VALID_STATUSES:
                n += len(bucket)
        return n

    def is_ready(self) -> bool:
        # ready_task_num() + pending_best_effort_num() >= min_available: the job order asks it
        # of both jobs in every heap comparison
        counts = self._ready
        return counts[0] + counts[1] >= self.min_available

    def is_pipelined(self) -> bool:
        return (
            self.waiting_task_num() + self.ready_task_num() + self.pending_best_effort_num()
            >= self.min_available
        )

    def is_starving(self) -> bool:
        return self.waiting_task_num() + self.ready_task_num() < self.min_available

    def is_pending(self) -> bool:
        return not self.pg_exists or self.pod_group_status.phase in ("", PodGroupPhase.PENDING)

    def is_quiet(self) -> bool:
        """Nothing for a session to do or to write: a PodGroup Running or Completed with no
        pending task. A session leaves such a job as it is unless it changes its tasks."""
        return (
            self.pg_exists
            and self.pod_group_status.phase in QUIET_PHASES
            and not self.task_status_index.get(_PENDING)
        )

    def has_pending_tasks(self) -> bool:
        return bool(self.task_status_index.get(_PENDING))

    def _check_roles(self, statuses: frozenset[TaskStatus]) -> bool:
        if self.min_available < self.task_min_available_total or not self.task_min_available:
            return True
        counts: dict[str, int] = {}
        for s in statuses:
            for t in self.task_status_index.get(s, {}).values():
                counts[t.role] = counts.get(t.role, 0) + 1
        return all(counts.get(role, 0) >= need for role, need in self.task_min_available.items() if need > 0)

    def check_task_valid(self) -> bool:
        return self._check_roles(_VALID_STATUSES)

    def check_task_ready(self) -> bool:
        return self._check_roles(_READY_ROLE_STATUSES)

    def check_task_pipelined(self) -> bool:
        return self._check_roles(_PIPELINED_STATUSES)

    def need_continue_allocating(self) -> bool:
        """False when every task is needed for the gang: one failure dooms the job, so stop early."""
        return self.min_available != len(self.tasks)

    @property
    def key(self) -> str:
        return self.uid

    def __repr__(self) -> str:
        return f"<Job {self.uid} q={self.queue} min={self.min_available} tasks={len(self.tasks)}>"
