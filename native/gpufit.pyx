# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Compiled twin of scheduler/plugins/deviceshare/fit.py: vGPU fit and score over flat card arrays.

Same function, same arguments, same answers (tests/native proves it on random inputs); see the
Python module for the layout and the rules. Only the inner loops differ: the per-node working
copy and the card order live in C scratch buffers instead of Python lists.
"""

from cpython cimport array
from cpython.object cimport Py_SIZE
from libc.stdlib cimport free, malloc

FIT = 0
TOO_MANY_CARDS = 1
NOT_FITTED = 2
NEEDS_PYTHON = 3
POLICY_NONE = 0
POLICY_BINPACK = 1
POLICY_SPREAD = 2
PCT_UNSET = 101

IMPLEMENTATION = "native"

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
            if (un[c] >= count[g] or dm - um[c] < demand or uc[c] + cores > 100
                    or (cores == 100 and un[c] > 0) or (uc[c] == 100 and cores == 0)):
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


cdef inline const long long *_p(const long long[::1] a) noexcept nogil:
    # the first element's address; NULL for an empty view (a node without cards reads none)
    return NULL if a.shape[0] == 0 else &a[0]


cdef long long *_scratch(Py_ssize_t maxn) except NULL:
    cdef long long *buf = <long long *> malloc(sizeof(long long) * (5 * maxn + 1))
    if buf == NULL:
        raise MemoryError()
    return buf


def fit_nodes(
    const long long[::1] starts,
    const long long[::1] node_flags,
    const long long[::1] count,
    const long long[::1] devmem,
    const long long[::1] used_num,
    const long long[::1] used_mem,
    const long long[::1] used_cores,
    const long long[::1] usable,
    const long long[::1] req,
    int policy,
    Py_ssize_t lo,
    Py_ssize_t hi,
    long long[::1] out_code,
    double[::1] out_score,
    long long[::1] out_cards,
):
    cdef Py_ssize_t n_req = req.shape[0] // 4
    cdef Py_ssize_t i, k, maxn = 0
    cdef long long total = 0
    cdef int code, fitting = 0
    cdef double score
    for k in range(n_req):
        total += req[4 * k]
    for i in range(lo, hi):
        if starts[i + 1] - starts[i] > maxn:
            maxn = starts[i + 1] - starts[i]
    cdef const long long *ps = _p(starts)
    cdef const long long *pc = _p(count)
    cdef const long long *pd = _p(devmem)
    cdef const long long *pn = _p(used_num)
    cdef const long long *pm = _p(used_mem)
    cdef const long long *pu = _p(used_cores)
    cdef const long long *pk = _p(usable)
    cdef const long long *pr = _p(req)
    cdef long long *buf = _scratch(maxn)
    try:
        with nogil:
            for i in range(lo, hi):
                out_score[i] = 0.0
                if node_flags[i] != 0:
                    out_code[i] = C_NEEDS_PYTHON
                    continue
                code = _fit_node(i, ps, pc, pd, pn, pm, pu, pk, pr, n_req, policy, buf, maxn, &score,
                                 &out_cards[(i - lo) * total])
                out_code[i] = code
                if code == C_FIT:
                    out_score[i] = score
                    fitting += 1
    finally:
        free(buf)
    return fitting


def fit_listed(
    const long long[::1] starts,
    const long long[::1] node_flags,
    const long long[::1] count,
    const long long[::1] devmem,
    const long long[::1] used_num,
    const long long[::1] used_mem,
    const long long[::1] used_cores,
    const long long[::1] usable,
    const long long[::1] req,
    int policy,
    const long long[::1] nodes,
    long long[::1] out_code,
    double[::1] out_score,
    long long[::1] out_cards,
):
    # node i's chosen cards go to out_cards[i * total ...], where fit_nodes over 0..n puts them
    cdef Py_ssize_t n_req = req.shape[0] // 4
    cdef Py_ssize_t i, k, m, maxn = 0
    cdef long long total = 0
    cdef int code, fitting = 0
    cdef double score
    for k in range(n_req):
        total += req[4 * k]
    for m in range(nodes.shape[0]):
        i = nodes[m]
        if i < 0 or i + 1 >= starts.shape[0] or i >= out_code.shape[0] or i >= out_score.shape[0]:
            raise IndexError(f"node {i} out of range")
        if (i + 1) * total > out_cards.shape[0] or out_cards.shape[0] == 0:
            raise IndexError(f"no room for node {i}'s cards")
        if starts[i + 1] - starts[i] > maxn:
            maxn = starts[i + 1] - starts[i]
    cdef const long long *ps = _p(starts)
    cdef const long long *pc = _p(count)
    cdef const long long *pd = _p(devmem)
    cdef const long long *pn = _p(used_num)
    cdef const long long *pm = _p(used_mem)
    cdef const long long *pu = _p(used_cores)
    cdef const long long *pk = _p(usable)
    cdef const long long *pr = _p(req)
    cdef long long *buf = _scratch(maxn)
    try:
        with nogil:
            for m in range(nodes.shape[0]):
                i = nodes[m]
                out_score[i] = 0.0
                if node_flags[i] != 0:
                    out_code[i] = C_NEEDS_PYTHON
                    continue
                code = _fit_node(i, ps, pc, pd, pn, pm, pu, pk, pr, n_req, policy, buf, maxn, &score,
                                 &out_cards[i * total])
                out_code[i] = code
                if code == C_FIT:
                    out_score[i] = score
                    fitting += 1
    finally:
        free(buf)
    return fitting


def best_node(const long long[::1] out_code, const double[::1] out_score, Py_ssize_t lo, Py_ssize_t hi):
    cdef Py_ssize_t i, best = -1
    cdef double top = 0.0
    for i in range(lo, hi):
        if out_code[i] == C_FIT and (best < 0 or out_score[i] > top):
            best = i
            top = out_score[i]
    return best


cdef inline const long long *_q(array.array a, Py_ssize_t need, str what) except NULL:
    # an int64 array of at least `need` entries, as a pointer (never NULL: the except value)
    if a.ob_descr.itemsize != 8 or a.ob_descr.typecode == b'd':
        raise TypeError(f"{what}: an int64 array is needed")
    if Py_SIZE(a) < need:
        raise IndexError(f"{what}: {Py_SIZE(a)} entries, {need} needed")
    return <const long long *> a.data.as_voidptr if need > 0 else &_ONE


cdef long long _ONE = 0


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
    cdef Py_ssize_t m, i, k, maxn = 0, n_at = len(nodes)
    cdef Py_ssize_t n_req = Py_SIZE(req) // 4
    cdef long long total = 0
    cdef int code, misfits = 0
    cdef double score
    cdef object got
    if n_nodes < 0:
        raise IndexError("starts is empty")
    if out_score.ob_descr.typecode != b'd':
        raise TypeError("out_score: a float64 array is needed")
    cdef const long long *ps = _q(starts, n_nodes + 1, "starts")
    cdef const long long *pf = _q(node_flags, n_nodes, "node_flags")
    cdef Py_ssize_t n_cards = ps[n_nodes]
    cdef const long long *pc = _q(count, n_cards, "count")
    cdef const long long *pd = _q(devmem, n_cards, "devmem")
    cdef const long long *pn = _q(used_num, n_cards, "used_num")
    cdef const long long *pm = _q(used_mem, n_cards, "used_mem")
    cdef const long long *pu = _q(used_cores, n_cards, "used_cores")
    cdef const long long *pk = _q(usable, n_cards, "usable")
    cdef const long long *pr = _q(req, 4 * n_req, "req")
    cdef const long long *pv = _q(node_ver, n_nodes, "node_ver")
    cdef long long *pw = <long long *> _q(fitted_ver, n_nodes, "fitted_ver")
    cdef long long *po = <long long *> _q(out_code, n_nodes, "out_code")
    if Py_SIZE(out_score) < n_nodes:
        raise IndexError("out_score is shorter than the nodes")
    cdef double *pscore = out_score.data.as_doubles
    for k in range(n_req):
        total += pr[4 * k]
    cdef long long *pcards = <long long *> _q(out_cards, max(n_nodes * total, 1), "out_cards")
    cdef Py_ssize_t *at = <Py_ssize_t *> malloc(sizeof(Py_ssize_t) * (n_at + 1))
    if at == NULL:
        raise MemoryError()
    cdef long long *buf = NULL
    try:
        for m in range(n_at):
            got = nodes[m] if at_of is None else at_of.get(nodes[m])
            if got is None:
                return -1
            i = got
            if i < 0 or i >= n_nodes:
                raise IndexError(f"node {i} out of range")
            at[m] = i
            if ps[i + 1] - ps[i] > maxn:
                maxn = ps[i + 1] - ps[i]
        buf = _scratch(maxn)
        with nogil:
            for m in range(n_at):
                i = at[m]
                if pw[i] != pv[i]:
                    pscore[i] = 0.0
                    if pf[i] != 0:
                        po[i] = C_NEEDS_PYTHON
                    else:
                        code = _fit_node(i, ps, pc, pd, pn, pm, pu, pk, pr, n_req, policy, buf, maxn,
                                         &score, &pcards[i * total])
                        po[i] = code
                        if code == C_FIT:
                            pscore[i] = score
                    pw[i] = pv[i]
                if po[i] != C_FIT:
                    misfits += 1
    finally:
        free(at)
        free(buf)
    return misfits
