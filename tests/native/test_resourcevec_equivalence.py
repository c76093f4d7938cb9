"""The compiled Resource (native/resourcevec.pyx) leaves exactly what its Python twin
(scheduler/model/resourcevec.py) leaves: every operation on the same values gives the same bits,
the same scalar keys in the same order and the same answers, with and without scalars, with a
scalar missing on one side (Infinity.ZERO / INFINITY), values at the 0.1 tolerance, NaN, -0.0,
an int put in the scalars by hand, and one Resource passed as two arguments of a call.

CI sets VC_SCHEDULER_REQUIRE_NATIVE=1: then a missing compiled module is a failure, not a skip.
"""

from __future__ import annotations

import math
import os
import pickle
import struct
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.model import resources
from scheduler.model.resources import EPSILON, Infinity, PyResource, QuantityError

native = resources.native_module()
needs_native = pytest.mark.skipif(native is None, reason="scheduler._native.resourcevec is not built")

NAMES = ("nvidia.com/gpu", "volcano.sh/vgpu-memory", "volcano.sh/vgpu-cores", "volcano.sh/vgpu-number")
BASES = (0.0, 1.0, 100.0, 1000.0, 2.0**40)
floats = st.one_of(
    st.builds(lambda b, d: b + d, st.sampled_from(BASES), st.sampled_from((0.0, 0.05, -0.05, 0.1, -0.1, 0.15, -0.15, 1.0))),
    st.floats(min_value=-1e6, max_value=1e12, allow_nan=False),
    st.sampled_from((float("nan"), float("inf"), -0.0, EPSILON, -EPSILON)),
)  # fmt: skip
# an int among the scalars is what a caller may set by hand: the compiled class leaves it to Python
scalar_values = st.one_of(floats, st.integers(min_value=-5, max_value=2000))

# a Resource as values, built as each class: (cpu, memory, pods, [(name, value), ...])
Spec = tuple[float, float, float, list[tuple[str, Any]]]
specs = st.tuples(
    floats,
    floats,
    st.one_of(st.just(0.0), floats),
    st.one_of(
        st.just([]),
        st.lists(st.tuples(st.sampled_from(NAMES), scalar_values), max_size=4, unique_by=lambda kv: kv[0]),
    ),
)


def build(cls: Any, spec: Spec) -> Any:
    cpu, mem, pods, scalars = spec
    r = cls(cpu, mem, None, pods)
    for k, v in scalars:
        r.scalars[k] = v
    return r


def bits(v: object) -> object:
    """A number as its exact identity: a float's 8 bytes (every NaN alike), an int as itself."""
    if isinstance(v, float):
        return ("float", "nan" if math.isnan(v) else struct.pack("<d", v))
    return (type(v).__name__, v)


def state(r: Any) -> tuple[object, ...]:
    return (
        bits(r.milli_cpu),
        bits(r.memory),
        bits(r.pods),
        [(k, bits(v)) for k, v in r.scalars.items()],
    )


def norm(x: object) -> object:
    """An answer with every float as its bits and every Resource as its state, to compare."""
    if isinstance(x, float):
        return bits(x)
    if isinstance(x, (list, tuple)):
        return [norm(v) for v in x]
    if hasattr(x, "scalars"):
        return state(x)
    return x


def test_compiled_class_is_present_where_it_must_be() -> None:
    if os.environ.get("VC_SCHEDULER_REQUIRE_NATIVE", "") not in ("", "0"):
        assert native is not None, (
            "VC_SCHEDULER_REQUIRE_NATIVE=1 but scheduler._native.resourcevec did not import"
        )
    elif native is None:
        pytest.skip("compiled module not built (set VC_SCHEDULER_REQUIRE_NATIVE=1 to make this fail)")


# in-place operations: (name, call on self and the other Resources)
MUTATORS = {
    "add": lambda r, a, b, c: r.add(a),
    "sub": lambda r, a, b, c: r.sub(a),
    "pass_on": lambda r, a, b, c: r.pass_on(a, b),
    "sub_add": lambda r, a, b, c: r.sub_add(a, b),
    "add_sub": lambda r, a, b, c: r.add_sub(a, b),
    "multi": lambda r, a, b, c: r.multi(a.memory),
    "clip_at_zero": lambda r, a, b, c: r.clip_at_zero(),
    "set_max": lambda r, a, b, c: r.set_max(a),
    "min_dimension_zero": lambda r, a, b, c: r.min_dimension(a, Infinity.ZERO),
    "min_dimension_infinity": lambda r, a, b, c: r.min_dimension(a, Infinity.INFINITY),
    "set_scalar": lambda r, a, b, c: r.set(NAMES[0], a.memory),
    "set_cpu": lambda r, a, b, c: r.set("cpu", a.memory),
}
QUESTIONS = {
    "less_equal_zero": lambda r, a, b, c: r.less_equal(a),
    "less_equal_infinity": lambda r, a, b, c: r.less_equal(a, Infinity.INFINITY),
    "less_zero": lambda r, a, b, c: r.less(a),
    "less_infinity": lambda r, a, b, c: r.less(a, Infinity.INFINITY),
    "less_equal_with_dimension": lambda r, a, b, c: r.less_equal_with_dimension(a, b),
    "plus_less_equal_with_dimension": lambda r, a, b, c: r.plus_less_equal_with_dimension(a, b),
    "fits_future": lambda r, a, b, c: r.fits_future(a, b, c),
    "insufficient": lambda r, a, b, c: r.insufficient(a),
    "eq": lambda r, a, b, c: r == a,
    "ne": lambda r, a, b, c: r != a,
    "is_empty": lambda r, a, b, c: r.is_empty(),
    "is_zero": lambda r, a, b, c: [r.is_zero(n) for n in ("cpu", "memory", "pods", *NAMES)],
    "get": lambda r, a, b, c: [r.get(n) for n in ("cpu", "memory", "pods", *NAMES)],
    "names": lambda r, a, b, c: r.names(),
    "items": lambda r, a, b, c: list(r.items()),
    "to_dict": lambda r, a, b, c: list(r.to_dict().items()),
    "repr": lambda r, a, b, c: repr(r),
    "clone": lambda r, a, b, c: r.clone(),
}


