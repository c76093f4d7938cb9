"""conformance: never evict critical system pods (spec 7.3)."""

from __future__ import annotations

from scheduler.framework.plugin import Plugin
from scheduler.framework.session import PERMIT, Session
from scheduler.model.objects import TaskInfo

CRITICAL_CLASSES = frozenset({"system-cluster-critical", "system-node-critical"})
SYSTEM_NAMESPACE = "kube-system"


def evictable(tasks: list[TaskInfo]) -> list[TaskInfo]:
    return [
        t
        for t in tasks
        if t.pod.priority_class_name not in CRITICAL_CLASSES and t.namespace != SYSTEM_NAMESPACE
    ]


class ConformancePlugin(Plugin):
    name = "conformance"

    def on_session_open(self, ssn: Session) -> None:
        def victims(_preemptor: TaskInfo, candidates: list[TaskInfo]) -> tuple[list[TaskInfo], int]:
            return evictable(candidates), PERMIT

        ssn.add_preemptable_fn(self.name, victims)
        ssn.add_reclaimable_fn(self.name, victims)
        ssn.add_unified_evictable_fn(self.name, lambda _ctx, candidates: (evictable(candidates), PERMIT))
