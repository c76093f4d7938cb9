"""The compiled resource score over many nodes gives exactly the integers and memo slots of its
Python twin (native/cpumemscore.pyx vs scheduler/plugins/k8s/cpumemscore.py), which computes with
noderesources.resource_scores, and a whole session decides the same on either.

CI sets VC_SCHEDULER_REQUIRE_NATIVE=1: then a missing compiled module is a failure, not a skip.
"""

from __future__ import annotations

import os
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.model.resources import Resource
from scheduler.plugins.k8s import cpumemscore as twin
from scheduler.plugins.k8s import cpumemscore_impl
from scheduler.plugins.k8s.noderesources import resource_scores

native = cpumemscore_impl.native_module()
needs_native = pytest.mark.skipif(native is None, reason="scheduler._native.cpumemscore is not built")


def test_compiled_module_is_present_where_it_must_be() -> None:
    if os.environ.get("VC_SCHEDULER_REQUIRE_NATIVE", "") not in ("", "0"):
        assert native is not None, (
            "VC_SCHEDULER_REQUIRE_NATIVE=1 but scheduler._native.cpumemscore did not import"
        )
    elif native is None:
        pytest.skip("compiled module not built (set VC_SCHEDULER_REQUIRE_NATIVE=1 to make this fail)")


class _Node:
    """What the score reads of a NodeInfo."""

    __slots__ = ("allocatable", "name", "used")

    def __init__(self, name: str, allocatable: Resource, used: Resource) -> None:
        self.name, self.allocatable, self.used = name, allocatable, used


def _resource(cpu: Any, mem: Any) -> Resource:
    r = Resource()
    r.milli_cpu, r.memory = cpu, mem
    return r


# whole and fractional amounts, zero, over-requests, the edges of the compiled range, beyond it,
# negative ones and a NaN (these the compiled module leaves to the Python function)
amounts = st.one_of(
    st.integers(0, 64_000).map(float),
    st.floats(0, 1e6, allow_nan=False),
    st.integers(0, 2**40),
    st.sampled_from(
        [0.0, 2.0**52 - 1, 2.0**52, 2.0**60, 2**53 + 1, -1.0, -0.5, float("nan"), 137438953472.0]
    ),
)
weights = st.tuples(st.integers(-3, 5), st.integers(-3, 5), st.integers(-3, 5), st.sampled_from([0, 300, -7]))


@st.composite
def cases(draw: st.DrawFn) -> tuple[list[_Node], Resource, tuple[int, int, int, int], list[int]]:
    n = draw(st.integers(1, 12))
    allocs = [_resource(draw(amounts), draw(amounts)) for _ in range(draw(st.integers(1, 3)))]
    nodes = [
        _Node(f"n{i % 7}", draw(st.sampled_from(allocs)), _resource(draw(amounts), draw(amounts)))
        for i in range(n)
    ]
    req = _resource(draw(amounts), draw(amounts))
    # which nodes are scored before the compared call (their slots then may or may not still hold)
    warm = draw(st.lists(st.integers(0, n - 1), max_size=n))
    return nodes, req, draw(weights), warm


def _run(mod: Any, nodes: list[_Node], req: Resource, w: tuple[int, int, int, int], warm: list[int]) -> tuple:
    """Score the `warm` nodes, change some of them, score all: both answers, their types and the
    slots left (an exception, as from int() of a NaN, is part of the answer)."""
    wl, wm, wb, taint = w

    def compute(node: Any) -> int:
        if not (wl or wm or wb):
            return taint
        s = resource_scores(node, req, wl, wm, wb)  # type: ignore[arg-type]
        return s + taint if taint else s

    slots: dict = {}
    try:
        first = mod.scores(
            slots, [nodes[i] for i in warm], req.milli_cpu, req.memory, wl, wm, wb, taint, compute
        )
        for i in warm[::2]:  # some nodes change after they were scored
            nodes[i].used = _resource(nodes[i].used.milli_cpu + 250.0, nodes[i].used.memory)
        got = mod.scores(slots, nodes, req.milli_cpu, req.memory, wl, wm, wb, taint, compute)
    except (ValueError, OverflowError) as exc:
        return (type(exc),)
    shown = {k: (id(v[0]), repr(v[1]), v[2], type(v[2])) for k, v in slots.items()}
    return first, got, [type(x) for x in got], shown


@needs_native
@settings(max_examples=600, deadline=None)
@given(cases())
def test_compiled_scores_equal_the_twin(case: tuple) -> None:
    nodes, req, w, warm = case
    twin_nodes = [_Node(n.name, n.allocatable, n.used) for n in nodes]
    assert _run(native, nodes, req, w, warm) == _run(twin, twin_nodes, req, w, warm)


@needs_native
def test_the_compiled_module_computes_in_range_and_leaves_the_rest_to_python() -> None:
    """In range it never calls the Python function; beyond 2**52, below 0 or NaN it does."""
    alloc = _resource(32_000.0, 128.0 * 2**30)
    nodes = [_Node("a", alloc, _resource(1500.0, 2.0**33)), _Node("b", alloc, _resource(0.0, 0.0))]
    req = _resource(1000.0, 2.0**31)
    got = native.scores({}, nodes, req.milli_cpu, req.memory, 1, 0, 1, 300, lambda n: -1)
    assert got == [resource_scores(n, req, 1, 0, 1) + 300 for n in nodes]  # type: ignore[arg-type]
    odd = [_Node("c", alloc, _resource(2.0**52, 0.0)), _Node("d", alloc, _resource(-1.0, 0.0))]
    odd.append(_Node("e", _resource(float("nan"), 1.0), _resource(0.0, 0.0)))
    assert native.scores({}, odd, req.milli_cpu, req.memory, 1, 0, 1, 300, lambda n: -1) == [-1, -1, -1]


def _session(monkeypatch: pytest.MonkeyPatch, mod: Any) -> list[tuple[str, str]]:
    import random

    from scheduler.framework.cycle import run_session
    from scheduler.model.cluster import ClusterState
    from scheduler.plugins.k8s import noderesources
    from scheduler.registry import default_configuration
    from scheduler.sim.bench import gen_nodes, gen_pending_jobs, gen_queues

    monkeypatch.setattr(noderesources, "scores_impl", mod)
    state = ClusterState()
    gen_nodes(state, 40, cpu=8, mem_gi=16)  # small nodes: scores move as they fill
    gen_pending_jobs(state, 400, 4, gen_queues(state, 2), random.Random(3))
    res = run_session(state.snapshot(), default_configuration(), rng=random.Random(9))
    monkeypatch.undo()
    return [(b.task.key, b.node) for b in res.binds]


@needs_native
def test_a_session_decides_the_same_on_either(monkeypatch: pytest.MonkeyPatch) -> None:
    compiled = _session(monkeypatch, native)
    assert 50 < len(compiled) < 400  # a real allocation, and not everything fits
    assert compiled == _session(monkeypatch, twin)
