"""docs/performance.md keeps one section for every benchmark that writes one.

A generator replaces its own section and appends it when missing; a hand edit of the summary once
deleted the decision core's section, and the next run would have put it last, out of its place.
"""

from pathlib import Path

import pytest

from scheduler.sim import bench, curve, daemonbench, devicebench, icount
from scheduler.sim.apiserver import loadtest

DOC = Path(__file__).resolve().parents[2] / "docs" / "performance.md"


@pytest.mark.parametrize(
    "heading",
    [
        bench.SECTION,
        bench.TOPOLOGY_SECTION,
        bench.QUEUE_TREE,
        devicebench.SECTION,
        loadtest.SECTION,
        daemonbench.SECTION,
        curve.SECTION,
        icount.SECTION,
    ],
)
def test_every_generated_section_is_in_the_document_once(heading: str) -> None:
    lines = DOC.read_text(encoding="utf-8").splitlines()
    assert lines.count(heading) == 1, f"{heading!r} must head exactly one section of {DOC.name}"
