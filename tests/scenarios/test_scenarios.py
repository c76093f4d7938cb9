"""Every folder here is a scenario in the shared format; each is run through `simulate` and judged.

expected.yaml keys: bind (pod -> node or "*"), bind_count, pending, evict, pipelined, annotations
(pod -> {key: value or "*"}), cycles, podgroups (uid -> phase).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

HERE = Path(__file__).parent
# translated upstream cases live one level down, in volcano/
SCENARIOS = sorted(p.parent for p in [*HERE.glob("*/expected.yaml"), *HERE.glob("volcano/*/expected.yaml")])


def run_simulate(folder: Path, cycles: int) -> dict:
    cmd = [sys.executable, "-m", "scheduler", "simulate", "-f", str(folder / "cluster.yaml"), "-o", "json"]
    cmd += ["--cycles", str(cycles)]
    if (folder / "scheduler.conf").exists():
        cmd += ["--conf", str(folder / "scheduler.conf")]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    return json.loads(proc.stdout)


@pytest.mark.parametrize("folder", SCENARIOS, ids=[str(p.relative_to(HERE)) for p in SCENARIOS])
def test_scenario(folder: Path) -> None:
    expected = yaml.safe_load((folder / "expected.yaml").read_text()) or {}
    out = run_simulate(folder, int(expected.get("cycles", 1)))
    bindings = out["bindings"]
    for pod, node in (expected.get("bind") or {}).items():
        assert pod in bindings, f"{pod} not bound; pending because: {out['pending'].get(pod)}"
        if node != "*":
            assert bindings[pod] == node, f"{pod} bound to {bindings[pod]}, expected {node}"
    if "bind_count" in expected:
        assert len(bindings) == expected["bind_count"], f"bound: {sorted(bindings)}"
    for pod in expected.get("pending") or []:
        assert pod not in bindings, f"{pod} should stay pending but went to {bindings.get(pod)}"
    if "evict" in expected:
        assert sorted(out["evictions"]) == sorted(expected["evict"] or [])
    for pod, node in (expected.get("pipelined") or {}).items():
        assert pod in out["pipelined"], f"{pod} not pipelined: {out['pending'].get(pod)}"
        if node != "*":
            assert out["pipelined"][pod] == node
    for pod, want in (expected.get("annotations") or {}).items():
        got = out["annotations"].get(pod, {})
        for key, value in want.items():
            assert key in got, f"{pod}: annotation {key} missing; got {got}"
            if value != "*":
                assert got[key] == str(value), f"{pod}: {key}={got[key]!r}, expected {value!r}"
    for uid, phase in (expected.get("podgroups") or {}).items():
        assert out["podgroups"][uid]["phase"] == phase
    for pod, fragment in (expected.get("pending_reason") or {}).items():
        assert fragment in out["pending"].get(pod, ""), out["pending"].get(pod)


def test_there_are_enough_scenarios() -> None:
    assert len(SCENARIOS) >= 3
