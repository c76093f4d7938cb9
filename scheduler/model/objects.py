"""Slim records the decision core works on: pods, tasks, jobs, nodes, queues.

These hold only what scheduling needs (never whole pod dicts: 150k pods x full JSON is gigabytes).
They are built from Kubernetes objects by `model.convert`. Jobs and nodes live in `model.job` and
`model.node` and are re-exported here.
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


ALLOCATED_STATUSES = frozenset(
    {TaskStatus.ALLOCATED, TaskStatus.BINDING, TaskStatus.BOUND, TaskStatus.RUNNING}
)
# Volcano's ReadyTaskNum: tasks that hold, or held, their place on a node.
READY_STATUSES = (
    TaskStatus.BOUND,
    TaskStatus.BINDING,
    TaskStatus.RUNNING,
    TaskStatus.ALLOCATED,
    TaskStatus.SUCCEEDED,
)
PREEMPTABLE_STATUSES = frozenset({TaskStatus.BOUND, TaskStatus.RUNNING})
COMPLETED_STATUSES = frozenset({TaskStatus.SUCCEEDED, TaskStatus.FAILED})
SCHEDULED_STATUSES = frozenset(
    {TaskStatus.RUNNING, TaskStatus.BOUND, TaskStatus.SUCCEEDED, TaskStatus.FAILED}
)
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
            [
                Condition(c.type, c.status, c.reason, c.message, c.transition_id, c.last_transition_time)
                for c in self.conditions
            ],
            self.running,
            self.succeeded,
            self.failed,
        )

    def to_manifest(self, default_time: str | None = None) -> dict[str, Any]:
        """The PodGroup `status` as the API has it; `default_time` stamps conditions that have no
        transition time yet (omitted when None, as `simulate` shows them)."""
        conditions = []
        for c in self.conditions:
            cond = {
                "type": c.type,
                "status": c.status,
                "reason": c.reason,
                "message": c.message,
                "transitionID": c.transition_id,
            }
            if default_time is not None:
                cond["lastTransitionTime"] = c.last_transition_time or default_time
            conditions.append(cond)
        return {
            "phase": self.phase,
            "running": self.running,
            "succeeded": self.succeeded,
            "failed": self.failed,
            "conditions": conditions,
        }

    def shallow_copy(self) -> PodGroupStatus:
        """Conditions are replaced, never mutated in place, so sharing them is safe."""
        return PodGroupStatus(self.phase, list(self.conditions), self.running, self.succeeded, self.failed)

    def same_as(self, other: PodGroupStatus) -> bool:
        """Exactly equal, conditions included (a shallow copy nobody changed compares by identity)."""
        return (
            self.phase == other.phase
            and self.running == other.running
            and self.succeeded == other.succeeded
            and self.failed == other.failed
            and self.conditions == other.conditions
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
        # no condition on either side (most running groups): no generator made at every close
        if not self.conditions:
            return True
        return all(a.same(b) for a, b in zip(self.conditions, other.conditions, strict=True))


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


__all__ = [
    "ALLOCATED_STATUSES",
    "COMPLETED_STATUSES",
    "ON_NODE_STATUSES",
    "PREEMPTABLE_STATUSES",
    "SCHEDULED_STATUSES",
    "Condition",
    "Container",
    "PodGroupPhase",
    "PodGroupStatus",
    "PodInfo",
    "PriorityClassInfo",
    "QueueInfo",
    "TaskInfo",
    "TaskStatus",
]
