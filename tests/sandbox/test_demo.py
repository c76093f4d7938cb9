"""`make demo`: the sandbox with the seed walkthroughs and the real daemon.

The first test runs the Makefile's own `DEMO_ARGS` in bounded mode (`--exit-after-settle`) and
checks the placements the walkthroughs promise. The second leaves the demo running and replays
the seed 003 priority walkthrough with nothing but real kubectl commands, as a newcomer would.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]


def demo_args(venv: Path) -> list[str]:
    """The `DEMO_ARGS` of the Makefile, with `$(VENV)` pointing at `venv`."""
    text = (ROOT / "Makefile").read_text()
    m = re.search(r"^DEMO_ARGS\s*:=\s*((?:.*\\\n)*.*)$", text, re.MULTILINE)
    assert m is not None, "the Makefile has no DEMO_ARGS"
    value = m.group(1).replace("\\\n", " ").replace("$(VENV)", str(venv))
    assert "$(" not in value, f"unexpanded make variable in DEMO_ARGS: {value}"
    return shlex.split(value)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def sandbox_cmd(tmp_path: Path, *extra: str) -> list[str]:
    # the daemon's metrics port is moved to a free one: a demo may be running on the machine
    return [
        sys.executable,
        "-m",
        "scheduler",
        "sandbox",
        *demo_args(tmp_path),
        f"--listen-address=127.0.0.1:{free_port()}",
        *extra,
    ]


def parse_table(text: str, header: str) -> list[dict[str, str]]:
    """Rows of the plain-column table starting with the line that begins with `header`."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header))
    cols = lines[start].split()
    rows = []
    for line in lines[start + 1 :]:
        if not line.strip():
            break
        parts = line.split(None, len(cols) - 1)
        rows.append(dict(zip(cols, parts, strict=True)))
    return rows


def test_demo_bounded_run_places_the_seed_walkthroughs(tmp_path: Path) -> None:
    proc = subprocess.run(
        sandbox_cmd(tmp_path, "--exit-after-settle", "--run-for", "90"),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=150,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    first = proc.stdout.splitlines()[0]
    assert "scheduler running" in first and f"--kubeconfig {tmp_path}/demo.kubeconfig get pods -A -w" in first
    pods = {r["POD"]: r for r in parse_table(proc.stdout, "NAMESPACE  POD")}
    high = [pods[f"priority-high-test-{i}"] for i in range(3)]
    assert all(p["PHASE"] == "Running" for p in high), high
    assert sorted(p["NODE"] for p in high) == [
        "gpu-node-2",
        "node-0",
        "node-1",
    ]  # 2 CPUs each: one pod a node
    for job in ("med", "low"):
        waiting = [pods[f"priority-{job}-test-{i}"] for i in range(3)]
        assert all((p["PHASE"], p["NODE"]) == ("Pending", "-") for p in waiting), waiting
    hami, two = pods["hami-pod"], pods["two-vgpu-pod"]
    assert (hami["PHASE"], hami["NODE"], two["PHASE"], two["NODE"]) == (
        "Running",
        "gpu-node-2",
        "Running",
        "gpu-node-2",
    )
    hami_cards = re.fullmatch(r"volcano\.sh/vgpu-ids-new=(GPU-[0-9a-f-]+),NVIDIA,3000,50:", hami["DEVICES"])
    assert hami_cards is not None, hami["DEVICES"]
    two_cards = re.findall(r"(GPU-[0-9a-f-]+),NVIDIA,8000,0:", two["DEVICES"])
    assert len(set(two_cards)) == 2, two["DEVICES"]  # one slice on each card
    assert hami_cards.group(1) in two_cards
    groups = {r["PODGROUP"].rsplit("-", 5)[0]: r for r in parse_table(proc.stdout, "NAMESPACE  PODGROUP")}
    assert (groups["priority-high"]["PHASE"], groups["priority-high"]["RUNNING"]) == ("Running", "3")
    assert groups["priority-med"]["PHASE"] == groups["priority-low"]["PHASE"] == "Pending"


@pytest.mark.kubectl
async def test_priority_walkthrough_with_kubectl_against_the_running_demo(
    kubectl_bin: Path, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    env = {**os.environ, "HOME": str(home)}
    proc = await asyncio.create_subprocess_exec(
        *sandbox_cmd(tmp_path), cwd=ROOT, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL
    )
    assert proc.stdout is not None
    try:
        first = (await asyncio.wait_for(proc.stdout.readline(), 60)).decode()
        kubeconfig = re.search(r"--kubeconfig (\S+) get pods -A -w", first)
        assert kubeconfig is not None, first

        async def kubectl(*args: str) -> str:
            p = await asyncio.create_subprocess_exec(
                str(kubectl_bin),
                "--kubeconfig",
                kubeconfig.group(1),
                *args,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=env,
            )
            out, err = await asyncio.wait_for(p.communicate(), 30)
            assert p.returncode == 0, f"kubectl {' '.join(args)}: {err.decode()}"
            return out.decode()

        async def phases(job: str) -> list[str]:
            doc: dict[str, Any] = json.loads(
                await kubectl("get", "pods", "-l", f"volcano.sh/job-name={job}", "-o", "json")
            )
            return sorted(p["status"].get("phase", "") for p in doc["items"])

        async def until(job: str, want: list[str], timeout: float = 45) -> None:
            deadline = time.monotonic() + timeout
            while (got := await phases(job)) != want:
                assert time.monotonic() < deadline, f"{job}: {got}, expected {want}"
                await asyncio.sleep(0.5)

        async def until_shown(pattern: str, *args: str, timeout: float = 30) -> str:
            deadline = time.monotonic() + timeout
            while not re.search(pattern, out := await kubectl(*args), re.MULTILINE):
                assert time.monotonic() < deadline, f"kubectl {' '.join(args)}: no {pattern!r} in\n{out}"
                await asyncio.sleep(0.5)
            return out

        await until("priority-high", ["Running"] * 3)
        assert await phases("priority-med") == await phases("priority-low") == ["Pending"] * 3
        table = await kubectl("get", "pods", "-o", "wide")
        assert re.search(r"^priority-high-test-0\s+1/1\s+Running", table, re.MULTILINE), table
        assert re.search(r"^priority-low-test-0\s+0/1\s+Pending", table, re.MULTILINE), table
        # the scheduler writes PodGroup phases at the end of a session: give it one
        pgs = await until_shown(r"^priority-high-\S+\s+Running\s+3\s+3", "get", "pg")
        assert re.search(r"^priority-med-\S+\s+Pending", pgs, re.MULTILINE), pgs
        assert "priority-high" in await kubectl("get", "vcjob")
        out = await kubectl("delete", "vcjob", "priority-high")
        assert 'job.batch.volcano.sh "priority-high" deleted' in out
        await until("priority-high", [])
        await until("priority-med", ["Running"] * 3)
        assert await phases("priority-low") == ["Pending"] * 3
        await until_shown(r"^priority-med-\S+\s+Running\s+3\s+3", "get", "podgroups")
        pending = await kubectl(
            "get",
            "pod",
            "priority-low-test-0",
            "-o",
            'jsonpath={.status.conditions[?(@.type=="PodScheduled")].status}',
        )
        assert pending == "False"
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGINT)
        rc = await asyncio.wait_for(proc.wait(), 30)
    assert rc == 0  # Ctrl-C stops the demo cleanly
