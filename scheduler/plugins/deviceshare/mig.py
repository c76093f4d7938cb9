"""MIG slices on vGPU cards (spec 4.2-4.3): which geometry group a card is cut into, which slices
are in use, and the Python fit for nodes in MIG mode (the compiled hot path covers hami-core only).

A card starts unpartitioned in every snapshot (`group_index` -1). The first slice picks the first
configured group where a profile is large enough; afterwards only that group, and only profiles
already in use on the card, are offered (an upstream quirk we keep: the device plugin expects
exactly that partition). Slice ids are `<uuid>[<group>-<position>]`, the position counted across
the profiles of the group.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from scheduler.plugins.deviceshare import annotations as ann
from scheduler.plugins.deviceshare.config import MigGroup
from scheduler.plugins.deviceshare.fit import (
    FIT,
    NOT_FITTED,
    TOO_MANY_CARDS,
    Pick,
    card_order,
    card_refuses,
    card_score,
)

if TYPE_CHECKING:
    from scheduler.plugins.deviceshare.requests import VgpuRequest
    from scheduler.plugins.deviceshare.vgpu import VgpuLedger


@dataclass(slots=True)
class MigCard:
    groups: tuple[MigGroup, ...]
    group_index: int = -1
    # profile index -> used instances, in the order profiles came into use (the usage list)
    used: dict[int, set[int]] = field(default_factory=dict)

    def clone(self) -> MigCard:
        return MigCard(self.groups, self.group_index, {k: set(v) for k, v in self.used.items()})

    def pick(self, request_mem: int) -> tuple[int, int, int, int] | None:
        """(group index, profile index, instance, slice memory) of the slice to use, or None."""
        if self.group_index >= 0:
            candidates = [(self.group_index, self.used)]
        else:
            candidates = [(gi, {}) for gi in range(len(self.groups))]
        for gi, used in candidates:
            group = self.groups[gi]
            by_memory = sorted(range(len(group.profiles)), key=lambda p: group.profiles[p].memory)
            for pi in by_memory:
                prof = group.profiles[pi]
                if prof.memory < request_mem:
                    continue
                if not used:
                    return gi, pi, 0, prof.memory
                taken = used.get(pi)
                if taken is not None and len(taken) < prof.count:
                    inst = next(i for i in range(prof.count) if i not in taken)
                    return gi, pi, inst, prof.memory
        return None

    def mark(self, gi: int, pi: int, inst: int) -> bool:
        if self.group_index >= 0 and self.group_index != gi:
            return False  # a card is cut into one group at a time
        taken = self.used.setdefault(pi, set())
        if inst in taken:
            return False
        self.group_index = gi
        taken.add(inst)
        return True

    def unmark(self, pi: int, inst: int) -> None:
        taken = self.used.get(pi)
        if taken is None:
            return
        taken.discard(inst)
        if not taken:
            del self.used[pi]
        if not self.used:
            # Upstream keeps the group until the next snapshot; an empty card is unpartitioned
            # again here so the live ledger equals one rebuilt from annotations.
            self.group_index = -1

    def locate(self, slice_id: str) -> tuple[int, int, int] | None:
        """(group index, profile index, instance) of a slice id, None when not of this card's geometry."""
        decoded = ann.decode_mig_id(slice_id)
        if decoded is None:
            return None
        _, group, pos = decoded
        for gi, g in enumerate(self.groups):
            if g.name == group:
                loc = g.locate(pos)
                return None if loc is None else (gi, loc[0], loc[1])
        return None

    def slice_id(self, uuid: str, gi: int, pi: int, inst: int) -> str:
        g = self.groups[gi]
        return ann.encode_mig_id(uuid, g.name, g.base_of(pi) + inst)


def fit_mig_node(
    ledger: VgpuLedger, req: VgpuRequest, policy: int, usable: list[bool], factor: int
) -> tuple[int, float, list[list[Pick]]]:
    """Spec 3.4 with rule 9 (a slice must fit) on a working copy; (code, score, picks)."""
    n = ledger.n
    t = ledger.table
    base = ledger.base
    count = [t.count[base + c] for c in range(n)]
    devmem = [t.devmem[base + c] for c in range(n)]
    un = [t.used_num[base + c] for c in range(n)]
    um = [t.used_mem[base + c] for c in range(n)]
    uc = [t.used_cores[base + c] for c in range(n)]
    migs = [m.clone() if m is not None else None for m in ledger.mig]
    score = 0.0
    picks: list[list[Pick]] = []
    for cr in req.containers:
        if cr.nums > n:
            return TOO_MANY_CARDS, 0.0, []
        chosen: list[Pick] = []
        taken: set[int] = set()
        for c in card_order(policy, n, un, um):
            if len(chosen) == cr.nums:
                break
            if not usable[c] or c in taken:
                continue
            demand = cr.demand(devmem[c])
            if card_refuses(count[c], devmem[c], un[c], um[c], uc[c], demand, cr.cores):
                continue
            mc = migs[c]
            charge, dev_id = demand, ledger.uuids[c]
            if mc is not None:
                slot = mc.pick(demand * factor if factor > 1 else demand)
                if slot is None:
                    continue
                gi, pi, inst, slice_mem = slot
                mc.mark(gi, pi, inst)
                charge = slice_mem // factor if factor > 1 else slice_mem
                dev_id = mc.slice_id(ledger.uuids[c], gi, pi, inst)
            score += card_score(policy, count[c], devmem[c], un[c], um[c], um[c] + charge)
            un[c] += 1
            um[c] += charge
            uc[c] += cr.cores
            taken.add(c)
            chosen.append(Pick(c, dev_id, demand, cr.cores))
        if len(chosen) < cr.nums:
            return NOT_FITTED, 0.0, []
        picks.append(chosen)
    return FIT, score, picks
