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
from array import array
from dataclasses import dataclass, field
from typing import Any

from scheduler.model.node import NodeInfo
from scheduler.plugins.deviceshare import annotations as ann
from scheduler.plugins.deviceshare.config import POLICY_BINPACK, POLICY_SPREAD, DeviceConfig, VnpuChip
from scheduler.plugins.deviceshare.hotpath import fit_impl, npu_fit_impl
from scheduler.plugins.deviceshare.npufit import (
    FIT,
    HAMI_CORE,
    NEEDS_PYTHON,
    NO_HAMI_CORE,
    NOT_FITTED,
    TOO_MANY_CHIPS,
    TOPOLOGY,
)
from scheduler.plugins.deviceshare.requests import AscendContainerRequest, AscendRequest, trim_to_template

NETWORK_WEIGHT = 10.0  # upstream Ascend910NetworkWeight
NO_DEVICE = "no enough ascend device available"
_NO_HAMI_CORE = f"node does not support hami-core vNPU ({ann.HAMI_VNPU_CORE} is not true)"


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


class AscendTable:
    """Flat per-chip state of all nodes of one HAMi Ascend chip kind (the layout `npufit` reads).

    The ledgers' chips stay the readable state; every charge is written to both (`_charge`), so a
    whole-fleet scan is one compiled call instead of a Python fit per node.
    """

    def __init__(self, chip: VnpuChip) -> None:
        self.templates = array("q", [t.memory for t in chip.templates])
        self.mem_allocatable = chip.memory_allocatable
        self.mem_capacity = chip.memory_capacity
        self.starts = array("q", [0])
        self.node_flags = array("q")
        self.count = array("q")
        self.devmem = array("q")
        self.devcore = array("q")
        self.used = array("q")
        self.used_mem = array("q")
        self.used_cores = array("q")
        self.healthy = array("q")
        self._mask = array("q")
        self.out_code = array("q")
        self.out_score = array("d")
        self.ledgers: list[AscendLedger] = []
        # the fit implementation (compiled or Python twin); the bench swaps it to compare
        self.impl = npu_fit_impl

    def add_node(self, ledger: AscendLedger) -> int:
        chips, top = ledger.chips, ann.REGISTER_INT_MAX
        # checked before any append: a half-added node would misalign every array
        for c in chips:
            if not (0 <= c.count <= top and 0 <= c.devmem <= top and 0 <= c.devcore <= top):
                raise ValueError(
                    f"chip {c.id[:40]!r}: count {c.count}, devmem {c.devmem} or devcore {c.devcore} "
                    f"is not within 0..{top}"
                )
        idx = len(self.ledgers)
        self.ledgers.append(ledger)
        # a row per array (a node's chips are read at every session open: 8 chips took 56 appends)
        self.count.extend([c.count for c in chips])
        self.devmem.extend([c.devmem for c in chips])
        self.devcore.extend([c.devcore for c in chips])
        self.used.extend([c.used for c in chips])
        self.used_mem.extend([c.used_mem for c in chips])
        self.used_cores.extend([c.used_cores for c in chips])
        self.healthy.extend([1 if c.health else 0 for c in chips])
        self.starts.append(len(self.count))
        self.node_flags.append((TOPOLOGY if ledger.topology else 0) | (HAMI_CORE if ledger.hami_core else 0))
        self.out_code.append(0)
        self.out_score.append(0.0)
        return idx

    def mask_for(self, req: AscendRequest, lo: int, hi: int) -> array:
        """Per-chip usability for `req` over nodes lo..hi-1 (other entries are stale)."""
        if not (req.use_uuids or req.nouse_uuids):
            return self.healthy
        m = self._mask
        if len(m) != len(self.count):
            m = self._mask = array("q", bytes(8 * len(self.count)))
        for node in range(lo, hi):
            led = self.ledgers[node]
            for c in led.chips:
                m[led.base + c.index] = 1 if led._usable(c, req) else 0
        return m

    def run(self, req: AscendRequest, policy: int, lo: int, hi: int, chips: array) -> None:
        """The compiled (or twin) fit of nodes lo..hi-1 into out_code, out_score and `chips`."""
        self.impl.fit_nodes(
            self.starts, self.node_flags, self.count, self.devmem, self.devcore, self.used, self.used_mem,
            self.used_cores, self.mask_for(req, lo, hi), _flat(req), 1 if req.hami_core else 0, policy,
            self.templates, self.mem_allocatable, self.mem_capacity, lo, hi, self.out_code, self.out_score, chips,
        )  # fmt: skip

    def fit_all(self, req: AscendRequest, policy: int) -> tuple[array, array]:
        """(codes, scores) of every node for `req`: the batch form of `AscendLedger.fit`."""
        n = len(self.ledgers)
        if not _all_ask_chips(req):
            for i, led in enumerate(self.ledgers):
                f = led.fit(req, policy)
                self.out_code[i], self.out_score[i] = (FIT if f.ok else NOT_FITTED), f.score
            return self.out_code, self.out_score
        self.run(req, policy, 0, n, array("q", bytes(8 * max(1, n * req.total_chips))))
        for i in range(n):
            if self.out_code[i] == NEEDS_PYTHON:
                f = self.ledgers[i].fit(req, policy)
                self.out_code[i], self.out_score[i] = (FIT if f.ok else NOT_FITTED), f.score
        return self.out_code, self.out_score

    def best_node(self, req: AscendRequest, policy: int) -> AscendLedger | None:
        """The fitting node with the highest device score (ties: first), from one scan of all chips."""
        codes, scores = self.fit_all(req, policy)
        i = fit_impl.best_node(codes, scores, 0, len(self.ledgers))
        return self.ledgers[i] if i >= 0 else None


