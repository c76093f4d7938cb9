"""The compiled vGPU fit gives exactly the answers of its Python twin (native/gpufit.pyx vs fit.py).

CI sets VC_SCHEDULER_REQUIRE_NATIVE=1: then a missing compiled module is a failure, not a skip.
"""

from __future__ import annotations

import os
from array import array

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.plugins.deviceshare import fit as python_fit
from scheduler.plugins.deviceshare import hotpath

native = hotpath.native_module()
needs_native = pytest.mark.skipif(native is None, reason="scheduler._native.gpufit is not built")


def test_compiled_module_is_present_where_it_must_be() -> None:
    if os.environ.get("VC_SCHEDULER_REQUIRE_NATIVE", "") not in ("", "0"):
        assert native is not None, "VC_SCHEDULER_REQUIRE_NATIVE=1 but scheduler._native.gpufit did not import"
        assert hotpath.fit_impl is native or os.environ.get("VC_SCHEDULER_PURE", "") not in ("", "0")
    elif native is None:
        pytest.skip("compiled module not built (set VC_SCHEDULER_REQUIRE_NATIVE=1 to make this fail)")


def test_both_modules_expose_the_same_interface() -> None:
    if native is None:
        pytest.skip("compiled module not built")
    for name in (
        "fit_nodes",
        "fit_listed",
        "refresh_nodes",
        "charge_kept",
        "FIT",
        "TOO_MANY_CARDS",
        "NOT_FITTED",
        "NEEDS_PYTHON",
        "PCT_UNSET",
        "POLICY_NONE",
        "POLICY_BINPACK",
        "POLICY_SPREAD",
    ):
        assert hasattr(native, name) and hasattr(python_fit, name)
        if name.isupper():  # the constants are equal; the functions are compared by their answers
            assert getattr(native, name) == getattr(python_fit, name)


@st.composite
def problems(draw: st.DrawFn) -> dict:
    n_nodes = draw(st.integers(1, 6))
    sizes = [draw(st.integers(1, 8)) for _ in range(n_nodes)]
    starts = [0]
    for s in sizes:
        starts.append(starts[-1] + s)
    n = starts[-1]
    count = [draw(st.integers(0, 4)) for _ in range(n)]
    devmem = [draw(st.sampled_from([0, 1000, 4096, 16384])) for _ in range(n)]
    used_num = [draw(st.integers(0, 4)) for _ in range(n)]
    used_mem = [draw(st.integers(0, dm)) for dm in devmem]
    used_cores = [draw(st.sampled_from([0, 10, 50, 90, 100])) for _ in range(n)]
    usable = [draw(st.sampled_from([0, 1, 1, 1])) for _ in range(n)]
    flags = [draw(st.sampled_from([0, 0, 0, 1])) for _ in range(n_nodes)]
    req: list[int] = []
    for _ in range(draw(st.integers(1, 3))):
        pct = draw(st.sampled_from([101, 101, 0, 25, 100]))
        req += [
            draw(st.integers(1, 3)),
            draw(st.sampled_from([0, 100, 2000, 5000])),
            pct,
            draw(st.sampled_from([0, 0, 25, 50, 100])),
        ]
    return {
        "starts": starts,
        "node_flags": flags,
        "count": count,
        "devmem": devmem,
        "used_num": used_num,
        "used_mem": used_mem,
        "used_cores": used_cores,
        "usable": usable,
        "req": req,
        "policy": draw(st.integers(0, 2)),
        "lo": 0,
        "hi": n_nodes,
    }


def run(mod, p: dict, lo: int | None = None, hi: int | None = None) -> tuple:
    ints = {k: array("q", v) for k, v in p.items() if isinstance(v, list)}
    before = {k: list(v) for k, v in ints.items()}
    lo = p["lo"] if lo is None else lo
    hi = p["hi"] if hi is None else hi
    n_nodes = len(p["node_flags"])
    total = sum(p["req"][0::4])
    code, score, cards = (
        array("q", [-1] * n_nodes),
        array("d", [0.0] * n_nodes),
        array("q", [-1] * (n_nodes * total)),
    )
    fitting = mod.fit_nodes(
        ints["starts"],
        ints["node_flags"],
        ints["count"],
        ints["devmem"],
        ints["used_num"],
        ints["used_mem"],
        ints["used_cores"],
        ints["usable"],
        ints["req"],
        p["policy"],
        lo,
        hi,
        code,
        score,
        cards,
    )
    # the state arrays are inputs only: a filter has no side effects (spec 3.5)
    assert {k: list(v) for k, v in ints.items()} == before
    chosen = [
        list(cards[(i - lo) * total : (i - lo + 1) * total]) if code[i] == 0 else None for i in range(lo, hi)
    ]
    return fitting, list(code), list(score), chosen


