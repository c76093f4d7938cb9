"""Every folder here is a scenario in the shared format; each is run through `simulate` and judged.

The expected.yaml keys are documented in judge.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scenarios.judge import judge, load_expected, run_subprocess

HERE = Path(__file__).parent
SCENARIOS = sorted(p for p in HERE.iterdir() if (p / "expected.yaml").exists())


@pytest.mark.parametrize("folder", SCENARIOS, ids=[p.name for p in SCENARIOS])
def test_scenario(folder: Path) -> None:
    expected = load_expected(folder)
    judge(expected, run_subprocess(folder, int(expected.get("cycles", 1))))


def test_there_are_enough_scenarios() -> None:
    assert len(SCENARIOS) >= 3
