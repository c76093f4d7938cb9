from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.model.resources import Infinity, QuantityError, Resource, parse_quantity


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("100m", Decimal("0.1")),
        ("1", Decimal(1)),
        ("1.5", Decimal("1.5")),
        ("1Ki", Decimal(1024)),
        ("1Mi", Decimal(2**20)),
        ("2Gi", Decimal(2 * 2**30)),
        ("1Ti", Decimal(2**40)),
        ("1Pi", Decimal(2**50)),
        ("1Ei", Decimal(2**60)),
        ("1k", Decimal(1000)),
        ("1M", Decimal(10**6)),
        ("1G", Decimal(10**9)),
        ("1T", Decimal(10**12)),
        ("1P", Decimal(10**15)),
        ("1E", Decimal(10**18)),
        ("1e3", Decimal(1000)),
        ("1E3", Decimal(1000)),
        ("5e-3", Decimal("0.005")),
        ("500u", Decimal("0.0005")),
        ("10n", Decimal("1e-8")),
        (".5", Decimal("0.5")),
        ("+2", Decimal(2)),
        (3, Decimal(3)),
    ],
)
def test_every_suffix_the_api_accepts_parses_exactly(text: object, value: Decimal) -> None:
    assert parse_quantity(text) == value


@pytest.mark.parametrize("text", ["", "abc", "1GB", "1.2.3", "1 Gi", "Gi", "1ki", True, None, "--1"])
def test_a_bad_quantity_is_an_error(text: object) -> None:
    with pytest.raises(QuantityError):
        parse_quantity(text)


def test_resource_from_list_names_the_bad_resource() -> None:
    with pytest.raises(QuantityError, match="memory"):
        Resource.from_list({"cpu": "1", "memory": "lots"})


def test_cpu_in_millicores_memory_in_bytes_scalars_in_milli_units() -> None:
    r = Resource.from_list({"cpu": "1500m", "memory": "1Gi", "nvidia.com/gpu": "2", "pods": "110"})
    assert r.milli_cpu == 1500
    assert r.memory == 2**30
    assert r.scalars == {"nvidia.com/gpu": 2000}
    assert r.pods == 110


def test_less_equal_tolerates_a_tenth_and_treats_missing_scalars_as_zero() -> None:
    small = Resource(1000.05, 10)
    assert small.less_equal(Resource(1000, 10))
    gpu = Resource(0, 0, {"gpu": 1000})
    assert not gpu.less_equal(Resource(4000, 100))
    assert gpu.less_equal(Resource(4000, 100, {"gpu": 1000}))
    # with Infinity, a scalar missing on the right is unlimited
    assert gpu.less_equal(Resource(4000, 100), Infinity.INFINITY)


def test_insufficient_lists_the_short_dimensions() -> None:
    req = Resource(2000, 100, {"gpu": 1000})
    assert req.insufficient(Resource(1000, 1000)) == ["cpu", "gpu"]


_values = st.one_of(
    st.sampled_from((0.0, 0.05, -0.05, 0.1, -1.0, 1.0, 1000.0, float("nan"), float("inf"))),
    st.floats(min_value=-1e6, max_value=1e12, allow_nan=False),
    st.integers(min_value=-5, max_value=10**6),
)


@st.composite
def _resources(draw: Any) -> Resource:
    r = Resource(draw(_values), draw(_values))
    r.pods = draw(_values)
    for name in draw(st.lists(st.sampled_from(("a.io/x", "b.io/y", "pods", "cpu")), max_size=3, unique=True)):
        r.scalars[name] = draw(_values)
    return r


@settings(max_examples=1000, deadline=None)
@given(_resources(), _resources(), _resources())
def test_plus_less_equal_with_dimension_is_the_copy_add_and_compare(
    allocated: Resource, req: Resource, limit: Resource
) -> None:
    before = repr((allocated.milli_cpu, allocated.memory, allocated.pods, allocated.scalars))
    expected = allocated.clone().add(req).less_equal_with_dimension(limit, req)
    assert allocated.plus_less_equal_with_dimension(req, limit) is expected
    # and nothing is written (repr: a NaN equals itself there)
    assert repr((allocated.milli_cpu, allocated.memory, allocated.pods, allocated.scalars)) == before


def _bits(r: Resource) -> str:
    """Every value's type and exact bits (hex tells -0.0 from 0.0 and shows NaN), scalars in order."""

    def b(v: float) -> str:
        return f"{type(v).__name__}:{float(v).hex()}"

    return repr((b(r.milli_cpu), b(r.memory), b(r.pods), [(k, b(v)) for k, v in r.scalars.items()]))


@settings(max_examples=1000, deadline=None)
@given(_resources(), _resources(), _resources())
def test_sub_add_and_add_sub_leave_what_the_two_calls_leave(
    base: Resource, old: Resource, new: Resource
) -> None:
    assert _bits(base.clone().sub_add(old, new)) == _bits(base.clone().sub(old).add(new))
    assert _bits(base.clone().add_sub(new, old)) == _bits(base.clone().add(new).sub(old))
    # the same request taken off and put back (a commit's status change on a node)
    assert _bits(base.clone().sub_add(old, old)) == _bits(base.clone().sub(old).add(old))
    assert _bits(base.clone().add_sub(old, old)) == _bits(base.clone().add(old).sub(old))


def test_a_request_put_back_is_not_assumed_to_cancel_out() -> None:
    # 0.1 + 0.2 - 0.2 is not 0.1 in floats: the one-pass forms take both steps
    r = Resource(0.1, 0.1, {"a.io/x": 0.1})
    step = Resource(0.2, 0.2, {"a.io/x": 0.2, "b.io/y": -0.0})
    r.add_sub(step, step)
    assert (r.milli_cpu, r.memory, r.scalars) == (
        0.1 + 0.2 - 0.2,
        0.1 + 0.2 - 0.2,
        {"a.io/x": 0.1 + 0.2 - 0.2, "b.io/y": 0.0},
    )
    assert r.milli_cpu != 0.1


@settings(max_examples=1000, deadline=None)
@given(_resources(), _resources(), _resources())
def test_pass_on_leaves_what_sub_then_add_leave(source: Resource, to: Resource, req: Resource) -> None:
    s, t = source.clone(), to.clone()
    s.pass_on(req, t)
    assert (_bits(s), _bits(t)) == (_bits(source.clone().sub(req)), _bits(to.clone().add(req)))