@needs_native
@settings(max_examples=400, deadline=None)
@given(problems())
def test_compiled_equals_fallback_on_random_inputs(p: dict) -> None:
    assert run(native, p) == run(python_fit, p)


@st.composite
def one_card_problems(draw: st.DrawFn) -> dict:
    """problems() asking one card of one container (the compiled fit's one-pass path), often on
    cards in equal states (the scan order's ties)."""
    p = draw(problems())
    p["req"] = [1, *p["req"][1:4]]
    if draw(st.booleans()):
        for k in ("count", "devmem", "used_num", "used_mem", "used_cores"):
            p[k] = [p[k][0]] * len(p[k])
    return p


@needs_native
@settings(max_examples=400, deadline=None)
@given(one_card_problems())
def test_compiled_one_card_fit_equals_fallback(p: dict) -> None:
    assert run(native, p) == run(python_fit, p)


@st.composite
def twin_node_problems(draw: st.DrawFn) -> dict:
    """problems() whose nodes are copies of a few (an idle cluster of one node kind: the compiled
    fit answers a node in the state of the last one it fitted without fitting it again), a copy
    sometimes differing in one entry of one card."""
    p = draw(st.one_of(problems(), one_card_problems(), one_card_problems()))
    n_nodes, size = draw(st.integers(2, 8)), draw(st.integers(1, 4))
    kinds = draw(st.lists(st.integers(0, 1), min_size=n_nodes, max_size=n_nodes))
    p["starts"] = [size * i for i in range(n_nodes + 1)]
    p["node_flags"] = [draw(st.sampled_from([0, 0, 0, 1])) for _ in range(n_nodes)]
    p["hi"] = n_nodes
    rows = ("count", "devmem", "used_num", "used_mem", "used_cores", "usable")
    for k in rows:
        v = p[k] * (2 * size)  # any node's entries; two kinds of node from them
        p[k] = [x for kind in kinds for x in v[kind * size : (kind + 1) * size]]
    if draw(st.integers(0, 3)):
        at = draw(st.integers(0, size * n_nodes - 1))
        k = draw(st.sampled_from(rows))
        # that card closed to the pods, each entry its own way
        full = {"count": 0, "devmem": 0, "used_num": p["count"][at], "used_mem": p["devmem"][at]}
        p[k][at] = full.get(k, 100) if k != "usable" else 1 - p[k][at]
    return p


@needs_native
@settings(max_examples=400, deadline=None)
@given(twin_node_problems(), st.data())
def test_compiled_fit_of_nodes_in_one_state_equals_fallback(p: dict, data: st.DataObject) -> None:
    assert run(native, p) == run(python_fit, p)
    n = len(p["node_flags"])
    nodes = data.draw(st.lists(st.integers(0, n - 1), max_size=2 * n))
    assert run_listed(native, p, nodes) == run_listed(python_fit, p, nodes)


@needs_native
@settings(max_examples=100, deadline=None)
@given(problems(), st.data())
def test_compiled_equals_fallback_on_a_node_range(p: dict, data: st.DataObject) -> None:
    n = len(p["node_flags"])
    lo = data.draw(st.integers(0, n - 1))
    hi = data.draw(st.integers(lo + 1, n))
    assert run(native, p, lo, hi) == run(python_fit, p, lo, hi)


@settings(max_examples=200, deadline=None)
@given(problems())
def test_chosen_cards_respect_every_card_limit(p: dict) -> None:
    """Replaying the chosen cards on the state never exceeds a card's slots, memory or cores."""
    *_, chosen = run(hotpath.fit_impl, p)
    req = p["req"]
    for i, picks in enumerate(chosen):
        if picks is None:
            continue
        base = p["starts"][i]
        un, um, uc = list(p["used_num"]), list(p["used_mem"]), list(p["used_cores"])
        k = 0
        for c in range(len(req) // 4):
            nums, mem, pct, cores = req[4 * c : 4 * c + 4]
            for _ in range(nums):
                g = base + picks[k]
                k += 1
                assert p["usable"][g] and p["node_flags"][i] == 0
                un[g] += 1
                um[g] += p["devmem"][g] * pct // 100 if pct != 101 else mem
                uc[g] += cores
                assert un[g] <= p["count"][g] and um[g] <= p["devmem"][g] and uc[g] <= 100
            assert len(set(picks[k - nums : k])) == nums  # one container never takes a card twice


@needs_native
@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 3), st.sampled_from([0.0, 12.5, 50.0, 100.0])), min_size=1, max_size=12
    ),
    st.data(),
)
def test_best_node_agrees(rows: list, data: st.DataObject) -> None:
    codes = array("q", [c for c, _ in rows])
    scores = array("d", [s for _, s in rows])
    lo = data.draw(st.integers(0, len(rows) - 1))
    hi = data.draw(st.integers(lo, len(rows)))
    assert native.best_node(codes, scores, lo, hi) == python_fit.best_node(codes, scores, lo, hi)


