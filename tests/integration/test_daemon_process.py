"""`vc-scheduler` as a process: JSON logs, SIGTERM drains and releases the lease, exit code 0."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from pathlib import Path

from tests.integration.conftest import FAST_LEASE, Cluster, wait_for

REPO = Path(__file__).resolve().parents[2]


async def test_sigterm_stops_cleanly_and_releases_the_lease(cluster: Cluster) -> None:
    cluster.job("p", 2)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "scheduler",
        "--kubeconfig",
        cluster.kubeconfig,
        "--schedule-period=100ms",
        "--listen-address=127.0.0.1:0",
        *FAST_LEASE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
    )
    try:
        await wait_for(lambda: len(cluster.bound()) == 2, 20, "the daemon process binds")
        lease = cluster.store.get("leases", "volcano-system", "volcano")
        assert lease["spec"]["holderIdentity"]
        proc.send_signal(signal.SIGTERM)
        rc = await asyncio.wait_for(proc.wait(), 15)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert rc == 0
    assert cluster.store.get("leases", "volcano-system", "volcano")["spec"]["holderIdentity"] == ""
    assert proc.stderr is not None
    lines = [json.loads(x) for x in (await proc.stderr.read()).decode().splitlines() if x.startswith("{")]
    events = [x["event"] for x in lines]
    assert "became leader" in events and "released the lease" in events and events[-1] == "stopped"
    sessions = [x for x in lines if x["event"] == "session"]
    assert sessions and sessions[0]["binds"] == 2 and all("level" in x and "timestamp" in x for x in lines)


async def test_a_bad_kubeconfig_is_one_error_line_and_exit_1(tmp_path: Path) -> None:
    bad = tmp_path / "kubeconfig"
    bad.write_text("this: is: not: a kubeconfig")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "scheduler",
        "--kubeconfig",
        str(bad),
        "--listen-address=127.0.0.1:0",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
    )
    _out, err = await asyncio.wait_for(proc.communicate(), 20)
    assert proc.returncode == 1
    text = err.decode()
    assert "Traceback" not in text
    assert "cannot load the Kubernetes client configuration" in text
