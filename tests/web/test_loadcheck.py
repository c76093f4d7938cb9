"""`python -m scheduler.web.loadcheck`, the command behind docs/performance.md's web-view figures,
runs on a small cluster and reports what the section shows."""

from __future__ import annotations

import re

import pytest

from scheduler.registry import default_configuration
from scheduler.web.loadcheck import ENDPOINTS, build, main, paired_sessions
from scheduler.web.summary import Summary


def test_loadcheck_times_paired_sessions_and_every_endpoint(capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(["--nodes", "40", "--running", "400", "--pending", "20", "--rounds", "1", "--sessions", "2"])
        == 0
    )
    out = capsys.readouterr().out
    assert re.search(
        r"session: [\d,]+ ms without the web view, [\d,]+ ms with publishing \(medians of 2 pairs", out
    )
    for path in ENDPOINTS:
        assert re.search(rf"^{re.escape(path)} +[\d.]+ +[\d.]+$", out, re.M), path


def test_sessions_without_the_web_view_run_with_no_view_held() -> None:
    state = build(20, 100, 10)
    summary = Summary()
    off, on = paired_sessions(state, default_configuration(), summary, 3)
    assert len(off) == len(on) == 3
    # pairs alternate (off, on), (on, off), (off, on): the last session published its view
    assert summary.view is not None and summary.view.number == 3
    off, on = paired_sessions(state, default_configuration(), summary, 2)
    assert summary.view is None  # the second pair ends without the web view
