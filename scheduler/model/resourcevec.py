"""The Resource vector the decision core computes with, in Python: the pure twin of the compiled
`native/resourcevec.pyx` (scheduler.model.resources picks one, as scheduler._native.select does).

A Resource holds CPU in millicores, memory in bytes and every other resource ("scalar") in
milli-units (quantity x 1000), as Volcano does, so that fractional extended resources compare
exactly. The `pods` dimension is kept apart (it is a count, checked by predicates) and ignored by
comparisons. Comparisons use Volcano's tolerance of 0.1 in the unit of the dimension.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from enum import Enum

from scheduler.model.quantity import CPU, MEMORY, PODS, QuantityError, quantity_in_unit

EPSILON = 0.1


class Infinity(Enum):
    """How a scalar missing on one side of a comparison counts."""

    ZERO = 0
    INFINITY = 1


class Resource:
    """Milli-CPU, memory bytes and scalar milli-units; `pods` is carried but never compared."""

    __slots__ = ("memory", "milli_cpu", "pods", "scalars")
    # named by its public home, as the compiled class is (reports, the daemon's garbage audit)
    __module__ = "scheduler.model.resources"

    def __init__(
        self,
        milli_cpu: float = 0.0,
        memory: float = 0.0,
        scalars: Mapping[str, float] | None = None,
        pods: float = 0.0,
    ) -> None:
        self.milli_cpu = float(milli_cpu)
        self.memory = float(memory)
        self.scalars: dict[str, float] = dict(scalars) if scalars else {}
        self.pods = float(pods)

    # -- construction -------------------------------------------------------------------------
    @classmethod
    def from_list(cls, resources: Mapping[str, object] | None) -> Resource:
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

    def set(self, name: str, value: float) -> None:
        if name == CPU:
            self.milli_cpu = value
        elif name == MEMORY:
            self.memory = value
        elif name == PODS:
            self.pods = value
        else:
            self.scalars[name] = value

    def get(self, name: str) -> float:
        if name == CPU:
            return self.milli_cpu
        if name == MEMORY:
            return self.memory
        if name == PODS:
            return self.pods
        return self.scalars.get(name, 0.0)

    def clone(self) -> Resource:
        r = Resource.__new__(Resource)
        r.milli_cpu = self.milli_cpu
        r.memory = self.memory
        # most resources carry no scalar: a literal is cheaper than copying an empty dict
        scalars = self.scalars
        r.scalars = scalars.copy() if scalars else {}
        r.pods = self.pods
        return r

    def names(self) -> list[str]:
        """Resource names present (cpu and memory always)."""
        return [CPU, MEMORY, *self.scalars]

    def items(self) -> Iterable[tuple[str, float]]:
        yield CPU, self.milli_cpu
        yield MEMORY, self.memory
        yield from self.scalars.items()

    # -- predicates ---------------------------------------------------------------------------
    def is_empty(self) -> bool:
        if self.milli_cpu >= EPSILON or self.memory >= EPSILON:
            return False
        return all(v < EPSILON for v in self.scalars.values())

    def is_zero(self, name: str) -> bool:
        return self.get(name) < EPSILON

    # -- arithmetic (in place, returning self, like Volcano) ----------------------------------
    def add(self, other: Resource) -> Resource:
        self.milli_cpu += other.milli_cpu
        self.memory += other.memory
        self.pods += other.pods
        theirs = other.scalars
        if theirs:
            s = self.scalars
            # keys, not items(): a pair less per scalar (the same sums, in the same order)
            for k in theirs:
                s[k] = s.get(k, 0.0) + theirs[k]
        return self

    def sub(self, other: Resource) -> Resource:
        """Subtract without asserting (Volcano's SubWithoutAssert); callers check fit first."""
        self.milli_cpu -= other.milli_cpu
        self.memory -= other.memory
        self.pods -= other.pods
        theirs = other.scalars
        if theirs:
            s = self.scalars
            for k in theirs:
                s[k] = s.get(k, 0.0) - theirs[k]
        return self

    def pass_on(self, req: Resource, to: Resource) -> None:
        """self.sub(req) then to.add(req) in one pass over req (a request moving from idle to
        used, from pending to allocated): each dimension gets the same float steps."""
        self.milli_cpu -= req.milli_cpu
        self.memory -= req.memory
        self.pods -= req.pods
        to.milli_cpu += req.milli_cpu
        to.memory += req.memory
        to.pods += req.pods
        theirs = req.scalars
        if theirs:
            mine, dest = self.scalars, to.scalars
            for k in theirs:
                v = theirs[k]
                mine[k] = mine.get(k, 0.0) - v
                dest[k] = dest.get(k, 0.0) + v

    def sub_add(self, old: Resource, new: Resource) -> Resource:
        """self.sub(old).add(new) in one pass: each dimension gets the same two float steps in
        the same order, and scalars new to self are inserted in the order the two calls would
        insert them (a task's request swapped for another, or put back as it was)."""
        self.milli_cpu = (self.milli_cpu - old.milli_cpu) + new.milli_cpu
        self.memory = (self.memory - old.memory) + new.memory
        self.pods = (self.pods - old.pods) + new.pods
        s, gone, came = self.scalars, old.scalars, new.scalars
        for k in gone:
            s[k] = s.get(k, 0.0) - gone[k]
            if k in came:
                s[k] += came[k]
        if came is not gone:
            for k in came:
                if k not in gone:
                    s[k] = s.get(k, 0.0) + came[k]
        return self

    def add_sub(self, new: Resource, old: Resource) -> Resource:
        """self.add(new).sub(old) in one pass, as sub_add does it."""
        self.milli_cpu = (self.milli_cpu + new.milli_cpu) - old.milli_cpu
        self.memory = (self.memory + new.memory) - old.memory
        self.pods = (self.pods + new.pods) - old.pods
        s, came, gone = self.scalars, new.scalars, old.scalars
        for k in came:
            s[k] = s.get(k, 0.0) + came[k]
            if k in gone:
                s[k] -= gone[k]
        if came is not gone:
            for k in gone:
                if k not in came:
                    s[k] = s.get(k, 0.0) - gone[k]
        return self

    def multi(self, ratio: float) -> Resource:
        self.milli_cpu *= ratio
        self.memory *= ratio
        for k in self.scalars:
            self.scalars[k] *= ratio
        return self

    def clip_at_zero(self) -> Resource:
        self.milli_cpu = max(self.milli_cpu, 0.0)
        self.memory = max(self.memory, 0.0)
        for k, v in self.scalars.items():
            if v < 0:
                self.scalars[k] = 0.0
        return self

    def set_max(self, other: Resource) -> Resource:
        """Per-dimension maximum (used for init containers and guarantees)."""
        self.milli_cpu = max(self.milli_cpu, other.milli_cpu)
        self.memory = max(self.memory, other.memory)
        for k, v in other.scalars.items():
            if v > self.scalars.get(k, 0.0):
                self.scalars[k] = v
        return self

    def min_dimension(self, other: Resource, default: Infinity = Infinity.ZERO) -> Resource:
        """Per-dimension minimum with `other`; a scalar missing in `other` counts per `default`."""
        self.milli_cpu = min(self.milli_cpu, other.milli_cpu)
        self.memory = min(self.memory, other.memory)
        for k, v in self.scalars.items():
            if k in other.scalars:
                self.scalars[k] = min(v, other.scalars[k])
            elif default is Infinity.ZERO:
                self.scalars[k] = 0.0
        return self

    # -- comparisons --------------------------------------------------------------------------
    def less_equal(self, other: Resource, default: Infinity = Infinity.ZERO) -> bool:
        """self <= other with tolerance; scalars iterate over self's (Volcano's LessEqual)."""
        if not (self.milli_cpu < other.milli_cpu or abs(self.milli_cpu - other.milli_cpu) < EPSILON):
            return False
        if not (self.memory < other.memory or abs(self.memory - other.memory) < EPSILON):
            return False
        if self.scalars:
            os_ = other.scalars
            for k, lv in self.scalars.items():
                rv = os_.get(k)
                if rv is None:
                    if default is Infinity.INFINITY:
                        continue
                    rv = 0.0
                if not (lv < rv or abs(lv - rv) < EPSILON):
                    return False
        if default is Infinity.INFINITY:
            for k in other.scalars:
                if k not in self.scalars:
                    return False
        return True

    def less_equal_with_dimension(self, other: Resource, req: Resource) -> bool:
        """self <= other only on the dimensions where `req` is positive."""
        if req.milli_cpu > 0 and not (
            self.milli_cpu < other.milli_cpu or abs(self.milli_cpu - other.milli_cpu) < EPSILON
        ):
            return False
        if req.memory > 0 and not (self.memory < other.memory or abs(self.memory - other.memory) < EPSILON):
            return False
        for k, q in req.scalars.items():
            if q <= 0:
                continue
            lv = self.scalars.get(k, 0.0)
            rv = other.scalars.get(k, 0.0)
            if not (lv < rv or abs(lv - rv) < EPSILON):
                return False
        return True

    def plus_less_equal_with_dimension(self, req: Resource, other: Resource) -> bool:
        """self.clone().add(req).less_equal_with_dimension(other, req), without the copy: each
        compared value is the sum add() would have stored (the same float additions)."""
        if req.milli_cpu > 0:
            v = self.milli_cpu + req.milli_cpu
            if not (v < other.milli_cpu or abs(v - other.milli_cpu) < EPSILON):
                return False
        if req.memory > 0:
            v = self.memory + req.memory
            if not (v < other.memory or abs(v - other.memory) < EPSILON):
                return False
        if req.scalars:
            mine, theirs = self.scalars, other.scalars
            for k, q in req.scalars.items():
                if q <= 0:
                    continue
                lv = mine.get(k, 0.0) + q
                rv = theirs.get(k, 0.0)
                if not (lv < rv or abs(lv - rv) < EPSILON):
                    return False
        return True

    def less(self, other: Resource, default: Infinity = Infinity.ZERO) -> bool:
        if not self.milli_cpu < other.milli_cpu or not self.memory < other.memory:
            return False
        for k, lv in self.scalars.items():
            rv = other.scalars.get(k)
            if rv is None:
                if default is Infinity.INFINITY:
                    continue
                rv = 0.0
            if not lv < rv:
                return False
        return True

    def fits_future(self, idle: Resource, releasing: Resource, pipelined: Resource) -> bool:
        """self <= idle + releasing - pipelined (a node's FutureIdle), without building it."""
        fi = idle.milli_cpu + releasing.milli_cpu - pipelined.milli_cpu
        if not (self.milli_cpu < fi or abs(self.milli_cpu - fi) < EPSILON):
            return False
        fi = idle.memory + releasing.memory - pipelined.memory
        if not (self.memory < fi or abs(self.memory - fi) < EPSILON):
            return False
        if self.scalars:
            i_s, r_s, p_s = idle.scalars, releasing.scalars, pipelined.scalars
            for k, lv in self.scalars.items():
                fi = i_s.get(k, 0.0) + r_s.get(k, 0.0) - p_s.get(k, 0.0)
                if not (lv < fi or abs(lv - fi) < EPSILON):
                    return False
        return True

    def insufficient(self, available: Resource) -> list[str]:
        """Names of the dimensions where self does not fit `available` (for fit-error messages)."""
        short: list[str] = []
        if not (self.milli_cpu < available.milli_cpu or abs(self.milli_cpu - available.milli_cpu) < EPSILON):
            short.append(CPU)
        if not (self.memory < available.memory or abs(self.memory - available.memory) < EPSILON):
            short.append(MEMORY)
        for k, lv in self.scalars.items():
            if lv < EPSILON:
                continue
            rv = available.scalars.get(k, 0.0)
            if not (lv < rv or abs(lv - rv) < EPSILON):
                short.append(k)
        return short

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Resource):
            return NotImplemented
        if abs(self.milli_cpu - other.milli_cpu) >= EPSILON or abs(self.memory - other.memory) >= EPSILON:
            return False
        for k in set(self.scalars) | set(other.scalars):
            if abs(self.scalars.get(k, 0.0) - other.scalars.get(k, 0.0)) >= EPSILON:
                return False
        return True

    __hash__ = None  # type: ignore[assignment]

    def __reduce__(self) -> tuple[object, ...]:
        # by this module's function, not by the public name (which may be the compiled class)
        return (_rebuilt, (self.milli_cpu, self.memory, self.scalars, self.pods))

    def to_dict(self) -> dict[str, float]:
        d = {CPU: self.milli_cpu, MEMORY: self.memory}
        d.update(self.scalars)
        return d

    def __repr__(self) -> str:
        parts = [f"cpu {self.milli_cpu:g}m", f"memory {self.memory:g}"]
        parts += [f"{k} {v:g}" for k, v in sorted(self.scalars.items())]
        return "<" + ", ".join(parts) + ">"


def _rebuilt(milli_cpu: float, memory: float, scalars: dict[str, float], pods: float) -> Resource:
    """A pickled Resource, its fields as they were."""
    r = Resource.__new__(Resource)
    r.milli_cpu, r.memory, r.scalars, r.pods = milli_cpu, memory, scalars, pods
    return r
