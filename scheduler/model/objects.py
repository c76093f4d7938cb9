"""Slim records the decision core works on: pods, tasks, jobs, nodes, queues.

These hold only what scheduling needs (never whole pod dicts: 150k pods x full JSON is gigabytes).
They are built from Kubernetes objects by `model.convert` and cloned into each session's snapshot.
Accounting rules (what a task's status does to a node's idle/used/releasing/pipelined) follow
Volcano's NodeInfo exactly; see the spec, section 2.3.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any

from scheduler.model.resources import Resource


class TaskStatus(IntEnum):
    PENDING = 1
    ALLOCATED = 2
    PIPELINED = 3
    BINDING = 4
    BOUND = 5
    RUNNING = 6
    RELEASING = 7
    SUCCEEDED = 8
    FAILED = 9
    UNKNOWN = 10

    @property
    def label(self) -> str:
        return self.name.capitalize()


ALLOCATED_STATUSES = frozenset({TaskStatus.ALLOCATED, TaskStatus.BINDING, TaskStatus.BOUND, TaskStatus.RUNNING})
PREEMPTABLE_STATUSES = frozenset({TaskStatus.BOUND, TaskStatus.RUNNING})
COMPLETED_STATUSES = frozenset({TaskStatus.SUCCEEDED, TaskStatus.FAILED})
SCHEDULED_STATUSES = frozenset({TaskStatus.RUNNING, TaskStatus.BOUND, TaskStatus.SUCCEEDED, TaskStatus.FAILED})
# Statuses that occupy node resources (everything that is on a node except completed pods).
ON_NODE_STATUSES = frozenset(
    {
        TaskStatus.ALLOCATED,
        TaskStatus.PIPELINED,
        TaskStatus.BINDING,
        TaskStatus.BOUND,
        TaskStatus.RUNNING,
        TaskStatus.RELEASING,
        TaskStatus.UNKNOWN,
    }
)


class PodGroupPhase:
    PENDING = "Pending"
    INQUEUE = "Inqueue"
    RUNNING = "Running"
    UNKNOWN = "Unknown"
    COMPLETED = "Completed"


@dataclass(slots=True)
class Container:
    name: str
    requests: dict[str, Any] = field(default_factory=dict)
    limits: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class PodInfo:
    """What the core keeps of a pod. Raw sub-objects (affinity, tolerations) stay as small dicts."""

    uid: str
    name: str
    namespace: str
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    scheduler_name: str = "volcano"
    node_name: str = ""
    phase: str = "Pending"
    deleting: bool = False
    priority: int | None = None
    priority_class_name: str = ""
    creation: float = 0.0
    node_selector: dict[str, str] = field(default_factory=dict)
    affinity: dict[str, Any] = field(default_factory=dict)
    tolerations: list[dict[str, Any]] = field(default_factory=list)
    host_ports: list[tuple[str, str, int]] = field(default_factory=list)
    topology_spread: list[dict[str, Any]] = field(default_factory=list)
    containers: list[Container] = field(default_factory=list)
    init_containers: list[Container] = field(default_factory=list)
    preemption_policy: str = ""
    scheduling_gates: list[str] = field(default_factory=list)
    nominated_node: str = ""
    owner_uid: str = ""
    # (status, reason, message) of the PodScheduled condition, to write only on change
    scheduled_condition: tuple[str, str, str] | None = None
    resource_version: str = ""

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


class TaskInfo:
    """One pod as the scheduler sees it. Mutable within a session; cloned per snapshot."""

    __slots__ = (
        "best_effort",
        "bind_annotations",
        "index",
        "init_resreq",
        "job",
        "last_tx",
        "name",
        "namespace",
        "node_name",
        "pod",
        "preemptable",
        "priority",
        "resreq",
        "role",
        "scheduling_gated",
        "status",
        "uid",
    )

    def __init__(
        self,
        pod: PodInfo,
        job: str,
        resreq: Resource,
        init_resreq: Resource,
        status: TaskStatus,
        role: str = "",
        priority: int = 1,
        preemptable: bool = True,
        index: int | None = None,
        scheduling_gated: bool = False,
    ) -> None:
        self.uid = pod.uid
        self.name = pod.name
        self.namespace = pod.namespace
        self.pod = pod
        self.job = job
        self.resreq = resreq
        self.init_resreq = init_resreq
        self.best_effort = init_resreq.is_empty()
        self.status = status
        self.node_name = pod.node_name
        self.role = role
        self.priority = priority
        self.preemptable = preemptable
        self.index = index
        self.scheduling_gated = scheduling_gated
        # (status, node) of the last operation undone by a discard, for "can possibly be assigned" messages
        self.last_tx: tuple[TaskStatus, str] | None = None
        # annotations decided in this session (device plugins) and written with the binding
        self.bind_annotations: dict[str, str] = {}

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def clone(self) -> TaskInfo:
        t = TaskInfo.__new__(TaskInfo)
        t.uid = self.uid
        t.name = self.name
        t.namespace = self.namespace
        t.pod = self.pod
        t.job = self.job
        t.resreq = self.resreq  # requests never change within a session: share
        t.init_resreq = self.init_resreq
        t.best_effort = self.best_effort
        t.status = self.status
        t.node_name = self.node_name
        t.role = self.role
        t.priority = self.priority
        t.preemptable = self.preemptable
        t.index = self.index
        t.scheduling_gated = self.scheduling_gated
        t.last_tx = None
        t.bind_annotations = dict(self.bind_annotations) if self.bind_annotations else {}
        return t

    def __repr__(self) -> str:
        return f"<Task {self.key} {self.status.label} on {self.node_name or '-'}>"


@dataclass(slots=True)
class Condition:
    type: str
    status: str
    reason: str = ""
    message: str = ""
    transition_id: str = ""
    last_transition_time: str = ""

    def same(self, other: Condition) -> bool:
        """Equal ignoring lastTransitionTime and transitionID (Volcano's comparison)."""
        return (self.type, self.status, self.reason, self.message) == (
            other.type,
            other.status,
            other.reason,
            other.message,
        )


@dataclass(slots=True)
class PodGroupStatus:
    phase: str = PodGroupPhase.PENDING
    conditions: list[Condition] = field(default_factory=list)
    running: int = 0
    succeeded: int = 0
    failed: int = 0

    def clone(self) -> PodGroupStatus:
        return PodGroupStatus(
            self.phase,
            [Condition(c.type, c.status, c.reason, c.message, c.transition_id, c.last_transition_time) for c in self.conditions],
            self.running,
            self.succeeded,
            self.failed,
        )

    def same(self, other: PodGroupStatus) -> bool:
        if (self.phase, self.running, self.succeeded, self.failed) != (
            other.phase,
            other.running,
            other.succeeded,
            other.failed,
        ):
            return False
        if len(self.conditions) != len(other.conditions):
            return False
        return all(a.same(b) for a, b in zip(self.conditions, other.conditions, strict=True))


class JobInfo:
    """A PodGroup and its tasks, with Volcano's counters maintained incrementally."""

    __slots__ = (
        "allocated",
        "creation",
        "fit_error",
        "min_available",
        "min_resources",
        "name",
        "namespace",
        "network_topology",
        "nodes_fit_errors",
        "pg_exists",
        "pod_group_status",
        "priority",
        "priority_class_name",
        "queue",
        "schedule_start",
        "task_min_available",
        "task_min_available_total",
        "task_status_index",
        "tasks",
        "total_request",
        "uid",
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
    ) -> None:
        self.uid = uid
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
        self.pg_exists = True
        self.tasks: dict[str, TaskInfo] = {}
        self.task_status_index: dict[TaskStatus, dict[str, TaskInfo]] = {}
        self.allocated = Resource()
        self.total_request = Resource()
        self.fit_error = ""
        # task uid -> {node name -> reason}
        self.nodes_fit_errors: dict[str, dict[str, list[str]]] = {}
        self.network_topology = None
        self.schedule_start = 0.0

    # -- membership ---------------------------------------------------------------------------
    def add_task(self, task: TaskInfo) -> None:
        self.tasks[task.uid] = task
        self.task_status_index.setdefault(task.status, {})[task.uid] = task
        self.total_request.add(task.resreq)
        if task.status in ALLOCATED_STATUSES:
            self.allocated.add(task.resreq)

    def delete_task(self, task: TaskInfo) -> None:
        t = self.tasks.pop(task.uid, None)
        if t is None:
            return
        bucket = self.task_status_index.get(t.status)
        if bucket is not None:
            bucket.pop(t.uid, None)
            if not bucket:
                del self.task_status_index[t.status]
        self.total_request.sub(t.resreq)
        if t.status in ALLOCATED_STATUSES:
            self.allocated.sub(t.resreq)

    def update_task_status(self, task: TaskInfo, status: TaskStatus) -> None:
        old = task.status
        bucket = self.task_status_index.get(old)
        if bucket is not None:
            bucket.pop(task.uid, None)
            if not bucket:
                del self.task_status_index[old]
        was_alloc = old in ALLOCATED_STATUSES
        is_alloc = status in ALLOCATED_STATUSES
        if was_alloc and not is_alloc:
            self.allocated.sub(task.resreq)
        elif is_alloc and not was_alloc:
            self.allocated.add(task.resreq)
        task.status = status
        self.task_status_index.setdefault(status, {})[task.uid] = task

    def clone(self) -> JobInfo:
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
        j.pod_group_status = self.pod_group_status.clone()
        j.pg_exists = self.pg_exists
        j.tasks = {}
        j.task_status_index = {}
        j.allocated = Resource()
        j.total_request = Resource()
        j.fit_error = ""
        j.nodes_fit_errors = {}
        j.network_topology = self.network_topology
        j.schedule_start = self.schedule_start
        for t in self.tasks.values():
            j.add_task(t.clone())
        return j

    # -- counters (spec 2.2) ------------------------------------------------------------------
    def count(self, *statuses: TaskStatus) -> int:
        idx = self.task_status_index
        return sum(len(idx[s]) for s in statuses if s in idx)

    def tasks_in(self, *statuses: TaskStatus) -> list[TaskInfo]:
        out: list[TaskInfo] = []
        idx = self.task_status_index
        for s in statuses:
            if s in idx:
                out.extend(idx[s].values())
        return out

    def ready_task_num(self) -> int:
        return self.count(
            TaskStatus.BOUND, TaskStatus.BINDING, TaskStatus.RUNNING, TaskStatus.ALLOCATED, TaskStatus.SUCCEEDED
        )

    def waiting_task_num(self) -> int:
        return self.count(TaskStatus.PIPELINED)

    def pending_best_effort_num(self) -> int:
        return sum(1 for t in self.task_status_index.get(TaskStatus.PENDING, {}).values() if t.best_effort)

    def valid_task_num(self) -> int:
        return self.count(
            TaskStatus.ALLOCATED,
            TaskStatus.BINDING,
            TaskStatus.BOUND,
            TaskStatus.RUNNING,
            TaskStatus.SUCCEEDED,
            TaskStatus.PIPELINED,
            TaskStatus.PENDING,
        )

    def is_ready(self) -> bool:
        return self.ready_task_num() + self.pending_best_effort_num() >= self.min_available

    def is_pipelined(self) -> bool:
        return self.waiting_task_num() + self.ready_task_num() + self.pending_best_effort_num() >= self.min_available

    def is_starving(self) -> bool:
        return self.waiting_task_num() + self.ready_task_num() < self.min_available

    def is_pending(self) -> bool:
        return not self.pg_exists or self.pod_group_status.phase in ("", PodGroupPhase.PENDING)

    def _role_counts(self, statuses: frozenset[TaskStatus]) -> dict[str, int]:
        counts: dict[str, int] = {}
        for s in statuses:
            for t in self.task_status_index.get(s, {}).values():
                counts[t.role] = counts.get(t.role, 0) + 1
        return counts

    def _check_roles(self, statuses: frozenset[TaskStatus]) -> bool:
        if self.min_available < self.task_min_available_total:
            return True
        counts = self._role_counts(statuses)
        return all(counts.get(role, 0) >= need for role, need in self.task_min_available.items() if need > 0)

    def check_task_valid(self) -> bool:
        return self._check_roles(ALLOCATED_STATUSES | {TaskStatus.SUCCEEDED, TaskStatus.PIPELINED, TaskStatus.PENDING})

    def check_task_ready(self) -> bool:
        return self._check_roles(ALLOCATED_STATUSES | {TaskStatus.SUCCEEDED})

    def check_task_pipelined(self) -> bool:
        return self._check_roles(ALLOCATED_STATUSES | {TaskStatus.SUCCEEDED, TaskStatus.PIPELINED})

    def need_continue_allocating(self) -> bool:
        """False when every task is needed for the gang: one failure dooms the job, so stop early."""
        return self.min_available != len(self.tasks)

    @property
    def key(self) -> str:
        return self.uid

    def __repr__(self) -> str:
        return f"<Job {self.uid} q={self.queue} min={self.min_available} tasks={len(self.tasks)}>"


class NodeInfo:
    """A Ready node with Volcano's idle/used/releasing/pipelined accounting."""

    __slots__ = (
        "allocatable",
        "annotations",
        "capability",
        "devices",
        "idle",
        "labels",
        "max_task_num",
        "name",
        "pipelined",
        "raw_capacity",
        "releasing",
        "taints",
        "tasks",
        "unschedulable",
        "used",
        "used_ports",
    )

    def __init__(
        self,
        name: str,
        allocatable: Resource,
        capability: Resource | None = None,
        labels: dict[str, str] | None = None,
        annotations: dict[str, str] | None = None,
        taints: list[dict[str, Any]] | None = None,
        unschedulable: bool = False,
    ) -> None:
        self.name = name
        self.allocatable = allocatable
        self.capability = capability if capability is not None else allocatable.clone()
        self.idle = allocatable.clone()
        self.used = Resource()
        self.releasing = Resource()
        self.pipelined = Resource()
        self.labels = labels or {}
        self.annotations = annotations or {}
        self.taints = taints or []
        self.unschedulable = unschedulable
        self.max_task_num = int(allocatable.pods) if allocatable.pods > 0 else 0
        self.tasks: dict[str, TaskInfo] = {}
        # host port usage: (protocol, hostIP, port) -> count
        self.used_ports: dict[tuple[str, str, int], int] = {}
        # device kind -> ledger (deviceshare); cloned with the node
        self.devices: dict[str, Any] = {}
        self.raw_capacity: dict[str, Any] = {}

    def future_idle(self) -> Resource:
        return self.idle.clone().add(self.releasing).sub(self.pipelined)

    def add_task(self, task: TaskInfo) -> None:
        """Account a task on this node by its status (spec 2.3). The node keeps its own copy."""
        if task.uid in self.tasks:
            raise ValueError(f"task {task.key} already on node {self.name}")
        req = task.resreq
        st = task.status
        if st == TaskStatus.RELEASING:
            self.idle.sub(req)
            self.releasing.add(req)
            self.used.add(req)
        elif st == TaskStatus.PIPELINED:
            self.pipelined.add(req)
        else:
            self.idle.sub(req)
            self.used.add(req)
        self.tasks[task.uid] = task
        for p in task.pod.host_ports:
            self.used_ports[p] = self.used_ports.get(p, 0) + 1

    def remove_task(self, task: TaskInfo) -> None:
        t = self.tasks.pop(task.uid, None)
        if t is None:
            return
        req = t.resreq
        st = t.status
        if st == TaskStatus.RELEASING:
            self.idle.add(req)
            self.releasing.sub(req)
            self.used.sub(req)
        elif st == TaskStatus.PIPELINED:
            self.pipelined.sub(req)
        else:
            self.idle.add(req)
            self.used.sub(req)
        for p in t.pod.host_ports:
            n = self.used_ports.get(p, 0) - 1
            if n <= 0:
                self.used_ports.pop(p, None)
            else:
                self.used_ports[p] = n

    def update_task(self, task: TaskInfo, status: TaskStatus) -> None:
        """Change a task's status on this node (remove, set, add), keeping accounting exact."""
        self.remove_task(task)
        task.status = status
        self.add_task(task)

    def pod_count(self) -> int:
        return len(self.tasks)

    def clone_empty(self) -> NodeInfo:
        """A copy with allocatable/labels but no tasks; the snapshot re-adds cloned tasks."""
        n = NodeInfo.__new__(NodeInfo)
        n.name = self.name
        n.allocatable = self.allocatable
        n.capability = self.capability
        n.idle = self.allocatable.clone()
        n.used = Resource()
        n.releasing = Resource()
        n.pipelined = Resource()
        n.labels = self.labels
        n.annotations = self.annotations
        n.taints = self.taints
        n.unschedulable = self.unschedulable
        n.max_task_num = self.max_task_num
        n.tasks = {}
        n.used_ports = {}
        n.devices = {}
        n.raw_capacity = self.raw_capacity
        return n

    def __repr__(self) -> str:
        return f"<Node {self.name} idle={self.idle!r}>"


class QueueInfo:
    __slots__ = (
        "annotations",
        "capability",
        "creation",
        "deserved",
        "guarantee",
        "name",
        "parent",
        "priority",
        "reclaimable",
        "state",
        "uid",
        "weight",
    )

    def __init__(
        self,
        name: str,
        weight: int = 1,
        capability: Resource | None = None,
        guarantee: Resource | None = None,
        deserved: Resource | None = None,
        reclaimable: bool = True,
        state: str = "Open",
        parent: str = "",
        priority: int = 0,
        creation: float = 0.0,
        annotations: dict[str, str] | None = None,
    ) -> None:
        self.uid = name
        self.name = name
        self.weight = weight
        self.capability = capability
        self.guarantee = guarantee or Resource()
        self.deserved = deserved
        self.reclaimable = reclaimable
        self.state = state
        self.parent = parent
        self.priority = priority
        self.creation = creation
        self.annotations = annotations or {}

    def is_open(self) -> bool:
        return self.state == "Open"

    def __repr__(self) -> str:
        return f"<Queue {self.name} w={self.weight} {self.state}>"


@dataclass(slots=True)
class PriorityClassInfo:
    name: str
    value: int
    global_default: bool = False
    preemption_policy: str = "PreemptLowerPriority"
