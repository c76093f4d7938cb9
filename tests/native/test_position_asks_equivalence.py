"""The compiled asks by node position give exactly the answers of their Python twins: the vGPU
scan's refresh through a position -> table row map (gpufit.refresh_rows vs fit.refresh_rows),
which equals refresh_nodes over the same rows, and the places of unset flags (nodewindow.zeros_at)."""

from __future__ import annotations

from array import array

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.framework import nodewindow as twin_window
from scheduler.framework.nodewindow_impl import native_module as window_native_module
from scheduler.plugins.deviceshare import fit as python_fit
from scheduler.plugins.deviceshare import hotpath
from tests.native.test_gpufit_equivalence import problems, run_refresh

native = hotpath.native_module()
native_window = window_native_module()


def run_rows(mod, p: dict, at: list[int], rows: list[int], changed: list[int]) -> tuple:
    """refresh_rows over positions `at` mapped through `rows`, after a scan of every node whose
    entries at `changed` are stale: (places, codes, scores, cards of fitting nodes, fitted versions)."""
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
        code[i], score[i] = 99, -1.0
    places = mod.refresh_rows(
        at, array("q", rows), ints["starts"], ints["node_flags"], ints["count"], ints["devmem"],
        ints["used_num"], ints["used_mem"], ints["used_cores"], ints["usable"], ints["req"], p["policy"],
        node_ver, fitted, code, score, cards,
    )  # fmt: skip
    assert {k: list(v) for k, v in ints.items()} == before
    chosen = [list(cards[i * total : (i + 1) * total]) if code[i] == 0 else None for i in range(n)]
    return places, list(code), list(score), chosen, list(fitted)


@settings(max_examples=200, deadline=None)
@given(problems(), st.data())
def test_refresh_by_position_is_refresh_of_the_rows(p: dict, data: st.DataObject) -> None:
    """Positions mapped to table rows (some to none, -1) refresh what refresh_nodes over those
    rows refreshes, and name the places of the misfits and of the rowless nodes; the compiled
    module equals the twin."""
    n = len(p["node_flags"])
    n_pos = data.draw(st.integers(1, n + 3))
    rows = data.draw(st.lists(st.integers(-1, n - 1), min_size=n_pos, max_size=n_pos))
    at = data.draw(st.lists(st.integers(0, n_pos - 1), max_size=2 * n_pos))
    changed = data.draw(st.lists(st.integers(0, n - 1), max_size=n, unique=True))
    got = run_rows(python_fit, p, at, rows, changed)
    listed = [rows[i] for i in at if rows[i] >= 0]
    misfits, codes, scores, cards, fitted = run_refresh(python_fit, p, listed, changed, False)
    assert got[1:] == (codes, scores, cards, fitted)
    assert got[0] == [k for k, i in enumerate(at) if rows[i] < 0 or codes[rows[i]] != python_fit.FIT]
    assert misfits == sum(1 for i in listed if codes[i] != python_fit.FIT)
    if native is not None:
        assert run_rows(native, p, at, rows, changed) == got


@pytest.mark.parametrize("mod", [python_fit, *([native] if native is not None else [])])
def test_refresh_by_position_refuses_positions_and_rows_out_of_range(mod) -> None:
    p = {"starts": [0, 2], "node_flags": [0], "count": [1, 1], "devmem": [100, 100], "used_num": [0, 0],
         "used_mem": [0, 0], "used_cores": [0, 0], "usable": [1, 1], "req": [1, 10, 101, 0], "policy": 1}  # fmt: skip
    assert run_rows(mod, p, [0, 1], [0, -1], [0])[0] == [1]
    for at, rows in (([2], [0, -1]), ([-1], [0, -1]), ([0], [1]), ([0], [-2])):
        with pytest.raises(IndexError):
            run_rows(mod, p, at, rows, [])


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=20), st.lists(st.integers(-3, 25), max_size=15))
def test_zeros_at_names_the_places_of_unset_flags(flags: bytes, at: list[int]) -> None:
    mods = (twin_window, native_window) if native_window is not None else (twin_window,)
    for mod in mods:
        for f in (bytearray(flags), flags):
            if all(0 <= i < len(flags) for i in at):
                assert mod.zeros_at(f, at) == [k for k, i in enumerate(at) if not flags[i]]
            else:
                with pytest.raises(IndexError):
                    mod.zeros_at(f, at)
