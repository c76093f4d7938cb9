"""The queue sums' test of whole amounts says what `float(v).is_integer() and abs(v) < 2**53` says,
and a part's own copies are equal to what it names (one copy for an amount named twice)."""

from __future__ import annotations

import itertools
import math

from scheduler.model.resources import Resource
from scheduler.plugins.queuesums import _EXACT_LIMIT, _exact, _own

_VALUES = [
    0.0,
    -0.0,
    1.0,
    -3.0,
    0.5,
    -0.25,
    1e-300,
    2.0**53 - 1,
    2.0**53,
    -(2.0**53),
    2.0**60,
    math.inf,
    -math.inf,
    math.nan,
    7,  # an int where a float is expected
]


def _reference(part: list[tuple[int, Resource]]) -> bool:
    for _, r in part:
        if r.scalars:
            return False
        for v in (r.milli_cpu, r.memory, r.pods):
            if not float(v).is_integer() or abs(v) >= _EXACT_LIMIT:
                return False
    return True


def _resource(cpu: float, mem: float, pods: float) -> Resource:
    r = Resource()
    r.milli_cpu, r.memory, r.pods = cpu, mem, pods
    return r


def test_whole_amounts_are_told_as_before() -> None:
    seen = set()
    for cpu, mem, pods in itertools.product(_VALUES, repeat=3):
        r = _resource(cpu, mem, pods)
        for part in ([(0, r)], [(0, r), (1, r)], [(0, _resource(1.0, 2.0, 0.0)), (1, r)]):
            assert _exact(part) == _reference(part), (cpu, mem, pods)
            seen.add(_exact(part))
    gpu = _resource(1.0, 1.0, 0.0)
    gpu.scalars["nvidia.com/gpu"] = 1000.0
    assert not _exact([(0, gpu)])
    assert seen == {True, False}


def test_own_copies_each_amount_once() -> None:
    allocated, pending = _resource(2000.0, 4.0, 2.0), _resource(1000.0, 2.0, 1.0)
    part = [(0, allocated), (1, allocated), (1, pending), (2, allocated)]
    own = _own(part)
    assert [i for i, _ in own] == [0, 1, 1, 2]
    for (_, mine), (_, theirs) in zip(own, part, strict=True):
        assert mine is not theirs
        assert (mine.milli_cpu, mine.memory, mine.pods, mine.scalars) == (
            theirs.milli_cpu,
            theirs.memory,
            theirs.pods,
            theirs.scalars,
        )
    assert own[0][1] is own[1][1] and own[2][1] is not own[1][1] and own[3][1] is not own[0][1]
    allocated.add(pending)  # the job's totals move on; the kept part does not
    assert own[0][1].milli_cpu == 2000.0
