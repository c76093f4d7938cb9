"""The device micro-benchmark runs and reports its figures (small cluster: this is no timing test)."""

from __future__ import annotations

import pytest

from scheduler.plugins.deviceshare import hotpath
from scheduler.plugins.deviceshare import npufit as python_npufit
from scheduler.sim.devicebench import ascend_decisions, run_device_bench


def test_bench_reports_rates_and_places_pods_on_a_small_cluster() -> None:
    r = run_device_bench(nodes=20, gpus_per_node=4, pods=50)
    assert r["cards"] == 80 and r["pods_placed"] > 0
    assert r["decisions_per_s"] > 0 and r["ratio"] > 0
    assert {"fallback_scan_ms", "fallback_pods_per_s", "goal_ratio_5x", "goal_3000_pods_per_s"} <= set(r)


def test_bench_command_rewrites_only_its_own_section(tmp_path) -> None:
    from scheduler.sim.bench import main as bench_main

    doc = tmp_path / "performance.md"
    doc.write_text(
        "# Performance\n\nintro\n\n## Decision core (`vc-scheduler bench`)\n\ncore figures\n\n"
        "## Device hot path (`vc-scheduler bench --devices`)\n\nold device figures\n\n"
        "## Sandbox API server (`x`)\n\nsandbox figures\n"
    )
    argv = [
        "--devices",
        "--nodes",
        "10",
        "--gpus",
        "2",
        "--pods",
        "20",
        "--per-node-pods",
        "5",
        "--session-pods",
        "5",
        "--ascend-pods",
        "5",
        "--repeats",
        "2",
        "--output",
        str(doc),
    ]
    assert bench_main(argv) == 0
    text = doc.read_text()
    assert "old device figures" not in text
    assert "core figures" in text and "sandbox figures" in text and text.startswith("# Performance\n\nintro")
    assert "Command: `vc-scheduler bench --devices --nodes 10" in text
    assert text.index("## Device hot path") < text.index("## Sandbox API server")
    assert "vGPU decisions per second" in text and "HAMi Ascend 310P" in text
    assert "Through a real session" in text and "; 5 bound)" in text
    # each session figure is the median of the runs, with their range (the host drifts between runs)
    assert text.count("(median of 2 sessions, ") == 3
    assert "HAMi Ascend through the same session" in text


def test_session_only_prints_the_session_figures_alone(capsys: pytest.CaptureFixture[str]) -> None:
    from scheduler.sim.bench import main as bench_main

    argv = [
        "--devices",
        "--session-only",
        "--nodes",
        "6",
        "--gpus",
        "2",
        "--session-pods",
        "4",
        "--repeats",
        "2",
    ]
    assert bench_main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2
    assert "vGPU decisions/s" in lines[0] and "Ascend decisions/s" in lines[1]
    assert all("median of 2" in line and "4 bound of 4 one-pod jobs on 6 nodes x 2" in line for line in lines)


@pytest.mark.parametrize("impl", ["compiled", "twin"])
def test_ascend_scan_decides_exactly_as_the_per_node_python_fit(impl: str) -> None:
    """The whole-fleet scan places every pod on the node and chips the former path chose."""
    module = hotpath.native_npu_module() if impl == "compiled" else python_npufit
    if module is None:
        pytest.skip("compiled module not built")
    placed, _, scanned = ascend_decisions(12, 4, 60, 3, module)
    ref_placed, _, reference = ascend_decisions(12, 4, 60, 3, None)
    assert placed == ref_placed > 12  # enough pods that binpack must stack several per chip
    assert [led.state() for led in scanned] == [led.state() for led in reference]
