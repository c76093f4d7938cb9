# cython: language_level=3, boundscheck=False, wraparound=False
"""Compiled twin of scheduler/model/resfit.py: the same answers, from C doubles.

Resource holds Python floats, and float arithmetic and comparisons are the C double ones, so
Resource.fits_future and Resource.less_equal computed here give the same booleans. A request or
node whose values are not all exact floats (an int set by hand), or a request of more than
MAX_SCALARS scalars, is asked through the Resource method itself.
"""

from cpython cimport array
from cpython.bytearray cimport PyByteArray_AS_STRING, PyByteArray_Check, PyByteArray_GET_SIZE
from cpython.dict cimport PyDict_GetItem
from cpython.float cimport PyFloat_AS_DOUBLE, PyFloat_CheckExact
from cpython.object cimport Py_SIZE, PyObject

DEF MAX_SCALARS = 16
cdef double EPSILON = 0.1
# a value that is not an exact float: the caller asks Python
cdef int _ASK = 2


# The rows' arrays are read through pointers after one type check per call: typed memoryviews
# cost ~0.3 us each to acquire, three per ask of the placement cache.
cdef inline unsigned char *_u8(object b, Py_ssize_t *n) except NULL:
    """A bytearray's bytes (written in place) and its length."""
    if not PyByteArray_Check(b):
        raise TypeError("a bytearray is needed")
    n[0] = PyByteArray_GET_SIZE(b)
    return <unsigned char *> PyByteArray_AS_STRING(b)


cdef inline double *_f64(object a, Py_ssize_t *n) except NULL:
    """A float64 array's values and its length (an empty one: an address never read)."""
    if not isinstance(a, array.array) or (<array.array> a).ob_descr.typecode != b'd':
        raise TypeError("a float64 array is needed")
    n[0] = Py_SIZE(a)
    return <double *> ((<array.array> a).data.as_voidptr if n[0] > 0 else <void *> a)


cdef inline bint _le(double l, double r) noexcept:
    """Volcano's l <= r with tolerance, as Resource writes it: l < r or |l - r| < 0.1."""
    cdef double d = l - r
    return l < r or (d if d >= 0 else -d) < EPSILON


cdef inline int _get(PyObject* p, double* out) noexcept:
    """The float behind p (NULL: a missing scalar, 0.0); _ASK when it is not an exact float."""
    if p == NULL:
        out[0] = 0.0
        return 0
    if not PyFloat_CheckExact(<object>p):
        return _ASK
    out[0] = PyFloat_AS_DOUBLE(<object>p)
    return 0


cdef inline int _attr(object v, double* out) noexcept:
    if not PyFloat_CheckExact(v):
        return _ASK
    out[0] = PyFloat_AS_DOUBLE(v)
    return 0


cdef class _Request:
    """A request read once: cpu, memory and its scalars as C doubles (ok False: ask Python)."""
    cdef double cpu, mem
    cdef double lv[MAX_SCALARS]
    cdef list keys
    cdef Py_ssize_t n
    cdef bint ok

    def __init__(self, req):
        cdef Py_ssize_t k = 0
        self.ok = False
        self.keys = []
        rs = req.scalars
        if type(rs) is not dict or len(rs) > MAX_SCALARS:
            return
        if _attr(req.milli_cpu, &self.cpu) or _attr(req.memory, &self.mem):
            return
        for key, v in (<dict>rs).items():
            if _attr(v, &self.lv[k]):
                return
            self.keys.append(key)
            k += 1
        self.n = k
        self.ok = True