def run_listed(mod, p: dict, nodes: list[int]) -> tuple:
    """fit_listed over `nodes`: (fitting, codes, scores, cards of the fitting listed nodes at their
    slots, None elsewhere); entries of unlisted nodes stay as they were."""
    ints = {k: array("q", v) for k, v in p.items() if isinstance(v, list)}
    before = {k: list(v) for k, v in ints.items()}
    n_nodes = len(p["node_flags"])
    code, score = array("q", [-1] * n_nodes), array("d", [-7.0] * n_nodes)
    total = sum(p["req"][0::4])
    cards = array("q", [-1] * max(1, n_nodes * total))
    fitting = mod.fit_listed(
        ints["starts"],
        ints["node_flags"],
        ints["count"],
        ints["devmem"],
        ints["used_num"],
        ints["used_mem"],
        ints["used_cores"],
        ints["usable"],
        ints["req"],
        p["policy"],
        array("q", nodes),
        code,
        score,
        cards,
    )
    assert {k: list(v) for k, v in ints.items()} == before
    listed = set(nodes)
    chosen = [
        list(cards[i * total : (i + 1) * total]) if i in listed and code[i] == 0 else None
        for i in range(n_nodes)
    ]
    return fitting, list(code), list(score), chosen


@settings(max_examples=200, deadline=None)
@given(problems(), st.data())
def test_listed_nodes_get_the_answers_of_their_range_scan(p: dict, data: st.DataObject) -> None:
    """fit_listed writes for each listed node what fit_nodes over all nodes writes, and nothing
    else; in both modules, and the compiled one equals the twin."""
    n = len(p["node_flags"])
    nodes = data.draw(st.lists(st.integers(0, n - 1), max_size=2 * n))
    _, codes, scores, chosen = run(python_fit, p, 0, n)
    fitting, got_codes, got_scores, got_cards = run_listed(python_fit, p, nodes)
    listed = set(nodes)
    assert got_codes == [codes[i] if i in listed else -1 for i in range(n)]
    assert got_scores == [scores[i] if i in listed else -7.0 for i in range(n)]
    # a fitting node's cards where the range scan over every node puts them (the scan keeps them)
    assert got_cards == [chosen[i] if i in listed else None for i in range(n)]
    assert fitting == sum(1 for i in nodes if codes[i] == python_fit.FIT)
    if native is not None:
        assert run_listed(native, p, nodes) == (fitting, got_codes, got_scores, got_cards)


@pytest.mark.parametrize("mod", [python_fit, *([native] if native is not None else [])])
def test_listed_nodes_out_of_range_are_refused(mod) -> None:
    p = {"starts": [0, 2], "node_flags": [0], "count": [1, 1], "devmem": [100, 100], "used_num": [0, 0],
         "used_mem": [0, 0], "used_cores": [0, 0], "usable": [1, 1], "req": [1, 10, 101, 0], "policy": 1}  # fmt: skip
    assert run_listed(mod, p, [0])[1] == [0]
    for bad in ([1], [-1]):
        with pytest.raises(IndexError):
            run_listed(mod, p, bad)


class _Node:
    """A node object as the plugin hands them over: hashed by identity."""


