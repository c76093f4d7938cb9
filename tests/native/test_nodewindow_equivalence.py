"""The compiled placement window scans give exactly the answers of their Python twin
(native/nodewindow.pyx vs scheduler/framework/nodewindow.py), and a whole session decides the same
on either.

CI sets VC_SCHEDULER_REQUIRE_NATIVE=1: then a missing compiled module is a failure, not a skip.
"""

from __future__ import annotations

import math
import os
from array import array
from itertools import compress

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.framework import nodewindow as twin
from scheduler.framework import nodewindow_impl, placement
from tests.unit.deviceshare.test_ds_session_fast_path import SESSION_CONF, _decide

native = nodewindow_impl.native_module()
needs_native = pytest.mark.skipif(native is None, reason="scheduler._native.nodewindow is not built")


def test_compiled_module_is_present_where_it_must_be() -> None:
    if os.environ.get("VC_SCHEDULER_REQUIRE_NATIVE", "") not in ("", "0"):
        assert native is not None, (
            "VC_SCHEDULER_REQUIRE_NATIVE=1 but scheduler._native.nodewindow did not import"
        )
        assert nodewindow_impl.window_impl is native or os.environ.get("VC_SCHEDULER_PURE", "") not in (
            "",
            "0",
        )
    elif native is None:
        pytest.skip("compiled module not built (set VC_SCHEDULER_REQUIRE_NATIVE=1 to make this fail)")


@needs_native
def test_compiled_codes_are_the_twins() -> None:
    """The compiled scans compare against C constants: their values must be the twin's codes."""
    assert (native.UNKNOWN, native.FIT, native.REFUSED) == (twin.UNKNOWN, twin.FIT, twin.REFUSED)


@st.composite
def rings(draw: st.DrawFn) -> tuple[bytearray, int, int]:
    """Answer codes of a ring of nodes (unknown, fit, refused), a rotating start and a sample size."""
    n = draw(st.integers(1, 40))
    codes = bytearray(draw(st.lists(st.sampled_from([0, 1, 1, 2]), min_size=n, max_size=n)))
    return codes, draw(st.integers(0, n - 1)), draw(st.integers(1, n))


def _scan(mod, codes: bytearray, start: int, want: int) -> tuple:
    """A whole scan as the placement cache runs it, the predicate answering from `truth`: every
    call's answer, the nodes asked in order, the window and its refusals."""
    codes = bytearray(codes)
    truth = [(i * 7 + start) % 3 != 0 for i in range(len(codes))]
    steps, asked = [], []
    pos = found = 0
    while True:
        pos, found, done = mod.window_stop(codes, start, want, pos, found)
        steps.append((pos, found, done))
        if done:
            break
        idx = mod.to_ask(codes, start, pos, want - found)
        assert idx, "a scan that stops at an unknown answer must ask about it"
        asked.append(idx)
        for i in idx:
            codes[i] = twin.FIT if truth[i] else twin.REFUSED
    nodes = [f"node-{i}" for i in range(len(codes))]
    return steps, asked, mod.window_nodes(codes, start, pos, nodes)


@needs_native
@settings(max_examples=400, deadline=None)
@given(rings())
def test_compiled_scan_equals_the_twin(ring: tuple[bytearray, int, int]) -> None:
    codes, start, want = ring
    assert _scan(native, codes, start, want) == _scan(twin, codes, start, want)


@settings(max_examples=300, deadline=None)
@given(rings())
def test_the_window_is_the_plain_scans(ring: tuple[bytearray, int, int]) -> None:
    """The twin's window is what a node-by-node scan gives: the first `want` fits from the start,
    wrapping, every refusal before the stop, and only nodes before the stop asked."""
    codes, start, want = ring
    steps, asked, (fits, at, refused) = _scan(twin, codes, start, want)
    assert fits == [f"node-{i}" for i in at]
    n = len(codes)
    final = bytearray(codes)
    truth = [(i * 7 + start) % 3 != 0 for i in range(n)]
    for i in range(n):
        if final[i] == twin.UNKNOWN:
            final[i] = twin.FIT if truth[i] else twin.REFUSED
    plain_fits, plain_refused, end = [], [], 0
    for p in range(n):
        i = (start + p) % n
        end = p + 1
        if final[i] == twin.FIT:
            plain_fits.append(f"node-{i}")
            if len(plain_fits) >= want:
                break
        else:
            plain_refused.append(i)
    assert (fits, refused) == (plain_fits, plain_refused)
    assert steps[-1][0] == end
    window = {(start + p) % n for p in range(end)}
    assert all(i in window and codes[i] == twin.UNKNOWN for idx in asked for i in idx)


