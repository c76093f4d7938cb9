"""drf shares and proportion's water-filling, with worked numbers."""

from __future__ import annotations

from scheduler.model.objects import QueueInfo
from scheduler.model.resources import Resource
from scheduler.plugins.drf import share_of as drf_share
from scheduler.plugins.proportion import QueueAttr, water_fill

GI = 2**30


def _attr(
    name: str, weight: int, request: Resource, cap: Resource | None = None, guarantee: Resource | None = None
) -> QueueAttr:
    real = cap.clone() if cap else Resource(float("inf"), float("inf"))
    return QueueAttr(QueueInfo(name, weight), weight, cap, real, guarantee or Resource(), request=request)


def test_drf_share_is_the_largest_fraction_of_any_resource() -> None:
    total = Resource(10000, 100 * GI)
    assert drf_share(Resource(2000, 50 * GI), total) == 0.5
    assert drf_share(Resource(5000, 10 * GI), total) == 0.5
    assert drf_share(Resource(), total) == 0.0


def test_water_filling_splits_by_weight_when_both_queues_want_everything() -> None:
    total = Resource(12000, 12 * GI)
    attrs = {"a": _attr("a", 1, Resource(12000, 12 * GI)), "b": _attr("b", 2, Resource(12000, 12 * GI))}
    water_fill(attrs, total)
    assert round(attrs["a"].deserved.milli_cpu) == 4000
    assert round(attrs["b"].deserved.milli_cpu) == 8000


def test_water_filling_gives_the_rest_to_the_queue_that_asks_for_more() -> None:
    total = Resource(3000, 3 * GI)
    attrs = {"q1": _attr("q1", 1, Resource(3000, 3 * GI)), "q2": _attr("q2", 1, Resource(1000, 1 * GI))}
    water_fill(attrs, total)
    assert round(attrs["q2"].deserved.milli_cpu) == 1000
    assert round(attrs["q1"].deserved.milli_cpu) == 2000


def test_capability_caps_and_guarantee_raises_the_deserved_share() -> None:
    total = Resource(10000, 10 * GI)
    capped = _attr("capped", 1, Resource(10000, 10 * GI), cap=Resource(2000, 10 * GI))
    guaranteed = _attr("g", 1, Resource(1000, 1 * GI), guarantee=Resource(3000, 3 * GI))
    other = _attr("other", 1, Resource(10000, 10 * GI))
    attrs = {"capped": capped, "g": guaranteed, "other": other}
    water_fill(attrs, total)
    assert round(capped.deserved.milli_cpu) == 2000
    assert round(guaranteed.deserved.milli_cpu) == 3000
    assert round(other.deserved.milli_cpu) == 5000