def _run(cls: Any, op: Any, self_spec: Spec, others: list[Spec], alias: tuple[int, ...]) -> tuple[Any, ...]:
    """op on Resources of `cls`; alias[i] = 0 puts self in the i-th argument's place."""
    r = build(cls, self_spec)
    args = [r if a == 0 else build(cls, s) for s, a in zip(others, alias, strict=True)]
    try:
        out = op(r, *args)
    except (TypeError, ValueError, OverflowError) as exc:  # the same refusal on both sides
        return ("raised", type(exc).__name__, state(r))
    return (out if out is not r else "self", state(r), [state(x) for x in args])


def _compare(op: Any, self_spec: Spec, others: list[Spec], alias: tuple[int, ...]) -> None:
    assert native is not None
    got = _run(native.Resource, op, self_spec, others, alias)
    want = _run(PyResource, op, self_spec, others, alias)
    assert norm(got) == norm(want)


@needs_native
@pytest.mark.parametrize("name", sorted(MUTATORS))
@settings(max_examples=100, deadline=None)
@given(mine=specs, others=st.lists(specs, min_size=3, max_size=3))
def test_every_operation_leaves_the_twins_bits(name: str, mine: Spec, others: list[Spec]) -> None:
    _compare(MUTATORS[name], mine, others, (1, 1, 1))


@needs_native
@pytest.mark.parametrize("name", sorted(QUESTIONS))
@settings(max_examples=100, deadline=None)
@given(mine=specs, others=st.lists(specs, min_size=3, max_size=3))
def test_every_question_gets_the_twins_answer(name: str, mine: Spec, others: list[Spec]) -> None:
    _compare(QUESTIONS[name], mine, others, (1, 1, 1))


@needs_native
@pytest.mark.parametrize("name", sorted(MUTATORS))
@settings(max_examples=40, deadline=None)
@given(
    mine=specs,
    others=st.lists(specs, min_size=3, max_size=3),
    alias=st.sampled_from(((0, 1, 1), (1, 0, 1), (0, 0, 1))),
)
def test_a_resource_given_as_its_own_argument_leaves_the_twins_bits(
    name: str, mine: Spec, others: list[Spec], alias: tuple[int, int, int]
) -> None:
    _compare(MUTATORS[name], mine, others, alias)


@needs_native
def test_the_compiled_class_keeps_the_twins_surface() -> None:
    assert native is not None
    cls = native.Resource
    r = cls.from_list({"cpu": "1500m", "memory": "1Gi", "pods": 3, "nvidia.com/gpu": 2})
    t = PyResource.from_list({"cpu": "1500m", "memory": "1Gi", "pods": 3, "nvidia.com/gpu": 2})
    assert state(r) == state(t)
    assert repr(r) == repr(t) == "<cpu 1500m, memory 1.07374e+09, nvidia.com/gpu 2000>"
    with pytest.raises(QuantityError, match="memory"):
        cls.from_list({"memory": "lots"})
    with pytest.raises(TypeError):
        hash(r)
    with pytest.raises(AttributeError):
        r.something_else = 1
    # keyword construction as the twin's, and a copy through pickle (copy.deepcopy takes that road)
    k = cls(milli_cpu=1, memory=2, scalars={"x": 3.0}, pods=4)
    assert state(k) == state(PyResource(milli_cpu=1, memory=2, scalars={"x": 3.0}, pods=4))
    assert state(pickle.loads(pickle.dumps(k))) == state(k)
    assert type(pickle.loads(pickle.dumps(k))) is cls
    t = PyResource(1, 2, {"x": 3}, 4)
    assert state(pickle.loads(pickle.dumps(t))) == state(t)
    assert type(pickle.loads(pickle.dumps(t))) is PyResource
    assert (r == 5) is False and (r != 5) is True


def test_the_selected_class_follows_the_pure_switch() -> None:
    want_pure = os.environ.get("VC_SCHEDULER_PURE", "") not in ("", "0") or native is None
    assert (resources.Resource is PyResource) == want_pure
