"""drf's and proportion's share_of read Resource fields directly (no generator, no get() per
name); they must give exactly the floats of the Resource.items() / Resource.get() forms they
replaced, NaN, zero, negative and oddly named scalars included."""

from __future__ import annotations

import math
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.model.resources import EPSILON, Resource
from scheduler.plugins import drf, proportion


def drf_reference(allocated: Resource, total: Resource) -> float:
    share = 0.0
    for name, t in total.items():
        if t < EPSILON:
            continue
        a = allocated.get(name)
        s = a / t if t > 0 else (0.0 if a == 0 else 1.0)
        if s > share:
            share = s
    return share


def proportion_reference(allocated: Resource, deserved: Resource) -> float:
    share = 0.0
    for name, d in deserved.items():
        a = allocated.get(name)
        if d <= 0:
            s = 0.0 if a == 0 else 1.0
        else:
            s = a / d
        if s > share:
            share = s
    return share


values = st.one_of(
    st.sampled_from((0.0, EPSILON, EPSILON / 2, -1.0, 1.0, 1000.0, math.nan, math.inf, -math.inf)),
    st.floats(min_value=-1e6, max_value=1e12, allow_nan=False),
    st.integers(min_value=0, max_value=10**6),
)
# "pods" and "cpu" as scalar names: Resource.get reads the attribute, not the scalar
NAMES = ("volcano.sh/vgpu-memory", "nvidia.com/gpu", "pods", "cpu", "memory", "example.com/x")


@st.composite
def resources(draw: Any) -> Resource:
    r = Resource(draw(values), draw(values))
    r.pods = draw(values)
    for name in draw(st.lists(st.sampled_from(NAMES), max_size=4, unique=True)):
        r.scalars[name] = draw(values)
    return r


def _same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or (a == b and type(a) is type(b))


@settings(max_examples=800, deadline=None)
@given(resources(), resources())
def test_drf_share_of_matches_the_items_form(allocated: Resource, total: Resource) -> None:
    assert _same(drf.share_of(allocated, total), drf_reference(allocated, total))


@settings(max_examples=800, deadline=None)
@given(resources(), resources())
def test_proportion_share_of_matches_the_items_form(allocated: Resource, deserved: Resource) -> None:
    assert _same(proportion.share_of(allocated, deserved), proportion_reference(allocated, deserved))


def test_a_scalar_named_pods_reads_the_pods_attribute() -> None:
    allocated = Resource(0.0, 0.0)
    allocated.pods = 5.0
    allocated.scalars["pods"] = 1.0
    total = Resource(0.0, 0.0)
    total.scalars["pods"] = 10.0
    assert drf.share_of(allocated, total) == 0.5 == drf_reference(allocated, total)
    assert proportion.share_of(allocated, total) == 0.5 == proportion_reference(allocated, total)
