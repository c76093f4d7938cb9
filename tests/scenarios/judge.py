"""Running a scenario folder and judging its outcome against expected.yaml.

One judge for every scenario suite (the hand-written scenarios here and Volcano's translated unit
tests under volcano/), so an expected.yaml key means the same thing everywhere. The keys:

- `cycles`: sessions to run (default 1);
- `bind`: pod -> node (or "*" for any node) that must be bound; `bind_count`: how many binds in all;
- `pending`: pods that must stay unbound;
- `evict`: exactly the pods evicted (a list; order is ignored);
- `pipelined`: pod -> node (or "*") pipelined in the last session;
- `pipelined_jobs`: PodGroup (ns/name) -> nodes: the group has pipelined tasks, all on those nodes
  (Volcano's `ExpectPipeLined`);
- `task_status`: PodGroup -> {status: count} of its tasks after the last session, statuses as
  Volcano names them (Pending, Allocated, Pipelined, Binding, Bound, Running, Releasing, ...)
  (Volcano's `ExpectTaskStatusNums`; in-process runs only);
- `podgroups`: PodGroup -> phase after the last session (Volcano's `ExpectStatus`);
- `annotations`: pod -> {key: value or "*"} the scheduler wrote;
- `pending_reason`: pod -> a fragment of the message it is pending with.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import yaml

from scheduler.model.objects import TaskStatus
from scheduler.registry import default_configuration, load_file
from scheduler.sim.manifests import Skipped, load_files
from scheduler.sim.simulate import simulate

KEYS = frozenset(
    {
        "cycles",
        "bind",
        "bind_count",
        "pending",
        "evict",
        "pipelined",
        "pipelined_jobs",
        "task_status",
        "podgroups",
        "annotations",
        "pending_reason",
    }
)


def load_expected(folder: Path) -> dict[str, Any]:
    expected = yaml.safe_load((folder / "expected.yaml").read_text()) or {}
    unknown = set(expected) - KEYS
    assert not unknown, f"{folder.name}/expected.yaml: unknown keys {sorted(unknown)}"
    return expected


def run_subprocess(folder: Path, cycles: int) -> dict[str, Any]:
    """The scenario through the `simulate` command line, as a user would run it."""
    cmd = [sys.executable, "-m", "scheduler", "simulate", "-f", str(folder / "cluster.yaml"), "-o", "json"]
    cmd += ["--cycles", str(cycles)]
    if (folder / "scheduler.conf").exists():
        cmd += ["--conf", str(folder / "scheduler.conf")]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    return json.loads(proc.stdout)


def run_in_process(folder: Path, cycles: int) -> dict[str, Any]:
    """The same decisions as `simulate -o json`, without a process per scenario; adds task_status."""
    conf_path = folder / "scheduler.conf"
    conf = load_file(str(conf_path)) if conf_path.exists() else default_configuration()
    skipped: list[Skipped] = []
    objects = load_files([str(folder / "cluster.yaml")], skipped)
    result = simulate(objects, conf, cycles=cycles, skipped=skipped)
    out = result.to_json()
    assert not out["skipped"], f"objects skipped: {out['skipped']}"
    statuses: dict[str, dict[str, int]] = {}
    pipelined: dict[str, list[str]] = {}
    for uid, job in result.cycles[-1].jobs.items():
        tasks = list(job.tasks.values())
        statuses[uid] = dict(Counter(TaskStatus(t.status).label for t in tasks))
        pipelined[uid] = [t.node_name for t in tasks if t.status == TaskStatus.PIPELINED]
    out["task_status"] = statuses
    out["pipelined_jobs"] = pipelined
    return out


def judge(expected: dict[str, Any], out: dict[str, Any]) -> None:
    bindings = out["bindings"]
    for pod, node in (expected.get("bind") or {}).items():
        assert pod in bindings, f"{pod} not bound; pending because: {out['pending'].get(pod)}"
        if node != "*":
            assert bindings[pod] == node, f"{pod} bound to {bindings[pod]}, expected {node}"
    if "bind_count" in expected:
        assert len(bindings) == expected["bind_count"], f"bound: {bindings}"
    for pod in expected.get("pending") or []:
        assert pod not in bindings, f"{pod} should stay pending but went to {bindings.get(pod)}"
    if "evict" in expected:
        assert sorted(out["evictions"]) == sorted(expected["evict"] or [])
    for pod, node in (expected.get("pipelined") or {}).items():
        assert pod in out["pipelined"], f"{pod} not pipelined: {out['pending'].get(pod)}"
        if node != "*":
            assert out["pipelined"][pod] == node
    for group, nodes in (expected.get("pipelined_jobs") or {}).items():
        got = out["pipelined_jobs"].get(group)
        assert got, f"{group}: no task pipelined; pending: {out['pending']}"
        assert set(got) <= set(nodes), f"{group}: pipelined onto {got}, expected within {nodes}"
    for group, want in (expected.get("task_status") or {}).items():
        assert group in out["task_status"], f"{group} is not in the session"
        got = out["task_status"][group]
        for status, count in want.items():
            assert got.get(status, 0) == count, (
                f"{group}: {got.get(status, 0)} {status} tasks, expected {count}"
            )
    for uid, phase in (expected.get("podgroups") or {}).items():
        assert uid in out["podgroups"], f"PodGroup {uid} not in the session"
        assert out["podgroups"][uid]["phase"] == phase, (
            f"{uid}: {out['podgroups'][uid]['phase']}, expected {phase}"
        )
    for pod, want in (expected.get("annotations") or {}).items():
        got = out["annotations"].get(pod, {})
        for key, value in want.items():
            assert key in got, f"{pod}: annotation {key} missing; got {got}"
            if value != "*":
                assert got[key] == str(value), f"{pod}: {key}={got[key]!r}, expected {value!r}"
    for pod, fragment in (expected.get("pending_reason") or {}).items():
        assert fragment in out["pending"].get(pod, ""), out["pending"].get(pod)
