"""The kept part of a job is made in one pass: copies of its amounts when every amount is whole
and below 2**53 without extended resources, and nothing (the walk keeps no parts) otherwise."""

from __future__ import annotations

import itertools
import math

from scheduler.model.resources import Resource
from scheduler.plugins.queuesums import _EXACT_LIMIT, _own

_VALUES = [0.0, -0.0, 3.0, -3.0, 0.5, 2.0**53 - 1, 2.0**53, -(2.0**53), math.inf, math.nan]


def _whole(r: Resource) -> bool:
    if r.scalars:
        return False
    return all(float(v).is_integer() and abs(v) < _EXACT_LIMIT for v in (r.milli_cpu, r.memory, r.pods))


def _resource(cpu: float, mem: float, pods: float) -> Resource:
    r = Resource()
    r.milli_cpu, r.memory, r.pods = cpu, mem, pods
    return r


def test_a_part_is_kept_exactly_when_every_amount_is_whole() -> None:
    fine = _resource(1000.0, 2.0**30, 1.0)
    for cpu, mem, pods in itertools.product(_VALUES, repeat=3):
        r = _resource(cpu, mem, pods)
        for part in ([(0, r)], [(0, r), (1, r)], [(0, fine), (1, r)], [(0, r), (1, fine), (2, r)]):
            kept = _own(part)
            if not _whole(r):
                assert kept is None, (cpu, mem, pods)
                continue
            assert kept is not None
            assert [i for i, _ in kept] == [i for i, _ in part]
            for (_, mine), (_, theirs) in zip(kept, part, strict=True):
                assert mine is not theirs
                assert (mine.milli_cpu, mine.memory, mine.pods) == (
                    theirs.milli_cpu,
                    theirs.memory,
                    theirs.pods,
                )


def test_a_part_naming_an_extended_resource_is_not_kept() -> None:
    gpu = _resource(1000.0, 1.0, 0.0)
    gpu.scalars["nvidia.com/gpu"] = 1000.0
    assert _own([(0, _resource(1.0, 1.0, 0.0)), (1, gpu)]) is None
    assert _own([]) == ()
