# cython: language_level=3, boundscheck=False, wraparound=False
"""Compiled twin of scheduler/framework/nodewindow.py: the same functions, the same answers.

The placement cache calls these once per task (top_indices) or per scan (the window functions),
over a shape's per-node answer codes and its candidates' scores and Idle-fit flags.
"""

# The codes as C constants: compared against module globals, each byte read became a Python
# int, a global lookup and a rich comparison (9 us per 1,000-node window instead of ~1 us).
cdef enum:
    C_UNKNOWN = 0
    C_FIT = 1
    C_REFUSED = 2

UNKNOWN = C_UNKNOWN
FIT = C_FIT
REFUSED = C_REFUSED


def window_stop(const unsigned char[:] codes, Py_ssize_t start, Py_ssize_t want, Py_ssize_t pos,
                Py_ssize_t found):
    cdef Py_ssize_t total = codes.shape[0]
    cdef Py_ssize_t i
    cdef unsigned char c
    while pos < total:
        i = start + pos
        if i >= total:
            i -= total
        c = codes[i]
        if c == C_UNKNOWN:
            return pos, found, False
        pos += 1
        if c == C_FIT:
            found += 1
            if found >= want:
                return pos, found, True
    return pos, found, True


def to_ask(const unsigned char[:] codes, Py_ssize_t start, Py_ssize_t pos, Py_ssize_t need):
    cdef Py_ssize_t total = codes.shape[0]
    cdef Py_ssize_t i
    cdef unsigned char c
    cdef list out = []
    while pos < total and need > 0:
        i = start + pos
        if i >= total:
            i -= total
        c = codes[i]
        if c != C_REFUSED:
            if c == C_UNKNOWN:
                out.append(i)
            need -= 1
        pos += 1
    return out


def window_nodes(const unsigned char[:] codes, Py_ssize_t start, Py_ssize_t end, list nodes):
    cdef Py_ssize_t total = codes.shape[0]
    cdef Py_ssize_t pos, i
    cdef list fits = []
    cdef list at = []
    cdef list refused = []
    for pos in range(end):
        i = start + pos
        if i >= total:
            i -= total
        if codes[i] == C_FIT:
            fits.append(nodes[i])
            at.append(i)
        else:
            refused.append(i)
    return fits, at, refused


def gather_scores(const double[:] values, const unsigned char[:] known, list at, double[:] out):
    cdef Py_ssize_t k, i
    cdef Py_ssize_t n = len(at)
    cdef list missing = []
    for k in range(n):
        i = at[k]
        if known[i]:
            out[k] = values[i]
        else:
            missing.append(k)
    return missing


def gather_flags(const unsigned char[:] codes, list at, unsigned char[:] out):
    cdef Py_ssize_t k, i
    cdef Py_ssize_t n = len(at)
    cdef unsigned char c
    cdef list missing = []
    for k in range(n):
        i = at[k]
        c = codes[i]
        if c == C_UNKNOWN:
            missing.append(k)
        out[k] = 1 if c == C_FIT else 0
    return missing


def gather_scores_run(const double[:] values, const unsigned char[:] known, Py_ssize_t start,
                      double[:] out):
    cdef Py_ssize_t total = known.shape[0]
    cdef Py_ssize_t n = out.shape[0]
    cdef Py_ssize_t k, i
    cdef list missing = []
    if n == 0:
        return missing
    i = start % total  # then stepped round the ring: no division per position
    for k in range(n):
        if known[i]:
            out[k] = values[i]
        else:
            missing.append(k)
        i += 1
        if i == total:
            i = 0
    return missing


def gather_flags_run(const unsigned char[:] codes, Py_ssize_t start, unsigned char[:] out):
    cdef Py_ssize_t total = codes.shape[0]
    cdef Py_ssize_t n = out.shape[0]
    cdef Py_ssize_t k, i
    cdef unsigned char c
    cdef list missing = []
    if n == 0:
        return missing
    i = start % total
    for k in range(n):
        c = codes[i]
        if c == C_UNKNOWN:
            missing.append(k)
        out[k] = 1 if c == C_FIT else 0
        i += 1
        if i == total:
            i = 0
    return missing


