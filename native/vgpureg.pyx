# cython: language_level=3, boundscheck=False, wraparound=False
"""Compiled twin of `decode_vgpu_register` in scheduler/plugins/deviceshare/annotations.py.

Every session rebuilds each vGPU node's ledger from its `volcano.sh/node-vgpu-register` string,
and the Python decoder (a split, five regular-expression checks, two int() and a frozen dataclass
per card) was most of the device plugin's session open on a fresh cluster.

This module reads the string once, character by character, and only decides what it can decide
without doubt: a registration whose every entry is in the form the device plugin writes (six or
more comma fields; id, health and mode without blanks; type printable ASCII; count and devmem of
1-10 ASCII digits within int32; no card listed twice). Anything else -- whitespace to strip, a
character outside printable ASCII, a number out of range, a short entry, no card at all: every
case the Python decoder reports or normalises -- is answered by the Python decoder itself, so the
cards and the error text are the twin's by construction (tests/native proves both on random and
malformed strings).
"""

import dataclasses

from cpython.object cimport PyObject_GenericSetAttr

from scheduler.plugins.deviceshare import annotations as _ann

IMPLEMENTATION = "native"

cdef object _Card = _ann.RegisteredCard
cdef object _new = object.__new__
cdef long long _INT_MAX = _ann.REGISTER_INT_MAX
cdef str _F_UUID = "uuid"
cdef str _F_COUNT = "count"
cdef str _F_DEVMEM = "devmem"
cdef str _F_TYPE = "type"
cdef str _F_HEALTH = "health"
cdef str _F_MODE = "mode"
# RegisteredCard is a frozen dataclass: its __init__ sets each slot through object.__setattr__,
# which is what PyObject_GenericSetAttr does without the six Python calls. Only valid while the
# fields are exactly these; otherwise the class is called as usual.
cdef bint _DIRECT = tuple(f.name for f in dataclasses.fields(_Card)) == (
    "uuid", "count", "devmem", "type", "health", "mode"
) and not hasattr(_Card, "__post_init__")


cdef object _card(str uuid, long long count, long long devmem, str kind, bint health, str mode):
    if not _DIRECT:
        return _Card(uuid, count, devmem, kind, health, mode)
    card = _new(_Card)
    PyObject_GenericSetAttr(card, _F_UUID, uuid)
    PyObject_GenericSetAttr(card, _F_COUNT, count)
    PyObject_GenericSetAttr(card, _F_DEVMEM, devmem)
    PyObject_GenericSetAttr(card, _F_TYPE, kind)
    PyObject_GenericSetAttr(card, _F_HEALTH, health)
    PyObject_GenericSetAttr(card, _F_MODE, mode)
    return card


cdef inline bint _graph(Py_UCS4 ch) noexcept:
    # printable ASCII without the blank: nothing str.strip() would remove
    return 0x21 <= ch <= 0x7E


cdef long long _number(str s, Py_ssize_t a, Py_ssize_t b):
    """The value of s[a:b] when it is 1-10 ASCII digits within int32, else -1."""
    cdef long long v = 0
    cdef Py_ssize_t i
    cdef Py_UCS4 ch
    if b - a < 1 or b - a > 10:
        return -1
    for i in range(a, b):
        ch = s[i]
        if ch < 0x30 or ch > 0x39:
            return -1
        v = v * 10 + (<long long>ch - 0x30)
    return v if v <= _INT_MAX else -1


cdef int _health(str s, Py_ssize_t a, Py_ssize_t b):
    """1 / 0 for s[a:b] as the twin's `.strip().lower() in ("true", "1", "t")`; -1 when s[a:b]
    has a character the twin would strip or lower differently (not printable ASCII)."""
    cdef Py_ssize_t i, n = b - a
    cdef Py_UCS4 ch
    cdef Py_UCS4 low[4]
    for i in range(a, b):
        if not _graph(s[i]):
            return -1
    if n == 1:
        ch = s[a]
        return 1 if ch == u"1" or ch == u"t" or ch == u"T" else 0
    if n != 4:
        return 0
    for i in range(4):
        ch = s[a + i]
        low[i] = <Py_UCS4>(<unsigned int>ch + 32) if 0x41 <= ch <= 0x5A else ch
    return 1 if low[0] == u"t" and low[1] == u"r" and low[2] == u"u" and low[3] == u"e" else 0


cdef list _cards(str value):
    """The cards of a registration in the device plugin's own form, or None: ask the twin."""
    cdef Py_ssize_t n = len(value), start = 0, end, i, k
    cdef Py_ssize_t cut[7]
    cdef Py_ssize_t fields
    cdef long long count, devmem
    cdef int health
    cdef Py_UCS4 ch
    cdef list out = []
    cdef set seen = set()
    cdef str uuid
    while start <= n:
        # one ':'-terminated item: value[start:end]
        end = start
        fields = 0
        cut[0] = start - 1
        while end < n:
            ch = value[end]
            if ch == u":":
                break
            if ch == u"," and fields < 6:
                fields += 1
                cut[fields] = end
            end += 1
        if fields == 0:
            start = end + 1
            continue  # no ',': the twin skips the item too
        if fields < 5:
            return None  # fewer than six fields
        if fields == 5:
            cut[6] = end  # exactly six: the mode runs to the item's end
        # fields f[0..5] are value[cut[k] + 1 : cut[k + 1]]
        for k in (0, 5):
            for i in range(cut[k] + 1, cut[k + 1]):
                if not _graph(value[i]):
                    return None
        for i in range(cut[3] + 1, cut[4]):
            ch = value[i]
            if ch < 0x20 or ch > 0x7E:
                return None
        count = _number(value, cut[1] + 1, cut[2])
        devmem = _number(value, cut[2] + 1, cut[3])
        health = _health(value, cut[4] + 1, cut[5])
        if count < 0 or devmem < 0 or health < 0:
            return None
        uuid = value[cut[0] + 1 : cut[1]]
        if uuid and uuid in seen:
            return None
        seen.add(uuid)
        out.append(
            _card(uuid, count, devmem, value[cut[3] + 1 : cut[4]], health == 1, value[cut[5] + 1 : cut[6]])
        )
        start = end + 1
    return out or None


def decode_vgpu_register(value):
    """Same arguments, same answer as annotations.decode_vgpu_register."""
    if type(value) is str and u":" in value:
        cards = _cards(value)
        if cards is not None:
            return cards, ""
    return _ann.decode_vgpu_register(value)
