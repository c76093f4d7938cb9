"""GPU sharing by memory and by number (kind `GpuShare`, spec 2): the per-node card ledger.

Cards are the node's `volcano.sh/gpu-number` cards, each with an equal share of the node's
`volcano.sh/gpu-memory` capacity; unhealthy ones are left out. Each card maps pod UID -> (memory,
counts) so a pod is released by UID and completed pods stop counting memory (spec 2.2).

Card choice: without a policy upstream's rule (lowest index that fits; k lowest idle cards).
With `binpack`/`spread` (spec 8: upstream ignores the policy here, the seeds promise it) the
fullest/emptiest card that fits, and a node score that prefers fuller/emptier nodes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from scheduler.model.node import NodeInfo
from scheduler.model.resources import QuantityError, parse_quantity
from scheduler.plugins.deviceshare import annotations as ann
from scheduler.plugins.deviceshare.config import POLICY_BINPACK, POLICY_SPREAD
from scheduler.plugins.deviceshare.requests import GpuShareRequest

KIND = "GpuShare"
_DONE_PHASES = ("Succeeded", "Failed")


@dataclass(slots=True)
class GpuCard:
    index: int
    memory: int
    # pod uid -> (gpu-memory of the pod, still running)
    pods: dict[str, tuple[int, bool]] = field(default_factory=dict)

    @property
    def used(self) -> int:
        return sum(m for m, active in self.pods.values() if active)

    @property
    def free(self) -> int:
        return max(0, self.memory - self.used)

    @property
    def idle(self) -> bool:
        return not self.pods


@dataclass(slots=True)
class ShareFit:
    ok: bool
    reason: str = ""
    cards: list[int] = field(default_factory=list)
    score: float = 0.0


def _capacity(node: NodeInfo, name: str) -> int:
    raw = node.raw_capacity.get(name)
    if raw is None:
        return 0
    try:
        v = parse_quantity(raw)
    except QuantityError:
        return 0
    return int(v) if v > 0 else 0


class GpuShareLedger:
    __slots__ = ("cards", "node_name", "pod_cards", "total_cards")

    def __init__(
        self, node_name: str, total_memory: int, number: int, unhealthy: set[int] | None = None
    ) -> None:
        self.node_name = node_name
        per_card = total_memory // number
        bad = unhealthy or set()
        self.cards: dict[int, GpuCard] = {i: GpuCard(i, per_card) for i in range(number) if i not in bad}
        self.total_cards = number
        self.pod_cards: dict[str, list[int]] = {}

    @classmethod
    def from_node(cls, node: NodeInfo) -> GpuShareLedger | None:
        """Spec 2.1: from capacity; None without both resources or with zero cards."""
        mem, num = _capacity(node, ann.GPU_MEMORY), _capacity(node, ann.GPU_NUMBER)
        if num <= 0 or ann.GPU_MEMORY not in node.raw_capacity:
            return None
        bad, _ = ann.decode_unhealthy_ids(node.annotations.get(ann.GPU_UNHEALTHY_IDS))
        return cls(node.name, mem, num, bad)

    # -- charging ----------------------------------------------------------------------------
    def add_pod(self, uid: str, memory: int, phase: str, indices: list[int]) -> None:
        """Place a pod on the listed cards; cards that are gone (unhealthy, removed) are ignored."""
        if uid in self.pod_cards:
            return
        active = phase not in _DONE_PHASES
        placed = []
        for i in indices:
            card = self.cards.get(i)
            if card is not None and uid not in card.pods:
                card.pods[uid] = (memory, active)
                placed.append(i)
        self.pod_cards[uid] = placed

    def remove_pod(self, uid: str) -> bool:
        placed = self.pod_cards.pop(uid, None)
        if placed is None:
            return False
        for i in placed:
            self.cards[i].pods.pop(uid, None)
        return True

    # -- fit ---------------------------------------------------------------------------------
    def fit(self, req: GpuShareRequest, policy: int) -> ShareFit:
        cards = [c for c in self.cards.values() if req.allowed is None or c.index in req.allowed]
        if req.memory > 0:
            return self._fit_memory(req.memory, cards, policy)
        return self._fit_number(req.number, cards, policy)

    def _fit_memory(self, mem: int, cards: list[GpuCard], policy: int) -> ShareFit:
        fits = [c for c in cards if c.free >= mem]
        if not fits:
            return ShareFit(False, f"no enough gpu memory on node {self.node_name}")
        if policy == POLICY_BINPACK:
            card = min(fits, key=lambda c: (-c.used, c.index))
            score = 100.0 * (card.used + mem) / card.memory
        elif policy == POLICY_SPREAD:
            card = min(fits, key=lambda c: (c.used, c.index))
            score = 100.0 * (1.0 - card.used / card.memory)
        else:
            card = min(fits, key=lambda c: c.index)
            score = 0.0
        return ShareFit(True, "", [card.index], score)

    def _fit_number(self, k: int, cards: list[GpuCard], policy: int) -> ShareFit:
        idle = sorted(c.index for c in cards if c.idle)
        if len(idle) < k:
            return ShareFit(False, f"no enough gpu number on node {self.node_name}")
        score = 0.0
        n = len(self.cards)
        if n and policy in (POLICY_BINPACK, POLICY_SPREAD):
            busy = sum(1 for c in self.cards.values() if not c.idle)
            score = 100.0 * (busy + k) / n if policy == POLICY_BINPACK else 100.0 * (n - busy) / n
        return ShareFit(True, "", idle[:k], score)

    # -- views -------------------------------------------------------------------------------
    def state(self) -> tuple:
        return tuple(
            (c.index, c.memory, tuple(sorted(c.pods.items())))
            for c in sorted(self.cards.values(), key=lambda c: c.index)
        )


def gpushare_node_metrics(ledger: GpuShareLedger) -> dict[str, object]:
    """Shared-GPU usage of one node: memory used and cards busy (for the metrics module)."""
    return {
        "node": ledger.node_name,
        "memory_used": sum(c.used for c in ledger.cards.values()),
        "memory_total": sum(c.memory for c in ledger.cards.values()),
        "cards_busy": sum(1 for c in ledger.cards.values() if not c.idle),
        "cards_total": len(ledger.cards),
        "per_card_used": {c.index: c.used for c in ledger.cards.values()},
    }
