# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Compiled twin of scheduler/plugins/deviceshare/npufit.py: HAMi Ascend fit and score over flat chip arrays.

Same function, same arguments, same answers (tests/native proves it on random inputs); see the
Python module for the layout and the rules. Only the inner loops differ: the chip scores, the
scan order and the taken chips live in C scratch buffers instead of Python lists and sets.
"""

from cpython cimport array
from cpython.object cimport Py_SIZE

from int64arrays cimport int64s
from libc.stdlib cimport free, malloc

FIT = 0
TOO_MANY_CHIPS = 1
NOT_FITTED = 2
NEEDS_PYTHON = 3
NO_HAMI_CORE = 4
TOPOLOGY = 1
HAMI_CORE = 2
POLICY_NONE = 0
POLICY_BINPACK = 1
POLICY_SPREAD = 2
NO_MEMORY = -1

IMPLEMENTATION = "native"


cdef inline double _chip_score(int policy, long long devmem, long long used, long long used_mem) noexcept nogil:
    if devmem == 0:
        return 0.0
    if policy == 1:
        return 100.0 * <double>used_mem / <double>devmem
    if policy == 2:
        return 100.0 if used == 0 else 0.0
    return 0.0


cdef inline bint _refuses(
    long long count, long long devmem, long long devcore, long long used, long long used_mem,
    long long used_cores, long long mem, long long cores, int hami_core,
) noexcept nogil:
    if count <= used or devmem - used_mem < mem:
        return True
    cdef long long total = 100 if hami_core else devcore
    if total - used_cores < cores:
        return True
    if total == 100 and cores == 100 and used > 0:
        return True
    return total != 0 and used_cores == total and cores == 0


def fit_nodes(
    array.array a_starts,
    array.array a_node_flags,
    array.array a_count,
    array.array a_devmem,
    array.array a_devcore,
    array.array a_used,
    array.array a_used_mem,
    array.array a_used_cores,
    array.array a_usable,
    array.array a_req,
    int hami_core,
    int policy,
    array.array a_templates,
    long long mem_allocatable,
    long long mem_capacity,
    Py_ssize_t lo,
    Py_ssize_t hi,
    array.array a_out_code,
    array.array a_out_score,
    array.array a_out_chips,
):
    # int64 arrays (array('q')), read through pointers: typed memoryviews cost ~0.2 us each to
    # acquire, ~4 us a call for these twenty arguments, and a node's fit is called per node
    if lo < 0 or hi < lo:
        raise IndexError(f"nodes {lo}..{hi} are not a range")
    cdef Py_ssize_t n_req = Py_SIZE(a_req) // 3
    cdef Py_ssize_t n_tmpl = Py_SIZE(a_templates)
    cdef Py_ssize_t i, k, c, j, t, n, base, g, slot, nord, maxn = 0
    cdef long long total = 0, nums, mem, cores, m, d, got
    cdef long long flags
    cdef int code, fitting = 0
    cdef double score, s
    cdef const long long *starts = int64s(a_starts, hi + 1, "starts")
    cdef Py_ssize_t n_chips = starts[hi]
    cdef const long long *node_flags = int64s(a_node_flags, hi, "node_flags")
    cdef const long long *count = int64s(a_count, n_chips, "count")
    cdef const long long *devmem = int64s(a_devmem, n_chips, "devmem")
    cdef const long long *devcore = int64s(a_devcore, n_chips, "devcore")
    cdef const long long *used = int64s(a_used, n_chips, "used")
    cdef const long long *used_mem = int64s(a_used_mem, n_chips, "used_mem")
    cdef const long long *used_cores = int64s(a_used_cores, n_chips, "used_cores")
    cdef const long long *usable = int64s(a_usable, n_chips, "usable")
    cdef const long long *req = int64s(a_req, 3 * n_req, "req")
    cdef const long long *templates = int64s(a_templates, n_tmpl, "templates")
    cdef long long *out_code = <long long *> int64s(a_out_code, hi, "out_code")
    if a_out_score.ob_descr.typecode != b'd' or Py_SIZE(a_out_score) < hi:
        raise TypeError(f"out_score: a float64 array of at least {hi} entries is needed")
    cdef double *out_score = a_out_score.data.as_doubles
    for k in range(n_req):
        total += req[3 * k]
    cdef long long *out_chips = <long long *> int64s(a_out_chips, (hi - lo) * total, "out_chips")
    for i in range(lo, hi):
        if starts[i + 1] - starts[i] > maxn:
            maxn = starts[i + 1] - starts[i]
    cdef double *sc = <double *> malloc(sizeof(double) * (maxn + 1))
    cdef long long *buf = <long long *> malloc(sizeof(long long) * (2 * maxn + 1))
    if sc == NULL or buf == NULL:
        free(sc)
        free(buf)
        raise MemoryError()
    cdef long long *order = buf
    cdef long long *taken = buf + maxn
    try:
        with nogil:
            for i in range(lo, hi):
                out_score[i] = 0.0
                flags = node_flags[i]
                if flags & 1:
                    out_code[i] = 3
                    continue
                if hami_core and not (flags & 2):
                    out_code[i] = 4
                    continue
                base = starts[i]
                n = starts[i + 1] - base
                if total > n:
                    out_code[i] = 1
                    continue
                # usable chips by descending score, ties by index (a stable insertion sort)
                nord = 0
                for c in range(n):
                    g = base + c
                    sc[c] = _chip_score(policy, devmem[g], used[g], used_mem[g])
                    taken[c] = 0
                    if not usable[g]:
                        continue
                    j = nord
                    while j > 0 and sc[order[j - 1]] < sc[c]:
                        order[j] = order[j - 1]
                        j -= 1
                    order[j] = c
                    nord += 1
                code = 0
                score = 0.0
                slot = (i - lo) * total
                for k in range(n_req):
                    nums = req[3 * k]
                    mem = req[3 * k + 1]
                    cores = req[3 * k + 2]
                    got = 0
                    for j in range(nord):
                        if got == nums:
                            break
                        c = order[j]
                        if taken[c]:
                            continue
                        g = base + c
                        m = mem if mem != 0 else devmem[g]
                        if hami_core:
                            d = m
                        else:
                            d = -1
                            for t in range(n_tmpl):
                                if m <= templates[t]:
                                    d = templates[t]
                                    break
                            if d == -1 and m <= mem_capacity:
                                d = mem_allocatable
                        if d == -1 or _refuses(count[g], devmem[g], devcore[g], used[g], used_mem[g],
                                               used_cores[g], d, cores, hami_core):
                            continue
                        taken[c] = 1
                        score += sc[c]
                        out_chips[slot] = c
                        slot += 1
                        got += 1
                    if got < nums:
                        code = 2
                        break
                out_code[i] = code
                if code == 0:
                    out_score[i] = score
                    fitting += 1
    finally:
        free(sc)
        free(buf)
    return fitting

