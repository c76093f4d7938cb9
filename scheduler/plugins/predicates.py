"""predicates: kube-scheduler's filter plugins as Volcano's predicates plugin runs them (spec 7.6)."""

from __future__ import annotations

from scheduler.framework.plugin import Plugin
from scheduler.framework.session import Session
from scheduler.framework.status import Unfit
from scheduler.model.objects import NodeInfo, TaskInfo


class PredicatesPlugin(Plugin):
    name = "predicates"

    def on_session_open(self, ssn: Session) -> None:
        def predicate(task: TaskInfo, node: NodeInfo) -> Unfit | None:
            if node.max_task_num and node.pod_count() >= node.max_task_num:
                return Unfit("Too many pods", resolvable=True)
            if node.unschedulable:
                return Unfit("node(s) were unschedulable", resolvable=False)
            return None

        ssn.add_predicate_fn(self.name, predicate)
