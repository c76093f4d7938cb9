"""The floor of the vGPU session figure: the same jobs and tiers, less the device asks and deviceshare."""

from __future__ import annotations

import pytest

from scheduler.plugins.deviceshare import annotations as ann
from scheduler.registry import parse
from scheduler.sim.devicebench import FLOOR_SESSION_CONF, SESSION_CONF, _session_rate, _session_state


def _plugins(text: str) -> list[list[str]]:
    return [[p.name for p in tier.plugins] for tier in parse(text).tiers]


def test_the_floor_runs_the_vgpu_session_tiers_less_deviceshare() -> None:
    with_devices = _plugins(SESSION_CONF)
    assert any("deviceshare" in tier for tier in with_devices)
    assert _plugins(FLOOR_SESSION_CONF) == [[n for n in tier if n != "deviceshare"] for tier in with_devices]
    assert parse(FLOOR_SESSION_CONF).actions == parse(SESSION_CONF).actions


def test_the_floor_jobs_are_the_vgpu_jobs_without_their_device_asks() -> None:
    plain = _session_state(5, 2, 6, 7, device_asks=False)
    asked = _session_state(5, 2, 6, 7)
    assert plain.nodes.keys() == asked.nodes.keys()
    assert plain.jobs.keys() == asked.jobs.keys()
    for uid, job in asked.jobs.items():
        (task,) = job.tasks.values()
        (twin,) = plain.jobs[uid].tasks.values()
        limits = task.pod.containers[0].limits
        assert ann.VGPU_NUMBER in limits
        assert twin.pod.containers[0].limits == {}
        # the cpu and memory asks are the vGPU pod's (its requests also carry the vGPU limits)
        assert twin.pod.containers[0].requests == {"cpu": task.pod.containers[0].requests["cpu"]}
        assert not twin.init_resreq.scalars and task.init_resreq.scalars
        assert (twin.init_resreq.milli_cpu, twin.init_resreq.memory) == (
            task.init_resreq.milli_cpu,
            task.init_resreq.memory,
        )
    assert _session_rate(5, 2, 6, 7, floor=True)[0] == _session_rate(5, 2, 6, 7)[0] == 6


def test_session_only_with_floor_prints_the_floor_and_the_device_part(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from scheduler.sim.bench import main as bench_main

    argv = ["--devices", "--session-only", "--floor", "--nodes", "6", "--gpus", "2", "--session-pods", "4"]
    assert bench_main([*argv, "--repeats", "1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 3
    assert "vGPU decisions/s" in lines[0] and "Ascend decisions/s" in lines[1]
    assert lines[2].startswith("Floor (the same jobs without device asks") and "(4 bound of 4)" in lines[2]
    assert "us a pod; the device part" in lines[2]


def test_the_documented_section_says_whether_the_floor_alone_exceeds_the_goal() -> None:
    from scheduler.sim.devicebench import _floor_bullet

    assert _floor_bullet({"session": (1000, 0.3)}, 3333.0, 1000) == []
    # 1,000 pods in 0.17 s: 170 us a pod, above the 100 us a pod the 10,000/s goal allows
    (slow,) = _floor_bullet({"session": (1000, 0.3), "floor": (1000, 0.17)}, 3333.0, 1000)
    assert "5,882 decisions/s (1,000 bound of 1,000), 170 us a pod" in slow
    assert "the device part 130 us a pod of the vGPU session's 300" in slow
    assert "the floor alone is 170 us" in slow
    # 1,000 pods in 0.06 s: 60 us a pod leaves 40 us for the device part
    (quick,) = _floor_bullet({"session": (1000, 0.3), "floor": (1000, 0.06)}, 3333.0, 1000)
    assert "at most 40 us a pod above it" in quick
    # 1,000 pods in 0.0998 s: a floor just under the goal leaves a fraction of a microsecond, not "0 us"
    (thin,) = _floor_bullet({"session": (1000, 0.3), "floor": (1000, 0.0998)}, 3333.0, 1000)
    assert "at most 0.2 us a pod above it" in thin
