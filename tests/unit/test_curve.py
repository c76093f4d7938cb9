"""The scaling-curve harness: growth arithmetic, and a tiny run that writes only its section and a plot."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from scheduler.sim import curve


def test_growth_per_doubling_is_the_geometric_factor() -> None:
    rows = [{"nodes": 1000, "idle_ms": 10.0}, {"nodes": 4000, "idle_ms": 40.0}]
    assert curve.growth_per_doubling(rows, "idle_ms") == pytest.approx(2.0)
    assert curve.growth_per_doubling(rows[:1], "idle_ms") is None


def test_a_tiny_curve_writes_its_section_and_plot(tmp_path: Path) -> None:
    doc = tmp_path / "performance.md"
    doc.write_text("# Performance\n\n## Other section\n\nkept\n")
    plot = tmp_path / "images" / "scaling.svg"
    assert curve.main(["--sizes", "20,40", "--pods-per-node", "3", "--idle-rounds", "1",
                       "--output", str(doc), "--plot", str(plot)]) == 0  # fmt: skip
    text = doc.read_text()
    assert "## Other section\n\nkept" in text
    section = text[text.index(curve.SECTION) :]
    assert "| 20 | 60 |" in section and "| 40 | 120 |" in section
    assert "Per doubling of nodes" in section
    assert "![scaling curve](images/scaling.svg)" in section
    svg = ET.fromstring(plot.read_text())
    assert len(svg.findall("{http://www.w3.org/2000/svg}polyline")) == 2


def test_sample_sizes_follow_volcanos_adaptive_percentage() -> None:
    """The curve divides by these: 42 % of 1,000, 10 % of 5,000, then the 5 % floor."""
    from scheduler.framework.placement import feasible_sample_size
    from scheduler.framework.session import SessionOptions

    sizes = {n: feasible_sample_size(SessionOptions(), n) for n in (50, 1000, 5000, 10000, 20000)}
    assert sizes == {50: 50, 1000: 420, 5000: 500, 10000: 500, 20000: 1000}
