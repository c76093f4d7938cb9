# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Compiled twin of scheduler/plugins/deviceshare/fit.py: vGPU fit and score over flat card arrays.

Same function, same arguments, same answers (tests/native proves it on random inputs); see the
Python module for the layout and the rules. Only the inner loops differ: the per-node working
copy and the card order live in C scratch buffers instead of Python lists.
"""

import dataclasses

from cpython cimport array
from cpython.object cimport Py_SIZE, PyObject_GenericSetAttr

from int64arrays cimport float64s, int64s
from libc.stdlib cimport free, malloc
from libc.string cimport memcmp, memcpy

FIT = 0
TOO_MANY_CARDS = 1
NOT_FITTED = 2
NEEDS_PYTHON = 3
POLICY_NONE = 0
POLICY_BINPACK = 1
POLICY_SPREAD = 2
PCT_UNSET = 101

IMPLEMENTATION = "native"

from scheduler.plugins.deviceshare import annotations as _ann

# commit_one's constants, read once (the twin's are the annotations module's)
cdef str _GROUP_NAME = _ann.GROUP_NAME
cdef str _GROUP_NAME_VOLCANO = _ann.GROUP_NAME_VOLCANO
cdef str _REQUEST_TYPE = _ann.VGPU_REQUEST_TYPE
cdef long long _TOP = _ann.REGISTER_INT_MAX
cdef str _VGPU_NODE = _ann.VGPU_NODE
cdef str _VGPU_TIME = _ann.VGPU_TIME
cdef str _VGPU_IDS_NEW = _ann.VGPU_IDS_NEW
cdef str _DEVICES_TO_ALLOCATE = _ann.DEVICES_TO_ALLOCATE
cdef str _BIND_PHASE = _ann.BIND_PHASE
cdef str _BIND_PHASE_ALLOCATING = _ann.BIND_PHASE_ALLOCATING
cdef str _BIND_TIME = _ann.BIND_TIME

cdef enum:
    C_FIT = 0
    C_TOO_MANY_CARDS = 1
    C_NOT_FITTED = 2
    C_NEEDS_PYTHON = 3
    C_PCT_UNSET = 101


cdef inline bint _before(int policy, long long a, long long b, long long *un, long long *um) noexcept nogil:
    # True when local card a is scanned before card b (spec 3.6; ties by ascending index)
    if policy == 1:
        if um[a] != um[b]:
            return um[a] > um[b]
        return a < b
    if policy == 2:
        if un[a] != un[b]:
            return un[a] < un[b]
        return a < b
    return a > b


cdef inline double _score(int policy, long long count, long long dm, long long nb, long long mb, long long ma) noexcept nogil:
    if policy == 1:
        return 100.0 * ma / dm if dm > 0 else 100.0
    if policy == 2:
        return 50.0 * ((1.0 - <double>nb / count) if count > 0 else 0.0) + 50.0 * ((1.0 - <double>mb / dm) if dm > 0 else 0.0)
    return 0.0


cdef inline bint _takes(long long count, long long dm, long long un, long long um, long long uc,
                        long long demand, long long cores) noexcept nogil:
    # whether a card with these entries takes one more share of `demand` memory and `cores`
    return not (un >= count or dm - um < demand or uc + cores > 100
                or (cores == 100 and un > 0) or (uc == 100 and cores == 0))


cdef int _fit_node(
    Py_ssize_t i,
    const long long *starts,
    const long long *count,
    const long long *devmem,
    const long long *used_num,
    const long long *used_mem,
    const long long *used_cores,
    const long long *usable,
    const long long *req,
    Py_ssize_t n_req,
    int policy,
    long long *buf,
    Py_ssize_t maxn,
    double *score_out,
    long long *cards_out,
) noexcept nogil:
    # one node (not flagged for Python): its code, its score in score_out, its cards in cards_out
    cdef long long *un = buf
    cdef long long *um = buf + maxn
    cdef long long *uc = buf + 2 * maxn
    cdef long long *order = buf + 3 * maxn
    cdef long long *taken = buf + 4 * maxn
    cdef Py_ssize_t k, c, j, n, base, g, ntaken, slot = 0
    cdef long long nums, mem, pct, cores, demand, dm, a
    cdef double score = 0.0
    cdef bint seen
    base = starts[i]
    n = starts[i + 1] - base
    for c in range(n):
        un[c] = used_num[base + c]
        um[c] = used_mem[base + c]
        uc[c] = used_cores[base + c]
    score_out[0] = 0.0
    for k in range(n_req):
        nums = req[4 * k]
        mem = req[4 * k + 1]
        pct = req[4 * k + 2]
        cores = req[4 * k + 3]
        if nums > n:
            return C_TOO_MANY_CARDS
        # insertion sort of the local cards into scan order
        for c in range(n):
            j = c
            while j > 0 and _before(policy, c, order[j - 1], un, um):
                order[j] = order[j - 1]
                j -= 1
            order[j] = c
        ntaken = 0
        for j in range(n):
            if ntaken == nums:
                break
            c = order[j]
            g = base + c
            if not usable[g]:
                continue
            seen = False
            for a in range(ntaken):
                if taken[a] == c:
                    seen = True
                    break
            if seen:
                continue
            dm = devmem[g]
            demand = dm * pct // 100 if pct != C_PCT_UNSET else mem
            if not _takes(count[g], dm, un[c], um[c], uc[c], demand, cores):
                continue
            score += _score(policy, count[g], dm, un[c], um[c], um[c] + demand)
            un[c] += 1
            um[c] += demand
            uc[c] += cores
            taken[ntaken] = c
            ntaken += 1
            cards_out[slot] = c
            slot += 1
        if ntaken < nums:
            return C_NOT_FITTED
    score_out[0] = score
    return C_FIT


cdef int _fit_one_card(
    Py_ssize_t i,
    const long long *starts,
    const long long *count,
    const long long *devmem,
    const long long *used_num,
    const long long *used_mem,
    const long long *used_cores,
    const long long *usable,
    const long long *req,
    int policy,
    double *score_out,
    long long *cards_out,
) noexcept nogil:
    # _fit_node for a request of one container asking one card (the usual pod): the first card
    # of the scan order that takes it is the one that comes first of those that take it, so one
    # pass finds it without sorting the node's cards (cards are met in ascending index, so a
    # later card replaces the best so far only when it strictly comes before it)
    cdef Py_ssize_t c, g, base = starts[i], n = starts[i + 1] - starts[i], best = -1
    cdef long long mem = req[1], pct = req[2], cores = req[3], demand, dm, un, um, uc
    cdef long long best_un = 0, best_um = 0, best_dm = 0, best_demand = 0
    cdef double score = 0.0
    score_out[0] = 0.0
    if n < 1:
        return C_TOO_MANY_CARDS
    for c in range(n):
        g = base + c
        if not usable[g]:
            continue
        dm = devmem[g]
        un = used_num[g]
        um = used_mem[g]
        uc = used_cores[g]
        demand = dm * pct // 100 if pct != C_PCT_UNSET else mem
        if not _takes(count[g], dm, un, um, uc, demand, cores):
            continue
        if best >= 0:
            # _before(policy, c, best): ties go to the lower index, the best so far
            if policy == 1:
                if um <= best_um:
                    continue
            elif policy == 2:
                if un >= best_un:
                    continue
        best = c
        best_un = un
        best_um = um
        best_dm = dm
        best_demand = demand
    if best < 0:
        return C_NOT_FITTED
    g = base + best
    score += _score(policy, count[g], best_dm, best_un, best_um, best_um + best_demand)
    cards_out[0] = best
    score_out[0] = score
    return C_FIT


cdef class _Table:
    # the card arrays and request of one call, checked once and read through pointers
    cdef const long long *starts
    cdef const long long *flags
    cdef const long long *count
    cdef const long long *devmem
    cdef const long long *used_num
    cdef const long long *used_mem
    cdef const long long *used_cores
    cdef const long long *usable
    cdef const long long *req
    cdef Py_ssize_t n_req
    cdef long long total
    cdef int policy
    # the last node this call fitted (-1: none yet), its code, score and chosen cards: a node
    # whose cards are in the same state (a cluster's idle nodes of one kind) has the same answer
    cdef Py_ssize_t prev
    cdef int prev_code
    cdef double prev_score
    cdef long long *prev_cards

    cdef int load(
        self, array.array starts, array.array node_flags, array.array count, array.array devmem,
        array.array used_num, array.array used_mem, array.array used_cores, array.array usable,
        array.array req, int policy, Py_ssize_t n_nodes,
    ) except -1:
        cdef Py_ssize_t k
        self.starts = int64s(starts, n_nodes + 1, "starts")
        cdef Py_ssize_t n_cards = self.starts[n_nodes]
        self.flags = int64s(node_flags, n_nodes, "node_flags")
        self.count = int64s(count, n_cards, "count")
        self.devmem = int64s(devmem, n_cards, "devmem")
        self.used_num = int64s(used_num, n_cards, "used_num")
        self.used_mem = int64s(used_mem, n_cards, "used_mem")
        self.used_cores = int64s(used_cores, n_cards, "used_cores")
        self.usable = int64s(usable, n_cards, "usable")
        self.n_req = Py_SIZE(req) // 4
        self.req = int64s(req, 4 * self.n_req, "req")
        self.total = 0
        for k in range(self.n_req):
            self.total += self.req[4 * k]
        self.policy = policy
        self.prev = -1
        return 0

    cdef bint same_rows(self, Py_ssize_t a, Py_ssize_t b) noexcept nogil:
        # whether nodes a and b have as many cards, each in the same state as its peer (every
        # per-card entry a node's fit reads of the table); the charges first, where nodes differ most
        cdef Py_ssize_t n = self.starts[a + 1] - self.starts[a]
        cdef Py_ssize_t x = self.starts[a], y = self.starts[b]
        cdef size_t size = n * sizeof(long long)
        return (
            self.starts[b + 1] - y == n
            and memcmp(&self.used_num[x], &self.used_num[y], size) == 0
            and memcmp(&self.used_mem[x], &self.used_mem[y], size) == 0
            and memcmp(&self.used_cores[x], &self.used_cores[y], size) == 0
            and memcmp(&self.usable[x], &self.usable[y], size) == 0
            and memcmp(&self.devmem[x], &self.devmem[y], size) == 0
            and memcmp(&self.count[x], &self.count[y], size) == 0
        )

    cdef Py_ssize_t widest(self, const Py_ssize_t *nodes, Py_ssize_t n_at) noexcept nogil:
        cdef Py_ssize_t m, i, maxn = 0
        for m in range(n_at):
            i = nodes[m]
            if self.starts[i + 1] - self.starts[i] > maxn:
                maxn = self.starts[i + 1] - self.starts[i]
        return maxn

    cdef int fit(self, Py_ssize_t i, long long *buf, Py_ssize_t maxn, long long *codes,
                 double *scores, long long *cards_out) noexcept nogil:
        # node i's code (and score where it fits) written; 1 when it fits
        cdef double score
        cdef int code
        scores[i] = 0.0
        if self.flags[i] != 0:
            codes[i] = C_NEEDS_PYTHON
            return 0
        if self.prev >= 0 and self.same_rows(self.prev, i):
            code = self.prev_code
            codes[i] = code
            if code == C_FIT:
                scores[i] = self.prev_score
                if cards_out != self.prev_cards:
                    memcpy(cards_out, self.prev_cards, self.total * sizeof(long long))
                return 1
            return 0
        if self.n_req == 1 and self.req[0] == 1:
            code = _fit_one_card(i, self.starts, self.count, self.devmem, self.used_num, self.used_mem,
                                 self.used_cores, self.usable, self.req, self.policy, &score, cards_out)
        else:
            code = _fit_node(i, self.starts, self.count, self.devmem, self.used_num, self.used_mem,
                             self.used_cores, self.usable, self.req, self.n_req, self.policy, buf, maxn,
                             &score, cards_out)
        codes[i] = code
        self.prev = i
        self.prev_code = code
        self.prev_score = score
        self.prev_cards = cards_out
        if code == C_FIT:
            scores[i] = score
            return 1
        return 0


cdef long long *_scratch(Py_ssize_t maxn) except NULL:
    cdef long long *buf = <long long *> malloc(sizeof(long long) * (5 * maxn + 1))
    if buf == NULL:
        raise MemoryError()
    return buf


cdef Py_ssize_t *_positions(object listed, dict at_of, Py_ssize_t n_nodes, bint *missing) except NULL:
    # the listed nodes' positions (at_of[n] for each n, or the items themselves when at_of is
    # None), each within 0..n_nodes-1; missing[0] set when one is not in at_of
    cdef Py_ssize_t n_at = len(listed), m, i
    cdef Py_ssize_t *at = <Py_ssize_t *> malloc(sizeof(Py_ssize_t) * (n_at + 1))
    cdef object got
    if at == NULL:
        raise MemoryError()
    missing[0] = False
    try:
        for m in range(n_at):
            got = listed[m] if at_of is None else at_of.get(listed[m])
            if got is None:
                missing[0] = True
                break
            i = got
            if i < 0 or i >= n_nodes:
                raise IndexError(f"node {i} out of range")
            at[m] = i
    except BaseException:
        free(at)
        raise
    return at


def fit_nodes(
    array.array starts,
    array.array node_flags,
    array.array count,
    array.array devmem,
    array.array used_num,
    array.array used_mem,
    array.array used_cores,
    array.array usable,
    array.array req,
    int policy,
    Py_ssize_t lo,
    Py_ssize_t hi,
    array.array out_code,
    array.array out_score,
    array.array out_cards,
):
    if lo < 0 or hi < lo:
        raise IndexError(f"nodes {lo}..{hi} are not a range")
    cdef _Table t = _Table.__new__(_Table)
    t.load(starts, node_flags, count, devmem, used_num, used_mem, used_cores, usable, req, policy, hi)
    cdef long long *codes = <long long *> int64s(out_code, hi, "out_code")
    cdef double *scores = float64s(out_score, hi, "out_score")
    cdef long long *cards = <long long *> int64s(out_cards, (hi - lo) * t.total, "out_cards")
    cdef Py_ssize_t i, maxn = 0
    cdef int fitting = 0
    for i in range(lo, hi):
        if t.starts[i + 1] - t.starts[i] > maxn:
            maxn = t.starts[i + 1] - t.starts[i]
    cdef long long *buf = _scratch(maxn)
    try:
        with nogil:
            for i in range(lo, hi):
                fitting += t.fit(i, buf, maxn, codes, scores, &cards[(i - lo) * t.total])
    finally:
        free(buf)
    return fitting


def fit_listed(
    array.array starts,
    array.array node_flags,
    array.array count,
    array.array devmem,
    array.array used_num,
    array.array used_mem,
    array.array used_cores,
    array.array usable,
    array.array req,
    int policy,
    array.array nodes,
    array.array out_code,
    array.array out_score,
    array.array out_cards,
):
    # node i's chosen cards go to out_cards[i * total ...], where fit_nodes over 0..n puts them
    cdef Py_ssize_t n_nodes = min(Py_SIZE(starts) - 1, Py_SIZE(out_code), Py_SIZE(out_score))
    cdef Py_ssize_t m, i, maxn, n_at = Py_SIZE(nodes)
    cdef int fitting = 0
    cdef bint missing
    cdef _Table t = _Table.__new__(_Table)
    t.load(starts, node_flags, count, devmem, used_num, used_mem, used_cores, usable, req, policy,
           max(n_nodes, 0))
    cdef long long *codes = <long long *> int64s(out_code, n_nodes, "out_code")
    cdef double *scores = float64s(out_score, n_nodes, "out_score")
    cdef long long *cards = <long long *> int64s(out_cards, 0, "out_cards")
    cdef Py_ssize_t *at = _positions(nodes.tolist(), None, n_nodes, &missing)
    cdef long long *buf = NULL
    try:
        for m in range(n_at):
            if (at[m] + 1) * t.total > Py_SIZE(out_cards) or Py_SIZE(out_cards) == 0:
                raise IndexError(f"no room for node {at[m]}'s cards")
        maxn = t.widest(at, n_at)
        buf = _scratch(maxn)
        with nogil:
            for m in range(n_at):
                i = at[m]
                fitting += t.fit(i, buf, maxn, codes, scores, &cards[i * t.total])
    finally:
        free(at)
        free(buf)
    return fitting


def refresh_nodes(
    list nodes,
    dict at_of,
    array.array starts,
    array.array node_flags,
    array.array count,
    array.array devmem,
    array.array used_num,
    array.array used_mem,
    array.array used_cores,
    array.array usable,
    array.array req,
    int policy,
    array.array node_ver,
    array.array fitted_ver,
    array.array out_code,
    array.array out_score,
    array.array out_cards,
):
    # see fit.refresh_nodes: positions by at_of (or `nodes` are positions), stale ones refitted
    cdef Py_ssize_t n_nodes = Py_SIZE(starts) - 1
    cdef Py_ssize_t m, i, maxn, n_at = len(nodes)
    cdef int misfits = 0
    cdef bint missing
    if n_nodes < 0:
        raise IndexError("starts is empty")
    cdef _Table t = _Table.__new__(_Table)
    t.load(starts, node_flags, count, devmem, used_num, used_mem, used_cores, usable, req, policy, n_nodes)
    cdef const long long *ver = int64s(node_ver, n_nodes, "node_ver")
    cdef long long *fitted = <long long *> int64s(fitted_ver, n_nodes, "fitted_ver")
    cdef long long *codes = <long long *> int64s(out_code, n_nodes, "out_code")
    cdef double *scores = float64s(out_score, n_nodes, "out_score")
    cdef long long *cards = <long long *> int64s(out_cards, max(n_nodes * t.total, 1), "out_cards")
    cdef Py_ssize_t *at = _positions(nodes, at_of, n_nodes, &missing)
    cdef long long *buf = NULL
    try:
        if missing:
            return -1
        maxn = t.widest(at, n_at)
        buf = _scratch(maxn)
        with nogil:
            for m in range(n_at):
                i = at[m]
                if fitted[i] != ver[i]:
                    t.fit(i, buf, maxn, codes, scores, &cards[i * t.total])
                    fitted[i] = ver[i]
                if codes[i] != C_FIT:
                    misfits += 1
    finally:
        free(at)
        free(buf)
    return misfits


def refresh_rows(
    list at,
    array.array rows,
    array.array starts,
    array.array node_flags,
    array.array count,
    array.array devmem,
    array.array used_num,
    array.array used_mem,
    array.array used_cores,
    array.array usable,
    array.array req,
    int policy,
    array.array node_ver,
    array.array fitted_ver,
    array.array out_code,
    array.array out_score,
    array.array out_cards,
):
    # see fit.refresh_rows: node p's row is rows[p] (-1: none); the places of the misfits and rowless
    cdef Py_ssize_t n_nodes = Py_SIZE(starts) - 1
    cdef Py_ssize_t n_rows = Py_SIZE(rows)
    cdef Py_ssize_t m, i, p, maxn, n_at = len(at)
    cdef list out = []
    if n_nodes < 0:
        raise IndexError("starts is empty")
    cdef _Table t = _Table.__new__(_Table)
    t.load(starts, node_flags, count, devmem, used_num, used_mem, used_cores, usable, req, policy, n_nodes)
    cdef const long long *row_of = int64s(rows, 0, "rows")
    cdef const long long *ver = int64s(node_ver, n_nodes, "node_ver")
    cdef long long *fitted = <long long *> int64s(fitted_ver, n_nodes, "fitted_ver")
    cdef long long *codes = <long long *> int64s(out_code, n_nodes, "out_code")
    cdef double *scores = float64s(out_score, n_nodes, "out_score")
    cdef long long *cards = <long long *> int64s(out_cards, max(n_nodes * t.total, 1), "out_cards")
    cdef Py_ssize_t *got = <Py_ssize_t *> malloc(sizeof(Py_ssize_t) * (n_at + 1))
    cdef long long *buf = NULL
    if got == NULL:
        raise MemoryError()
    try:
        maxn = 0
        for m in range(n_at):
            p = at[m]
            if p < 0 or p >= n_rows:
                raise IndexError(f"position {p} out of range")
            i = row_of[p]
            if i < -1 or i >= n_nodes:
                raise IndexError(f"node {i} out of range")
            got[m] = i
            if i >= 0 and t.starts[i + 1] - t.starts[i] > maxn:
                maxn = t.starts[i + 1] - t.starts[i]
        buf = _scratch(maxn)
        for m in range(n_at):
            i = got[m]
            if i < 0:
                out.append(m)
                continue
            if fitted[i] != ver[i]:
                t.fit(i, buf, maxn, codes, scores, &cards[i * t.total])
                fitted[i] = ver[i]
            if codes[i] != C_FIT:
                out.append(m)
    finally:
        free(got)
        free(buf)
    return out


cdef int _charge_kept(
    array.array out_code, array.array fitted_ver, array.array out_cards, Py_ssize_t total,
    array.array node_flags, array.array node_ver, array.array devmem, array.array used_num,
    array.array used_mem, array.array used_cores, Py_ssize_t i, Py_ssize_t base, long long mem,
    long long pct, long long cores, long long *card_out, long long *demand_out,
) except -1:
    # charge_kept's work: 1 with the card charged (its local index) and its demand, or 0,
    # nothing changed
    cdef Py_ssize_t n_nodes = min(Py_SIZE(node_flags), Py_SIZE(node_ver), Py_SIZE(out_code), Py_SIZE(fitted_ver))
    if i < 0 or i >= n_nodes:
        raise IndexError(f"node {i} out of range")
    cdef const long long *flags = int64s(node_flags, n_nodes, "node_flags")
    cdef long long *ver = <long long *> int64s(node_ver, n_nodes, "node_ver")
    cdef const long long *codes = int64s(out_code, n_nodes, "out_code")
    cdef const long long *fitted = int64s(fitted_ver, n_nodes, "fitted_ver")
    if flags[i] != 0 or codes[i] != C_FIT or fitted[i] != ver[i]:
        return 0
    if total < 1 or Py_SIZE(out_cards) < (i + 1) * total:
        raise IndexError(f"no cards of node {i}")
    cdef long long c = int64s(out_cards, (i + 1) * total, "out_cards")[i * total]
    cdef Py_ssize_t g = base + c
    if g < 0 or g >= min(Py_SIZE(devmem), Py_SIZE(used_num), Py_SIZE(used_mem), Py_SIZE(used_cores)):
        raise IndexError(f"card {g} out of range")
    cdef const long long *dm = int64s(devmem, g + 1, "devmem")
    cdef long long *un = <long long *> int64s(used_num, g + 1, "used_num")
    cdef long long *um = <long long *> int64s(used_mem, g + 1, "used_mem")
    cdef long long *uc = <long long *> int64s(used_cores, g + 1, "used_cores")
    cdef long long demand = dm[g] * pct // 100 if pct != C_PCT_UNSET else mem
    un[g] += 1
    um[g] += demand
    uc[g] += cores
    ver[i] += 1
    card_out[0] = c
    demand_out[0] = demand
    return 1


def charge_kept(
    array.array out_code,
    array.array fitted_ver,
    array.array out_cards,
    Py_ssize_t total,
    array.array node_flags,
    array.array node_ver,
    array.array devmem,
    array.array used_num,
    array.array used_mem,
    array.array used_cores,
    Py_ssize_t i,
    Py_ssize_t base,
    long long mem,
    long long pct,
    long long cores,
):
    # see fit.charge_kept
    cdef long long c = 0, demand = 0
    if not _charge_kept(
        out_code, fitted_ver, out_cards, total, node_flags, node_ver, devmem, used_num, used_mem,
        used_cores, i, base, mem, pct, cores, &c, &demand,
    ):
        return None
    return c, demand


# _Charge (vgpu.py) as commit_one builds it: the fields set directly, as its dataclass __init__
# would, while they are exactly these four and nothing runs after them; else the class is called
cdef object _new = object.__new__
cdef object _charge_class = None
cdef bint _charge_direct = False
cdef str _F_CARD = "card"
cdef str _F_MEM = "mem"
cdef str _F_CORES = "cores"
cdef str _F_SLOT = "mig_slot"


cdef object _charge(object kind, long long c, long long mem, long long cores):
    global _charge_class, _charge_direct
    if kind is not _charge_class:
        _charge_direct = (
            dataclasses.is_dataclass(kind)
            and tuple(f.name for f in dataclasses.fields(kind)) == ("card", "mem", "cores", "mig_slot")
            and not hasattr(kind, "__post_init__")
        )
        _charge_class = kind
    if not _charge_direct:
        return kind(c, mem, cores, None)
    ch = _new(kind)
    PyObject_GenericSetAttr(ch, _F_CARD, c)
    PyObject_GenericSetAttr(ch, _F_MEM, mem)
    PyObject_GenericSetAttr(ch, _F_CORES, cores)
    PyObject_GenericSetAttr(ch, _F_SLOT, None)
    return ch


def commit_one(
    array.array out_code,
    array.array fitted_ver,
    array.array out_cards,
    Py_ssize_t total,
    array.array node_flags,
    array.array node_ver,
    array.array devmem,
    array.array used_num,
    array.array used_mem,
    array.array used_cores,
    Py_ssize_t i,
    Py_ssize_t base,
    long long mem,
    long long pct,
    long long cores,
    dict pods,
    str uid,
    str namespace,
    object pod_annotations,
    dict group_cards,
    list uuids,
    object charge_class,
    dict bind,
    str node_name,
    str now,
    dict usage,
):
    # see fit.commit_one
    cdef long long c = 0, demand = 0
    if not _charge_kept(
        out_code, fitted_ver, out_cards, total, node_flags, node_ver, devmem, used_num, used_mem,
        used_cores, i, base, mem, pct, cores, &c, &demand,
    ):
        return None
    name = pod_annotations.get(_GROUP_NAME) or pod_annotations.get(_GROUP_NAME_VOLCANO) or ""
    cdef str group = f"{namespace}/{name}" if name else ""
    cdef object g, held
    if group and (demand or cores):
        g = base + c
        held = group_cards.get(group)
        if held is None:
            group_cards[group] = {g: 1}
        else:
            held[g] = held.get(g, 0) + 1
    pods[uid] = (group, [_charge(charge_class, c, demand, cores)])
    if c < 0 or c >= len(uuids):
        raise IndexError(f"card {c} of {len(uuids)}")
    cdef str ids = f"{uuids[c]},{_REQUEST_TYPE},{demand},{cores}:"
    if 0 <= demand <= _TOP and 0 <= cores <= _TOP:
        usage[uid] = (ids, (demand, cores))
    bind[_VGPU_NODE] = node_name
    bind[_VGPU_TIME] = now
    bind[_VGPU_IDS_NEW] = ids
    bind[_DEVICES_TO_ALLOCATE] = ids
    bind[_BIND_PHASE] = _BIND_PHASE_ALLOCATING
    bind[_BIND_TIME] = now
    return ids


def best_node(const long long[::1] out_code, const double[::1] out_score, Py_ssize_t lo, Py_ssize_t hi):
    cdef Py_ssize_t i, best = -1
    cdef double top = 0.0
    for i in range(lo, hi):
        if out_code[i] == C_FIT and (best < 0 or out_score[i] > top):
            best = i
            top = out_score[i]
    return best
