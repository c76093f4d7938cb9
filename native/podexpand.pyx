# cython: language_level=3, boundscheck=False, wraparound=False
"""Compiled twins of `scheduler.kube.podfields.expand` (the daemon's pod list pages) and
`expand_pod` (each pod watch event: a burst brings every pod two or three times).

Every pod of an initial sync (600,000 at 20,000 nodes) goes through the loop that puts back the
sections the typed decode kept raw; in Python its dict lookups and comparisons per pod cost about
as much as the typed decode itself. This takes the same steps with the same memo (the previous
pod's raw bytes and what they decoded to, per key) and calls the same `section` function for
every section that differs, so the values are the same objects the Python loop would give.
`tests/native/test_podexpand_equivalence.py` compares both over pages of many shapes.
"""

from cpython.dict cimport PyDict_GetItem, PyDict_SetItem
from cpython.ref cimport PyObject


def expand(list items, tuple raw_fields, object section):
    """`_expand(items, section)` with `raw_fields` = `podfields.RAW_FIELDS`."""
    cdef dict last = {}
    cdef object pod
    for pod in items:
        if type(pod) is not dict:
            _expand_one_slow(pod, raw_fields, section, last)
            continue
        _expand_dict(<dict>pod, raw_fields, section, last)


def expand_pod(object pod, tuple raw_fields, object section, dict last):
    """`podfields.expand_pod`: one pod (a watch event's), `last` carried from event to event."""
    if type(pod) is not dict:
        _expand_one_slow(pod, raw_fields, section, last)
        return
    _expand_dict(<dict>pod, raw_fields, section, last)


cdef inline _expand_dict(dict pod, tuple raw_fields, object section, dict last):
    cdef object sec, raw, value
    cdef PyObject* got
    cdef tuple prev, group, keys
    cdef str name, key
    for group in raw_fields:
        name = <str>group[0]
        keys = <tuple>group[1]
        got = PyDict_GetItem(pod, name)
        if got is NULL:
            continue
        sec = <object>got
        if sec is None:
            continue
        if type(sec) is not dict:
            _expand_section_slow(sec, keys, section, last)
            continue
        for key in keys:
            got = PyDict_GetItem(<dict>sec, key)
            if got is NULL:
                continue
            raw = <object>got
            if raw is None:
                continue
            got = PyDict_GetItem(last, key)
            if got is not NULL:
                prev = <tuple>got
                if prev[0] == raw:
                    PyDict_SetItem(<dict>sec, key, prev[1])
                    continue
            value = section(key, raw)
            PyDict_SetItem(<dict>sec, key, value)
            PyDict_SetItem(last, key, (raw, value))


cdef _expand_one_slow(object pod, tuple raw_fields, object section, dict last):
    # not a dict (the typed decode only gives dicts): the Python loop's own steps
    for name, keys in raw_fields:
        sec = pod.get(name)
        if sec is None:
            continue
        _expand_section_slow(sec, keys, section, last)


cdef _expand_section_slow(object sec, tuple keys, object section, dict last):
    for key in keys:
        raw = sec.get(key)
        if raw is None:
            continue
        prev = last.get(key)
        if prev is not None and prev[0] == raw:
            sec[key] = prev[1]
        else:
            value = sec[key] = section(key, raw)
            last[key] = (raw, value)
