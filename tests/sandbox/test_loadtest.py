"""The sandbox load test: its latency arithmetic, and a tiny end-to-end run that rewrites only its
own section of a performance document."""

from __future__ import annotations

import re
from pathlib import Path

from scheduler.sim.apiserver import loadtest


def test_fanout_latencies_map_each_event_to_its_write() -> None:
    a, b = loadtest.Watcher(reference=True), loadtest.Watcher(reference=False)
    names = ["p0", "p1", "p2", "p3"]
    sent = {"p0": 1.0, "p1": 1.1, "p2": 2.0, "p3": 2.5}
    a.chunks = [(1.2, 2), (3.0, 2)]  # p0, p1 arrive at 1.2; p2, p3 at 3.0
    b.chunks = [(1.5, 1), (2.2, 2), (2.6, 1)]  # p0 at 1.5; p1, p2 at 2.2; p3 at 2.6
    first_phase = loadtest.fanout_latencies([a, b], names, 0, 2, sent)
    assert [round(x, 3) for x in first_phase] == [0.1, 0.2, 0.5, 1.1]
    second_phase = loadtest.fanout_latencies([a, b], names, 2, 2, sent)
    assert [round(x, 3) for x in second_phase] == [0.1, 0.2, 0.5, 1.0]
    sent.pop("p3")  # a failed write has no event to time
    assert len(loadtest.fanout_latencies([a, b], names, 2, 2, sent)) == 2


def test_tiny_run_rewrites_only_its_section(tmp_path: Path) -> None:
    doc = tmp_path / "performance.md"
    doc.write_text(
        "# Performance\n\n## Other (`x`)\n\nkeep me\n\n"
        + loadtest.SECTION
        + "\n\nold figures\n\n## Last\n\nkeep too\n"
    )
    rc = loadtest.main(
        [
            "--nodes",
            "5",
            "--pods",
            "40",
            "--writes",
            "60",
            "--watchers",
            "3",
            "--concurrency",
            "4",
            "--rate",
            "500",
            "--output",
            str(doc),
        ]
    )
    assert rc == 0
    text = doc.read_text()
    assert "keep me" in text and text.rstrip().endswith("## Last\n\nkeep too") and "old figures" not in text
    section = text[text.index(loadtest.SECTION) : text.index("## Last")]
    assert "Command: `python -m scheduler.sim.apiserver.loadtest --nodes 5 --pods 40" in section
    rows = re.findall(
        r"^\| (create|binding|status patch|create, paced at 500/s) \| ([\d,]+) \|.*\| (\d+) \|$",
        section,
        re.MULTILINE,
    )
    assert [r[0] for r in rows] == ["create", "binding", "status patch", "create, paced at 500/s"]
    assert all(r[2] == "0" for r in rows)  # no write failed
    assert "Watchers that received every event: 3 of 3." in section
    assert "List of all 40 pods in 1 pages of 500" in section
    # a 5-node cluster is not the goal's cluster: the memory goal must not be claimed
    assert "Goal 5,000 nodes and 150,000 pods in ≤ 2 GB: not reached" in section