@st.composite
def scored(draw: st.DrawFn) -> tuple[array, bytearray]:
    n = draw(st.integers(1, 30))
    values = st.sampled_from([0.0, 1.5, 2.0, 2.0, 7.25, -3.0, 1e300, -math.inf, math.inf, math.nan])
    scores = array("d", draw(st.lists(values, min_size=n, max_size=n)))
    flags = bytearray(draw(st.lists(st.sampled_from([0, 1]), min_size=n, max_size=n)))
    return scores, flags


def _top_by_lists(scores: array, flags: bytearray) -> list[int] | None:
    """What the placement cache chose before the arrays: the Idle-fit group (else all), max(),
    then the positions equal to it, over Python lists."""
    idx = list(range(len(scores)))
    nfit = sum(1 for f in flags if f)
    if 0 < nfit < len(idx):
        idx = list(compress(idx, flags))
    vals = [scores[i] for i in idx]
    m = max(vals)
    if m != m:
        return None
    return [i for i, v in zip(idx, vals, strict=True) if v == m]


@settings(max_examples=400, deadline=None)
@given(scored())
def test_top_indices(case: tuple[array, bytearray]) -> None:
    scores, flags = case
    want = _top_by_lists(scores, flags)
    for mod in (twin, native) if native is not None else (twin,):
        assert mod.top_indices(scores, flags) == want
        # the same ties counted, and read one by one
        ties = mod.top_ties(scores, flags)
        if want is None:
            assert ties is None
            continue
        count, first, top, only = ties
        assert count == len(want) and first == want[0]
        assert [mod.nth_tie(scores, flags, top, only, k) for k in range(count)] == want
        with pytest.raises(IndexError):
            mod.nth_tie(scores, flags, top, only, count)


@st.composite
def gathers(draw: st.DrawFn) -> tuple[array, bytearray, bytearray, list[int]]:
    """A shape's per-node scores (some known) and Idle-fit codes, and candidate positions."""
    n = draw(st.integers(1, 30))
    values = array("d", draw(st.lists(st.floats(allow_nan=False), min_size=n, max_size=n)))
    known = bytearray(draw(st.lists(st.sampled_from([0, 1]), min_size=n, max_size=n)))
    codes = bytearray(draw(st.lists(st.sampled_from([0, 1, 2]), min_size=n, max_size=n)))
    at = draw(st.lists(st.integers(0, n - 1), unique=True, max_size=n))
    return values, known, codes, at


def _gather(mod, case: tuple[array, bytearray, bytearray, list[int]]) -> tuple:
    values, known, codes, at = case
    scores, flags = array("d", [-1.0] * len(at)), bytearray([7] * len(at))
    missing_scores = mod.gather_scores(values, known, at, scores)
    missing_fits = mod.gather_flags(codes, at, flags)
    return missing_scores, list(scores), missing_fits, bytes(flags)


@settings(max_examples=300, deadline=None)
@given(gathers())
def test_gather_reads_the_known_values_by_position(
    case: tuple[array, bytearray, bytearray, list[int]],
) -> None:
    values, known, codes, at = case
    missing_scores, scores, missing_fits, flags = _gather(twin, case)
    assert missing_scores == [k for k, i in enumerate(at) if not known[i]]
    assert all(scores[k] == values[i] for k, i in enumerate(at) if known[i])
    assert missing_fits == [k for k, i in enumerate(at) if codes[i] == twin.UNKNOWN]
    assert list(flags) == [1 if codes[i] == twin.FIT else 0 for i in at]
    if native is not None:
        assert _gather(native, case) == _gather(twin, case)