def run_refresh(mod, p: dict, asked: list[int], changed: list[int], by_object: bool) -> tuple:
    """refresh_nodes over `asked` after a scan of every node whose entries at `changed` are stale
    (their node version bumped): (misfits, codes, scores, cards of fitting nodes, fitted versions)."""
    ints = {k: array("q", v) for k, v in p.items() if isinstance(v, list)}
    before = {k: list(v) for k, v in ints.items()}
    n = len(p["node_flags"])
    total = sum(p["req"][0::4])
    code, score = array("q", [-1] * n), array("d", [-7.0] * n)
    cards = array("q", [-1] * max(1, n * total))
    mod.fit_nodes(
        ints["starts"], ints["node_flags"], ints["count"], ints["devmem"], ints["used_num"], ints["used_mem"],
        ints["used_cores"], ints["usable"], ints["req"], p["policy"], 0, n, code, score, cards,
    )  # fmt: skip
    node_ver, fitted = array("q", [3] * n), array("q", [3] * n)
    for i in changed:
        node_ver[i] += 1
        code[i], score[i] = 99, -1.0  # what a stale entry may hold: it must be fitted again
    objects = [_Node() for _ in range(n)]
    at_of = {o: i for i, o in enumerate(objects)} if by_object else None
    nodes = [objects[i] for i in asked] if by_object else list(asked)
    misfits = mod.refresh_nodes(
        nodes, at_of, ints["starts"], ints["node_flags"], ints["count"], ints["devmem"], ints["used_num"],
        ints["used_mem"], ints["used_cores"], ints["usable"], ints["req"], p["policy"], node_ver, fitted,
        code, score, cards,
    )  # fmt: skip
    assert {k: list(v) for k, v in ints.items()} == before
    chosen = [list(cards[i * total : (i + 1) * total]) if code[i] == 0 else None for i in range(n)]
    return misfits, list(code), list(score), chosen, list(fitted)


@settings(max_examples=200, deadline=None)
@given(problems(), st.data())
def test_refreshed_nodes_get_the_answers_of_a_fresh_scan(p: dict, data: st.DataObject) -> None:
    """refresh_nodes fits again exactly the asked nodes whose version moved, giving them what a
    scan of every node gives, counts the asked nodes that do not fit, and leaves the stale nodes
    nobody asked as they were; the compiled module equals the twin, by node objects or positions."""
    n = len(p["node_flags"])
    asked = data.draw(st.lists(st.integers(0, n - 1), max_size=2 * n))
    changed = data.draw(st.lists(st.integers(0, n - 1), max_size=n, unique=True))
    by_object = data.draw(st.booleans())
    _, codes, scores, chosen = run(python_fit, p, 0, n)
    got = run_refresh(python_fit, p, asked, changed, by_object)
    misfits, got_codes, got_scores, got_cards, fitted = got
    stale = set(changed) - set(asked)
    assert got_codes == [99 if i in stale else codes[i] for i in range(n)]
    assert got_scores == [-1.0 if i in stale else scores[i] for i in range(n)]
    assert [got_cards[i] for i in range(n) if i not in stale] == [
        chosen[i] for i in range(n) if i not in stale
    ]
    assert fitted == [3 if i in stale else (4 if i in changed else 3) for i in range(n)]
    assert misfits == sum(1 for i in asked if codes[i] != python_fit.FIT)
    if native is not None:
        assert run_refresh(native, p, asked, changed, by_object) == got


@pytest.mark.parametrize("mod", [python_fit, *([native] if native is not None else [])])
def test_refresh_of_a_node_it_cannot_place_writes_nothing(mod) -> None:
    """A node missing from the positions gives -1 with nothing fitted; a position out of range
    is refused."""
    p = {"starts": [0, 2], "node_flags": [0], "count": [1, 1], "devmem": [100, 100], "used_num": [0, 0],
         "used_mem": [0, 0], "used_cores": [0, 0], "usable": [1, 1], "req": [1, 10, 101, 0], "policy": 1}  # fmt: skip
    ints = {k: array("q", v) for k, v in p.items() if isinstance(v, list)}
    known, unknown = _Node(), _Node()
    code, score, cards = array("q", [7]), array("d", [0.0]), array("q", [0])
    node_ver, fitted = array("q", [1]), array("q", [0])
    args = (ints["starts"], ints["node_flags"], ints["count"], ints["devmem"], ints["used_num"], ints["used_mem"],
            ints["used_cores"], ints["usable"], ints["req"], 1, node_ver, fitted, code, score, cards)  # fmt: skip
    assert mod.refresh_nodes([known, unknown], {known: 0}, *args) == -1
    assert (list(code), list(fitted)) == ([7], [0])
    for bad in ([1], [-1]):
        with pytest.raises(IndexError):
            mod.refresh_nodes(bad, None, *args)
    assert mod.refresh_nodes([known], {known: 0}, *args) == 0
    assert (list(code), list(fitted), list(cards)) == ([0], [1], [0])


