"""GPU exclusivity rules for vGPU (spec 6.7, Volcano's `deviceshare.GPUExclusiveRules`).

Each rule is a set of pod labels. A pod carrying ALL labels of a rule never shares a physical
GPU with another pod matching the same rule: while such a pod is fitted, the cards already held by
same-rule pods on that node are closed to it (their split count is capped at what is used, as
upstream does). Pods matching different rules, or none, share as usual. Only hami-core (and
MPS) nodes are affected: MIG slices are isolated in hardware.

Upstream remembers, across sessions, which GPUs each rule pod got, because its cache may not show
a just-bound pod's annotations yet. Here the ledger is rebuilt every session from the pods'
annotations, including the ones a bind is still carrying, so the card sets are derived from the
ledger each time and cannot go stale.
"""

from __future__ import annotations

from collections.abc import Mapping

from scheduler.framework.session import Session
from scheduler.model.objects import PodInfo
from scheduler.plugins.deviceshare import annotations as ann
from scheduler.plugins.deviceshare.config import GPU_EXCLUSIVE_RULES, Rule, parse_rules
from scheduler.plugins.deviceshare.vgpu import VgpuLedger

__all__ = ["GPU_EXCLUSIVE_RULES", "ExclusiveRules", "matching_rules", "parse_rules"]


def matching_rules(labels: Mapping[str, str], rules: tuple[Rule, ...]) -> frozenset[int]:
    return frozenset(i for i, rule in enumerate(rules) if all(labels.get(k) == v for k, v in rule))


class ExclusiveRules:
    """The rules of one session, and which rules each pod of the session matches (by UID)."""

    __slots__ = ("pod_rules", "rules")

    def __init__(self, rules: tuple[Rule, ...]) -> None:
        self.rules = rules
        self.pod_rules: dict[str, frozenset[int]] = {}

    @classmethod
    def build(cls, rules: tuple[Rule, ...], ssn: Session) -> ExclusiveRules:
        # pods on nodes now; a pod placed in this session is tracked when its fit is asked
        ex = cls(rules)
        for node in ssn.node_list:
            if node.devices:
                for task in node.tasks.values():
                    ex.track(task.pod)
        return ex

    def track(self, pod: PodInfo) -> frozenset[int]:
        got = self.pod_rules.get(pod.uid)
        if got is None:
            got = matching_rules(pod.labels, self.rules) if pod.labels else frozenset()
            self.pod_rules[pod.uid] = got
        return got

    def closed_cards(self, pod: PodInfo, led: VgpuLedger) -> list[int]:
        """Cards of `led` held by another pod that shares a rule with `pod` (local indices)."""
        mine = self.track(pod)
        if not mine or led.mode == ann.MODE_MIG:
            return []
        closed: set[int] = set()
        for uid, (_, charges) in led.pods.items():
            if uid != pod.uid and self.pod_rules.get(uid, frozenset()) & mine:
                closed.update(ch.card for ch in charges)
        return sorted(closed)
