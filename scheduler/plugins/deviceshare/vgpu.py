"""HAMi vGPU ledgers (kind `hamivgpu`, spec 3-4): hami-core, MPS and MIG cards, filters, scoring.

Card state of every vGPU node of a session lives in one `VgpuTable` of flat int64 arrays, so the
hot path (`fit_nodes`, compiled or Python) can scan all cards of all candidate nodes in one call.
A `VgpuLedger` is one node's view of that table plus what arrays cannot hold: card UUIDs and
types, MIG partitions, and which pod holds what (so a pod is released by UID, and the ledger
rebuilt from pod annotations equals the live one).

Allocation and rebuild share one path: an allocation is encoded into the annotation entries, and
those entries are charged exactly as a pod found on the node at snapshot time would be.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from itertools import accumulate
from operator import attrgetter

from scheduler.model.node import NodeInfo
from scheduler.model.objects import TaskInfo
from scheduler.plugins.deviceshare import annotations as ann
from scheduler.plugins.deviceshare.config import DeviceConfig
from scheduler.plugins.deviceshare.fit import FIT, NEEDS_PYTHON, NOT_FITTED, TOO_MANY_CARDS, Pick
from scheduler.plugins.deviceshare.hotpath import fit_impl, register_impl
from scheduler.plugins.deviceshare.mig import MigCard, fit_mig_node
from scheduler.plugins.deviceshare.requests import VgpuContainerRequest, VgpuRequest

KIND = "hamivgpu"
# read per charge: module constants, not attributes of `ann`
_TOP = ann.REGISTER_INT_MAX
_REQUEST_TYPE = ann.VGPU_REQUEST_TYPE
_NODE_RESOURCES = (ann.VGPU_NUMBER, ann.VGPU_CORES, ann.VGPU_MEMORY)


@dataclass(slots=True)
class FitResult:
    ok: bool
    reason: str = ""
    score: float = 0.0
    picks: list[list[Pick]] = field(default_factory=list)


@dataclass(slots=True)
class _Charge:
    card: int
    mem: int  # memory charged (slice memory on MIG cards)
    cores: int
    mig_slot: tuple[int, int] | None  # (profile index, instance) on MIG cards


class VgpuTable:
    """Flat per-card state of all vGPU nodes of a session (the layout `fit_nodes` reads)."""

    def __init__(self) -> None:
        self.starts = array("q", [0])
        self.node_flags = array("q")
        self.count = array("q")
        self.devmem = array("q")
        self.used_num = array("q")
        self.used_mem = array("q")
        self.used_cores = array("q")
        # 1 for healthy NVIDIA cards not listed as unhealthy: the mask for pods without card filters
        self.static_ok = array("q")
        self.ledgers: list[VgpuLedger] = []
        # pod-group key -> global card index -> pods of that group holding the card
        self.group_cards: dict[str, dict[int, int]] = {}
        self._mask = array("q")
        self.out_code = array("q")
        self.out_score = array("d")
        self.python_nodes = 0  # MIG nodes: fitted in Python after the hot path
        # the fit implementation (compiled or Python twin); the bench swaps it to compare
        self.impl = fit_impl
        # per node (ledger index): bumped on every change of its charges or cap; a scan's answer
        # for a node is current while the version it was fitted at is this one
        self.node_ver = array("q")
        # the card lists of the rows queue_row took and flush has not written yet, in node order
        self._queued: list[CardLists] = []
        # cards of every row, the queued ones included (where the next row starts)
        self._end = 0

    @property
    def n_cards(self) -> int:
        return len(self.count)

    def add_node(
        self,
        ledger: VgpuLedger,
        cards: Sequence[ann.RegisteredCard],
        ok: list[bool],
        mig: bool,
        derived: CardLists | None = None,
    ) -> int:
        d = derived if derived is not None else CardLists(cards)
        if not d.in_range:  # checked before any append: a half-added node would misalign every array
            c = next(
                c
                for c in cards
                if not (0 <= c.count <= ann.REGISTER_INT_MAX and 0 <= c.devmem <= ann.REGISTER_INT_MAX)
            )
            raise ValueError(f"card {c.uuid!r}: count {c.count} or devmem {c.devmem} out of range")
        if len(ok) != len(cards):
            raise ValueError(f"{len(ok)} health flags for {len(cards)} cards")
        # the usual node (no unhealthy card listed) has its cards' own flags: their row, built once
        return self.add_row(
            ledger, d, d.nvidia_ok_row if ok == d.nvidia_ok else array("q", map(int, ok)), mig
        )

    def add_row(self, ledger: VgpuLedger, d: CardLists, ok_row: array, mig: bool) -> int:
        """add_node once its cards are known to be in range: their rows appended, with `ok_row`
        as their health flags (one per card)."""
        if self._queued:  # rows go in node order: the queued ones first
            self.flush()
        idx = len(self.ledgers)
        self.ledgers.append(ledger)
        # whole rows at once (array.extend from an array copies memory)
        self.count.extend(d.count)
        self.devmem.extend(d.devmem)
        zeros = d.zeros
        self.used_num.extend(zeros)
        self.used_mem.extend(zeros)
        self.used_cores.extend(zeros)
        self.static_ok.extend(ok_row)
        self.starts.append(len(self.count))
        if mig:
            self.node_flags.append(1)
            self.python_nodes += 1
        else:
            self.node_flags.append(0)
        self.out_code.append(0)
        self.out_score.append(0.0)
        self.node_ver.append(0)
        self._end = len(self.count)
        return idx

    def queue_row(self, ledger: VgpuLedger, d: CardLists) -> None:
        """add_row(ledger, d, d.nvidia_ok_row, False) with the arrays written at the next flush:
        the ledger's position and first card are set now. A session opens with a row per vGPU
        node, and a dozen array appends per node were most of a ledger's construction; flush
        writes the queued rows in one join per array. Nothing may read the arrays in between."""
        ledger.idx = len(self.ledgers)
        ledger.base = self._end
        self._end += d.n
        self.ledgers.append(ledger)
        self._queued.append(d)

    def flush(self) -> None:
        """Write the rows queue_row took (the arrays as add_row would have left them)."""
        q = self._queued
        if not q:
            return
        self._queued = []
        zeros = bytes(8 * (self._end - len(self.count)))
        self.count.frombytes(b"".join(map(_count_bytes, q)))
        self.devmem.frombytes(b"".join(map(_devmem_bytes, q)))
        self.used_num.frombytes(zeros)
        self.used_mem.frombytes(zeros)
        self.used_cores.frombytes(zeros)
        self.static_ok.frombytes(b"".join(map(_ok_bytes, q)))
        ends = accumulate(map(_n_cards, q), initial=self.starts[-1])
        next(ends)  # the first row's start, already the last entry
        self.starts.extend(ends)
        per_node = bytes(8 * len(q))  # 0 and 0.0 alike
        self.node_flags.frombytes(per_node)
        self.out_code.frombytes(per_node)
        self.out_score.frombytes(per_node)
        self.node_ver.frombytes(per_node)

    def mask_for(self, req: VgpuRequest, lo: int, hi: int) -> array:
        """Per-card usability for `req` over nodes lo..hi-1 (other entries are stale)."""
        if not req.has_card_filters:
            return self.static_ok
        m = self._mask
        if len(m) != len(self.count):
            m = self._mask = array("q", bytes(8 * len(self.count)))
        a, b = self.starts[lo], self.starts[hi]
        m[a:b] = self.static_ok[a:b]
        held = self.group_cards.get(req.spread_group) if req.spread_group else None
        for node in range(lo, hi):
            led = self.ledgers[node]
            for c in range(led.n):
                g = led.base + c
                if m[g] and not led.card_allows(c, req, held is not None and held.get(g, 0) > 0):
                    m[g] = 0
        return m

    def touch(self, idx: int) -> None:
        """Node `idx` changed its charges (or its cap): scans of the table are out of date there."""
        self.node_ver[idx] += 1

    def fit_all(self, req: VgpuRequest, policy: int) -> tuple[array, array]:
        """(codes, scores) of every node for `req`: the batch form of `VgpuLedger.fit`."""
        return self.fit_range(req, policy, 0, len(self.ledgers))

    def fit_range(
        self, req: VgpuRequest, policy: int, lo: int, hi: int, cards: array | None = None
    ) -> tuple[array, array]:
        """`fit_all` for nodes lo..hi-1 only: their entries of (codes, scores) are written, and
        into `cards` (when given, room for every node's) node i's chosen cards from (i - lo) * T."""
        mask = self.mask_for(req, lo, hi)
        flat = _flat(req)
        if cards is None:
            cards = array("q", bytes(8 * max(1, (hi - lo) * req.total_cards)))
        self.impl.fit_nodes(
            self.starts, self.node_flags, self.count, self.devmem, self.used_num, self.used_mem,
            self.used_cores, mask, flat, policy, lo, hi, self.out_code, self.out_score, cards,
        )  # fmt: skip
        if self.python_nodes or req.mode:
            for i in range(lo, hi):
                led = self.ledgers[i]
                if self.out_code[i] == NEEDS_PYTHON or (req.mode and req.mode != led.mode):
                    r = led.fit(req, policy)
                    self.out_code[i] = FIT if r.ok else NOT_FITTED
                    self.out_score[i] = r.score
        return self.out_code, self.out_score

    def refit(
        self, req: VgpuRequest, policy: int, nodes: list[int], codes: array, scores: array, cards: array
    ) -> None:
        """Write the answers of `fit_all` for the listed nodes only into `codes`, `scores` and
        `cards` (a scan's copies): one compiled call for all of them, then the nodes the hot path
        leaves to Python, as fit_range does."""
        if req.has_card_filters:
            for i in nodes:  # mask_for fills a range; the listed nodes are few and scattered
                self.mask_for(req, i, i + 1)
        mask = self.static_ok if not req.has_card_filters else self._mask
        self.impl.fit_listed(
            self.starts, self.node_flags, self.count, self.devmem, self.used_num, self.used_mem,
            self.used_cores, mask, _flat(req), policy, array("q", nodes), codes, scores, cards,
        )  # fmt: skip
        if self.python_nodes or req.mode:
            for i in nodes:
                led = self.ledgers[i]
                if codes[i] == NEEDS_PYTHON or (req.mode and req.mode != led.mode):
                    r = led.fit(req, policy)
                    codes[i] = FIT if r.ok else NOT_FITTED
                    scores[i] = r.score

    def scan(self, req: VgpuRequest, policy: int) -> tuple[array, array]:
        """Copies of (codes, scores) of every node for `req`, from one whole-table scan."""
        codes, scores = self.fit_all(req, policy)
        return array("q", codes), array("d", scores)

    def scan_cards(self, req: VgpuRequest, policy: int, cards: array) -> tuple[array, array]:
        """`scan`, every node's chosen cards written into `cards` (node i's from i * T)."""
        codes, scores = self.fit_range(req, policy, 0, len(self.ledgers), cards)
        return array("q", codes), array("d", scores)

    def best_node(self, req: VgpuRequest, policy: int) -> VgpuLedger | None:
        """The fitting node with the highest device score (ties: first), from one scan of all cards."""
        codes, scores = self.fit_all(req, policy)
        i = self.impl.best_node(codes, scores, 0, len(self.ledgers))
        return self.ledgers[i] if i >= 0 else None


@dataclass(slots=True)
class _Scan:
    table: VgpuTable
    codes: array
    scores: array
    # node i's chosen cards at cards[i * total ...], valid where codes[i] is FIT and the fit was the
    # compiled one (node_flags[i] == 0, no required mode)
    cards: array
    total: int
    # node i's entries are current while fitted[i] == table.node_ver[i] (the version they were fitted at)
    fitted: array
    # no node the hot path leaves to Python, no card filter, no required mode: the compiled
    # refresh (`refresh_nodes`) alone brings the answers up to date
    plain: bool
    flat: array  # the request's containers as the fit reads them (_flat)
    # refresh_nodes' arguments after the nodes and their positions: the table's arrays and this
    # scan's, which are only ever changed in place (read once, not per call)
    refresh: tuple = ()


def _scan_key(req: VgpuRequest, policy: int, containers: tuple | None = None) -> tuple:
    """What a node's fit and score depend on: requests with equal keys share their scans (the pod
    group key only names who holds a charge; pod-group spread is in through `spread_group`).
    `containers`, when known, is the containers' part (_containers_key)."""
    return (
        _containers_key(req) if containers is None else containers,
        req.mode,
        req.use_uuids,
        req.nouse_uuids,
        req.use_types,
        req.nouse_types,
        req.spread_group,
        policy,
    )