# registration annotation -> its decoded chips (or why none): a node's registration rarely changes,
# and every session rebuilds every ledger from it (as vgpu._REGISTRATIONS does for vGPU cards)
_REGISTRATIONS: dict[str, tuple[tuple[ann.AscendCard, ...] | None, str]] = {}
_REGISTRATIONS_LIMIT = 65536


def _registered_chips(value: str) -> tuple[list[ann.AscendCard] | None, str]:
    got = _REGISTRATIONS.get(value)
    if got is None:
        cards, why = ann.decode_ascend_register(value)
        if len(_REGISTRATIONS) >= _REGISTRATIONS_LIMIT:
            _REGISTRATIONS.clear()  # registrations of nodes long gone, or churning: start again
        got = _REGISTRATIONS[value] = (None if cards is None else tuple(cards), why)
    cards_t, why = got
    return (None if cards_t is None else list(cards_t)), why


# id(containers) -> (the containers, their flat form, whether each asks a chip, the chips asked):
# read by every fit of a node, and keying a cache by the request itself hashed and compared the
# whole frozen request each time (~2 us a fit). The entry keeps the tuple alive (its id is not
# reused while here); the array is only read.
_SHAPES: dict[int, tuple[tuple[AscendContainerRequest, ...], array, bool, int]] = {}
_SHAPES_LIMIT = 4096


def _shape(req: AscendRequest) -> tuple[array, bool, int]:
    cs = req.containers
    got = _SHAPES.get(id(cs))
    if got is None or got[0] is not cs:
        out = array("q")
        for c in cs:
            out.extend((c.nums, c.mem, c.cores))
        if len(_SHAPES) >= _SHAPES_LIMIT:
            _SHAPES.clear()
        # the compiled scan stops a container once it holds `nums` chips; a container asking none
        # is left to the Python fit, which keeps its historical answer (the parser never builds one)
        got = _SHAPES[id(cs)] = (cs, out, all(c.nums > 0 for c in cs), sum(c.nums for c in cs))
    return got[1], got[2], got[3]


def _flat(req: AscendRequest) -> array:
    return _shape(req)[0]


def _all_ask_chips(req: AscendRequest) -> bool:
    return _shape(req)[1]


