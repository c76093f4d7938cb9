"""The cluster's allocatable and used totals over every node, kept from one session to the next.

Every session needs the allocatable total (Session.total_resource) and overcommit the used total;
at 20,000 nodes each walk over the nodes costs ~10 ms. Between two periods few nodes change: a
node whose view is handed out again, showing the same version of the cluster's node
(NodeInfo.view_versions), has the same resources, so only the other nodes are redone. As in
plugins/queuesums, the totals are kept only while every amount is a whole number, not negative,
and every total stays below 2**53 times the largest power of two that divides every amount of its
column (memory in bytes is a multiple of 2**20 or so, and 20,000 nodes of 512 GiB exceed 2**53):
then every partial sum is a float exactly, so float sums are exact in any order and the kept
totals are bit for bit what a walk in node order gives. Extended resources (ephemeral-storage,
which every real node reports, hugepages, devices) are kept per name with which nodes have the
name, so that the totals name them in the order a walk meets them. Otherwise the session walks
(and keeps nothing).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import reduce
from itertools import chain, compress, repeat
from operator import attrgetter, is_not, or_

from scheduler.model.node import NodeInfo
from scheduler.model.resources import Resource

# Session.carry's name for the kept totals
CARRY = "session/node-totals"
_LIMIT = 2**53
# no power of two divides only zeros: any bound is true of them (kept finite for the shifts)
_NO_BITS = 1024
# what a walk adds per node: allocatable cpu, memory, pods, then used cpu, memory, pods
_FIELDS = (
    attrgetter("allocatable.milli_cpu"),
    attrgetter("allocatable.memory"),
    attrgetter("allocatable.pods"),
    attrgetter("used.milli_cpu"),
    attrgetter("used.memory"),
    attrgetter("used.pods"),
)
_scalars = (attrgetter("allocatable.scalars"), attrgetter("used.scalars"))
# a node's amount of a name it does not have (None is an amount set_node refuses)
_ABSENT = object()


@dataclass(slots=True)
class _Scalars:
    """One side's (allocatable or used) extended resources by name: each node's amount as an int
    (0 where the node does not name it), which nodes name it, and the exact sum."""

    values: dict[str, list[int]]
    present: dict[str, bytearray]
    sums: dict[str, int]
    # name -> a power of two (its exponent) dividing every amount the name has had
    shifts: dict[str, int]

    def set_node(self, i: int, scalars: dict[str, float], n: int, fresh: bool = False) -> bool:
        """Position `i` now has `scalars` (`fresh`: it had none); False (nothing changed) when an
        amount is not exact."""
        if not all(map(_exact, scalars.values())):
            return False
        if not fresh:
            for name, col in self.values.items():
                if self.present[name][i] and name not in scalars:
                    self.sums[name] -= col[i]
                    col[i] = 0
                    self.present[name][i] = 0
        for name, v in scalars.items():
            col = self.values.get(name)
            if col is None:
                col = self.values[name] = [0] * n
                self.present[name] = bytearray(n)
                self.sums[name] = 0
            self.sums[name] += int(v) - col[i]
            col[i] = int(v)
            self.present[name][i] = 1
            self.shifts[name] = min(self.shifts.get(name, _NO_BITS), _twos(int(v)))
        return True

    def set_nodes(self, at: list[int], scalars: list[dict[str, float]], n: int) -> bool:
        """set_node for position at[k] and scalars[k], each k. A node that changed in its pods
        (most of them: a session's placements) usually names the same extended resources with the
        same amounts as before, on one side or both: that is found per name at C level, and then
        nothing changes (after a 4,000-pod session, 8,000 set_node calls cost ~25 ms)."""
        if set().union(*scalars) <= self.values.keys():
            for name, col in self.values.items():
                present = self.present[name]
                new = list(map(dict.get, scalars, repeat(name)))
                # equal amounts: the same ints (an amount equal to an exact one is exact itself)
                if new != [col[i] if present[i] else None for i in at]:
                    break
            else:
                return True
        return all(self.set_node(i, sc, n) for i, sc in zip(at, scalars, strict=True))

    def total(self, nodes: list[NodeInfo], side: attrgetter) -> dict[str, float] | None:
        """The names some node has, in the order a walk meets them, with their sums (None when a
        sum is not exact)."""
        firsts = []
        for name, present in self.present.items():
            i = present.find(1)
            if i >= 0:
                if self.sums[name] >= _limit(self.shifts.get(name, 0)):
                    return None
                # a walk meets the names of one node in that node's order
                firsts.append((i, list(side(nodes[i])).index(name), name))
        return {name: float(self.sums[name]) for _, _, name in sorted(firsts)}


def _exact(v: object) -> bool:
    """A whole amount, not negative, that a float holds exactly."""
    if isinstance(v, float):
        return v >= 0 and v.is_integer()
    return type(v) is int and v >= 0 and float(v) == v


def _twos(v: int) -> int:
    """The exponent of the largest power of two dividing `v` (_NO_BITS for 0)."""
    return (v & -v).bit_length() - 1 if v else _NO_BITS


def _limit(shift: int) -> int:
    """The totals below this are exact as floats when every amount is a multiple of 2**shift."""
    return _LIMIT << min(shift, _NO_BITS)


def _fresh_scalars(nodes: list[NodeInfo], side: attrgetter) -> _Scalars | None:
    """set_node(i, fresh=True) for every node in order: name by name in C-level passes when
    every amount is a float (the usual case; a node-by-node loop cost ~3 % of a session of
    one-pod jobs on 1,000 fresh nodes), else node by node. The same columns, sums, bounds and
    the names in the order a walk meets them."""
    dicts = list(map(side, nodes))
    n = len(nodes)
    names = dict.fromkeys(chain.from_iterable(dicts))
    columns = [list(map(dict.get, dicts, repeat(name), repeat(_ABSENT))) for name in names]
    # which nodes name each one, and their amounts: C-level passes, not a loop per node (a name
    # every node has, the usual case, is its column as it is)
    present = [bytearray(map(is_not, col, repeat(_ABSENT))) for col in columns]
    got = [
        col if all(mask) else list(compress(col, mask)) for col, mask in zip(columns, present, strict=True)
    ]
    if not all(set(map(type, vals)) == {float} for vals in got):
        return _fresh_scalars_by_node(dicts, n)
    # _exact for floats: whole (not NaN nor infinite) and not negative
    if not all(all(map(float.is_integer, vals)) and min(vals) >= 0 for vals in got):
        return None
    kept = _Scalars({}, {}, {}, {})
    for name, col, mask, vals in zip(names, columns, present, got, strict=True):
        if vals is col:
            ints = list(map(int, col))
        else:
            it = map(int, vals)
            ints = [next(it) if has else 0 for has in mask]
        kept.values[name] = ints
        kept.present[name] = mask
        kept.sums[name] = sum(ints)
        kept.shifts[name] = _twos(reduce(or_, ints, 0))
    return kept


def _fresh_scalars_by_node(dicts: list[dict[str, float]], n: int) -> _Scalars | None:
    kept = _Scalars({}, {}, {}, {})
    for i, scalars in enumerate(dicts):
        if scalars and not kept.set_node(i, scalars, n, fresh=True):
            return None
    return kept


@dataclass(slots=True)
class _Kept:
    views: list[NodeInfo]
    versions: list[int]
    columns: list[list[int]]  # per field, each node's amount as an int (the views' order)
    totals: list[int]  # per field, the exact sum
    shifts: list[int]  # per field, a power of two (its exponent) dividing every amount it had
    scalars: tuple[_Scalars, _Scalars]  # allocatable's and used's extended resources


def walk_totals(nodes: Sequence[NodeInfo]) -> tuple[Resource, Resource]:
    """Resource() + each node's allocatable, and Resource() + each node's used, in node order."""
    alloc, used = Resource(), Resource()
    for n in nodes:
        alloc.add(n.allocatable)
        used.add(n.used)
    return alloc, used


def _column(nodes: Sequence[NodeInfo], field: attrgetter) -> list[int] | None:
    """The nodes' amounts of one field as ints, or None when one is not a whole number >= 0."""
    values = list(map(field, nodes))
    try:
        if values and (min(values) < 0 or not all(map(float.is_integer, values))):
            return None
    except TypeError:  # not a float: left to the walk
        return None
    return list(map(int, values))


def _fresh_kept(nodes: list[NodeInfo], versions: list[int]) -> _Kept | None:
    columns = []
    for field in _FIELDS:
        col = _column(nodes, field)
        if col is None:
            return None
        columns.append(col)
    alloc_sc = _fresh_scalars(nodes, _scalars[0])
    used_sc = _fresh_scalars(nodes, _scalars[1])
    if alloc_sc is None or used_sc is None:
        return None
    shifts = [_twos(reduce(or_, c, 0)) for c in columns]
    return _Kept(nodes, versions, columns, [sum(c) for c in columns], shifts, (alloc_sc, used_sc))


def _advance(
    kept: _Kept, nodes: list[NodeInfo], versions: list[int], changed_at: list[int] | None
) -> _Kept | None:
    """The kept totals brought to `nodes`: the positions whose view or version differ redone.
    `changed_at`: the only positions that may differ (the snapshot knows them), else all."""
    if nodes is kept.views and versions is kept.versions:
        return kept  # the snapshot handed the same lists out again: no node changed
    # versions compared by identity: a node's version only grows, so the same value is the same
    # int object its NodeInfo holds, and a comparison by value would read every int (a cache
    # miss per node at 20,000 nodes)
    views, was = kept.views, kept.versions
    if changed_at is not None:
        stale = [i for i in changed_at if nodes[i] is not views[i] or versions[i] is not was[i]]
    else:
        stale = list(
            compress(range(len(nodes)), map(or_, map(is_not, nodes, views), map(is_not, versions, was)))
        )
    if not stale:
        kept.views, kept.versions = nodes, versions
        return kept
    changed = [nodes[i] for i in stale]
    news = [_column(changed, field) for field in _FIELDS]
    if any(new is None for new in news):
        return None
    n = len(nodes)
    for side, sc in zip(_scalars, kept.scalars, strict=True):
        # a refusal leaves this side's columns half redone: the caller walks, keeps nothing
        if not sc.set_nodes(stale, list(map(side, changed)), n):
            return None
    # ints: exact whatever the order; the kept object is changed only once every column is known
    for k, (col, new) in enumerate(zip(kept.columns, news, strict=True)):
        old = [col[i] for i in stale]
        if new is None or new == old:
            # the usual case of the allocatable columns: the factor of the same amounts is in
            # the bound already
            continue
        kept.totals[k] += sum(new) - sum(old)
        for i, v in zip(stale, new, strict=True):
            col[i] = v
        # a lower bound that only falls: the old amounts' factor need not be given back
        kept.shifts[k] = min(kept.shifts[k], _twos(reduce(or_, new, 0)))
    kept.views, kept.versions = nodes, versions  # lists nobody changes: kept, not copied
    return kept


def node_totals(
    nodes: list[NodeInfo],
    prev: object | None,
    versions: list[int] | None = None,
    changed_at: list[int] | None = None,
) -> tuple[Resource, Resource, _Kept | None]:
    """(allocatable total, used total, what to keep for the next session or None), the totals
    equal to walk_totals(nodes); `prev` is what the previous session kept (or None); `versions`
    the nodes' NodeInfo.view_versions when the caller knows them, and `changed_at` the only
    positions whose view or version may differ from `prev`'s (the previous snapshot's nodes).
    Called before the session changes any node (every view still shows its cluster node)."""
    if versions is None:
        versions = NodeInfo.view_versions(nodes)
    kept = None
    if versions is not None:
        if isinstance(prev, _Kept) and len(prev.views) == len(nodes):
            kept = _advance(prev, nodes, versions, changed_at)
        else:
            kept = _fresh_kept(nodes, versions)
    alloc_sc = used_sc = None
    if kept is not None and all(t < _limit(g) for t, g in zip(kept.totals, kept.shifts, strict=True)):
        alloc_sc = kept.scalars[0].total(nodes, _scalars[0])
        used_sc = kept.scalars[1].total(nodes, _scalars[1])
    if kept is None or alloc_sc is None or used_sc is None:
        alloc, used = walk_totals(nodes)
        return alloc, used, None
    t = kept.totals
    return Resource(t[0], t[1], alloc_sc, t[2]), Resource(t[3], t[4], used_sc, t[5]), kept