def _containers_key(req: VgpuRequest) -> tuple:
    return tuple((c.nums, c.mem, c.pct, c.cores) for c in req.containers)


class ScanCache:
    """Per-node vGPU answers read from one whole-table scan per request shape.

    The predicate and node-order hooks ask node by node; one compiled scan of every card of every
    node answers all of them at once. Pods asking the same (one-pod jobs of a few sizes, the pods
    of a job) share it, and after a placement only the asked nodes whose charges changed since
    are scanned again (`VgpuTable.node_ver`), so a pod usually costs a few one-node fits instead
    of a whole-table scan. Answers (fit, score, reason) are those of `VgpuLedger.fit` for requests
    without a required mode.
    """

    __slots__ = ("_by_req", "_keys", "_last", "_scans")

    # scans kept per session: each holds two arrays of one entry per vGPU node
    LIMIT = 64

    def __init__(self) -> None:
        self._scans: dict[tuple, _Scan] = {}
        # id(containers) -> (containers, their part of the scan key): the one-pod jobs of a
        # template each have their own request (their group key), sharing the containers tuple
        self._keys: dict[int, tuple[tuple, tuple]] = {}
        # the request asked last, its policy and its scan: the hooks ask for one pod over every
        # node in a row, and its commit reads the same scan
        self._last: tuple[VgpuRequest | None, int, _Scan | None] = (None, -1, None)
        # (id(request), policy) -> (the request, its scan): one-pod jobs of a few templates take
        # turns, so `_last` rarely matches, and building the scan key for every pod was ~15 % of
        # the plugin's batch predicate. The entry keeps the request alive (its id is not reused);
        # emptied whenever a scan leaves `_scans`, so that it never names a scan no longer kept.
        self._by_req: dict[tuple[int, int], tuple[VgpuRequest, _Scan]] = {}

    def clear(self) -> None:
        self._scans.clear()
        self._keys.clear()
        self._by_req.clear()
        self._last = (None, -1, None)

    def answers(
        self, table: VgpuTable, req: VgpuRequest, policy: int, at: list[int] | None = None
    ) -> tuple[array, array]:
        """(codes, scores) of every node of `table` for `req`, up to date with every charge at
        the positions `at` (None: at every node). The other changed nodes wait until asked: a
        scan is asked about a few nodes at a time, while ~30 other nodes changed since its last."""
        scan = self._current(table, req, policy)
        fitted, ver = scan.fitted, table.node_ver
        if at is None:
            stale = [i for i in range(len(fitted)) if fitted[i] != ver[i]]
        else:
            stale = [i for i in at if fitted[i] != ver[i]]
        if stale:
            self._refit(scan, req, policy, stale)
        return scan.codes, scan.scores

    def misfits(
        self, table: VgpuTable, req: VgpuRequest, policy: int, nodes: list, at_of: dict | None
    ) -> int:
        """How many of the nodes do not fit `req`, their answers brought up to date; -1 when one
        is not in `at_of` (node -> position; None: `nodes` are positions). One compiled call
        (`refresh_nodes`) for a scan the hot path answers alone, else `answers`."""
        last_req, last_policy, scan = self._last  # _current, without the call (once per pod)
        if last_req is not req or last_policy != policy or scan is None or scan.table is not table:
            scan = self._scan_of(table, req, policy)
            self._last = (req, policy, scan)
        if scan.plain:
            return table.impl.refresh_nodes(nodes, at_of, *scan.refresh)
        at = list(nodes) if at_of is None else list(map(at_of.get, nodes))
        if None in at:
            return -1
        codes, _ = self.answers(table, req, policy, at)
        return sum(1 for i in at if codes[i] != FIT)

    def misfits_at(
        self, table: VgpuTable, req: VgpuRequest, policy: int, at: list[int], rows: array
    ) -> list[int]:
        """misfits by node position: node p of a node list is row rows[p] of `table` (-1: none).
        The places k in `at` of the nodes that do not fit `req` or have no row, in order, their
        answers brought up to date; one compiled call (`refresh_rows`) for a scan the hot path
        answers alone, else `answers`."""
        scan = self._current(table, req, policy)
        if scan.plain:
            return table.impl.refresh_rows(at, rows, *scan.refresh)
        got = [rows[p] for p in at]
        codes, _ = self.answers(table, req, policy, [i for i in got if i >= 0])
        return [k for k, i in enumerate(got) if i < 0 or codes[i] != FIT]

    def _current(self, table: VgpuTable, req: VgpuRequest, policy: int) -> _Scan:
        """The request's scan, `_last` first."""
        last_req, last_policy, scan = self._last
        if last_req is not req or last_policy != policy or scan is None or scan.table is not table:
            scan = self._scan_of(table, req, policy)
            self._last = (req, policy, scan)
        return scan

    def _scan_of(self, table: VgpuTable, req: VgpuRequest, policy: int) -> _Scan:
        """The request's scan, made by a whole-table scan when there is none yet."""
        by_req = self._by_req
        got = by_req.get((id(req), policy))
        n = len(table.ledgers)
        if got is not None and got[0] is req and got[1].table is table and len(got[1].fitted) == n:
            return got[1]
        key = self._key(req, policy)
        scan = self._scans.get(key)
        # a scan made before the table took more nodes has no entry for them: made again
        if scan is None or scan.table is not table or len(scan.fitted) != n:
            total = req.total_cards
            cards = array("q", bytes(8 * max(1, n * total)))
            fitted = array("q", table.node_ver)
            codes, scores = table.scan_cards(req, policy, cards)
            plain = not (table.python_nodes or req.has_card_filters or req.mode)
            flat = _flat(req)
            refresh = (
                table.starts, table.node_flags, table.count, table.devmem, table.used_num, table.used_mem,
                table.used_cores, table.static_ok, flat, policy, table.node_ver, fitted, codes, scores, cards,
            )  # fmt: skip
            scan = _Scan(table, codes, scores, cards, total, fitted, plain, flat, refresh)
            if len(self._scans) >= self.LIMIT:
                del self._scans[next(iter(self._scans))]
                by_req.clear()
            self._scans[key] = scan
        if len(by_req) >= 4 * self.LIMIT:
            by_req.clear()
        by_req[(id(req), policy)] = (req, scan)
        return scan

    def _key(self, req: VgpuRequest, policy: int) -> tuple:
        """_scan_key, its containers' part built once per containers tuple."""
        cs = req.containers
        got = self._keys.get(id(cs))
        if got is None or got[0] is not cs:
            if len(self._keys) >= 4 * self.LIMIT:
                self._keys.clear()
            got = self._keys[id(cs)] = (cs, _containers_key(req))
        return _scan_key(req, policy, got[1])

    @staticmethod
    def _refit(scan: _Scan, req: VgpuRequest, policy: int, stale: list[int]) -> None:
        """Fit the stale nodes again in one call; the whole table when they are most of it (a
        listed node costs about what a node of a range costs, plus the list)."""
        table = scan.table
        if 2 * len(stale) >= len(table.ledgers):
            codes, scores = table.fit_range(req, policy, 0, len(table.ledgers), scan.cards)
            scan.codes[:] = codes
            scan.scores[:] = scores
            scan.fitted[:] = table.node_ver
            return
        table.refit(req, policy, stale, scan.codes, scan.scores, scan.cards)
        fitted, ver = scan.fitted, table.node_ver
        for i in stale:
            fitted[i] = ver[i]

    def kept_fit(self, led: VgpuLedger, req: VgpuRequest, policy: int) -> FitResult | None:
        """`led.fit(req, policy)` when it fits, read from a scan of the request's shape whose
        answer for that node is current (the node unchanged since it was fitted there): the scan
        that found the node already chose its cards. None when no such answer is kept (no scan,
        the node changed since, a node or request the scan leaves to Python, no fit)."""
        got = self._kept_cards(led, req, policy)
        if got is None:
            return None
        cards, score = got
        return FitResult(True, "", score, led.picks(req, cards))

    def kept_segments(
        self, led: VgpuLedger, req: VgpuRequest, policy: int
    ) -> list[list[ann.DeviceEntry]] | None:
        """led.segments(req, f.picks) of the fit kept_fit gives, without its picks; None when
        kept_fit gives none."""
        got = self._kept_cards(led, req, policy)
        return None if got is None else led.card_segments(req, got[0])

    def kept_card(self, led: VgpuLedger, req: VgpuRequest, policy: int) -> int:
        """The one card of kept_fit's answer for a request of one card (its local index), or -1
        when kept_fit gives none."""
        got = self._kept_at(led, req, policy)
        return -1 if got is None else got[0].cards[got[1] * got[0].total]

    def commit_kept(
        self,
        led: VgpuLedger,
        req: VgpuRequest,
        policy: int,
        cr: VgpuContainerRequest,
        task: TaskInfo,
        node_name: str,
        now: str,
        usage: dict[str, tuple[str, tuple[int, int]]],
    ) -> str | None:
        """The commit of a one-card request (its container `cr`) on the card kept_card gives, in
        one compiled call (`commit_one`): the card charged to the node's arrays, the pod recorded
        on the ledger as VgpuLedger.took_one records it, its bind annotations written and its
        usage kept in `usage`. Returns its `vgpu-ids-new` value, or None, nothing changed (no
        current answer). For a `clean` ledger without MIG cards that does not hold the pod yet."""
        last_req, last_policy, scan = self._last  # _scan_at's usual answer, without the call
        i = led.idx
        t = led.table
        if last_req is not req or last_policy != policy or req.mode or scan is None or scan.table is not t:
            got = self._scan_at(led, req, policy)
            if got is None:
                return None
            scan = got[0]
        elif i >= len(scan.fitted):
            return None
        ids = t.impl.commit_one(
            scan.codes, scan.fitted, scan.cards, scan.total, t.node_flags, t.node_ver, t.devmem,
            t.used_num, t.used_mem, t.used_cores, i, led.base, cr.mem, cr.pct, cr.cores, led.pods,
            task.uid, task.namespace, task.pod.annotations, t.group_cards, led.uuids, _Charge,
            task.bind_annotations, node_name, now, usage,
        )  # fmt: skip
        if ids is not None:
            led.version += 1
        return ids

    def _kept_cards(self, led: VgpuLedger, req: VgpuRequest, policy: int) -> tuple[array, float] | None:
        """The cards and score of kept_fit's answer (see there), or None."""
        got = self._kept_at(led, req, policy)
        if got is None:
            return None
        scan, i = got
        k = i * scan.total
        return scan.cards[k : k + scan.total], scan.scores[i]

    def _kept_at(self, led: VgpuLedger, req: VgpuRequest, policy: int) -> tuple[_Scan, int] | None:
        """The scan holding kept_fit's answer and the node's position in it, or None."""
        got = self._scan_at(led, req, policy)
        if got is None:
            return None
        scan, i = got
        t = led.table
        if t.node_flags[i] or scan.codes[i] != FIT or scan.fitted[i] != t.node_ver[i]:
            return None
        return got

    def _scan_at(self, led: VgpuLedger, req: VgpuRequest, policy: int) -> tuple[_Scan, int] | None:
        """The kept scan of the request's shape over the ledger's table and the node's position
        in it, or None (no such scan, or a required mode: those are fitted node by node)."""
        if req.mode:
            return None
        last_req, last_policy, scan = self._last
        if last_req is not req or last_policy != policy:
            scan = self._scans.get(self._key(req, policy))
        i = led.idx
        if scan is None or scan.table is not led.table or i >= len(scan.fitted):
            return None
        return scan, i

    def node_fit(self, led: VgpuLedger, req: VgpuRequest, policy: int) -> tuple[bool, str, float]:
        if req.mode and req.mode != led.mode:
            f = led.fit(req, policy)
            return f.ok, f.reason, f.score
        codes, scores = self.answers(led.table, req, policy, [led.idx])
        code = codes[led.idx]
        if code == FIT:
            return True, "", scores[led.idx]
        if led.mig is not None:  # MIG nodes were fitted in Python by the scan: ask again for the reason
            f = led.fit(req, policy)
            return f.ok, f.reason, f.score
        miss = led.uuid_filter_miss(req)
        if miss:
            return False, miss, 0.0
        if code == TOO_MANY_CARDS:
            return False, "no enough gpu cards on node", 0.0
        return False, "not enough gpu fitted on this node", 0.0


