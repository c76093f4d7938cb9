# cython: language_level=3, boundscheck=False, wraparound=False
"""Compiled twin of scheduler/model/resourcevec.py: the Resource vector with C doubles.

milli_cpu, memory and pods are C doubles (Python floats are C doubles, so every sum, difference
and comparison gives the twin's bits); the scalars stay a dict of Python numbers, each step on
two exact floats done in C, anything else (an int set by hand) with the Python operation the
twin uses. Every method takes the twin's steps in the twin's order, so that scalars new to a
dict are inserted in the same order too. tests/native/test_resourcevec_equivalence.py compares
the two on random resources.
"""

cimport cython
from cpython.dict cimport PyDict_GetItem, PyDict_Next, PyDict_SetItem
from cpython.float cimport PyFloat_AS_DOUBLE, PyFloat_CheckExact
from cpython.object cimport PyObject, PyTypeObject

from scheduler.model.quantity import CPU, MEMORY, PODS, QuantityError, quantity_in_unit
from scheduler.model.resourcevec import EPSILON as _PY_EPSILON
from scheduler.model.resourcevec import Infinity

cdef double EPSILON = _PY_EPSILON
cdef object _ZERO = Infinity.ZERO
cdef object _INFINITY = Infinity.INFINITY
cdef object _CPU = CPU
cdef object _MEMORY = MEMORY
cdef object _PODS = PODS


cdef inline bint _le(double l, double r) noexcept:
    """l < r or abs(l - r) < EPSILON, as the twin writes it."""
    cdef double d = l - r
    return l < r or (d if d >= 0 else -d) < EPSILON


cdef inline object _plus(object a, object b):
    if PyFloat_CheckExact(a) and PyFloat_CheckExact(b):
        return PyFloat_AS_DOUBLE(a) + PyFloat_AS_DOUBLE(b)
    return a + b


cdef inline object _minus(object a, object b):
    if PyFloat_CheckExact(a) and PyFloat_CheckExact(b):
        return PyFloat_AS_DOUBLE(a) - PyFloat_AS_DOUBLE(b)
    return a - b


cdef inline object _get0(dict d, object k):
    """d.get(k, 0.0)."""
    cdef PyObject* p = PyDict_GetItem(d, k)
    if p == NULL:
        return 0.0
    return <object>p


cdef inline bint _obj_le(object l, object r) except -1:
    """l < r or abs(l - r) < EPSILON on two numbers."""
    if PyFloat_CheckExact(l) and PyFloat_CheckExact(r):
        return _le(PyFloat_AS_DOUBLE(l), PyFloat_AS_DOUBLE(r))
    return bool(l < r or abs(l - r) < _PY_EPSILON)


cdef inline bint _not_positive(object q) except -1:
    """q <= 0."""
    if PyFloat_CheckExact(q):
        return PyFloat_AS_DOUBLE(q) <= 0
    return bool(q <= 0)


cdef inline void _add_into(dict s, dict theirs) except *:
    """s[k] = s.get(k, 0.0) + theirs[k] for each key of theirs, in its order."""
    cdef Py_ssize_t pos = 0
    cdef PyObject* k
    cdef PyObject* v
    while PyDict_Next(theirs, &pos, &k, &v):
        PyDict_SetItem(s, <object>k, _plus(_get0(s, <object>k), <object>v))


cdef inline void _sub_into(dict s, dict theirs) except *:
    cdef Py_ssize_t pos = 0
    cdef PyObject* k
    cdef PyObject* v
    while PyDict_Next(theirs, &pos, &k, &v):
        PyDict_SetItem(s, <object>k, _minus(_get0(s, <object>k), <object>v))


