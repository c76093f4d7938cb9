"""The device micro-benchmark runs and reports its figures (small cluster: this is no timing test)."""

from __future__ import annotations

from scheduler.plugins.deviceshare.bench import run_device_bench


def test_bench_reports_rates_and_places_pods_on_a_small_cluster() -> None:
    r = run_device_bench(nodes=20, gpus_per_node=4, pods=50)
    assert r["cards"] == 80 and r["pods_placed"] > 0
    assert r["decisions_per_s"] > 0 and r["ratio"] > 0
    assert {"fallback_scan_ms", "fallback_pods_per_s", "goal_ratio_5x", "goal_3000_pods_per_s"} <= set(r)
