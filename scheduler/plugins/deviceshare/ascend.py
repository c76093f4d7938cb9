"""HAMi Ascend vNPU ledgers (spec 5.2): one device kind per configured chip (`commonWord`).

A node has a ledger of a chip kind when its allocatable has the chip's resource and its
`hami.io/node-register-<commonWord>` annotation is a valid JSON array of chips. Chips are shared
by memory (rounded up to a vNPU template unless the pod asks `huawei.com/vnpu-mode: hami-core`)
and AI cores, at most `count` pods per chip, and a pod never takes the same chip twice.

Card order follows the policy score of each chip (binpack: fullest memory first; spread: unused
chips first; ties by registration order, where upstream's order is random). On Ascend910 chips
that all report a `NetworkID`, a multi-chip request takes its chips from the network holding the
most fitting chips, and the node score gets a locality bonus.

Allocation and rebuild share one path, as for vGPU: the chosen chips are encoded into
`hami.io/<commonWord>-devices-allocated`, and exactly those entries are charged, so a ledger rebuilt
from pod annotations after a restart equals the live one.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from scheduler.model.node import NodeInfo
from scheduler.plugins.deviceshare import annotations as ann
from scheduler.plugins.deviceshare.config import POLICY_BINPACK, POLICY_SPREAD, DeviceConfig, VnpuChip
from scheduler.plugins.deviceshare.requests import AscendContainerRequest, AscendRequest, trim_to_template

NETWORK_WEIGHT = 10.0  # upstream Ascend910NetworkWeight
NO_DEVICE = "no enough ascend device available"


@dataclass(slots=True)
class NpuChip:
    index: int
    id: str
    count: int
    devmem: int
    devcore: int
    health: bool
    network_id: int
    used: int = 0
    used_mem: int = 0
    used_cores: int = 0


@dataclass(frozen=True, slots=True)
class NpuPick:
    chip: int
    mem: int  # memory charged and written to the annotation (template-rounded)
    cores: int
    template: str


@dataclass(slots=True)
class AscendFit:
    ok: bool
    reason: str = ""
    score: float = 0.0
    picks: list[list[NpuPick]] = field(default_factory=list)


class AscendLedger:
    """One node's chips of one HAMi Ascend kind, and which pod holds what (by UID)."""

    __slots__ = ("chip", "chips", "hami_core", "id_index", "node_name", "pods", "topology")

    def __init__(self, node_name: str, chip: VnpuChip, cards: list[ann.AscendCard], hami_core: bool) -> None:
        self.node_name = node_name
        self.chip = chip
        self.hami_core = hami_core
        self.chips = [
            NpuChip(i, c.id, c.count, c.devmem, c.devcore, c.health, c.network_id)
            for i, c in enumerate(cards)
        ]
        self.id_index = {c.id: i for i, c in enumerate(cards)}
        # upstream: topology-aware only when EVERY chip of the node reports a NetworkID
        self.topology = chip.common_word.startswith(ann.ASCEND910_PREFIX) and all(
            c.network_id >= 0 for c in cards
        )
        self.pods: dict[str, list[tuple[int, int, int]]] = {}

    @property
    def kind(self) -> str:
        return self.chip.common_word

    @classmethod
    def from_node(cls, node: NodeInfo, chip: VnpuChip, cfg: DeviceConfig) -> tuple[AscendLedger | None, str]:
        """The node's ledger of this chip kind, or (None, why); why is "" when the node simply has
        no such chip (no allocatable), so callers only report garbled registrations."""
        if node.allocatable.scalars.get(chip.resource_name, 0.0) <= 0:
            return None, ""
        value = node.annotations.get(ann.ascend_register_key(chip.common_word))
        if value is None:
            return (
                None,
                f"allocatable has {chip.resource_name} but no {ann.ascend_register_key(chip.common_word)}",
            )
        cards, why = ann.decode_ascend_register(value)
        if cards is None:
            return None, why
        hami_core = cfg.hami_vnpu_core
        flag = node.annotations.get(ann.HAMI_VNPU_CORE)
        if flag is not None:
            hami_core = flag == "true"  # the node's annotation overrides the configuration
        return cls(node.name, chip, cards, hami_core), ""

    # -- charging --------------------------------------------------------------------------------
    def add_pod(self, uid: str, segments: list[list[ann.DeviceEntry]]) -> bool:
        """Charge a pod's decoded `devices-allocated`; a pod is counted once, chips that are gone not at all."""
        if uid in self.pods:
            return False
        charges: list[tuple[int, int, int]] = []
        seen: set[int] = set()
        for seg in segments:
            for e in seg:
                i = self.id_index.get(e.uuid)
                if i is None or i in seen:
                    continue
                seen.add(i)
                c = self.chips[i]
                c.used += 1
                c.used_mem += e.mem
                c.used_cores += e.cores
                charges.append((i, e.mem, e.cores))
        self.pods[uid] = charges
        return True

    def remove_pod(self, uid: str) -> bool:
        charges = self.pods.pop(uid, None)
        if charges is None:
            return False
        for i, mem, cores in charges:
            c = self.chips[i]
            c.used -= 1
            c.used_mem -= mem
            c.used_cores -= cores
        return True

    # -- fit ---------------------------------------------------------------------------------------
    def demand(self, cr: AscendContainerRequest, c: NpuChip, hami_core: bool) -> tuple[int, str] | None:
        """(memory, template) this container takes on chip `c`; a whole-chip request takes devmem."""
        mem = cr.mem or c.devmem
        if hami_core:
            return mem, ""
        return trim_to_template(self.chip, mem)

    @staticmethod
    def chip_fits(c: NpuChip, mem: int, cores: int, hami_core: bool) -> bool:
        if c.count <= c.used or c.devmem - c.used_mem < mem:
            return False
        total = 100 if hami_core else c.devcore
        if total - c.used_cores < cores:
            return False
        if total == 100 and cores == 100 and c.used > 0:
            return False  # an exclusive request needs an idle chip
        return not (total != 0 and c.used_cores == total and cores == 0)

    @staticmethod
    def chip_score(policy: int, c: NpuChip) -> float:
        if c.devmem == 0:
            return 0.0
        if policy == POLICY_BINPACK:
            return 100.0 * c.used_mem / c.devmem
        if policy == POLICY_SPREAD:
            return 100.0 if c.used == 0 else 0.0
        return 0.0

    def _usable(self, c: NpuChip, req: AscendRequest) -> bool:
        # upstream does not look at health (kubelet then rejects the pod); we never pick a sick chip
        if not c.health:
            return False
        if req.use_uuids and c.id not in req.use_uuids:
            return False
        return c.id not in req.nouse_uuids

    def fit(self, req: AscendRequest, policy: int) -> AscendFit:
        """Whether `req` fits, the node's device score and the chips per container (no side effects)."""
        if req.hami_core and not self.hami_core:
            return AscendFit(
                False, f"node does not support hami-core vNPU ({ann.HAMI_VNPU_CORE} is not true)"
            )
        if req.total_chips > len(self.chips):
            return AscendFit(
                False, f"{NO_DEVICE}: {req.total_chips} chips asked, the node has {len(self.chips)}"
            )
        order = sorted(
            (c for c in self.chips if self._usable(c, req)),
            key=lambda c: (-self.chip_score(policy, c), c.index),
        )
        taken: set[int] = set()
        picks: list[list[NpuPick]] = []
        for cr in req.containers:
            chosen: list[NpuPick] = []
            for c in order:
                if c.index in taken:
                    continue
                d = self.demand(cr, c, req.hami_core)
                if d is None or not self.chip_fits(c, d[0], cr.cores, req.hami_core):
                    continue
                chosen.append(NpuPick(c.index, d[0], cr.cores, d[1]))
                if len(chosen) >= cr.nums and not self.topology:
                    break
            if len(chosen) < cr.nums:
                return AscendFit(False, f"{NO_DEVICE} on node {self.node_name}")
            if self.topology:
                chosen = self._by_network(chosen, cr.nums)
            taken.update(p.chip for p in chosen)
            picks.append(chosen)
        return AscendFit(True, "", self._score(policy, picks), picks)

    def _by_network(self, fitting: list[NpuPick], nums: int) -> list[NpuPick]:
        """`nums` chips from the networks holding the most fitting chips (ties: lower network id)."""
        groups: dict[int, list[NpuPick]] = {}
        for p in fitting:
            groups.setdefault(self.chips[p.chip].network_id, []).append(p)
        out: list[NpuPick] = []
        for _, members in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])):
            for p in members:
                out.append(p)
                if len(out) == nums:
                    return out
        return out

    def _score(self, policy: int, picks: list[list[NpuPick]]) -> float:
        """Policy score of the chosen chips before charging, plus the Ascend910 network bonus.

        Upstream scores only the first chip of each container; we score every chosen chip, so a
        multi-chip pod prefers nodes where all its chips suit the policy.
        """
        chosen = [self.chips[p.chip] for seg in picks for p in seg]
        score = sum(self.chip_score(policy, c) for c in chosen)
        if self.topology and chosen:
            counts: dict[int, int] = {}
            for c in chosen:
                counts[c.network_id] = counts.get(c.network_id, 0) + 1
            score += NETWORK_WEIGHT * max(counts.values()) / len(chosen)
        return score

    # -- annotations -------------------------------------------------------------------------------
    def segments(self, picks: list[list[NpuPick]]) -> list[list[ann.DeviceEntry]]:
        return [
            [ann.DeviceEntry(self.chips[p.chip].id, p.mem, p.cores, self.kind) for p in seg] for seg in picks
        ]

    def annotations(self, req: AscendRequest, picks: list[list[NpuPick]], now: float) -> dict[str, str]:
        """The pod annotations of spec 5.2, as upstream writes them (HAMi's generic encoding,
        `huawei.com/<commonWord>` runtime info as Go's json.Marshal with omitempty writes it)."""
        word = self.kind
        encoded = ann.encode_generic_devices(word, self.segments(picks))
        runtime: list[dict[str, Any]] = []
        for seg in picks:
            for p in seg:
                info: dict[str, Any] = {"UUID": self.chips[p.chip].id}
                if req.hami_core:
                    if p.mem:
                        info["memory"] = p.mem
                    if p.cores:
                        info["core"] = p.cores
                elif p.template:
                    info["temp"] = p.template
                runtime.append(info)
        secs = str(int(now))
        return {
            ann.ascend_to_allocate_key(word): encoded,
            ann.ascend_allocated_key(word): encoded,
            ann.ASCEND_PREDICATE_TIME: secs,
            ann.ascend_huawei_key(word): json.dumps(runtime, separators=(",", ":")),
            ann.HAMI_ASSIGNED_NODE: self.node_name,
            ann.HAMI_ASSIGNED_TIME: secs,
            ann.HAMI_BIND_PHASE: ann.BIND_PHASE_ALLOCATING,
            ann.HAMI_BIND_TIME: secs,
        }

    # -- views -------------------------------------------------------------------------------------
    def state(self) -> tuple:
        """Everything that decides future fits, comparable between a live and a rebuilt ledger."""
        return (
            tuple((c.used, c.used_mem, c.used_cores) for c in self.chips),
            tuple(sorted((uid, tuple(ch)) for uid, ch in self.pods.items())),
        )


def ascend_card_metrics(ledger: AscendLedger) -> list[dict[str, object]]:
    """Per-chip gauges of one node and chip kind, the Ascend twin of `vgpu_card_metrics`."""
    return [
        {
            "node": ledger.node_name,
            "kind": ledger.kind,
            "index": c.index,
            "uuid": c.id,
            "memory_allocated": c.used_mem,
            "memory_limit": c.devmem,
            "cores_allocated": c.used_cores,
            "cores_limit": c.devcore,
            "shared_pods": c.used,
        }
        for c in ledger.chips
    ]
