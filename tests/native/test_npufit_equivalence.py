"""The compiled HAMi Ascend fit gives exactly the answers of its Python twin (native/npufit.pyx vs
npufit.py), and both give the answers of the ledger's Python fit, chips, score and reason alike.

CI sets VC_SCHEDULER_REQUIRE_NATIVE=1: then a missing compiled module is a failure, not a skip.
"""

from __future__ import annotations

import os
from array import array
from types import ModuleType

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.plugins.deviceshare import annotations as ann
from scheduler.plugins.deviceshare import fit as python_fit
from scheduler.plugins.deviceshare import hotpath
from scheduler.plugins.deviceshare import npufit as python_npufit
from scheduler.plugins.deviceshare.ascend import AscendLedger, AscendTable
from scheduler.plugins.deviceshare.config import DEFAULT_VNPU
from scheduler.plugins.deviceshare.requests import AscendContainerRequest, AscendRequest

native = hotpath.native_npu_module()
needs_native = pytest.mark.skipif(native is None, reason="scheduler._native.npufit is not built")
IMPLS = [python_npufit] + ([native] if native is not None else [])


def test_compiled_module_is_present_where_it_must_be() -> None:
    if os.environ.get("VC_SCHEDULER_REQUIRE_NATIVE", "") not in ("", "0"):
        assert native is not None, "VC_SCHEDULER_REQUIRE_NATIVE=1 but scheduler._native.npufit did not import"
        assert hotpath.npu_fit_impl is native or os.environ.get("VC_SCHEDULER_PURE", "") not in ("", "0")
    elif native is None:
        pytest.skip("compiled module not built (set VC_SCHEDULER_REQUIRE_NATIVE=1 to make this fail)")


@needs_native
def test_both_modules_expose_the_same_interface() -> None:
    for name in ("fit_nodes", "FIT", "TOO_MANY_CHIPS", "NOT_FITTED", "NEEDS_PYTHON", "NO_HAMI_CORE",
                 "TOPOLOGY", "HAMI_CORE", "POLICY_NONE", "POLICY_BINPACK", "POLICY_SPREAD", "NO_MEMORY"):  # fmt: skip
        assert hasattr(native, name) and hasattr(python_npufit, name)
        if name != "fit_nodes":
            assert getattr(native, name) == getattr(python_npufit, name)
    assert python_npufit.FIT == python_fit.FIT  # the best node of a scan is read with fit.best_node


@st.composite
def problems(draw: st.DrawFn) -> dict:
    n_nodes = draw(st.integers(1, 5))
    starts = [0]
    for _ in range(n_nodes):
        starts.append(starts[-1] + draw(st.integers(0, 8)))
    n = starts[-1]
    devmem = [draw(st.sampled_from([0, 4096, 21527, 32768])) for _ in range(n)]
    req: list[int] = []
    for _ in range(draw(st.integers(0, 3))):
        req += [
            draw(st.integers(1, 3)),
            draw(st.sampled_from([0, 1000, 3072, 6000, 12288, 20000, 30000])),
            draw(st.sampled_from([0, 0, 1, 4, 8, 50, 100])),
        ]
    return {
        "starts": starts,
        "node_flags": [draw(st.integers(0, 3)) for _ in range(n_nodes)],
        "count": [draw(st.integers(0, 4)) for _ in range(n)],
        "devmem": devmem,
        "devcore": [draw(st.sampled_from([0, 8, 100])) for _ in range(n)],
        "used": [draw(st.integers(0, 4)) for _ in range(n)],
        "used_mem": [draw(st.integers(0, dm)) for dm in devmem],
        "used_cores": [draw(st.sampled_from([0, 1, 8, 50, 100])) for _ in range(n)],
        "usable": [draw(st.sampled_from([0, 1, 1, 1])) for _ in range(n)],
        "req": req,
        "hami_core": draw(st.integers(0, 1)),
        "policy": draw(st.integers(0, 2)),
        "templates": draw(st.sampled_from([[], [3072, 6144, 12288], [6144, 3072]])),
        "mem_allocatable": draw(st.sampled_from([21527, 32768])),
        "mem_capacity": draw(st.sampled_from([24576, 32768])),
    }


def run(mod: ModuleType, p: dict, lo: int = 0, hi: int | None = None) -> tuple:
    ints = {k: array("q", v) for k, v in p.items() if isinstance(v, list)}
    before = {k: list(v) for k, v in ints.items()}
    n_nodes = len(p["node_flags"])
    hi = n_nodes if hi is None else hi
    total = sum(p["req"][0::3])
    code, score, chips = (
        array("q", [-1] * n_nodes),
        array("d", [0.0] * n_nodes),
        array("q", [-1] * (n_nodes * total)),
    )
    fitting = mod.fit_nodes(
        ints["starts"], ints["node_flags"], ints["count"], ints["devmem"], ints["devcore"], ints["used"],
        ints["used_mem"], ints["used_cores"], ints["usable"], ints["req"], p["hami_core"], p["policy"],
        ints["templates"], p["mem_allocatable"], p["mem_capacity"], lo, hi, code, score, chips,
    )  # fmt: skip
    assert {k: list(v) for k, v in ints.items()} == before  # a filter has no side effects
    chosen = [
        list(chips[(i - lo) * total : (i - lo + 1) * total]) if code[i] == 0 else None for i in range(lo, hi)
    ]
    return fitting, list(code), list(score), chosen


