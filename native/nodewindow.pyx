# cython: language_level=3, boundscheck=False, wraparound=False
"""Compiled twin of scheduler/framework/nodewindow.py: the same functions, the same answers.

The placement cache calls these once per task (top_indices) or per scan (the window functions),
over a shape's per-node answer codes and its candidates' scores and Idle-fit flags.
"""

from cpython cimport array
from cpython.bytearray cimport PyByteArray_AS_STRING, PyByteArray_Check, PyByteArray_GET_SIZE
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_Check, PyBytes_GET_SIZE
from cpython.object cimport Py_SIZE

# The arrays are read through pointers after one type check per call: a typed memoryview cost
# ~0.3-0.4 us to acquire, and a one-pod job's scan and choice made about eight such calls.


cdef inline unsigned char *_u8(object b, Py_ssize_t *n) except NULL:
    """A bytearray's bytes (written in place) and its length."""
    if not PyByteArray_Check(b):
        raise TypeError("a bytearray is needed")
    n[0] = PyByteArray_GET_SIZE(b)
    return <unsigned char *> PyByteArray_AS_STRING(b)


cdef inline const unsigned char *_cu8(object b, Py_ssize_t *n) except NULL:
    """The bytes of a bytearray or bytes object (only read) and its length."""
    if PyBytes_Check(b):
        n[0] = PyBytes_GET_SIZE(b)
        return <const unsigned char *> PyBytes_AS_STRING(b)
    return _u8(b, n)


cdef inline double *_f64(object a, Py_ssize_t *n) except NULL:
    """A float64 array's values and its length (an empty one: an address never read)."""
    if not isinstance(a, array.array) or (<array.array> a).ob_descr.typecode != b'd':
        raise TypeError("a float64 array is needed")
    n[0] = Py_SIZE(a)
    return <double *> ((<array.array> a).data.as_voidptr if n[0] > 0 else <void *> a)


# The codes as C constants: compared against module globals, each byte read became a Python
# int, a global lookup and a rich comparison (9 us per 1,000-node window instead of ~1 us).
cdef enum:
    C_UNKNOWN = 0
    C_FIT = 1
    C_REFUSED = 2

UNKNOWN = C_UNKNOWN
FIT = C_FIT
REFUSED = C_REFUSED


def window_stop(object codes, Py_ssize_t start, Py_ssize_t want, Py_ssize_t pos, Py_ssize_t found):
    cdef Py_ssize_t total
    cdef const unsigned char *c8 = _cu8(codes, &total)
    cdef Py_ssize_t i
    cdef unsigned char c
    while pos < total:
        i = start + pos
        if i >= total:
            i -= total
        c = c8[i]
        if c == C_UNKNOWN:
            return pos, found, False
        pos += 1
        if c == C_FIT:
            found += 1
            if found >= want:
                return pos, found, True
    return pos, found, True


def to_ask(object codes, Py_ssize_t start, Py_ssize_t pos, Py_ssize_t need):
    cdef Py_ssize_t total
    cdef const unsigned char *c8 = _cu8(codes, &total)
    cdef Py_ssize_t i
    cdef unsigned char c
    cdef list out = []
    while pos < total and need > 0:
        i = start + pos
        if i >= total:
            i -= total
        c = c8[i]
        if c != C_REFUSED:
            if c == C_UNKNOWN:
                out.append(i)
            need -= 1
        pos += 1
    return out


def window_nodes(object codes, Py_ssize_t start, Py_ssize_t end, list nodes):
    cdef Py_ssize_t total
    cdef const unsigned char *c8 = _cu8(codes, &total)
    cdef Py_ssize_t pos, i
    cdef list fits = []
    cdef list at = []
    cdef list refused = []
    for pos in range(end):
        i = start + pos
        if i >= total:
            i -= total
        if c8[i] == C_FIT:
            fits.append(nodes[i])
            at.append(i)
        else:
            refused.append(i)
    return fits, at, refused


