"""The compiled resource checks give exactly the answers of their Python twin (native/resfit.pyx
vs scheduler/model/resfit.py, which are Resource.fits_future and Resource.less_equal node by
node), and a whole session decides the same on either.

CI sets VC_SCHEDULER_REQUIRE_NATIVE=1: then a missing compiled module is a failure, not a skip.
"""

from __future__ import annotations

import os
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.framework import noderows, placement
from scheduler.model import resfit as twin
from scheduler.model import resfit_impl
from scheduler.model.node import NodeInfo
from scheduler.model.resources import EPSILON, Resource
from tests.unit.deviceshare.test_ds_session_fast_path import SESSION_CONF, _decide

native = resfit_impl.native_module()
needs_native = pytest.mark.skipif(native is None, reason="scheduler._native.resfit is not built")

NAMES = ("nvidia.com/gpu", "volcano.sh/vgpu-memory", "volcano.sh/vgpu-cores", "example.com/x")
# values around one another and around the 0.1 tolerance, so that the edges are met; an int now
# and then (set by hand: the compiled module must leave it to Python), and a NaN
BASES = (0.0, 1.0, 100.0, 1000.0, 2.0**40)
values = st.one_of(
    st.builds(lambda b, d: b + d, st.sampled_from(BASES), st.sampled_from((0.0, 0.05, -0.05, 0.1, -0.1, 0.15, -0.15, 1.0))),
    st.floats(min_value=-1e6, max_value=1e12, allow_nan=False),
    st.integers(min_value=0, max_value=2000),
    st.just(float("nan")),
)  # fmt: skip


@st.composite
def resources(draw: Any, max_scalars: int = 3) -> Resource:
    r = Resource(draw(values), draw(values))
    for name in draw(st.lists(st.sampled_from(NAMES), max_size=max_scalars, unique=True)):
        r.scalars[name] = draw(values)
    # Resource() makes floats; an int set afterwards is what the compiled module must notice
    if draw(st.booleans()):
        r.milli_cpu = draw(values)
    return r


@st.composite
def nodes(draw: Any) -> NodeInfo:
    n = NodeInfo("n", Resource(1.0, 1.0))
    n.idle = draw(resources())
    n.releasing = draw(st.one_of(st.just(Resource()), resources()))
    n.pipelined = draw(st.one_of(st.just(Resource()), resources()))
    return n


def test_compiled_module_is_present_where_it_must_be() -> None:
    if os.environ.get("VC_SCHEDULER_REQUIRE_NATIVE", "") not in ("", "0"):
        assert native is not None, "VC_SCHEDULER_REQUIRE_NATIVE=1 but scheduler._native.resfit did not import"
    elif native is None:
        pytest.skip("compiled module not built (set VC_SCHEDULER_REQUIRE_NATIVE=1 to make this fail)")


@needs_native
@settings(max_examples=600, deadline=None)
@given(resources(max_scalars=4), st.lists(nodes(), max_size=12))
def test_compiled_checks_equal_the_twin(req: Resource, ns: list[NodeInfo]) -> None:
    assert native is not None
    assert native.misfits(req, ns) == twin.misfits(req, ns)
    assert native.idle_fits(req, ns) == twin.idle_fits(req, ns)


@needs_native
@settings(max_examples=400, deadline=None)
@given(resources(max_scalars=4), st.lists(nodes(), max_size=12), st.randoms(use_true_random=False))
def test_the_fused_check_equals_the_twin_and_the_two_checks(
    req: Resource, ns: list[NodeInfo], rnd: Any
) -> None:
    assert native is not None
    # positions scattered in a longer code array, the untouched ones left as they were
    at = rnd.sample(range(3 * len(ns) + 1), len(ns))
    got_native, got_twin = bytearray([9]) * (3 * len(ns) + 1), bytearray([9]) * (3 * len(ns) + 1)
    assert native.misfits_idle(req, ns, at, got_native, 1, 2) == twin.misfits_idle(
        req, ns, at, got_twin, 1, 2
    )
    assert got_native == got_twin
    assert native.misfits_idle(req, ns, at, got_native, 1, 2) == twin.misfits(req, ns)
    want = bytearray([9]) * (3 * len(ns) + 1)
    for i, f in zip(at, twin.idle_fits(req, ns), strict=True):
        want[i] = 1 if f else 2
    assert got_native == want