@needs_native
@settings(max_examples=400, deadline=None)
@given(problems(), st.data())
def test_compiled_equals_twin_on_random_inputs(p: dict, data: st.DataObject) -> None:
    n = len(p["node_flags"])
    lo = data.draw(st.integers(0, n - 1))
    hi = data.draw(st.integers(lo + 1, n))
    assert run(native, p, lo, hi) == run(python_npufit, p, lo, hi)


chip_state = st.tuples(
    st.integers(1, 4),  # count
    st.sampled_from([0, 8, 8, 100]),  # devcore
    st.sampled_from([True, True, True, False]),  # health
    st.integers(0, 3),  # pods
    st.sampled_from([0, 3072, 6144, 12288, 21527]),  # memory used
    st.sampled_from([0, 1, 4, 8, 100]),  # cores used
)
requests = st.builds(
    AscendRequest,
    st.lists(
        st.builds(
            AscendContainerRequest,
            st.just(0),
            st.integers(1, 2),
            st.sampled_from([0, 1000, 3072, 6144, 12288, 20000, 30000]),
            st.sampled_from([0, 0, 1, 4, 8, 100]),
        ),
        max_size=2,
    ).map(tuple),
    st.sampled_from([False, False, True]),
    st.sampled_from([(), (), (), ("c1",), ("c0", "c2")]),
    st.sampled_from([(), (), ("c1",)]),
)


@pytest.mark.parametrize("impl", IMPLS, ids=lambda m: m.IMPLEMENTATION)
@settings(max_examples=300, deadline=None)
@given(
    chips=st.lists(chip_state, min_size=1, max_size=6),
    req=requests,
    node_core=st.booleans(),
    policy=st.integers(0, 2),
)
def test_ledger_fit_equals_the_python_fit(impl: ModuleType, chips: list, req: AscendRequest, node_core: bool,
                                          policy: int) -> None:  # fmt: skip
    table = AscendTable(DEFAULT_VNPU)
    table.impl = impl
    cards = [ann.AscendCard(f"c{i}", cnt, 21527, core, "Ascend310P", ok, -1, i) for i, (cnt, core, ok, *_) in enumerate(chips)]  # fmt: skip
    led = AscendLedger("node-a", DEFAULT_VNPU, cards, node_core, table)
    for i, (*_, pods, mem, cores) in enumerate(chips):
        for k in range(pods):
            share = (mem // pods, cores // pods) if k == 0 else (0, 0)
            led.add_pod(f"p{i}-{k}", [[ann.DeviceEntry(f"c{i}", *share)]])
    assert led.fit(req, policy) == led.fit_in_python(req, policy)
    codes, scores = table.fit_all(req, policy)
    ref = led.fit_in_python(req, policy)
    assert (codes[0] == 0, scores[0] if ref.ok else 0.0) == (ref.ok, ref.score if ref.ok else 0.0)


def test_a_chip_beyond_the_registration_range_skips_the_node_and_keeps_the_table_aligned() -> None:
    from scheduler.model.node import NodeInfo
    from scheduler.model.resources import Resource
    from scheduler.plugins.deviceshare.config import DEFAULT_CONFIG

    table = AscendTable(DEFAULT_VNPU)

    def node(name: str, devmem: int) -> NodeInfo:
        regs = [
            ann.AscendCard(f"{name}-{c}", 7, 21527 if c else devmem, 8, "Ascend310P", True, -1, c)
            for c in range(2)
        ]
        return NodeInfo(
            name,
            Resource.from_list({"cpu": "8", DEFAULT_VNPU.resource_name: "14"}),
            annotations={ann.ascend_register_key("Ascend310P"): ann.encode_ascend_register(regs)},
        )

    bad, why = AscendLedger.from_node(node("huge", 2**63), DEFAULT_VNPU, DEFAULT_CONFIG, table)
    assert bad is None and "huge-0" in why and "devmem" in why
    good, _ = AscendLedger.from_node(node("fine", 21527), DEFAULT_VNPU, DEFAULT_CONFIG, table)
    assert good is not None and good.base == 0 and list(table.starts) == [0, 2]
    req = AscendRequest((AscendContainerRequest(0, 1, 3072, 0),), False)
    assert good.fit(req, 1).ok and table.best_node(req, 1) is good