@needs_native
def test_compiled_fit_refuses_arrays_it_would_read_past_or_misread() -> None:
    """The compiled fit reads its arrays through pointers: a float array where int64 ones are
    read, or an array shorter than the nodes need, is refused before anything is read."""
    assert native is not None
    p = {"starts": [0, 2], "node_flags": [0], "count": [1, 1], "devmem": [100, 100], "used_num": [0, 0],
         "used_mem": [0, 0], "used_cores": [0, 0], "usable": [1, 1], "req": [1, 10, 101, 0]}  # fmt: skip
    ints = {k: array("q", v) for k, v in p.items()}
    out = (array("q", [0]), array("d", [0.0]), array("q", [0]))
    args = [ints[k] for k in p]
    assert native.fit_nodes(*args, 1, 0, 1, *out) == 1
    with pytest.raises(TypeError):
        native.fit_nodes(*args[:3], array("d", [100.0, 100.0]), *args[4:], 1, 0, 1, *out)
    with pytest.raises(IndexError):
        native.fit_nodes(*args[:2], array("q", [1]), *args[3:], 1, 0, 1, *out)
    with pytest.raises(TypeError):
        native.fit_nodes(*args, 1, 0, 1, out[0], array("q", [0]), out[2])


def run_charge(mod, p: dict, i: int, stale: bool) -> tuple:
    """charge_kept of node i's answer in a scan of every node for the request's first container
    asking one card (stale: the node's version moved since the scan): (its answer, the card
    arrays and node versions after it)."""
    p = {**p, "req": [1, *p["req"][1:4]]}
    ints = {k: array("q", v) for k, v in p.items() if isinstance(v, list)}
    n = len(p["node_flags"])
    code, score, cards = array("q", [-1] * n), array("d", [0.0] * n), array("q", [-1] * n)
    mod.fit_nodes(
        ints["starts"], ints["node_flags"], ints["count"], ints["devmem"], ints["used_num"], ints["used_mem"],
        ints["used_cores"], ints["usable"], ints["req"], p["policy"], 0, n, code, score, cards,
    )  # fmt: skip
    node_ver, fitted = array("q", [5] * n), array("q", [5] * n)
    if stale:
        node_ver[i] += 1
    _, mem, pct, cores = p["req"]
    got = mod.charge_kept(
        code, fitted, cards, 1, ints["node_flags"], node_ver, ints["devmem"], ints["used_num"],
        ints["used_mem"], ints["used_cores"], i, ints["starts"][i], mem, pct, cores,
    )  # fmt: skip
    arrays = tuple(list(ints[k]) for k in ("used_num", "used_mem", "used_cores"))
    return got, arrays, list(node_ver), code[i] == python_fit.FIT and not p["node_flags"][i], cards[i]


@settings(max_examples=200, deadline=None)
@given(problems(), st.data())
def test_charge_kept_charges_the_card_the_scan_chose(p: dict, data: st.DataObject) -> None:
    """charge_kept charges exactly the card a current fitting answer chose (its demand, its cores,
    one more pod, the node's version moved on) and nothing at all otherwise; compiled = twin."""
    n = len(p["node_flags"])
    i = data.draw(st.integers(0, n - 1))
    stale = data.draw(st.booleans())
    got, arrays, ver, fits, card = run_charge(python_fit, p, i, stale)
    before = tuple(p[k] for k in ("used_num", "used_mem", "used_cores"))
    if stale or not fits:
        # the version a stale node already had (6) or the scan's (5): untouched either way
        assert got is None and arrays == before and ver[i] == (6 if stale else 5)
    else:
        c, demand = got
        assert c == card
        g = p["starts"][i] + c
        _, mem, pct, cores = p["req"][:4]
        assert demand == (p["devmem"][g] * pct // 100 if pct != python_fit.PCT_UNSET else mem)
        want = [list(a) for a in before]
        want[0][g] += 1
        want[1][g] += demand
        want[2][g] += cores
        assert [list(a) for a in arrays] == want and ver[i] == 6
    if native is not None:
        assert run_charge(native, p, i, stale) == (got, arrays, ver, fits, card)


@needs_native
def test_nodes_differing_only_in_split_count_are_fitted_each() -> None:
    """Two nodes whose cards are in the same state except that the second's card is split into
    fewer shares, all taken: the compiled fit must not hand the first node's answer to the
    second (it reuses the last node's answer only for cards equal in every entry)."""
    p = {
        "starts": [0, 1, 2],
        "node_flags": [0, 0],
        "count": [10, 2],
        "devmem": [40960, 40960],
        "used_num": [2, 2],
        "used_mem": [2048, 2048],
        "used_cores": [0, 0],
        "usable": [1, 1],
        "req": [1, 1024, python_fit.PCT_UNSET, 0],
        "policy": 1,
        "lo": 0,
        "hi": 2,
    }
    got = run(native, p)
    assert got == run(python_fit, p)
    assert got[1] == [python_fit.FIT, python_fit.NOT_FITTED]