def gather_scores(object values, object known, list at, object out):
    cdef Py_ssize_t nv, nk, no
    cdef const double *v = _f64(values, &nv)
    cdef const unsigned char *kn = _cu8(known, &nk)
    cdef double *o = _f64(out, &no)
    cdef Py_ssize_t k, i
    cdef Py_ssize_t n = len(at)
    cdef list missing = []
    for k in range(n):
        i = at[k]
        if kn[i]:
            o[k] = v[i]
        else:
            missing.append(k)
    return missing


def gather_flags(object codes, list at, object out):
    cdef Py_ssize_t nc, no
    cdef const unsigned char *c8 = _cu8(codes, &nc)
    cdef unsigned char *o = _u8(out, &no)
    cdef Py_ssize_t k, i
    cdef Py_ssize_t n = len(at)
    cdef unsigned char c
    cdef list missing = []
    for k in range(n):
        i = at[k]
        c = c8[i]
        if c == C_UNKNOWN:
            missing.append(k)
        o[k] = 1 if c == C_FIT else 0
    return missing


def gather_scores_run(object values, object known, Py_ssize_t start, object out):
    cdef Py_ssize_t nv, total, n
    cdef const double *v = _f64(values, &nv)
    cdef const unsigned char *kn = _cu8(known, &total)
    cdef double *o = _f64(out, &n)
    cdef Py_ssize_t k, i
    cdef list missing = []
    if n == 0:
        return missing
    i = start % total  # then stepped round the ring: no division per position
    for k in range(n):
        if kn[i]:
            o[k] = v[i]
        else:
            missing.append(k)
        i += 1
        if i == total:
            i = 0
    return missing


def gather_flags_run(object codes, Py_ssize_t start, object out):
    cdef Py_ssize_t total, n
    cdef const unsigned char *c8 = _cu8(codes, &total)
    cdef unsigned char *o = _u8(out, &n)
    cdef Py_ssize_t k, i
    cdef unsigned char c
    cdef list missing = []
    if n == 0:
        return missing
    i = start % total
    for k in range(n):
        c = c8[i]
        if c == C_UNKNOWN:
            missing.append(k)
        o[k] = 1 if c == C_FIT else 0
        i += 1
        if i == total:
            i = 0
    return missing


cdef bint _only(const unsigned char *flags, Py_ssize_t n) noexcept:
    """Whether some but not all positions are flagged (then only the flagged ones count)."""
    cdef Py_ssize_t i
    cdef Py_ssize_t nflag = 0
    for i in range(n):
        if flags[i]:
            nflag += 1
    return 0 < nflag < n


def top_indices(object scores, object flags):
    got = top_ties(scores, flags)
    if got is None:
        return None
    cdef Py_ssize_t n, nf
    cdef const double *s = _f64(scores, &n)
    cdef const unsigned char *f = _cu8(flags, &nf)
    cdef Py_ssize_t count = got[0]
    cdef Py_ssize_t first = got[1]
    cdef double m = got[2]
    cdef bint only = got[3]
    cdef Py_ssize_t i
    cdef list out = []
    if count == 0:
        return out
    for i in range(first, n):
        if (not only or f[i]) and s[i] == m:
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


def top_ties(object scores, object flags):
    cdef Py_ssize_t n, nf
    cdef const double *s = _f64(scores, &n)
    cdef const unsigned char *f = _cu8(flags, &nf)
    cdef Py_ssize_t i
    cdef Top t = Top(0.0, -1, 0)
    cdef bint only = _only(f, n)
    for i in range(n):
        if only and not f[i]:
            continue
        _fold(&t, s[i], i)
    return _ties(t, only)


def nth_tie(object scores, object flags, double top, bint only, Py_ssize_t k):
    cdef Py_ssize_t n, nf
    cdef const double *s = _f64(scores, &n)
    cdef const unsigned char *f = _cu8(flags, &nf)
    cdef Py_ssize_t i
    for i in range(n):
        if (not only or f[i]) and s[i] == top:
            if k == 0:
                return i
            k -= 1
    raise IndexError(k)


