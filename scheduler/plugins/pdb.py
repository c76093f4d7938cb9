"""pdb: preempt and reclaim never pick victims that would break a PodDisruptionBudget.

Candidates are taken in the order given; each one spends one of the `status.disruptionsAllowed`
of every budget of its namespace whose selector matches it (pods already listed in the budget's
`disruptedPods` spend nothing). A candidate that would take any budget below zero is kept. Pods
without labels and budgets with an empty selector are never matched, as in Volcano.
"""

from __future__ import annotations

from typing import ClassVar

from scheduler.framework.plugin import Plugin
from scheduler.framework.session import PERMIT, Session
from scheduler.model.objects import TaskInfo
from scheduler.plugins.k8s.labels import compile_selector


class PdbPlugin(Plugin):
    name: ClassVar[str] = "pdb"

    def on_session_open(self, ssn: Session) -> None:
        budgets = [(b, compile_selector(b.selector)) for b in ssn.pdbs]
        # an empty selector selects nothing here (Volcano skips it), a missing one nothing too
        budgets = [(b, s) for b, s in budgets if not s.nothing and (s.match_labels or s.exprs)]

        def allowed(tasks: list[TaskInfo]) -> list[TaskInfo]:
            left = [b.disruptions_allowed for b, _ in budgets]
            victims: list[TaskInfo] = []
            for t in tasks:
                labels = t.pod.labels
                if not labels:
                    continue
                violated = False
                for i, (b, sel) in enumerate(budgets):
                    if b.namespace != t.namespace or not sel.matches(labels):
                        continue
                    if t.name in b.disrupted_pods:
                        continue
                    left[i] -= 1
                    if left[i] < 0:
                        violated = True
                if not violated:
                    victims.append(t)
            return victims

        def evictable(_preemptor: TaskInfo, candidates: list[TaskInfo]) -> tuple[list[TaskInfo], int]:
            return allowed(candidates), PERMIT

        ssn.add_victim_tasks_fn(self.name, allowed)
        ssn.add_reclaimable_fn(self.name, evictable)
        ssn.add_preemptable_fn(self.name, evictable)