@pytest.mark.parametrize("impl", [twin, native] if native is not None else [twin])
def test_the_fused_check_refuses_unaligned_positions(impl: Any) -> None:
    node = NodeInfo("n", Resource(2.0, 2.0))
    with pytest.raises(ValueError):
        impl.misfits_idle(Resource(1.0, 1.0), [node], [0, 1], bytearray(2), 1, 2)


def test_the_twin_is_the_resource_methods() -> None:
    req = Resource(1000.0, 0.0, {"volcano.sh/vgpu-memory": 2048.0})
    fits = NodeInfo("a", Resource(1000.0 - EPSILON / 2, 0.0, {"volcano.sh/vgpu-memory": 2048.0}))
    short = NodeInfo("b", Resource(4000.0, 0.0, {"volcano.sh/vgpu-memory": 1024.0}))
    freed = NodeInfo("c", Resource(500.0, 0.0, {"volcano.sh/vgpu-memory": 2048.0}))
    freed.releasing = Resource(500.0, 0.0)  # fits FutureIdle, not Idle
    ns = [fits, short, freed]
    for impl in (twin, native) if native is not None else (twin,):
        assert impl.misfits(req, ns) == [1]
        assert impl.idle_fits(req, ns) == [True, False, False]
        codes = bytearray(4)
        assert impl.misfits_idle(req, ns, [3, 0, 1], codes, 1, 2) == [1]
        assert codes == bytearray([2, 2, 0, 1])


@needs_native
def test_a_request_of_many_scalars_is_left_to_python() -> None:
    assert native is not None
    req = Resource(1.0, 1.0, {f"example.com/r{i}": 1.0 for i in range(40)})
    node = NodeInfo("n", Resource(2.0, 2.0, {f"example.com/r{i}": 2.0 for i in range(40)}))
    node.idle.scalars["example.com/r39"] = 0.5
    assert native.misfits(req, [node]) == twin.misfits(req, [node]) == [0]
    assert native.idle_fits(req, [node]) == twin.idle_fits(req, [node]) == [False]


