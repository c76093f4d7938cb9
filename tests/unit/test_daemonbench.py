"""The daemon benchmark end to end on a tiny cluster: its section, the burst's CPU split and the
server's profile of the burst window (the figures a user reads to see what bounds a burst)."""

from __future__ import annotations

import pstats
from pathlib import Path

from scheduler.sim import daemonbench


def test_a_tiny_run_writes_its_section_with_the_burst_cpu_split_and_a_server_profile(tmp_path: Path) -> None:
    doc = tmp_path / "performance.md"
    doc.write_text(f"# Performance\n\n{daemonbench.SECTION}\n\nstale figures\n\n## Next\n\nkept\n")
    prof = tmp_path / "server.prof"
    argv = ["--nodes", "4", "--running", "16", "--pending", "8", "--burst", "16", "--arrival-rate", "0",
            "--idle-seconds", "0.5", "--server-profile", str(prof), "--output", str(doc),
            "--daemon-flag=--kube-api-qps=3000", "--daemon-flag=--kube-api-burst=3000"]  # fmt: skip
    assert daemonbench.main(argv) == 0
    text = doc.read_text()
    assert "stale figures" not in text and "## Next\n\nkept" in text
    assert "| burst: 16 pods created at once while running" in text
    assert "and the API server's CPU per burst pod" in text
    # 16 pods' CPU can read 0 at the clock tick on a fast machine: then the section says so instead of a bound
    assert "The burst is bounded by CPU on both sides" in text or "too small to measure" in text
    # the writes after the last bind are measured too, and cost CPU on top of the bind window's
    settled = next(line for line in text.splitlines() if line.startswith("| CPU per burst pod until then"))
    daemon_ms, server_ms = (float(x.strip().removesuffix(" ms")) for x in settled.split("|")[2].split(" / "))

    def window(prefix: str) -> float:
        line = next(line for line in text.splitlines() if line.startswith(prefix))
        return float(line.split("|")[2].strip().removesuffix(" ms").removesuffix(" s"))

    assert daemon_ms >= window("| of which daemon CPU per burst pod")
    assert server_ms >= window("| and the API server's CPU per burst pod")
    assert "The burst's writes go on after its last bind" in text
    # the client's rate limit (raised to 3000 / 3000 here) allows any 16-pod burst at once
    first = window("| creation → the burst's first bind")
    limit = next(
        line for line in text.splitlines() if line.startswith("| earliest last bind the client's rate limit")
    )
    assert "3,000 Bindings/s, 3,000 saved up" in limit and f"| {first} s (" in limit
    # and so would the default (Volcano's 2000 / 2000), which the section names beside the raised one
    default = next(line for line in text.splitlines() if line.startswith("| the same at the default limit"))
    assert "(2,000 / 2,000, Volcano's)" in default and f"| {first} s (" in default
    assert "(client rate limit raised: rows below) |" in text
    assert "--kube-api-qps=3000" in text  # the daemon's command line shows the flags the run passed
    # the profile covers the burst window: the server bound the burst's pods in it
    functions = {name for (_file, _line, name) in pstats.Stats(str(prof)).stats}  # type: ignore[attr-defined]
    assert "bind" in functions and "create" in functions


def test_restarts_start_the_daemon_again_and_report_the_median(tmp_path: Path) -> None:
    doc = tmp_path / "performance.md"
    doc.write_text(f"# Performance\n\n{daemonbench.SECTION}\n\nstale\n")
    argv = ["--nodes", "4", "--running", "16", "--pending", "8", "--burst", "0", "--arrival-rate", "0",
            "--idle-seconds", "0.2", "--restarts", "3", "--output", str(doc)]  # fmt: skip
    assert daemonbench.main(argv) == 0
    text = doc.read_text()
    row = next(line for line in text.splitlines() if line.startswith("| restart → first bind"))
    runs = [float(x) for x in row.split("median of 3: ")[1].split(")")[0].replace(" s", "").split(" / ")]
    # every restart bound its own new pending pods: a run that bound nothing would have timed out
    assert len(runs) == 3 and all(0 < x < 60 for x in runs)
    assert f"| {sorted(runs)[1]} s |" in row


def test_the_bound_is_what_two_cores_allow() -> None:
    lines = daemonbench._burst_bound({"burst_daemon_cpu_ms_per_pod": 1.5, "burst_server_cpu_ms_per_pod": 0.5})
    text = " ".join(lines)
    assert "more than 2,000 pods/s" in text and "at most 1,000 pods/s" in text
    assert daemonbench._burst_bound({"burst_daemon_cpu_ms_per_pod": 1.5}) == []


def test_a_burst_whose_cpu_reads_zero_says_it_was_too_small_to_bound() -> None:
    # a small burst's CPU can read 0 at the clock tick; dividing by it must not give a bound (or a crash)
    for daemon_ms, server_ms in ((0.31, 0.0), (0.0, 0.12), (0.0, 0.0)):
        text = " ".join(
            daemonbench._burst_bound(
                {"burst_daemon_cpu_ms_per_pod": daemon_ms, "burst_server_cpu_ms_per_pod": server_ms}
            )
        )
        assert "too small to measure" in text and "pods/s with a daemon" not in text


