# cython: language_level=3, boundscheck=False, wraparound=False
"""Compiled twin of scheduler/plugins/k8s/cpumemscore.py: the same scores, the same slots.

The score is computed here with C integers and doubles when every input is a non-negative value
below 2**52 (then int(), the additions, the floor divisions and the true divisions of the Python
arithmetic give the same numbers in C); any other node is left to `compute`, the Python function.
"""

cdef double _SAFE = 4503599627370496.0  # 2**52


cdef inline bint _safe(double v):
    return 0.0 <= v < _SAFE


cdef long long _score(double acpu, double amem, double rcpu, double rmem,
                      long long wl, long long wm, long long wb):
    """noderesources.resource_scores for a request without GPU."""
    cdef long long ac = <long long>acpu
    cdef long long am = <long long>amem
    cdef long long rc = <long long>rcpu
    cdef long long rm = <long long>rmem
    cdef long long s = 0
    cdef long long score, weights
    cdef double std, fc, fm
    if wl:
        score = 0
        weights = 0
        if ac != 0:
            score += (0 if rc > ac else (ac - rc) * 100 // ac) * 50
            weights += 50
        if am != 0:
            score += (0 if rm > am else (am - rm) * 100 // am) * 50
            weights += 50
        s += wl * (score // weights if weights else 0)
    if wm:
        score = 0
        weights = 0
        if ac != 0:
            score += (rc if rc < ac else ac) * 100 // ac
            weights += 1
        if am != 0:
            score += (rm if rm < am else am) * 100 // am
            weights += 1
        s += wm * (score // weights if weights else 0)
    if wb:
        if ac != 0 and am != 0:
            fc = <double>rc / <double>ac
            fm = <double>rm / <double>am
            if fc > 1.0:
                fc = 1.0
            if fm > 1.0:
                fm = 1.0
            std = (fc - fm) / 2
            if std < 0:
                std = -std
        else:
            std = 0.0
        s += wb * <long long>((1 - std) * 100)
    return s


def scores(dict slots, list nodes, req_cpu, req_mem, long long wl, long long wm, long long wb,
           long long taint, compute):
    cdef list out = []
    cdef bint weighted = wl != 0 or wm != 0 or wb != 0
    cdef double rc = req_cpu
    cdef double rm = req_mem
    cdef bint req_safe = _safe(rc) and _safe(rm)
    cdef double ucpu, umem, acpu, amem
    cdef long long s
    for node in nodes:
        used = node.used
        ucpu_o = used.milli_cpu
        umem_o = used.memory
        key = (ucpu_o, umem_o, req_cpu, req_mem)
        name = node.name
        alloc = node.allocatable
        slot = slots.get(name)
        if slot is not None and slot[0] is alloc and slot[1] == key:
            out.append(slot[2])
            continue
        if not weighted:
            got = taint
        else:
            ucpu = ucpu_o
            umem = umem_o
            acpu = alloc.milli_cpu
            amem = alloc.memory
            if req_safe and _safe(ucpu) and _safe(umem) and _safe(acpu) and _safe(amem):
                s = _score(acpu, amem, ucpu + rc, umem + rm, wl, wm, wb)
                got = s + taint if taint else s
            else:
                got = compute(node)
        slots[name] = (alloc, key, got)
        out.append(got)
    return out