@cython.freelist(256)
cdef class Resource:
    """Milli-CPU, memory bytes and scalar milli-units; `pods` is carried but never compared."""

    cdef public double milli_cpu
    cdef public double memory
    cdef public double pods
    cdef public dict scalars

    def __init__(self, milli_cpu=0.0, memory=0.0, scalars=None, pods=0.0):
        self.milli_cpu = float(milli_cpu)
        self.memory = float(memory)
        self.scalars = dict(scalars) if scalars else {}
        self.pods = float(pods)

    # -- construction -------------------------------------------------------------------------
    @classmethod
    def from_list(cls, resources):
        """From a ResourceList mapping (name -> quantity); raises QuantityError naming the resource."""
        r = cls()
        if not resources:
            return r
        for name, raw in resources.items():
            try:
                value = quantity_in_unit(name, raw)
            except QuantityError as exc:
                raise QuantityError(f"{name}: {exc}") from None
            r.set(name, value)
        return r

    def set(self, name, value):
        if name == _CPU:
            self.milli_cpu = value
        elif name == _MEMORY:
            self.memory = value
        elif name == _PODS:
            self.pods = value
        else:
            self.scalars[name] = value

    def get(self, name):
        if name == _CPU:
            return self.milli_cpu
        if name == _MEMORY:
            return self.memory
        if name == _PODS:
            return self.pods
        return self.scalars.get(name, 0.0)

    def clone(self):
        cdef Resource r = Resource.__new__(Resource)
        r.milli_cpu = self.milli_cpu
        r.memory = self.memory
        scalars = self.scalars
        r.scalars = scalars.copy() if scalars else {}
        r.pods = self.pods
        return r

    def names(self):
        """Resource names present (cpu and memory always)."""
        return [_CPU, _MEMORY, *self.scalars]

    def items(self):
        yield _CPU, self.milli_cpu
        yield _MEMORY, self.memory
        yield from self.scalars.items()

    # -- predicates ---------------------------------------------------------------------------
    def is_empty(self):
        if self.milli_cpu >= EPSILON or self.memory >= EPSILON:
            return False
        return all(v < _PY_EPSILON for v in self.scalars.values())

    def is_zero(self, name):
        return self.get(name) < _PY_EPSILON

    # -- arithmetic (in place, returning self, like Volcano) ----------------------------------
    def add(self, Resource other not None):
        self.milli_cpu += other.milli_cpu
        self.memory += other.memory
        self.pods += other.pods
        if other.scalars:
            _add_into(self.scalars, other.scalars)
        return self

    def sub(self, Resource other not None):
        """Subtract without asserting (Volcano's SubWithoutAssert); callers check fit first."""
        self.milli_cpu -= other.milli_cpu
        self.memory -= other.memory
        self.pods -= other.pods
        if other.scalars:
            _sub_into(self.scalars, other.scalars)
        return self

    def pass_on(self, Resource req not None, Resource to not None):
        """self.sub(req) then to.add(req) in one pass over req: each dimension gets the same float
        steps."""
        cdef dict mine, dest, theirs
        cdef Py_ssize_t pos = 0
        cdef PyObject* k
        cdef PyObject* v
        self.milli_cpu -= req.milli_cpu
        self.memory -= req.memory
        self.pods -= req.pods
        to.milli_cpu += req.milli_cpu
        to.memory += req.memory
        to.pods += req.pods
        theirs = req.scalars
        if theirs:
            mine, dest = self.scalars, to.scalars
            while PyDict_Next(theirs, &pos, &k, &v):
                # held: storing into `mine` may drop v's last other reference (req is self)
                value = <object>v
                PyDict_SetItem(mine, <object>k, _minus(_get0(mine, <object>k), value))
                PyDict_SetItem(dest, <object>k, _plus(_get0(dest, <object>k), value))

    def sub_add(self, Resource old not None, Resource new not None):
        """self.sub(old).add(new) in one pass, as the twin does it."""
        cdef dict s, gone, came
        cdef Py_ssize_t pos = 0
        cdef PyObject* k
        cdef PyObject* v
        cdef PyObject* w
        self.milli_cpu = (self.milli_cpu - old.milli_cpu) + new.milli_cpu
        self.memory = (self.memory - old.memory) + new.memory
        self.pods = (self.pods - old.pods) + new.pods
        s, gone, came = self.scalars, old.scalars, new.scalars
        # stored, then read back before adding, as the twin's `s[k] += came[k]` does (came may be s)
        while PyDict_Next(gone, &pos, &k, &v):
            PyDict_SetItem(s, <object>k, _minus(_get0(s, <object>k), <object>v))
            w = PyDict_GetItem(came, <object>k)
            if w != NULL:
                PyDict_SetItem(s, <object>k, _plus(<object>PyDict_GetItem(s, <object>k), <object>w))
        if came is not gone:
            pos = 0
            while PyDict_Next(came, &pos, &k, &v):
                if PyDict_GetItem(gone, <object>k) == NULL:
                    PyDict_SetItem(s, <object>k, _plus(_get0(s, <object>k), <object>v))
        return self

    def add_sub(self, Resource new not None, Resource old not None):
        """self.add(new).sub(old) in one pass, as sub_add does it."""
        cdef dict s, gone, came
        cdef Py_ssize_t pos = 0
        cdef PyObject* k
        cdef PyObject* v
        cdef PyObject* w
        self.milli_cpu = (self.milli_cpu + new.milli_cpu) - old.milli_cpu
        self.memory = (self.memory + new.memory) - old.memory
        self.pods = (self.pods + new.pods) - old.pods
        s, came, gone = self.scalars, new.scalars, old.scalars
        while PyDict_Next(came, &pos, &k, &v):
            PyDict_SetItem(s, <object>k, _plus(_get0(s, <object>k), <object>v))
            w = PyDict_GetItem(gone, <object>k)
            if w != NULL:
                PyDict_SetItem(s, <object>k, _minus(<object>PyDict_GetItem(s, <object>k), <object>w))
        if came is not gone:
            pos = 0
            while PyDict_Next(gone, &pos, &k, &v):
                if PyDict_GetItem(came, <object>k) == NULL:
                    PyDict_SetItem(s, <object>k, _minus(_get0(s, <object>k), <object>v))
        return self

    def multi(self, ratio):
        self.milli_cpu = self.milli_cpu * ratio
        self.memory = self.memory * ratio
        scalars = self.scalars
        for k in scalars:
            scalars[k] *= ratio
        return self

    def clip_at_zero(self):
        # max(x, 0.0) keeps x unless 0.0 > x (a NaN and -0.0 stay)
        if 0.0 > self.milli_cpu:
            self.milli_cpu = 0.0
        if 0.0 > self.memory:
            self.memory = 0.0
        scalars = self.scalars
        for k, v in scalars.items():
            if v < 0:
                scalars[k] = 0.0
        return self

    def set_max(self, Resource other not None):
        """Per-dimension maximum (used for init containers and guarantees)."""
        if other.milli_cpu > self.milli_cpu:
            self.milli_cpu = other.milli_cpu
        if other.memory > self.memory:
            self.memory = other.memory
        mine = self.scalars
        for k, v in other.scalars.items():
            if v > mine.get(k, 0.0):
                mine[k] = v
        return self

    def min_dimension(self, Resource other not None, default=_ZERO):
        """Per-dimension minimum with `other`; a scalar missing in `other` counts per `default`."""
        if other.milli_cpu < self.milli_cpu:
            self.milli_cpu = other.milli_cpu
        if other.memory < self.memory:
            self.memory = other.memory
        mine, theirs = self.scalars, other.scalars
        for k, v in mine.items():
            if k in theirs:
                mine[k] = min(v, theirs[k])
            elif default is _ZERO:
                mine[k] = 0.0
        return self

    # -- comparisons --------------------------------------------------------------------------
    def less_equal(self, Resource other not None, default=_ZERO):
        """self <= other with tolerance; scalars iterate over self's (Volcano's LessEqual)."""
        cdef dict mine, theirs
        cdef Py_ssize_t pos = 0
        cdef PyObject* k
        cdef PyObject* v
        cdef PyObject* w
        cdef bint infinite = default is _INFINITY
        if not _le(self.milli_cpu, other.milli_cpu) or not _le(self.memory, other.memory):
            return False
        mine, theirs = self.scalars, other.scalars
        if mine:
            while PyDict_Next(mine, &pos, &k, &v):
                w = PyDict_GetItem(theirs, <object>k)
                if w == NULL:
                    if infinite:
                        continue
                    if not _obj_le(<object>v, 0.0):
                        return False
                elif not _obj_le(<object>v, <object>w):
                    return False
        if infinite:
            pos = 0
            while PyDict_Next(theirs, &pos, &k, &v):
                if PyDict_GetItem(mine, <object>k) == NULL:
                    return False
        return True

    def less_equal_with_dimension(self, Resource other not None, Resource req not None):
        """self <= other only on the dimensions where `req` is positive."""
        cdef Py_ssize_t pos = 0
        cdef PyObject* k
        cdef PyObject* q
        if req.milli_cpu > 0 and not _le(self.milli_cpu, other.milli_cpu):
            return False
        if req.memory > 0 and not _le(self.memory, other.memory):
            return False
        while PyDict_Next(req.scalars, &pos, &k, &q):
            if _not_positive(<object>q):
                continue
            if not _obj_le(_get0(self.scalars, <object>k), _get0(other.scalars, <object>k)):
                return False
        return True

    def plus_less_equal_with_dimension(self, Resource req not None, Resource other not None):
        """self.clone().add(req).less_equal_with_dimension(other, req), without the copy: each
        compared value is the sum add() would have stored (the same float additions)."""
        cdef Py_ssize_t pos = 0
        cdef PyObject* k
        cdef PyObject* q
        if req.milli_cpu > 0 and not _le(self.milli_cpu + req.milli_cpu, other.milli_cpu):
            return False
        if req.memory > 0 and not _le(self.memory + req.memory, other.memory):
            return False
        while PyDict_Next(req.scalars, &pos, &k, &q):
            if _not_positive(<object>q):
                continue
            if not _obj_le(_plus(_get0(self.scalars, <object>k), <object>q), _get0(other.scalars, <object>k)):
                return False
        return True

    def less(self, Resource other not None, default=_ZERO):
        if not self.milli_cpu < other.milli_cpu or not self.memory < other.memory:
            return False
        theirs = other.scalars
        for k, lv in self.scalars.items():
            rv = theirs.get(k)
            if rv is None:
                if default is _INFINITY:
                    continue
                rv = 0.0
            if not lv < rv:
                return False
        return True

    def fits_future(self, Resource idle not None, Resource releasing not None, Resource pipelined not None):
        """self <= idle + releasing - pipelined (a node's FutureIdle), without building it."""
        cdef Py_ssize_t pos = 0
        cdef PyObject* k
        cdef PyObject* v
        if not _le(self.milli_cpu, idle.milli_cpu + releasing.milli_cpu - pipelined.milli_cpu):
            return False
        if not _le(self.memory, idle.memory + releasing.memory - pipelined.memory):
            return False
        while PyDict_Next(self.scalars, &pos, &k, &v):
            fi = _minus(
                _plus(_get0(idle.scalars, <object>k), _get0(releasing.scalars, <object>k)),
                _get0(pipelined.scalars, <object>k),
            )
            if not _obj_le(<object>v, fi):
                return False
        return True

    def insufficient(self, Resource available not None):
        """Names of the dimensions where self does not fit `available` (for fit-error messages)."""
        short = []
        if not _le(self.milli_cpu, available.milli_cpu):
            short.append(_CPU)
        if not _le(self.memory, available.memory):
            short.append(_MEMORY)
        theirs = available.scalars
        for k, lv in self.scalars.items():
            if lv < _PY_EPSILON:
                continue
            if not _obj_le(lv, theirs.get(k, 0.0)):
                short.append(k)
        return short

    def __eq__(self, other):
        if not isinstance(other, Resource):
            return NotImplemented
        cdef Resource o = <Resource>other
        if abs(self.milli_cpu - o.milli_cpu) >= EPSILON or abs(self.memory - o.memory) >= EPSILON:
            return False
        mine, theirs = self.scalars, o.scalars
        for k in set(mine) | set(theirs):
            if abs(mine.get(k, 0.0) - theirs.get(k, 0.0)) >= _PY_EPSILON:
                return False
        return True

    __hash__ = None

    def __reduce__(self):
        # by this module's function, not by the public name (which may be the pure class)
        return (_rebuilt, (self.milli_cpu, self.memory, self.scalars, self.pods))

    def to_dict(self):
        d = {_CPU: self.milli_cpu, _MEMORY: self.memory}
        d.update(self.scalars)
        return d

    def __repr__(self):
        parts = [f"cpu {self.milli_cpu:g}m", f"memory {self.memory:g}"]
        parts += [f"{k} {v:g}" for k, v in sorted(self.scalars.items())]
        return "<" + ", ".join(parts) + ">"



def _rebuilt(milli_cpu, memory, scalars, pods):
    """A pickled Resource, its fields as they were."""
    cdef Resource r = Resource.__new__(Resource)
    r.milli_cpu, r.memory, r.scalars, r.pods = milli_cpu, memory, scalars, pods
    return r


cdef extern from "Python.h":
    void PyType_Modified(type t)

# Named by its public home, as the twin is: what reports and the daemon's garbage audit show is
# scheduler.model.resources.Resource whichever class was picked (a static type's module is read
# from its C name).
(<PyTypeObject*>Resource).tp_name = b"scheduler.model.resources.Resource"
PyType_Modified(Resource)
