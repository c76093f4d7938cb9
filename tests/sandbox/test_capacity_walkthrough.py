"""Volcano's capacity guide in the sandbox, driven by real kubectl: two queues deserving 2 and 6
of 8 CPUs; the first borrows the whole cluster while the second is idle, then the second reclaims
its deserved share. Also: ResourceQuotas, PDBs and hierarchical Queues through kubectl."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.sandbox.test_demo import ROOT, free_port

pytestmark = pytest.mark.kubectl

CONF = """\
actions: "enqueue, allocate, backfill, reclaim"
tiers:
- plugins:
  - name: priority
  - name: gang
    enablePreemptable: false
  - name: conformance
- plugins:
  - name: drf
    enablePreemptable: false
  - name: predicates
  - name: capacity
  - name: nodeorder
  - name: binpack
"""


def queue(name: str, cpu: str, memory: str, parent: str = "") -> dict[str, Any]:
    spec: dict[str, Any] = {"reclaimable": True, "deserved": {"cpu": cpu, "memory": memory}}
    if parent:
        spec["parent"] = parent
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": name},
        "spec": spec,
    }


def demo_pods(app: str, queue_name: str, n: int = 8) -> list[dict[str, Any]]:
    # the guide uses a Deployment of 8 replicas; the sandbox has no Deployment controller, so
    # the 8 pods are created directly (an evicted one is gone instead of being replaced)
    return [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": f"{app}-{i}",
                "namespace": "default",
                "labels": {"app": app},
                "annotations": {"scheduling.volcano.sh/queue-name": queue_name},
            },
            "spec": {
                "schedulerName": "volcano",
                "terminationGracePeriodSeconds": 0,
                "containers": [
                    {
                        "name": "nginx",
                        "image": "nginx:1.14.2",
                        "resources": {"requests": {"cpu": "1", "memory": "4Gi"}},
                    }
                ],
            },
        }
        for i in range(n)
    ]


def as_list(objs: list[dict[str, Any]]) -> str:
    return yaml.safe_dump_all(objs)


async def test_capacity_guide_borrow_then_reclaim(kubectl_bin: Path, tmp_path: Path) -> None:
    conf = tmp_path / "volcano-scheduler.conf"
    conf.write_text(CONF)
    home = tmp_path / "home"
    home.mkdir()
    env = {**os.environ, "HOME": str(home)}
    cmd = [
        sys.executable,
        "-m",
        "scheduler",
        "sandbox",
        "--nodes",
        "2:cpu=4,memory=16Gi",
        "--kubeconfig-out",
        str(tmp_path / "kubeconfig"),
        "--daemon-log",
        str(tmp_path / "daemon.log"),
        "--pod-start-delay",
        "0",
        f"--listen-address=127.0.0.1:{free_port()}",
        "--scheduler-conf",
        str(conf),
        "--schedule-period",
        "200ms",
        "--leader-elect=false",
    ]
    proc = await asyncio.create_subprocess_exec(
        *cmd, cwd=ROOT, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL
    )
    assert proc.stdout is not None
    try:
        first = (await asyncio.wait_for(proc.stdout.readline(), 60)).decode()
        assert "--kubeconfig" in first, first

        async def kubectl(*args: str, stdin: str | None = None) -> str:
            p = await asyncio.create_subprocess_exec(
                str(kubectl_bin),
                "--kubeconfig",
                str(tmp_path / "kubeconfig"),
                *args,
                stdin=asyncio.subprocess.PIPE if stdin is not None else None,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=env,
            )
            out, err = await asyncio.wait_for(p.communicate(stdin.encode() if stdin else None), 30)
            assert p.returncode == 0, f"kubectl {' '.join(args)}: {err.decode()}"
            return out.decode()

        async def running(app: str) -> int:
            doc = json.loads(await kubectl("get", "pods", "-l", f"app={app}", "-o", "json"))
            return sum(
                1
                for p in doc["items"]
                if p["status"].get("phase") == "Running" and not p["metadata"].get("deletionTimestamp")
            )

        async def until(check: Any, what: str, timeout: float = 60) -> None:
            deadline = time.monotonic() + timeout
            while not await check():
                assert time.monotonic() < deadline, what
                await asyncio.sleep(0.5)

        out = await kubectl(
            "create", "-f", "-", stdin=as_list([queue("queue1", "2", "8Gi"), queue("queue2", "6", "24Gi")])
        )
        assert "queue.scheduling.volcano.sh/queue1 created" in out

        # queue1 borrows: queue2 is idle, so all 8 pods of demo-1 run on the 8 CPUs
        await kubectl("create", "-f", "-", stdin=as_list(demo_pods("demo-1", "queue1")))

        async def demo1_all() -> bool:
            return await running("demo-1") == 8

        await until(demo1_all, "demo-1 did not get all 8 CPUs")

        async def queue1_status() -> bool:
            got = await kubectl("get", "queue", "queue1", "-o", "jsonpath={.status.allocated.cpu}")
            return got == "8"

        await until(queue1_status, "queue1 status.allocated.cpu never showed the 8 borrowed CPUs", 20)

        # queue2 reclaims its deserved 6 CPUs: 6 demo-2 pods run, 2 of demo-1 stay
        await kubectl("create", "-f", "-", stdin=as_list(demo_pods("demo-2", "queue2")))

        async def reclaimed() -> bool:
            return (await running("demo-1"), await running("demo-2")) == (2, 6)

        await until(reclaimed, "queue2 did not reclaim its 6 CPUs", 90)
        await asyncio.sleep(1.5)  # later sessions take nothing more from queue1: it is at its share
        assert (await running("demo-1"), await running("demo-2")) == (2, 6)
        pending = json.loads(await kubectl("get", "pods", "-l", "app=demo-2", "-o", "json"))["items"]
        assert sum(1 for p in pending if p["status"].get("phase") == "Pending") == 2
        described = await kubectl("describe", "queue", "queue2")
        assert re.search(r"Deserved:\s*\n\s*Cpu:\s+6", described), described

        # the other objects the new plugins read, through kubectl
        quota = {
            "apiVersion": "v1",
            "kind": "ResourceQuota",
            "metadata": {"name": "team", "namespace": "default"},
            "spec": {"hard": {"cpu": "4"}},
        }
        pdb = {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "demo-2", "namespace": "default"},
            "spec": {"minAvailable": 6, "selector": {"matchLabels": {"app": "demo-2"}}},
        }
        child = queue("queue21", "1", "4Gi", parent="queue2")
        out = await kubectl("create", "-f", "-", stdin=as_list([quota, pdb, child]))
        assert "resourcequota/team created" in out and "poddisruptionbudget.policy/demo-2 created" in out
        assert "team" in await kubectl("get", "quota")
        assert "demo-2" in await kubectl("get", "pdb")

        # the sandbox's controllers fill in what the plugins read: 6 of 6 demo-2 pods needed up,
        # so no disruption is allowed; the 10 live pods of the namespace use 10 CPUs of the quota
        async def budget_written() -> bool:
            got = await kubectl(
                "get", "pdb", "demo-2", "-o", "jsonpath={.status.currentHealthy}/{.status.disruptionsAllowed}"
            )
            return got == "6/0"

        await until(budget_written, "the PDB status was not written", 20)

        async def quota_written() -> bool:
            return await kubectl("get", "quota", "team", "-o", "jsonpath={.status.used.cpu}") == "10"

        await until(quota_written, "the ResourceQuota status was not written", 20)
        assert "Parent:" in await kubectl("describe", "queue", "queue21")
        assert "Hard" in await kubectl("describe", "resourcequota", "team")
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGINT)
        await asyncio.wait_for(proc.wait(), 30)