def test_the_daemon_log_gives_the_sync_cpu_and_the_pod_list_wait() -> None:
    import asyncio
    import json

    lines = [
        {"event": "vc-scheduler starting", "listen": ["127.0.0.1:1"]},
        {"event": "initial list done", "kind": "Node", "objects": 4, "waited_ms": 3},
        {"event": "initial list done", "kind": "Pod", "objects": 16, "waited_ms": 12},
        {"event": "initial sync done", "ms": 40, "cpu_ms": 25, "pods": 16},
    ]

    async def read() -> daemonbench.DaemonLog:
        stream = asyncio.StreamReader()
        stream.feed_data(b"".join(json.dumps(r).encode() + b"\n" for r in lines))
        stream.feed_eof()
        dlog = daemonbench.DaemonLog()
        await dlog.follow(stream)
        return dlog

    dlog = asyncio.run(read())
    assert (dlog.sync_ms, dlog.sync_cpu_ms) == (40, 25)
    assert dlog.list_waited_ms == {"Node": 3, "Pod": 12}
    assert dlog.listen == "127.0.0.1:1"
    # the timeline: each step in seconds from a start before all of them, in the order they came
    assert dlog.starting_wall is not None and dlog.starting_cpu is None  # no pid: no CPU read
    t0 = dlog.starting_wall - 1.5
    timeline = daemonbench._timeline(dlog, t0)
    assert timeline["start_to_starting_seconds"] == 1.5
    done = timeline["start_to_list_done_seconds"]
    assert list(done) == ["Node", "Pod"] and 1.5 <= done["Node"] <= done["Pod"] < 60
    assert "start_to_first_session_seconds" not in timeline
    dlog.sessions.append({"ms": 500.0, "wall": t0 + 3.0})
    assert daemonbench._timeline(dlog, t0)["start_to_first_session_seconds"] == 2.5


def test_the_rate_limit_floor_is_the_bindings_refill_after_the_first_bind() -> None:
    import argparse

    def floor(flags: list[str]) -> dict[str, object]:
        return daemonbench._rate_limit_floor(argparse.Namespace(daemon_flag=flags, burst=5000), 0.45)

    # Volcano's defaults: 2,000 saved up, the other 3,000 Bindings at 2,000 a second
    assert floor([]) == {
        "burst_client_qps": 2000.0,
        "burst_client_burst": 2000,
        "burst_rate_limit_floor_seconds": 1.95,
        "burst_rate_limit_ceiling_pods_per_second": 2564,
    }
    # as Volcano's own performance setup raises them: the whole burst fits the saved tokens
    raised = floor(["--kube-api-qps=10000", "--kube-api-burst=10000"])
    assert raised["burst_rate_limit_floor_seconds"] == 0.45
    # and a raised limit reports what the default would have allowed the same burst
    assert raised["burst_default_limit_floor_seconds"] == 1.95
    assert raised["burst_default_limit_ceiling_pods_per_second"] == 2564
    assert "burst_default_limit_floor_seconds" not in floor([])
    # no limit: no floor to report
    assert "burst_rate_limit_floor_seconds" not in floor(["--kube-api-qps=0"])


def test_a_burst_at_its_rate_limit_floor_says_the_limit_set_its_pace() -> None:
    cpu = {"burst_daemon_cpu_ms_per_pod": 0.29, "burst_server_cpu_ms_per_pod": 0.19}
    limit = {"burst_client_qps": 2000.0, "burst_client_burst": 2000, "burst_first_bind_seconds": 0.45}
    at_floor = " ".join(
        daemonbench._burst_bound(
            {**cpu, **limit, "burst_seconds": 1.95, "burst_rate_limit_floor_seconds": 1.95}
        )
    )
    assert "floor the daemon's client rate limit sets (1.95 s against 1.95 s" in at_floor
    # slower than the floor: CPU (or anything else) set the pace, not the limit
    slower = " ".join(
        daemonbench._burst_bound(
            {**cpu, **limit, "burst_seconds": 2.6, "burst_rate_limit_floor_seconds": 1.95}
        )
    )
    assert "rate limit" not in slower and "bounded by CPU" in slower
    # a burst the saved tokens cover has no refill floor to meet
    covered = {**cpu, **limit, "burst_seconds": 0.5, "burst_rate_limit_floor_seconds": 0.45}
    assert "rate limit" not in " ".join(daemonbench._burst_bound(covered))


def test_a_burst_under_a_raised_limit_says_what_the_default_allows() -> None:
    import argparse

    limits = daemonbench._rate_limit_floor(
        argparse.Namespace(daemon_flag=["--kube-api-qps=10000", "--kube-api-burst=10000"], burst=5000), 0.45
    )
    cpu = {"burst_daemon_cpu_ms_per_pod": 0.25, "burst_server_cpu_ms_per_pod": 0.16}
    text = " ".join(
        daemonbench._burst_bound({**cpu, **limits, "burst_seconds": 1.4, "burst_first_bind_seconds": 0.45})
    )
    assert "set the daemon's client rate limit to 10,000 requests a second" in text
    assert "no sooner than 1.95 s (2,564 pods/s)" in text
    # at the default limit there is nothing to add
    default = daemonbench._rate_limit_floor(argparse.Namespace(daemon_flag=[], burst=5000), 0.45)
    assert "set the daemon's client rate limit" not in " ".join(
        daemonbench._burst_bound({**cpu, **default, "burst_seconds": 2.6, "burst_first_bind_seconds": 0.45})
    )