class CardLists:
    """What a ledger derives from its registered cards alone, read-only and shared by the ledgers
    built from one registration value (a node's, session after session): building these per
    node was most of the ledger's construction at every session open."""

    __slots__ = (
        "clean",
        "count",
        "count_bytes",
        "devmem",
        "devmem_bytes",
        "in_range",
        "mode",
        "n",
        "nvidia_ok",
        "nvidia_ok_row",
        "ok_bytes",
        "plain",
        "types",
        "uuid_index",
        "uuids",
        "zeros",
    )

    def __init__(self, cards: Sequence[ann.RegisteredCard]) -> None:
        self.n = len(cards)
        self.uuids = [c.uuid for c in cards]
        self.types = [c.type for c in cards]
        self.uuid_index = {u: i for i, u in enumerate(self.uuids)}
        # every card is found by its own UUID, which no annotation separator splits: a charge of
        # card c is read back from `vgpu-ids-new` as card c (see VgpuLedger.charge_one)
        self.clean = len(self.uuid_index) == len(self.uuids) and not any(map(_has_separator, self.uuids))
        # healthy NVIDIA cards, before the node's unhealthy list is applied
        self.nvidia_ok = [bool(c.health and "NVIDIA" in c.type) for c in cards]
        self.nvidia_ok_row = array("q", map(int, self.nvidia_ok))
        self.in_range = all(
            0 <= c.count <= ann.REGISTER_INT_MAX and 0 <= c.devmem <= ann.REGISTER_INT_MAX for c in cards
        )
        # the table's rows of these cards (kept only in range: the arrays hold int64)
        self.count = array("q", [c.count for c in cards] if self.in_range else [])
        self.devmem = array("q", [c.devmem for c in cards] if self.in_range else [])
        self.zeros = array("q", bytes(8 * len(cards)))
        # the rows as VgpuTable.flush joins them
        self.count_bytes = self.count.tobytes()
        self.devmem_bytes = self.devmem.tobytes()
        self.ok_bytes = self.nvidia_ok_row.tobytes()
        # the node's sharing mode as its last card names it (MIG still depends on the config)
        last = cards[-1].mode if cards else ""
        self.mode = (
            ann.MODE_MIG
            if last == ann.MODE_MIG
            else ann.MODE_MPS
            if last == ann.MODE_MPS
            else ann.MODE_HAMI_CORE
        )
        # rows a ledger may take without the general constructor (VgpuLedger._healthy)
        self.plain = self.in_range and self.mode != ann.MODE_MIG