cdef int _fits_future(_Request q, object idle, object rel, object pip) except -1:
    """1: fits, 0: does not, _ASK: some value is not an exact float."""
    cdef double a = 0.0, b = 0.0, c = 0.0
    cdef Py_ssize_t k
    if _attr(idle.milli_cpu, &a) or _attr(rel.milli_cpu, &b) or _attr(pip.milli_cpu, &c):
        return _ASK
    if not _le(q.cpu, a + b - c):
        return 0
    if _attr(idle.memory, &a) or _attr(rel.memory, &b) or _attr(pip.memory, &c):
        return _ASK
    if not _le(q.mem, a + b - c):
        return 0
    if q.n:
        i_s = idle.scalars
        r_s = rel.scalars
        p_s = pip.scalars
        if type(i_s) is not dict or type(r_s) is not dict or type(p_s) is not dict:
            return _ASK
        for k in range(q.n):
            key = q.keys[k]
            if (_get(PyDict_GetItem(i_s, key), &a) or _get(PyDict_GetItem(r_s, key), &b)
                    or _get(PyDict_GetItem(p_s, key), &c)):
                return _ASK
            if not _le(q.lv[k], a + b - c):
                return 0
    return 1


cdef int _less_equal(_Request q, object idle) except -1:
    """1: the request <= idle (missing scalars as 0), 0: not, _ASK: some value is not an exact float."""
    cdef double a = 0.0
    cdef Py_ssize_t k
    if _attr(idle.milli_cpu, &a):
        return _ASK
    if not _le(q.cpu, a):
        return 0
    if _attr(idle.memory, &a):
        return _ASK
    if not _le(q.mem, a):
        return 0
    if q.n:
        i_s = idle.scalars
        if type(i_s) is not dict:
            return _ASK
        for k in range(q.n):
            if _get(PyDict_GetItem(i_s, q.keys[k]), &a):
                return _ASK
            if not _le(q.lv[k], a):
                return 0
    return 1


def misfits(req, list nodes):
    """Positions of the nodes whose FutureIdle `req` does not fit (Resource.fits_future), in order."""
    cdef list out = []
    cdef Py_ssize_t i
    cdef int r
    cdef _Request q = _Request(req)
    if not q.ok:
        fits = req.fits_future
        return [i for i, n in enumerate(nodes) if not fits(n.idle, n.releasing, n.pipelined)]
    for i in range(len(nodes)):
        n = nodes[i]
        r = _fits_future(q, n.idle, n.releasing, n.pipelined)
        if r == _ASK:
            r = 1 if req.fits_future(n.idle, n.releasing, n.pipelined) else 0
        if r == 0:
            out.append(i)
    return out


def idle_fits(req, list nodes):
    """Whether `req` fits each node's Idle (Resource.less_equal), in order."""
    cdef list out = []
    cdef Py_ssize_t i
    cdef int r
    cdef _Request q = _Request(req)
    if not q.ok:
        return [req.less_equal(n.idle) for n in nodes]
    for i in range(len(nodes)):
        n = nodes[i]
        r = _less_equal(q, n.idle)
        if r == _ASK:
            out.append(bool(req.less_equal(n.idle)))
        else:
            out.append(r == 1)
    return out


cdef int _both(_Request q, object idle, object rel, object pip, int* idle_fit) except -1:
    """_fits_future and _less_equal of one node from one read of its values: the FutureIdle fit
    (1/0) returned and the Idle fit in idle_fit; _ASK when some value is not an exact float (then
    both are asked of Python)."""
    cdef double ic = 0.0, im = 0.0, rc = 0.0, rm = 0.0, pc = 0.0, pm = 0.0, a = 0.0, b = 0.0, c = 0.0
    cdef Py_ssize_t k
    cdef bint le, ff
    if (_attr(idle.milli_cpu, &ic) or _attr(idle.memory, &im) or _attr(rel.milli_cpu, &rc)
            or _attr(rel.memory, &rm) or _attr(pip.milli_cpu, &pc) or _attr(pip.memory, &pm)):
        return _ASK
    le = _le(q.cpu, ic) and _le(q.mem, im)
    ff = _le(q.cpu, ic + rc - pc) and _le(q.mem, im + rm - pm)
    if q.n and (le or ff):
        i_s = idle.scalars
        r_s = rel.scalars
        p_s = pip.scalars
        if type(i_s) is not dict or type(r_s) is not dict or type(p_s) is not dict:
            return _ASK
        for k in range(q.n):
            key = q.keys[k]
            if (_get(PyDict_GetItem(i_s, key), &a) or _get(PyDict_GetItem(r_s, key), &b)
                    or _get(PyDict_GetItem(p_s, key), &c)):
                return _ASK
            if le and not _le(q.lv[k], a):
                le = False
            if ff and not _le(q.lv[k], a + b - c):
                ff = False
            if not (le or ff):
                break
    idle_fit[0] = le
    return ff


