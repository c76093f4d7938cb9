"""The resource comparisons capacity decides with, each as Volcano defines it for queues.

They differ from the node-fit comparisons in `model.resources` in which dimensions count: only
those a request asks for, only those a deserved share names, or only those where something is
non-zero; getting that wrong either starves a queue or lets it reclaim what it does not need.
"""

from __future__ import annotations

from scheduler.model.resources import CPU, EPSILON, MEMORY, PODS, Resource

INF = float("inf")


def _le(left: float, right: float) -> bool:
    return left < right or abs(left - right) < EPSILON


def exceeded_part(left: Resource, right: Resource) -> Resource:
    """What `left` holds beyond `right`, per dimension (absent scalars count as zero)."""
    out = Resource(max(left.milli_cpu - right.milli_cpu, 0.0), max(left.memory - right.memory, 0.0))
    for k in set(left.scalars) | set(right.scalars):
        lv, rv = left.scalars.get(k, 0.0), right.scalars.get(k, 0.0)
        if lv > rv:
            out.scalars[k] = lv - rv
    return out


def max_of(left: Resource, right: Resource) -> Resource:
    """Per-dimension maximum; negative scalars are dropped."""
    out = Resource(max(left.milli_cpu, right.milli_cpu), max(left.memory, right.memory))
    for k, v in left.scalars.items():
        if v >= 0:
            out.scalars[k] = v
    for k, v in right.scalars.items():
        if v >= 0:
            out.scalars[k] = max(v, out.scalars.get(k, 0.0))
    return out


def present_names(r: Resource) -> set[str]:
    """Dimensions holding at least the comparison tolerance (Volcano's ResourceNames)."""
    names = {n for n, v in r.items() if v >= EPSILON}
    names.discard(PODS)
    return names


def over_on_requested(used: Resource, limit: Resource, req: Resource) -> list[str]:
    """Dimensions the request asks for where `used` is above `limit` (strictly, no tolerance)."""
    over: list[str] = []
    if req.milli_cpu > 0 and used.milli_cpu > limit.milli_cpu:
        over.append(CPU)
    if req.memory > 0 and used.memory > limit.memory:
        over.append(MEMORY)
    if not used.scalars:
        return over
    for k, q in req.scalars.items():
        if k == PODS or q <= 0:
            continue
        if used.scalars.get(k, 0.0) > limit.scalars.get(k, 0.0):
            over.append(k)
    return over


def room_on_some_requested(used: Resource, limit: Resource, req: Resource) -> bool:
    """True when, on some requested dimension not zero on both sides, `used` <= `limit`."""
    dims = [(q, used.get(k), limit.get(k)) for k, q in req.items() if k != PODS]
    return any(q > 0 and not (u < EPSILON and lim < EPSILON) and _le(u, lim) for q, u, lim in dims)


def above_on_relevant(used: Resource, deserved: Resource, req: Resource) -> list[str]:
    """Dimensions the request uses and the deserved share names where `used` > `deserved`."""
    dims: list[str] = []
    if req.milli_cpu > 0 and deserved.milli_cpu >= EPSILON and used.milli_cpu > deserved.milli_cpu:
        dims.append(CPU)
    if req.memory > 0 and deserved.memory >= EPSILON and used.memory > deserved.memory:
        dims.append(MEMORY)
    for k, q in req.scalars.items():
        if k == PODS or q <= 0 or k not in deserved.scalars:
            continue
        if used.scalars.get(k, 0.0) > deserved.scalars[k]:
            dims.append(k)
    return dims


def less_partly(left: Resource, right: Resource) -> bool:
    """Some dimension of `left` is below `right` (a scalar `right` has and `left` lacks counts)."""
    if left.milli_cpu < right.milli_cpu or left.memory < right.memory:
        return True
    if any(k not in left.scalars for k in right.scalars):
        return True
    return any(v < right.scalars.get(k, 0.0) for k, v in left.scalars.items())


def share(allocated: Resource, deserved: Resource) -> float:
    """Dominant share of the deserved dimensions; a queue with nothing deserved counts as 1."""
    if not deserved.scalars:
        # cpu and memory only (every queue's share at every session open, and a leaf's at every
        # placement): the loop below without its set of names. A named dimension's deserved is at
        # least EPSILON, so its share is a / d; max() takes them in the same way.
        best, named = 0.0, False
        d = deserved.milli_cpu
        if d >= EPSILON:
            best, named = max(best, allocated.milli_cpu / d), True
        d = deserved.memory
        if d >= EPSILON:
            best, named = max(best, allocated.memory / d), True
        return best if named else 1.0
    return share_by_names(allocated, deserved)


def share_by_names(allocated: Resource, deserved: Resource) -> float:
    """share() over every named dimension, scalars included (Volcano's form)."""
    names = present_names(deserved)
    if not names:
        return 1.0
    best = 0.0
    for n in names:
        d, a = deserved.get(n), allocated.get(n)
        s = (0.0 if a == 0 else 1.0) if d == 0 else a / d
        best = max(best, s)
    return best