def _missing_resource(node: NodeInfo) -> str:
    """The first of the three vGPU resources the node does not offer ("" when it offers all)."""
    has = node.allocatable.scalars.get
    number, cores, memory = _NODE_RESOURCES
    if has(number, 0.0) > 0 and has(cores, 0.0) > 0 and has(memory, 0.0) > 0:
        return ""  # the usual node, without the loop
    for name in _NODE_RESOURCES:
        if has(name, 0.0) <= 0:
            return name
    return ""


_count_bytes = attrgetter("count_bytes")
_devmem_bytes = attrgetter("devmem_bytes")
_ok_bytes = attrgetter("ok_bytes")
_n_cards = attrgetter("n")


# registration annotation -> its decoded cards (or why none) and what ledgers derive from them:
# a node's registration rarely changes, and every session rebuilds every ledger from it (the
# decoding was most of the plugin's open)
_REGISTRATIONS: dict[str, tuple[tuple[ann.RegisteredCard, ...] | None, str, CardLists | None]] = {}
_REGISTRATIONS_LIMIT = 65536


def _registered_cards(value: str) -> tuple[Sequence[ann.RegisteredCard] | None, str, CardLists | None]:
    got = _REGISTRATIONS.get(value)
    if got is None:
        cards, why = register_impl.decode_vgpu_register(value)
        if len(_REGISTRATIONS) >= _REGISTRATIONS_LIMIT:
            _REGISTRATIONS.clear()  # registrations of nodes long gone, or churning: start again
        derived = CardLists(cards) if cards else None
        got = _REGISTRATIONS[value] = (None if cards is None else tuple(cards), why, derived)
    return got