def misfits_idle(req, list nodes, list at, unsigned char[:] codes, unsigned char fit, unsigned char refused):
    """misfits(req, nodes), and in the same pass whether `req` fits each node's Idle (idle_fits),
    written as `fit` or `refused` to codes[at[k]] for the k-th node: the placement cache asks
    both of the same nodes, and a second pass cost a call and reading every node again."""
    cdef list out = []
    cdef Py_ssize_t i
    cdef int r, le = 0
    cdef _Request q = _Request(req)
    if len(at) != len(nodes):
        raise ValueError("at and nodes differ in length")
    for i in range(len(nodes)):
        n = nodes[i]
        idle, rel, pip = n.idle, n.releasing, n.pipelined
        r = _both(q, idle, rel, pip, &le) if q.ok else _ASK
        if r == _ASK:
            r = 1 if req.fits_future(idle, rel, pip) else 0
            le = 1 if req.less_equal(idle) else 0
        if r == 0:
            out.append(i)
        codes[<Py_ssize_t>at[i]] = fit if le else refused
    return out


# -- rows: the nodes' values as one array of doubles ---------------------------------------------
# A node's row is [Idle cpu, Idle memory, FutureIdle cpu, FutureIdle memory, then per scalar key
# Idle and FutureIdle]; reading the rows instead of each node's three Resources and their dicts
# (some 18 attribute reads and 9 dict lookups a node, mostly cache misses in a session) is what
# makes a cold shape's scan of a window cheap.


cdef int _fill_row(double* vals, unsigned char* oks, Py_ssize_t stride, list keys, Py_ssize_t nk,
                   object n, Py_ssize_t p) except -1:
    """Write node n's row p (bounds checked by the caller)."""
    cdef double ic = 0.0, im = 0.0, rc = 0.0, rm = 0.0, pc = 0.0, pm = 0.0, a = 0.0, b = 0.0, c = 0.0
    cdef double* row = &vals[p * stride]
    cdef Py_ssize_t j
    cdef bint good
    idle, rel, pip = n.idle, n.releasing, n.pipelined
    good = not (_attr(idle.milli_cpu, &ic) or _attr(idle.memory, &im) or _attr(rel.milli_cpu, &rc)
                or _attr(rel.memory, &rm) or _attr(pip.milli_cpu, &pc) or _attr(pip.memory, &pm))
    if good:
        row[0] = ic
        row[1] = im
        row[2] = ic + rc - pc
        row[3] = im + rm - pm
    if good and nk:
        i_s = idle.scalars
        r_s = rel.scalars
        p_s = pip.scalars
        if type(i_s) is not dict or type(r_s) is not dict or type(p_s) is not dict:
            good = False
        else:
            for j in range(nk):
                key = keys[j]
                if (_get(PyDict_GetItem(i_s, key), &a) or _get(PyDict_GetItem(r_s, key), &b)
                        or _get(PyDict_GetItem(p_s, key), &c)):
                    good = False
                    break
                row[4 + 2 * j] = a
                row[5 + 2 * j] = a + b - c
    oks[p] = 1 if good else 0
    return 0


