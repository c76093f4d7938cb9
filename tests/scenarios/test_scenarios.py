"""Every folder here is a scenario in the shared format; each is run through the `simulate` core
in-process and judged (the expected.yaml keys are documented in judge.py). One test runs a few of
them through the `simulate` command line too, so the command gives the same decisions.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.scenarios.judge import judge, load_expected, run_in_process, run_subprocess

HERE = Path(__file__).parent
SCENARIOS = sorted(p for p in HERE.iterdir() if (p / "expected.yaml").exists())
# one of each kind of decision: evictions and pipelining, device annotations, PodGroup phases
THROUGH_CLI = (
    "preempt-higher-priority-same-queue",
    "vgpu-two-cards-per-pod",
    "podgroup-running-after-second-cycle",
)


@pytest.mark.parametrize("folder", SCENARIOS, ids=[p.name for p in SCENARIOS])
def test_scenario(folder: Path) -> None:
    expected = load_expected(folder)
    judge(expected, run_in_process(folder, int(expected.get("cycles", 1))))


@pytest.mark.parametrize("name", THROUGH_CLI)
def test_command_line_decides_the_same(name: str) -> None:
    folder = HERE / name
    expected = load_expected(folder)
    cycles = int(expected.get("cycles", 1))
    cli = run_subprocess(folder, cycles)
    judge(expected, cli)
    in_process = run_in_process(folder, cycles)
    assert _without_clock({k: in_process[k] for k in cli}) == _without_clock(cli)


def _without_clock(out: dict[str, Any]) -> dict[str, Any]:
    """The output less the wall-clock annotations (volcano.sh/bind-time), which differ between runs."""
    annotations = {
        pod: {k: v for k, v in ann.items() if not k.endswith("-time")}
        for pod, ann in out["annotations"].items()
    }
    return {**out, "annotations": annotations}


def test_there_are_enough_scenarios() -> None:
    assert len(SCENARIOS) >= 3