cdef bint _only(const unsigned char[:] flags, Py_ssize_t n):
    """Whether some but not all positions are flagged (then only the flagged ones count)."""
    cdef Py_ssize_t i
    cdef Py_ssize_t nflag = 0
    for i in range(n):
        if flags[i]:
            nflag += 1
    return 0 < nflag < n


def top_indices(const double[:] scores, const unsigned char[:] flags):
    got = top_ties(scores, flags)
    if got is None:
        return None
    cdef Py_ssize_t count = got[0]
    cdef Py_ssize_t first = got[1]
    cdef double m = got[2]
    cdef bint only = got[3]
    cdef Py_ssize_t i
    cdef list out = []
    if count == 0:
        return out
    for i in range(first, scores.shape[0]):
        if (not only or flags[i]) and scores[i] == m:
            out.append(i)
    return out


cdef struct Top:
    double m
    Py_ssize_t first
    Py_ssize_t count


cdef inline void _fold(Top* t, double v, Py_ssize_t pos) noexcept nogil:
    """Count value `v` at `pos` into the running top (a NaN first value stays the top, as max does)."""
    if t.first < 0 or v > t.m:
        t.m = v
        t.first = pos
        t.count = 1
    elif v == t.m:
        t.count += 1


cdef object _ties(Top t, bint only):
    """top_ties' answer from the folded top: None when the top is NaN."""
    if t.first >= 0 and t.m != t.m:
        return None
    return t.count, t.first, t.m, only


def top_ties(const double[:] scores, const unsigned char[:] flags):
    cdef Py_ssize_t n = scores.shape[0]
    cdef Py_ssize_t i
    cdef Top t = Top(0.0, -1, 0)
    cdef bint only = _only(flags, n)
    for i in range(n):
        if only and not flags[i]:
            continue
        _fold(&t, scores[i], i)
    return _ties(t, only)


def nth_tie(const double[:] scores, const unsigned char[:] flags, double top, bint only, Py_ssize_t k):
    cdef Py_ssize_t n = scores.shape[0]
    cdef Py_ssize_t i
    for i in range(n):
        if (not only or flags[i]) and scores[i] == top:
            if k == 0:
                return i
            k -= 1
    raise IndexError(k)


def run_missing(const unsigned char[:] codes, const unsigned char[:] known, Py_ssize_t start,
                Py_ssize_t n):
    cdef Py_ssize_t total = codes.shape[0]
    cdef Py_ssize_t k, i
    cdef list fits = []
    cdef list scores = []
    if n <= 0:
        return fits, scores
    i = start % total  # then stepped round the ring: no division per position
    for k in range(n):
        if codes[i] == C_UNKNOWN:
            fits.append(i)
        if not known[i]:
            scores.append(i)
        i += 1
        if i == total:
            i = 0
    return fits, scores


def run_top(const double[:] values, const unsigned char[:] codes, Py_ssize_t start, Py_ssize_t n):
    cdef Py_ssize_t total = codes.shape[0]
    cdef Py_ssize_t k, i
    cdef Py_ssize_t nflag = 0
    cdef Top t = Top(0.0, -1, 0)
    cdef bint only
    if n > 0:
        i = start % total
        for k in range(n):
            if codes[i] == C_FIT:
                nflag += 1
            i += 1
            if i == total:
                i = 0
    only = 0 < nflag < n
    if n > 0:
        i = start % total
        for k in range(n):
            if not only or codes[i] == C_FIT:
                _fold(&t, values[i], k)
            i += 1
            if i == total:
                i = 0
    return _ties(t, only)


def run_nth_tie(const double[:] values, const unsigned char[:] codes, Py_ssize_t start, Py_ssize_t n,
                double top, bint only, Py_ssize_t k):
    cdef Py_ssize_t total = codes.shape[0]
    cdef Py_ssize_t p, i
    if n > 0:
        i = start % total
        for p in range(n):
            if (not only or codes[i] == C_FIT) and values[i] == top:
                if k == 0:
                    return p
                k -= 1
            i += 1
            if i == total:
                i = 0
    raise IndexError(k)


def forget(unsigned char[:] codes, list at):
    cdef Py_ssize_t k, i
    cdef Py_ssize_t n = len(at)
    cdef Py_ssize_t total = codes.shape[0]
    for k in range(n):
        i = at[k]
        if i < 0 or i >= total:
            raise IndexError(f"position {i} out of range")
        codes[i] = C_UNKNOWN