class AscendLedger:
    """One node's chips of one HAMi Ascend kind, and which pod holds what (by UID)."""

    __slots__ = (
        "base",
        "chip",
        "chips",
        "hami_core",
        "id_index",
        "idx",
        "memo",
        "node_name",
        "pods",
        "table",
        "topology",
        "version",
    )

    def __init__(
        self,
        node_name: str,
        chip: VnpuChip,
        cards: list[ann.AscendCard],
        hami_core: bool,
        table: AscendTable | None = None,
    ) -> None:
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
        self.table = table if table is not None else AscendTable(chip)
        self.idx = self.table.add_node(self)
        self.base = self.table.starts[self.idx]
        # bumped by every charge: a fit memoised at an older version is not reused
        self.version = 0
        # the last fit: the predicate, the node order and the allocation ask the same pod in a row
        self.memo: tuple[AscendRequest, int, int, AscendFit] | None = None

    @property
    def kind(self) -> str:
        return self.chip.common_word

    @classmethod
    def from_node(
        cls, node: NodeInfo, chip: VnpuChip, cfg: DeviceConfig, table: AscendTable | None = None
    ) -> tuple[AscendLedger | None, str]:
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
        cards, why = _registered_chips(value)
        if cards is None:
            return None, why
        hami_core = cfg.hami_vnpu_core
        flag = node.annotations.get(ann.HAMI_VNPU_CORE)
        if flag is not None:
            hami_core = flag == "true"  # the node's annotation overrides the configuration
        try:
            return cls(node.name, chip, cards, hami_core, table), ""
        except ValueError as exc:  # numbers no device plugin writes (HAMi holds them as int32)
            return None, f"Ascend registration: {exc}"

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
                self._charge(i, 1, e.mem, e.cores)
                charges.append((i, e.mem, e.cores))
        self.pods[uid] = charges
        return True

    def remove_pod(self, uid: str) -> bool:
        charges = self.pods.pop(uid, None)
        if charges is None:
            return False
        for i, mem, cores in charges:
            self._charge(i, -1, -mem, -cores)
        return True

    def _charge(self, i: int, pods: int, mem: int, cores: int) -> None:
        c, t, g = self.chips[i], self.table, self.base + i
        self.version += 1
        c.used += pods
        c.used_mem += mem
        c.used_cores += cores
        t.used[g] = c.used
        t.used_mem[g] = c.used_mem
        t.used_cores[g] = c.used_cores

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
        """Whether `req` fits, the node's device score and the chips per container (no side effects).

        Nodes without network topology take the compiled fit (`npufit`); the rest, and requests
        with a container asking no chip, the Python one below (the reference the tests compare to).
        """
        memo = self.memo
        if memo is not None and memo[0] is req and memo[1] == policy and memo[2] == self.version:
            return memo[3]
        f = self._fit(req, policy)
        self.memo = (req, policy, self.version, f)
        return f

    def _fit(self, req: AscendRequest, policy: int) -> AscendFit:
        _, all_ask, total = _shape(req)
        if self.topology or not all_ask:
            return self.fit_in_python(req, policy)
        t, i = self.table, self.idx
        chips = array("q", bytes(8 * max(1, total)))
        t.run(req, policy, i, i + 1, chips)
        code = t.out_code[i]
        if code == NO_HAMI_CORE:
            return AscendFit(False, _NO_HAMI_CORE)
        if code == TOO_MANY_CHIPS:
            return AscendFit(
                False, f"{NO_DEVICE}: {req.total_chips} chips asked, the node has {len(self.chips)}"
            )
        if code != FIT:
            return AscendFit(False, f"{NO_DEVICE} on node {self.node_name}")
        picks: list[list[NpuPick]] = []
        k = 0
        for cr in req.containers:
            seg = []
            for _ in range(cr.nums):
                c = self.chips[chips[k]]
                k += 1
                d = self.demand(cr, c, req.hami_core)
                assert d is not None  # the compiled fit only chooses chips the request fits on
                seg.append(NpuPick(c.index, d[0], cr.cores, d[1]))
            picks.append(seg)
        return AscendFit(True, "", t.out_score[i], picks)

    def fit_in_python(self, req: AscendRequest, policy: int) -> AscendFit:
        """The fit in Python: the only one for Ascend910 network placement."""
        if req.hami_core and not self.hami_core:
            return AscendFit(False, _NO_HAMI_CORE)
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

    def annotations(
        self,
        req: AscendRequest,
        picks: list[list[NpuPick]],
        now: float,
        segments: list[list[ann.DeviceEntry]] | None = None,
    ) -> dict[str, str]:
        """The pod annotations of spec 5.2, as upstream writes them (HAMi's generic encoding,
        `huawei.com/<commonWord>` runtime info as Go's json.Marshal with omitempty writes it).
        `segments`, when given, are segments(picks), already built for the charge."""
        word = self.kind
        encoded = ann.encode_generic_devices(word, self.segments(picks) if segments is None else segments)
        chips = self.chips
        runtime = tuple((chips[p.chip].id, p.mem, p.cores, p.template) for seg in picks for p in seg)
        secs = str(int(now))
        return {
            ann.ascend_to_allocate_key(word): encoded,
            ann.ascend_allocated_key(word): encoded,
            ann.ASCEND_PREDICATE_TIME: secs,
            ann.ascend_huawei_key(word): _runtime_json(req.hami_core, runtime),
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


# (hami-core, the chips' (id, memory, cores, template)) -> their runtime JSON: pods of one shape
# placed on the chips of one node write the same text, and encoding it was a quarter of a commit
_RUNTIME: dict[tuple[bool, tuple[tuple[str, int, int, str], ...]], str] = {}
_RUNTIME_LIMIT = 4096


def _runtime_json(hami_core: bool, chips: tuple[tuple[str, int, int, str], ...]) -> str:
    key = (hami_core, chips)
    got = _RUNTIME.get(key)
    if got is not None:
        return got
    runtime: list[dict[str, Any]] = []
    for uuid, mem, cores, template in chips:
        info: dict[str, Any] = {"UUID": uuid}
        if hami_core:
            if mem:
                info["memory"] = mem
            if cores:
                info["core"] = cores
        elif template:
            info["temp"] = template
        runtime.append(info)
    if len(_RUNTIME) >= _RUNTIME_LIMIT:
        _RUNTIME.clear()
    got = _RUNTIME[key] = json.dumps(runtime, separators=(",", ":"))
    return got


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