# id(containers) -> (the containers, their flat form, their total cards): a request's containers
# tuple is shared by the pods of a template (their requests differ in group keys only), and
# flattening it for every fit call (a refit and the commit's fit per pod) cost ~1 us each. The
# entry keeps the tuple alive, so its id is not reused while it is here; the arrays are only read.
_FLAT: dict[int, tuple[tuple[object, ...], array, int]] = {}
_FLAT_LIMIT = 4096


def _flat_total(req: VgpuRequest) -> tuple[array, int]:
    """The request's containers as the fit reads them (nums, mem, pct, cores each) and its total
    cards: built once per containers tuple. Read-only: callers pass it on as the fit's input."""
    cs = req.containers
    got = _FLAT.get(id(cs))
    if got is not None and got[0] is cs:
        return got[1], got[2]
    out = array("q")
    for c in cs:
        out.extend((c.nums, c.mem, c.pct, c.cores))
    if len(_FLAT) >= _FLAT_LIMIT:
        _FLAT.clear()
    total = req.total_cards
    _FLAT[id(cs)] = (cs, out, total)
    return out, total


def _flat(req: VgpuRequest) -> array:
    return _flat_total(req)[0]


_new_ledger = object.__new__


class VgpuLedger:
    """One node's vGPU cards: a view of its rows of the session's `VgpuTable`."""

    __slots__ = (
        "base",
        "clean",
        "factor",
        "idx",
        "memo",
        "mig",
        "mode",
        "n",
        "node_name",
        "pods",
        "table",
        "types",
        "uuid_index",
        "uuids",
        "version",
    )

    def __init__(
        self,
        node_name: str,
        cards: Sequence[ann.RegisteredCard],
        cfg: DeviceConfig,
        table: VgpuTable | None = None,
        unhealthy: tuple[set[int], set[str]] = (set(), set()),
        derived: CardLists | None = None,
    ) -> None:
        self.node_name = node_name
        self.table = table if table is not None else VgpuTable()
        self.n = len(cards)
        d = derived if derived is not None else CardLists(cards)
        # shared with the other ledgers of this registration: never changed in place
        self.uuids = d.uuids
        self.types = d.types
        self.uuid_index = d.uuid_index
        self.clean = d.clean
        self.factor = cfg.gpu_memory_factor
        self.mode = d.mode
        self.mig: list[MigCard | None] | None = None
        if self.mode == ann.MODE_MIG:
            geoms = [cfg.geometry_for(c.type) for c in cards]
            if all(g is not None for g in geoms):
                # a listed model stays in MIG mode even when its groups offer no slice (upstream)
                self.mig = [MigCard(g) for g in geoms if g is not None]
            else:
                self.mode = ann.MODE_HAMI_CORE  # a card of an unlisted model: upstream falls back
        bad_idx, bad_uuid = unhealthy
        # Upstream still schedules unhealthy cards (kubelet then rejects the pod); we never do (spec 8).
        ok = d.nvidia_ok
        if bad_idx or bad_uuid:
            ok = [
                good and i not in bad_idx and c.uuid not in bad_uuid
                for i, (c, good) in enumerate(zip(cards, ok, strict=True))
            ]
        self.idx = self.table.add_node(self, cards, ok, self.mig is not None, d)
        self.base = self.table.starts[self.idx]
        self.pods: dict[str, tuple[str, list[_Charge]]] = {}
        self.version = 0
        self.memo: tuple[VgpuRequest, int, int, FitResult] | None = None

    # -- construction ------------------------------------------------------------------------
    @classmethod
    def from_node(
        cls, node: NodeInfo, cfg: DeviceConfig, table: VgpuTable | None = None
    ) -> tuple[VgpuLedger | None, str]:
        """The node's ledger (spec 3.1), or (None, why) when it has no usable vGPU registration."""
        value = node.annotations.get(ann.VGPU_REGISTER)
        if value is None:
            return None, "no vGPU registration"
        missing = _missing_resource(node)
        if missing:
            return None, f"node allocatable has no {missing}"
        cards, why, derived = _REGISTRATIONS.get(value) or _registered_cards(value)
        if cards is None:
            return None, why
        listed = node.annotations.get(ann.GPU_UNHEALTHY_IDS)
        if listed is None:  # the usual node: no card to leave out
            if table is not None and derived is not None and derived.plain:
                return cls._healthy(node.name, cfg, table, derived), ""
            return cls(node.name, cards, cfg, table, derived=derived), ""
        return cls(node.name, cards, cfg, table, ann.decode_unhealthy_ids(listed), derived), ""

    @classmethod
    def queued(cls, node: NodeInfo, cfg: DeviceConfig, table: VgpuTable) -> VgpuLedger | None:
        """from_node(node, cfg, table)'s ledger when the node is the usual one (its registration
        decoded before, cards in range and not in MIG mode, none listed unhealthy, the three vGPU
        resources allocatable), with its row queued on the table (VgpuTable.queue_row: written by
        the table's next flush); None, nothing done, for any other node (from_node answers it)."""
        anns = node.annotations
        got = _REGISTRATIONS.get(anns.get(ann.VGPU_REGISTER, ""))
        d = got[2] if got is not None else None
        if d is None or not d.plain or ann.GPU_UNHEALTHY_IDS in anns:
            return None
        if _missing_resource(node):
            return None
        return cls._healthy(node.name, cfg, table, d, True)

    @classmethod
    def _healthy(
        cls, node_name: str, cfg: DeviceConfig, table: VgpuTable, d: CardLists, queue: bool = False
    ) -> VgpuLedger:
        """`cls(node_name, cards, cfg, table, derived=d)` for cards in range, none listed unhealthy
        and not in MIG mode: the usual node, built without the general constructor's checks (a
        session opens with a ledger per vGPU node); with `queue`, its row queued (queue_row)."""
        led = _new_ledger(cls)
        led.node_name = node_name
        led.table = table
        led.n = d.n
        led.uuids = d.uuids
        led.types = d.types
        led.uuid_index = d.uuid_index
        led.clean = d.clean
        led.factor = cfg.gpu_memory_factor
        led.mode = d.mode
        led.mig = None
        led.pods = {}
        led.version = 0
        led.memo = None
        if queue:
            table.queue_row(led, d)
        else:
            led.idx = idx = table.add_row(led, d, d.nvidia_ok_row, False)
            led.base = table.starts[idx]
        return led

    # -- card filters (spec 3.4 rules 1, 3, 8) ----------------------------------------------------
    def uuid_filter_miss(self, req: VgpuRequest) -> str:
        """Why no card of the node passes the pod's UUID filters (Volcano's wording), or ""."""
        if not (req.use_uuids or req.nouse_uuids):
            return ""
        for uuid in self.uuids:
            if uuid and (not req.use_uuids or uuid in req.use_uuids) and uuid not in req.nouse_uuids:
                return ""
        return (
            f'no GPU matches UUID constraints {ann.VGPU_USE_UUID}="{",".join(req.use_uuids)}", '
            f'{ann.VGPU_NOUSE_UUID}="{",".join(req.nouse_uuids)}" on node {self.node_name}'
        )

    def card_allows(self, c: int, req: VgpuRequest, group_conflict: bool) -> bool:
        uuid = self.uuids[c]
        if not uuid and (req.use_uuids or req.nouse_uuids):
            return False  # a card without UUID cannot be told apart: no UUID filter admits it
        if req.use_uuids and uuid not in req.use_uuids:
            return False
        if uuid in req.nouse_uuids:
            return False
        if group_conflict:
            return False
        t = self.types[c].upper()
        if req.use_types:
            return any(x in t for x in req.use_types)
        return not any(x in t for x in req.nouse_types)

    # -- charging ----------------------------------------------------------------------------------
    def _card_of(self, device_id: str) -> int | None:
        c = self.uuid_index.get(device_id)
        if c is not None:
            return c
        mig = ann.decode_mig_id(device_id)
        if mig is not None and mig[0] in self.uuid_index:
            return self.uuid_index[mig[0]]
        # spec 1.4: the card whose UUID is a substring of the entry's id
        return next((i for i, u in enumerate(self.uuids) if u and u in device_id), None)

    def add_pod(self, uid: str, group_key: str, segments: list[list[ann.DeviceEntry]]) -> bool:
        """Charge a pod's decoded `vgpu-ids-new`; a pod already held is not counted twice."""
        if uid in self.pods:
            return False
        t, charges = self.table, []
        for seg in segments:
            for e in seg:
                c = self._card_of(e.uuid)
                if c is None:
                    continue  # a card that is gone: the pod does not count there
                mem, slot = e.mem, None
                mc = self.mig[c] if self.mig is not None else None
                if mc is not None:
                    loc = mc.locate(e.uuid)
                    if loc is None or not mc.mark(*loc):
                        continue  # MIG card without (or with a clashing) slice id: not counted
                    gi, pi, inst = loc
                    prof_mem = mc.groups[gi].profiles[pi].memory
                    mem, slot = (prof_mem // self.factor if self.factor > 1 else prof_mem), (pi, inst)
                g = self.base + c
                t.used_num[g] += 1
                t.used_mem[g] += mem
                t.used_cores[g] += e.cores
                if group_key and (mem or e.cores):
                    held = t.group_cards.setdefault(group_key, {})
                    held[g] = held.get(g, 0) + 1
                charges.append(_Charge(c, mem, e.cores, slot))
        self.pods[uid] = (group_key, charges)
        self.version += 1
        self.table.touch(self.idx)
        return True

    def charge_one(
        self, uid: str, group_key: str, cr: VgpuContainerRequest, c: int
    ) -> tuple[str, tuple[int, int] | None]:
        """add_pod(uid, group_key, segments) of a pod whose one container asks one card, given
        card c, without building the segments; (encode_pod_devices(segments),
        usage_of_segments(segments)). For a `clean` ledger without MIG cards that does not hold
        the pod yet (then add_pod reads the entry back as card c and charges it)."""
        t = self.table
        g = self.base + c
        mem, cores = cr.demand(t.devmem[g]), cr.cores
        t.used_num[g] += 1
        t.used_mem[g] += mem
        t.used_cores[g] += cores
        t.node_ver[self.idx] += 1
        return self.took_one(uid, group_key, c, mem, cores)

    def took_one(
        self, uid: str, group_key: str, c: int, mem: int, cores: int
    ) -> tuple[str, tuple[int, int] | None]:
        """charge_one once card c's arrays are charged (`mem` and `cores` of one more pod, the
        node's version moved on): the pod recorded as holding them, and charge_one's answer."""
        if group_key and (mem or cores):
            cards = self.table.group_cards
            held = cards.get(group_key)
            g = self.base + c
            if held is None:
                cards[group_key] = {g: 1}
            else:
                held[g] = held.get(g, 0) + 1
        self.pods[uid] = (group_key, [_Charge(c, mem, cores, None)])
        self.version += 1
        use = (mem, cores) if 0 <= mem <= _TOP and 0 <= cores <= _TOP else None
        return f"{self.uuids[c]},{_REQUEST_TYPE},{mem},{cores}:", use

    def remove_pod(self, uid: str) -> bool:
        held = self.pods.pop(uid, None)
        if held is None:
            return False
        group_key, charges = held
        t = self.table
        for ch in charges:
            g = self.base + ch.card
            t.used_num[g] -= 1
            t.used_mem[g] -= ch.mem
            t.used_cores[g] -= ch.cores
            if ch.mig_slot is not None and self.mig is not None:
                mc = self.mig[ch.card]
                if mc is not None:
                    mc.unmark(*ch.mig_slot)
            if group_key and (ch.mem or ch.cores):
                cards = t.group_cards.get(group_key, {})
                left = cards.get(g, 0) - 1
                if left > 0:
                    cards[g] = left
                else:
                    cards.pop(g, None)
        self.version += 1
        self.table.touch(self.idx)
        return True

    @contextmanager
    def capped(self, cards: list[int]) -> Iterator[None]:
        """While open, the listed cards take no further pod (split count capped at its use).

        This is how exclusivity rules (spec 6.7) close cards to a pod, as upstream does; the
        version bumps on both sides keep a fit memoised under the cap from being reused without it.
        """
        t, saved = self.table, []
        for c in cards:
            g = self.base + c
            saved.append((g, t.count[g]))
            t.count[g] = min(t.count[g], t.used_num[g])
        self.version += 1
        self.table.touch(self.idx)
        try:
            yield
        finally:
            for g, v in saved:
                t.count[g] = v
            self.version += 1
            self.table.touch(self.idx)

    # -- fit -------------------------------------------------------------------------------------
    def fit(self, req: VgpuRequest, policy: int) -> FitResult:
        """Spec 3.4-3.6 on a working copy: whether `req` fits, the node score and the cards."""
        memo = self.memo
        if memo is not None and memo[0] is req and memo[1] == policy and memo[2] == self.version:
            return memo[3]
        r = self._fit(req, policy)
        self.memo = (req, policy, self.version, r)
        return r

    def _fit(self, req: VgpuRequest, policy: int) -> FitResult:
        if req.mode and req.mode != self.mode:
            return FitResult(
                False, f"pod required sharing mode {req.mode} is not the same as the node mode {self.mode}"
            )
        miss = self.uuid_filter_miss(req)
        if miss:
            return FitResult(False, miss)
        t, i = self.table, self.idx
        mask = t.mask_for(req, i, i + 1)
        if self.mig is not None:
            usable = [bool(mask[self.base + c]) for c in range(self.n)]
            code, score, picks = fit_mig_node(self, req, policy, usable, self.factor)
        else:
            flat, total = _flat_total(req)
            cards = array("q", bytes(8 * max(total, 1)))
            t.impl.fit_nodes(
                t.starts, t.node_flags, t.count, t.devmem, t.used_num, t.used_mem, t.used_cores,
                mask, flat, policy, i, i + 1, t.out_code, t.out_score, cards,
            )  # fmt: skip
            code, score = t.out_code[i], t.out_score[i]
            picks = self.picks(req, cards) if code == FIT else []
        if code == TOO_MANY_CARDS:
            return FitResult(False, "no enough gpu cards on node")
        if code != FIT:
            return FitResult(False, "not enough gpu fitted on this node")
        return FitResult(True, "", score, picks)

    def picks(self, req: VgpuRequest, cards: Sequence[int]) -> list[list[Pick]]:
        """The picks of the compiled fit's chosen cards (local indices in container order)."""
        t, base, uuids = self.table, self.base, self.uuids
        picks, k = [], 0
        for cr in req.containers:
            seg = []
            for _ in range(cr.nums):
                c = cards[k]
                k += 1
                seg.append(Pick(c, uuids[c], cr.demand(t.devmem[base + c]), cr.cores))
            picks.append(seg)
        return picks

    def card_segments(self, req: VgpuRequest, cards: Sequence[int]) -> list[list[ann.DeviceEntry]]:
        """segments(req, picks(req, cards)), built without the picks."""
        t, base, uuids = self.table, self.base, self.uuids
        cs = req.containers
        if req.n_containers == 1 and len(cs) == 1 and cs[0].index == 0 and cs[0].nums == 1:
            # one container asking one card (the usual pod): its one segment of one entry
            cr, c = cs[0], cards[0]
            return [[ann.DeviceEntry(uuids[c], cr.demand(t.devmem[base + c]), cr.cores)]]
        by_container: dict[int, list[ann.DeviceEntry]] = {}
        k = 0
        for cr in req.containers:
            seg = []
            for _ in range(cr.nums):
                c = cards[k]
                k += 1
                seg.append(ann.DeviceEntry(uuids[c], cr.demand(t.devmem[base + c]), cr.cores))
            by_container[cr.index] = seg
        return [by_container.get(i, []) for i in range(req.n_containers)]

    def segments(self, req: VgpuRequest, picks: list[list[Pick]]) -> list[list[ann.DeviceEntry]]:
        """One segment per regular container, empty for containers without vGPU (spec 8)."""
        by_container = {cr.index: seg for cr, seg in zip(req.containers, picks, strict=True)}
        return [
            [ann.DeviceEntry(p.device_id, p.mem, p.cores) for p in by_container.get(i, [])]
            for i in range(req.n_containers)
        ]

    # -- views -------------------------------------------------------------------------------------
    def card_state(self) -> list[tuple[int, int, int]]:
        """(used_num, used_mem, used_cores) per card, for tests and metrics."""
        t, b = self.table, self.base
        return [(t.used_num[b + c], t.used_mem[b + c], t.used_cores[b + c]) for c in range(self.n)]

    def state(self) -> tuple:
        """Everything that decides future fits, comparable between a live and a rebuilt ledger."""
        mig = None
        if self.mig is not None:
            mig = tuple(
                (m.group_index, tuple(sorted((k, tuple(sorted(v))) for k, v in m.used.items())))
                if m
                else None
                for m in self.mig
            )
        return (tuple(self.card_state()), mig, tuple(sorted(self.pods)))


def vgpu_card_metrics(ledger: VgpuLedger) -> list[dict[str, object]]:
    """Per-card gauges: allocated memory and cores, memory limit, sharing pods (Volcano's vgpu metrics)."""
    t, b = ledger.table, ledger.base
    return [
        {
            "node": ledger.node_name,
            "index": c,
            "uuid": ledger.uuids[c],
            "memory_allocated": t.used_mem[b + c],
            "memory_limit": t.devmem[b + c],
            "cores_allocated": t.used_cores[b + c],
            "shared_pods": t.used_num[b + c],
        }
        for c in range(ledger.n)
    ]


def usage_of_segments(segments: list[list[ann.DeviceEntry]]) -> tuple[int, int] | None:
    """vgpu_usage_of of the annotation encode_pod_devices writes for `segments`, read from the
    segments themselves when decoding that annotation gives them back (no separator in a UUID or
    type, int amounts in the decoder's range); None otherwise (then decode the annotation)."""
    mem = cores = 0
    top = ann.REGISTER_INT_MAX
    for seg in segments:
        for e in seg:
            m, c = e.mem, e.cores
            if type(m) is not int or type(c) is not int or not (0 <= m <= top and 0 <= c <= top):
                return None
            if _has_separator(e.uuid) or _has_separator(e.type):
                return None
            mem += m
            cores += c
    return mem, cores


def _has_separator(text: str) -> bool:
    return "," in text or ":" in text or ";" in text


def vgpu_usage_of(annotations: dict[str, str]) -> tuple[int, int]:
    """(memory MiB, cores) a pod really holds per `vgpu-ids-new`, for queue accounting (spec 1.2)."""
    mem = cores = 0
    for seg in ann.decode_pod_devices(annotations.get(ann.VGPU_IDS_NEW)):
        for e in seg:
            mem += e.mem
            cores += e.cores
    return mem, cores