@settings(max_examples=300, deadline=None)
@given(gathers(), st.integers(0, 60), st.integers(0, 40))
def test_a_run_gathers_what_its_listed_positions_gather(
    case: tuple[array, bytearray, bytearray, list[int]], start: int, n: int
) -> None:
    """The run forms read positions start, start + 1, ... round the ring exactly as the list
    forms read those positions listed (a run may start past the ring's end and wrap, even twice)."""
    values, known, codes, _ = case
    listed = (values, known, codes, [(start + k) % len(known) for k in range(n)])
    want = _gather(twin, listed)
    for mod in (twin, native) if native is not None else (twin,):
        scores, flags = array("d", [-1.0] * n), bytearray([7] * n)
        got_scores = mod.gather_scores_run(values, known, start, scores)
        got_fits = mod.gather_flags_run(codes, start, flags)
        assert (got_scores, list(scores), got_fits, bytes(flags)) == want


@needs_native
@pytest.mark.parametrize("seed", [3, 4])
def test_a_session_decides_the_same_on_the_twin(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Allocate's scans and picks from the compiled module or from the twin: the same binds, in
    the same order, and the same reasons for the pods left pending."""
    monkeypatch.setattr(placement, "window_impl", native)
    compiled = _decide(SESSION_CONF, seed)
    monkeypatch.setattr(placement, "window_impl", twin)
    pure = _decide(SESSION_CONF, seed)
    assert len(compiled[0]) > 20 and compiled[2]
    assert compiled == pure


@settings(max_examples=300, deadline=None)
@given(rings(), st.lists(st.integers(-3, 45), max_size=12))
def test_forget_sets_the_listed_positions_unknown(ring: tuple[bytearray, int, int], at: list[int]) -> None:
    """forget turns exactly the listed positions (repeats allowed) back to UNKNOWN; a position
    outside the codes is refused, in both modules, with the same codes left behind."""
    codes = ring[0]
    results = []
    for mod in (twin, native) if native is not None else (twin,):
        got = bytearray(codes)
        try:
            mod.forget(got, at)
            raised = False
        except IndexError:
            raised = True
        results.append((raised, bytes(got)))
    inside = all(0 <= i < len(codes) for i in at)
    assert results[0][0] == (not inside)
    if inside:
        assert results[0][1] == bytes(twin.UNKNOWN if i in set(at) else c for i, c in enumerate(codes))
    assert all(r == results[0] for r in results)


@settings(max_examples=300, deadline=None)
@given(
    rings(),
    st.lists(st.integers(-3, 45), max_size=12),
    st.lists(st.sampled_from([None, None, "refused", ["Insufficient cpu"]]), max_size=12),
)
def test_settle_writes_the_answers_and_names_the_refusals(
    ring: tuple[bytearray, int, int], at: list[int], answers: list[object]
) -> None:
    """settle writes FIT where the answer is None and REFUSED elsewhere, at the listed positions,
    and returns the places of the refusals; both modules refuse a position outside the codes and
    answers of another length alike, with the same codes left behind."""
    codes = ring[0]
    got = answers[: len(at)] + [None] * (len(at) - len(answers))
    results = []
    for mod in (twin, native) if native is not None else (twin,):
        out = bytearray(codes)
        try:
            res: object = mod.settle(out, at, got)
        except IndexError:
            res = IndexError
        results.append((res, bytes(out)))
    inside = all(0 <= i < len(codes) for i in at)
    if inside:
        want = bytearray(codes)
        for i, r in zip(at, got, strict=True):
            want[i] = twin.FIT if r is None else twin.REFUSED
        assert results[0] == ([k for k, r in enumerate(got) if r is not None], bytes(want))
    else:
        assert results[0][0] is IndexError
    assert all(r == results[0] for r in results)
    for mod in (twin, native) if native is not None else (twin,):
        with pytest.raises(ValueError):
            mod.settle(bytearray(codes), [0], [])


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 12), st.lists(st.integers(-3, 15), max_size=12))
def test_take_gathers_the_nodes_at_the_positions(total: int, at: list[int]) -> None:
    """take is [nodes[i] for i in at] for positions inside the list, and an IndexError (never a
    negative index read from the end) in both modules otherwise."""
    nodes = [f"node-{i}" for i in range(total)]
    for mod in (twin, native) if native is not None else (twin,):
        if all(0 <= i < total for i in at):
            assert mod.take(nodes, at) == [nodes[i] for i in at]
        else:
            with pytest.raises(IndexError):
                mod.take(nodes, at)


@st.composite
def run_arrays(draw: st.DrawFn) -> tuple[array, bytearray, bytearray, int, int]:
    """A shape's per-node scores (some known, NaN and infinities among them), its Idle-fit codes,
    and a run of positions round the ring (it may start past the end and wrap)."""
    total = draw(st.integers(1, 30))
    pick = st.sampled_from([0.0, 1.5, 2.0, 2.0, 7.25, -3.0, 1e300, -math.inf, math.inf, math.nan])
    values = array("d", draw(st.lists(pick, min_size=total, max_size=total)))
    known = bytearray(draw(st.lists(st.sampled_from([0, 1, 1]), min_size=total, max_size=total)))
    codes = bytearray(draw(st.lists(st.sampled_from([0, 1, 1, 2]), min_size=total, max_size=total)))
    return values, known, codes, draw(st.integers(0, 2 * total)), draw(st.integers(0, total))


def _run_pick(mod, values: array, codes: bytearray, start: int, n: int) -> tuple | None:
    """The top of the run read in place and every tie listed by its place in the run."""
    top = mod.run_top(values, codes, start, n)
    if top is None:
        return None
    count, first, m, only = top
    ties = [mod.run_nth_tie(values, codes, start, n, m, only, k) for k in range(count)]
    with pytest.raises(IndexError):
        mod.run_nth_tie(values, codes, start, n, m, only, count)
    return count, first, only, ties


@settings(max_examples=400, deadline=None)
@given(run_arrays())
def test_a_run_picks_in_place_what_its_gathered_arrays_pick(
    case: tuple[array, bytearray, bytearray, int, int],
) -> None:
    """run_missing names the unknown codes and scores of the run (node indices, run order), and
    once they are known run_top / run_nth_tie find the ties top_ties / nth_tie find over the
    gathered arrays: the pick best() makes in place is the one it made over the gathered lists."""
    values, known, codes, start, n = case
    total = len(codes)
    ring = [(start + k) % total for k in range(n)]
    for mod in (twin, native) if native is not None else (twin,):
        fits, scores = mod.run_missing(codes, known, start, n)
        assert fits == [i for i in ring if codes[i] == twin.UNKNOWN]
        assert scores == [i for i in ring if not known[i]]
    # the missing ones filled in (as best() computes them) before the pick is read
    filled = bytearray(
        c if c != twin.UNKNOWN else (twin.FIT if i % 2 else twin.REFUSED) for i, c in enumerate(codes)
    )
    flags = bytearray(n)
    assert twin.gather_flags_run(filled, start, flags) == []
    gathered = array("d", bytes(8 * n))
    twin.gather_scores_run(values, bytearray([1]) * total, start, gathered)
    ties = twin.top_ties(gathered, flags)
    want = None
    if ties is not None:
        count, first, m, only = ties
        want = (count, first, only, [twin.nth_tie(gathered, flags, m, only, k) for k in range(count)])
    assert _run_pick(twin, values, filled, start, n) == want
    if native is not None:
        assert _run_pick(native, values, filled, start, n) == want


@needs_native
def test_compiled_scans_read_bytes_and_refuse_to_write_them() -> None:
    """The compiled scans read their arrays through pointers: read-only codes may be bytes (the
    twin's answers), an array they write must be a bytearray, never a copy written in vain."""
    codes = bytes([1, 0, 2, 1, 1])
    assert native.window_stop(codes, 3, 2, 0, 0) == twin.window_stop(codes, 3, 2, 0, 0)
    assert native.to_ask(codes, 0, 0, 3) == twin.to_ask(codes, 0, 0, 3)
    with pytest.raises(TypeError):
        native.forget(codes, [0])
    with pytest.raises(TypeError):
        native.top_ties([1.0, 2.0], bytearray([1, 1]))