@needs_native
@pytest.mark.parametrize("seed", [1, 2])
def test_a_session_decides_the_same_on_the_twin(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(placement, "resfit_impl", native)
    monkeypatch.setattr(noderows, "resfit_impl", native)
    compiled = _decide(SESSION_CONF, seed)
    monkeypatch.setattr(placement, "resfit_impl", twin)
    monkeypatch.setattr(noderows, "resfit_impl", twin)
    pure = _decide(SESSION_CONF, seed)
    assert len(compiled[0]) > 20
    assert compiled == pure


def _rows_of(
    impl: Any, ns: list[NodeInfo], keys: list[str], at: list[int], total: int
) -> tuple[Any, bytearray]:
    """Rows for `ns` (the k-th at row at[k]) of a table of `total` rows, filled by `impl`."""
    from array import array

    stride = 4 + 2 * len(keys)
    values, ok = array("d", [7.0] * (stride * total)), bytearray([1]) * total
    impl.rows_fill(values, ok, stride, keys, ns, at)
    return values, ok


@pytest.mark.parametrize("impl", [twin, native] if native is not None else [twin])
@settings(max_examples=300, deadline=None)
@given(resources(max_scalars=4), st.lists(nodes(), max_size=12), st.randoms(use_true_random=False))
def test_the_rows_answer_what_the_resources_answer(
    impl: Any, req: Resource, ns: list[NodeInfo], rnd: Any
) -> None:
    """misfits_idle read from the rows (rows_fill, rows_misfits_idle) is misfits_idle of the
    nodes' Resources, rows scattered in a longer table, with keys the request does not ask too."""
    total = 3 * len(ns) + 1
    at = rnd.sample(range(total), len(ns))
    keys = sorted(set(NAMES) | set(req.scalars), key=lambda k: rnd.random())
    values, ok = _rows_of(impl, ns, keys, at, total)
    got, want = bytearray([9]) * total, bytearray([9]) * total
    short = impl.rows_misfits_idle(
        req, values, ok, 4 + 2 * len(keys), {k: j for j, k in enumerate(keys)}, ns, at, got, 1, 2
    )
    assert short == twin.misfits_idle(req, ns, at, want, 1, 2)
    assert got == want


@needs_native
@settings(max_examples=300, deadline=None)
@given(st.lists(nodes(), max_size=12))
def test_compiled_rows_equal_the_twin_rows(ns: list[NodeInfo]) -> None:
    """The rows the two fill hold the same doubles wherever their values are exact floats."""
    assert native is not None
    at = list(range(len(ns)))
    v_native, ok_native = _rows_of(native, ns, list(NAMES), at, len(ns))
    v_twin, ok_twin = _rows_of(twin, ns, list(NAMES), at, len(ns))
    assert ok_native == ok_twin
    stride = 4 + 2 * len(NAMES)
    for p in at:
        if ok_twin[p]:
            a, b = v_native[p * stride : (p + 1) * stride], v_twin[p * stride : (p + 1) * stride]
            assert a.tobytes() == b.tobytes()


@pytest.mark.parametrize("impl", [twin, native] if native is not None else [twin])
def test_the_rows_refuse_what_is_out_of_range(impl: Any) -> None:
    from array import array

    node = NodeInfo("n", Resource(2.0, 2.0))
    values, ok = array("d", bytes(8 * 4 * 2)), bytearray(2)
    with pytest.raises(ValueError):
        impl.rows_fill(values, ok, 4, [], [node], [0, 1])
    with pytest.raises(ValueError):
        impl.rows_fill(values, ok, 6, [], [node], [0])
    with pytest.raises(IndexError):
        impl.rows_fill(values, ok, 4, [], [node], [2])
    impl.rows_fill(values, ok, 4, [], [node], [1])
    req = Resource(1.0, 1.0, {"example.com/x": 1.0})
    with pytest.raises(KeyError):
        impl.rows_misfits_idle(req, values, ok, 4, {}, [node], [1], bytearray(2), 1, 2)
    with pytest.raises(IndexError):
        impl.rows_misfits_idle(Resource(1.0, 1.0), values, ok, 4, {}, [node], [3], bytearray(4), 1, 2)
    assert (
        impl.rows_misfits_idle(Resource(1.0, 1.0), values, ok, 4, {}, [node], [1], bytearray(2), 1, 2) == []
    )


@pytest.mark.parametrize("impl", [twin, native] if native is not None else [twin])
@settings(max_examples=200, deadline=None)
@given(st.lists(nodes(), min_size=1, max_size=10), st.randoms(use_true_random=False))
def test_refilled_rows_are_the_rows_filled_afresh(impl: Any, ns: list[NodeInfo], rnd: Any) -> None:
    """rows_refill writes the stale rows (repeats allowed) from the nodes at those positions, as
    rows_fill of the same nodes does, leaves the other rows alone and empties the stale list."""
    from array import array

    keys = list(NAMES)
    stride = 4 + 2 * len(keys)
    total = len(ns)
    stale = [rnd.randrange(total) for _ in range(rnd.randrange(4))]
    values, ok = array("d", [7.0] * (stride * total)), bytearray([1]) * total
    marked = list(stale)
    impl.rows_refill(values, ok, stride, keys, ns, marked)
    want_values, want_ok = array("d", [7.0] * (stride * total)), bytearray([1]) * total
    twin.rows_fill(want_values, want_ok, stride, keys, [ns[p] for p in stale], stale)
    assert marked == []
    assert ok == want_ok
    for p in range(total):
        if ok[p]:
            row = slice(p * stride, (p + 1) * stride)
            assert values[row].tobytes() == want_values[row].tobytes()


@pytest.mark.parametrize("impl", [twin, native] if native is not None else [twin])
def test_refill_refuses_a_row_outside_the_nodes_and_keeps_it_stale(impl: Any) -> None:
    from array import array

    node = NodeInfo("n", Resource(2.0, 2.0))
    values, ok = array("d", bytes(8 * 4 * 3)), bytearray(3)
    stale = [2]
    with pytest.raises(IndexError):
        impl.rows_refill(values, ok, 4, [], [node, node], stale)
    assert stale == [2]
    with pytest.raises(ValueError):
        impl.rows_refill(values, ok, 6, [], [node], [0])
