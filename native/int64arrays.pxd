# cython: language_level=3
# Array arguments of the compiled device fits, read through pointers after one check per call:
# typed memoryviews cost ~0.2 us each to acquire (~3-4 us a call of fifteen to twenty of them),
# and a node's fit is called per node. Shared by gpufit.pyx and npufit.pyx (inlined into each).

from cpython cimport array
from cpython.object cimport Py_SIZE


cdef inline const long long *int64s(array.array a, Py_ssize_t need, str what) except NULL:
    # the data of an int64 array holding at least `need` entries; for an empty one some address
    # never read (need is then 0), as NULL is the error value
    if a.ob_descr.itemsize != 8 or a.ob_descr.typecode == b'd':
        raise TypeError(f"{what}: an int64 array is needed")
    if Py_SIZE(a) < need:
        raise IndexError(f"{what}: {Py_SIZE(a)} entries, {need} needed")
    return <const long long *> (a.data.as_voidptr if Py_SIZE(a) > 0 else <void *> a)


cdef inline double *float64s(array.array a, Py_ssize_t need, str what) except NULL:
    # the same for a float64 array
    if a.ob_descr.typecode != b'd':
        raise TypeError(f"{what}: a float64 array is needed")
    if Py_SIZE(a) < need:
        raise IndexError(f"{what}: {Py_SIZE(a)} entries, {need} needed")
    return <double *> (a.data.as_voidptr if Py_SIZE(a) > 0 else <void *> a)