def run_missing(object codes, object known, Py_ssize_t start, Py_ssize_t n):
    cdef Py_ssize_t total, nk
    cdef const unsigned char *c8 = _cu8(codes, &total)
    cdef const unsigned char *kn = _cu8(known, &nk)
    cdef Py_ssize_t k, i
    cdef list fits = []
    cdef list scores = []
    if n <= 0:
        return fits, scores
    i = start % total  # then stepped round the ring: no division per position
    for k in range(n):
        if c8[i] == C_UNKNOWN:
            fits.append(i)
        if not kn[i]:
            scores.append(i)
        i += 1
        if i == total:
            i = 0
    return fits, scores


def run_top(object values, object codes, Py_ssize_t start, Py_ssize_t n):
    cdef Py_ssize_t nv, total
    cdef const double *v = _f64(values, &nv)
    cdef const unsigned char *c8 = _cu8(codes, &total)
    cdef Py_ssize_t k, i
    cdef Py_ssize_t nflag = 0
    cdef Top t = Top(0.0, -1, 0)
    cdef bint only
    if n > 0:
        i = start % total
        for k in range(n):
            if c8[i] == C_FIT:
                nflag += 1
            i += 1
            if i == total:
                i = 0
    only = 0 < nflag < n
    if n > 0:
        i = start % total
        for k in range(n):
            if not only or c8[i] == C_FIT:
                _fold(&t, v[i], k)
            i += 1
            if i == total:
                i = 0
    return _ties(t, only)


def run_nth_tie(object values, object codes, Py_ssize_t start, Py_ssize_t n, double top, bint only,
                Py_ssize_t k):
    cdef Py_ssize_t nv, total
    cdef const double *v = _f64(values, &nv)
    cdef const unsigned char *c8 = _cu8(codes, &total)
    cdef Py_ssize_t p, i
    if n > 0:
        i = start % total
        for p in range(n):
            if (not only or c8[i] == C_FIT) and v[i] == top:
                if k == 0:
                    return p
                k -= 1
            i += 1
            if i == total:
                i = 0
    raise IndexError(k)


def forget(object codes, list at):
    cdef Py_ssize_t total
    cdef unsigned char *c8 = _u8(codes, &total)
    cdef Py_ssize_t k, i
    cdef Py_ssize_t n = len(at)
    for k in range(n):
        i = at[k]
        if i < 0 or i >= total:
            raise IndexError(f"position {i} out of range")
        c8[i] = C_UNKNOWN


def take(list nodes, list at):
    """[nodes[i] for i in at], in C: a shape's ask gathers the nodes changed since its last
    window from scattered positions."""
    cdef Py_ssize_t k, i, total = len(nodes), n = len(at)
    cdef list out = [None] * n
    for k in range(n):
        i = at[k]
        if i < 0 or i >= total:
            raise IndexError(f"position {i} out of range")
        out[k] = nodes[i]
    return out


def settle(object codes, list at, list got):
    """Write the answers `got` of the nodes at positions `at` (None: FIT, anything else: REFUSED)
    and return the places k in `got` of the refusals, in order."""
    cdef Py_ssize_t total
    cdef unsigned char *c8 = _u8(codes, &total)
    cdef Py_ssize_t k, i, n = len(at)
    cdef list refused = []
    if len(got) != n:
        raise ValueError("at and got differ in length")
    for k in range(n):
        i = at[k]
        if i < 0 or i >= total:
            raise IndexError(f"position {i} out of range")
        if got[k] is None:
            c8[i] = C_FIT
        else:
            c8[i] = C_REFUSED
            refused.append(k)
    return refused


def zeros_at(object flags, list at):
    """The places k in `at` whose position's flag is 0, in C: a plugin's nodes by position."""
    cdef Py_ssize_t total
    cdef const unsigned char *f8 = _cu8(flags, &total)
    cdef Py_ssize_t k, i, n = len(at)
    cdef list out = []
    for k in range(n):
        i = at[k]
        if i < 0 or i >= total:
            raise IndexError(f"position {i} out of range")
        if not f8[i]:
            out.append(k)
    return out
