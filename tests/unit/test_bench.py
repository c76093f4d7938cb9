"""`vc-scheduler bench` at a tiny scale: it decides every pod and rewrites only its own section."""

from __future__ import annotations

from pathlib import Path

from scheduler.sim.bench import main


def test_bench_writes_its_section_and_keeps_the_others(tmp_path: Path, capsys) -> None:
    out = tmp_path / "performance.md"
    out.write_text(
        "# Performance\n\n## Decision core (`vc-scheduler bench`)\n\nold figures\n\n## Other section\n\nkept\n",
        encoding="utf-8",
    )
    argv = ["--nodes", "40", "--pods", "200", "--running", "400", "--idle-rounds", "2", "--output", str(out)]
    assert main(argv) == 0
    text = out.read_text(encoding="utf-8")
    assert "old figures" not in text
    assert text.endswith("MB\n\n## Other section\n\nkept\n")
    section = text.split("## Decision core")[1].split("## Other section")[0]
    assert "| pods bound | 200 in" in section  # 40 nodes of 32 CPU hold the whole backlog
    assert "vc-scheduler bench --nodes 40 --pods 200" in section
    assert "actions: enqueue, allocate, backfill" in section
    assert "not measured at that scale" in section  # goals are judged at 5,000 nodes only
    err = capsys.readouterr().err
    assert "pods bound" in err and "idle round 2/2" in err