def rows_fill(object values, object ok, Py_ssize_t stride, list keys, list nodes, list at):
    """Write the rows of `nodes` (the k-th to row at[k]); ok[row] = 0 where some value read is not
    an exact float (the checks then ask the node's Resources)."""
    cdef Py_ssize_t n_values, n_ok
    cdef double *vals = _f64(values, &n_values)
    cdef unsigned char *oks = _u8(ok, &n_ok)
    cdef Py_ssize_t k, p, nk = len(keys)
    if len(at) != len(nodes):
        raise ValueError("at and nodes differ in length")
    if stride != 4 + 2 * nk:
        raise ValueError("stride does not match the keys")
    for k in range(len(nodes)):
        p = at[k]
        if p < 0 or p >= n_ok or (p + 1) * stride > n_values:
            raise IndexError(f"row {p} out of range")
        _fill_row(vals, oks, stride, keys, nk, nodes[k], p)


def rows_refill(object values, object ok, Py_ssize_t stride, list keys, list row_nodes, list stale):
    """rows_fill(values, ok, stride, keys, [row_nodes[i] for i in stale], stale), then `stale`
    emptied: the rows of the nodes changed since the last check, written before the next one."""
    cdef Py_ssize_t n_values, n_ok
    cdef double *vals = _f64(values, &n_values)
    cdef unsigned char *oks = _u8(ok, &n_ok)
    cdef Py_ssize_t k, p, nk = len(keys), total = len(row_nodes)
    if stride != 4 + 2 * nk:
        raise ValueError("stride does not match the keys")
    for k in range(len(stale)):
        p = stale[k]
        if p < 0 or p >= total or p >= n_ok or (p + 1) * stride > n_values:
            raise IndexError(f"row {p} out of range")
        _fill_row(vals, oks, stride, keys, nk, row_nodes[p], p)
    del stale[:]


def rows_misfits_idle(
    req, object values, object ok, Py_ssize_t stride, dict keys,
    list nodes, list at, object codes, unsigned char fit, unsigned char refused,
):
    """misfits_idle(req, nodes, at, codes, fit, refused) read from the rows at `at` (row at[k] is
    the k-th node's, filled by rows_fill; `keys` maps each scalar key to its index in the row's
    scalars and holds every key `req` asks)."""
    cdef Py_ssize_t k, j, p, n = len(nodes)
    cdef Py_ssize_t cols[MAX_SCALARS]
    cdef const double* row
    cdef int le = 0, ff
    cdef list out = []
    cdef _Request q = _Request(req)
    cdef Py_ssize_t n_values, n_ok, n_codes
    cdef const double *vals = _f64(values, &n_values)
    cdef const unsigned char *oks = _u8(ok, &n_ok)
    cdef unsigned char *out_codes = _u8(codes, &n_codes)
    if len(at) != n:
        raise ValueError("at and nodes differ in length")
    if not q.ok:
        return misfits_idle(req, nodes, at, codes, fit, refused)
    for j in range(q.n):
        cols[j] = 4 + 2 * <Py_ssize_t>keys[q.keys[j]]
        if cols[j] + 1 >= stride:
            raise IndexError(f"scalar {q.keys[j]!r} out of the rows")
    for k in range(n):
        p = at[k]
        if p < 0 or p >= n_ok or p >= n_codes or (p + 1) * stride > n_values:
            raise IndexError(f"row {p} out of range")
        if oks[p]:
            row = &vals[p * stride]
            le = _le(q.cpu, row[0]) and _le(q.mem, row[1])
            ff = _le(q.cpu, row[2]) and _le(q.mem, row[3])
            for j in range(q.n):
                if not (le or ff):
                    break
                if le and not _le(q.lv[j], row[cols[j]]):
                    le = 0
                if ff and not _le(q.lv[j], row[cols[j] + 1]):
                    ff = 0
        else:
            nd = nodes[k]
            ff = 1 if req.fits_future(nd.idle, nd.releasing, nd.pipelined) else 0
            le = 1 if req.less_equal(nd.idle) else 0
        if not ff:
            out.append(k)
        out_codes[p] = fit if le else refused
    return out
