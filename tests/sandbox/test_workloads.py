"""Users' own workloads in the running sandbox, with nothing but real kubectl.

One sandbox (two 2-CPU nodes, the daemon with preemption enabled) serves the whole module:
Deployments from `kubectl create deployment` (protobuf) scheduled by the daemon, scaled, rolled
out and deleted with their ReplicaSets and pods; a batch/v1 Job whose pods Succeed; a
StatefulSet's ordered pods; a preempted Volcano Job recreated and scheduled again once room is
back; and the events kubectl shows (`get events`, `events --for`, `describe`).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests import k8stools
from tests.sandbox.test_demo import free_port

pytestmark = pytest.mark.kubectl
ROOT = Path(__file__).resolve().parents[2]


class Sandbox:
    def __init__(self, kubectl_bin: Path, kubeconfig: str, home: Path) -> None:
        self.bin = kubectl_bin
        self.kubeconfig = kubeconfig
        self.env = {**os.environ, "HOME": str(home)}

    async def run(self, *args: str, stdin: str | None = None, check: bool = True) -> tuple[int, str, str]:
        p = await asyncio.create_subprocess_exec(
            str(self.bin),
            "--kubeconfig",
            self.kubeconfig,
            *args,
            stdin=asyncio.subprocess.PIPE if stdin is not None else None,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=self.env,
        )
        out, err = await asyncio.wait_for(p.communicate(stdin.encode() if stdin else None), 30)
        rc = p.returncode if p.returncode is not None else -1
        if check:
            assert rc == 0, f"kubectl {' '.join(args)}: {err.decode()}"
        return rc, out.decode(), err.decode()

    async def out(self, *args: str, stdin: str | None = None) -> str:
        return (await self.run(*args, stdin=stdin))[1]

    async def json(self, *args: str) -> Any:
        return json.loads(await self.out(*args, "-o", "json"))

    async def until(self, what: str, check: Callable[[], Awaitable[Any]], timeout: float = 45) -> Any:
        deadline = time.monotonic() + timeout
        while True:
            got = await check()
            if got:
                return got
            assert time.monotonic() < deadline, f"timed out waiting for {what}"
            await asyncio.sleep(0.4)

    async def pods(self, selector: str) -> list[dict[str, Any]]:
        return list((await self.json("get", "pods", "-l", selector))["items"])

    async def phases(self, selector: str) -> list[str]:
        return sorted(p["status"].get("phase", "") for p in await self.pods(selector))


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandbox]:
    # a plain process (not asyncio): the module's tests each run in their own event loop
    tools = k8stools.ensure_binaries()
    if tools is None:
        pytest.skip(k8stools.SKIP_REASON)
    tmp = tmp_path_factory.mktemp("workloads")
    (tmp / "home").mkdir()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "scheduler",
            "sandbox",
            "--nodes",
            "2:cpu=2,memory=8Gi",
            "--kubeconfig-out",
            str(tmp / "kubeconfig"),
            "--daemon-log",
            str(tmp / "daemon.log"),
            "--scheduler-conf",
            str(ROOT / "config/examples/preempt-reclaim.conf"),
            "--schedule-period",
            "300ms",
            f"--listen-address=127.0.0.1:{free_port()}",
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stdout is not None
    try:
        first = proc.stdout.readline()
        assert "scheduler running" in first, first
        yield Sandbox(tools["kubectl"], str(tmp / "kubeconfig"), tmp / "home")
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()


VOLCANO = '{"spec":{"template":{"spec":{"schedulerName":"volcano"}}}}'


async def test_deployment_created_scaled_rolled_out_and_deleted(sandbox: Sandbox) -> None:
    k = sandbox
    await k.run("create", "deployment", "web", "--image=nginx", "--replicas=2")  # a protobuf body
    await k.run("patch", "deployment", "web", "-p", VOLCANO)
    await k.until("2 Running web pods", lambda: _equal(k.phases("app=web"), ["Running"] * 2))
    for pod in await k.pods("app=web"):
        assert pod["spec"]["schedulerName"] == "volcano" and pod["spec"]["nodeName"]
        assert re.fullmatch(r"10\.128\.\d+\.\d+", pod["status"]["podIP"]), pod["status"]
        (ref,) = pod["metadata"]["ownerReferences"]
        assert ref["kind"] == "ReplicaSet" and ref["name"].startswith("web-")
    # the daemon bound them: its Scheduled events name them
    events = await k.out("get", "events", "--field-selector", "reason=Scheduled")
    assert re.search(r"^LAST SEEN\s+TYPE\s+REASON\s+OBJECT\s+MESSAGE", events, re.MULTILINE), events
    assert re.search(r"Normal\s+Scheduled\s+pod/web-\S+\s+Successfully assigned default/web-", events), events

    out = await k.out("scale", "deployment", "web", "--replicas=3")
    assert "scaled" in out
    await k.until("3 Running web pods", lambda: _equal(k.phases("app=web"), ["Running"] * 3))
    table = await k.out("get", "deployment", "web")
    assert re.search(r"^web\s+3/3\s+3\s+3\s", table, re.MULTILINE), table

    await k.run("set", "image", "deployment/web", "nginx=nginx:1.27")
    await k.run("rollout", "status", "deployment/web", "--timeout=40s")
    images = {p["spec"]["containers"][0]["image"] for p in await k.pods("app=web") if _live(p)}
    assert images == {"nginx:1.27"}
    rsets = (await k.json("get", "rs", "-l", "app=web"))["items"]
    assert sorted(r["spec"]["replicas"] for r in rsets)[-1] == 3 and len(rsets) >= 2
    await k.run("rollout", "undo", "deployment/web")  # back to the ReplicaSet of the previous revision

    async def images_back() -> bool:
        return {p["spec"]["containers"][0]["image"] for p in await k.pods("app=web") if _live(p)} == {"nginx"}

    await k.until("the rollback", images_back)

    groups = {
        f"podgroup-{r['metadata']['uid']}" for r in (await k.json("get", "rs", "-l", "app=web"))["items"]
    }
    assert groups & {g["metadata"]["name"] for g in (await k.json("get", "podgroups"))["items"]}
    await k.run("delete", "deployment", "web")
    await k.until("the ReplicaSets and pods collected", lambda: _gone(k, "rs,pods", "app=web"))

    async def groups_gone() -> bool:  # owned by their ReplicaSet, as Volcano's controller makes them
        return not groups & {g["metadata"]["name"] for g in (await k.json("get", "podgroups"))["items"]}

    await k.until("the PodGroups collected", groups_gone)


async def test_batch_job_pods_succeed(sandbox: Sandbox) -> None:
    k = sandbox
    manifest = await k.out(
        "create", "job", "count", "--image=busybox", "--dry-run=client", "-o", "json", "--", "sleep", "1"
    )
    job = json.loads(manifest)
    job["spec"].update({"completions": 3, "parallelism": 2})
    job["spec"]["template"]["spec"]["schedulerName"] = "volcano"
    await k.run("create", "-f", "-", stdin=json.dumps(job))

    async def complete() -> bool:
        got = await k.json("get", "job", "count")
        return any(
            c["type"] == "Complete" and c["status"] == "True" for c in got["status"].get("conditions", [])
        )

    await k.until("the Job to complete", complete)
    assert await k.phases("job-name=count") == ["Succeeded"] * 3
    table = await k.out("get", "job", "count")
    assert re.search(r"^count\s+Complete\s+3/3\s", table, re.MULTILINE), table
    await k.run("delete", "job", "count")
    await k.until("the Job's pods collected", lambda: _gone(k, "pods", "job-name=count"))


async def test_install_guide_check_kubectl_run_pod_completes(sandbox: Sandbox) -> None:
    k = sandbox
    over = '{"spec":{"schedulerName":"volcano"}}'
    await k.run(
        "run", "hello", "--image=busybox", "--restart=Never", f"--overrides={over}", "--", "sleep", "1"
    )
    await k.until(
        "hello Completed", lambda: _shown(k, r"^hello\s+0/1\s+Completed\s+0\s", "get", "pod", "hello")
    )
    events = await k.out("get", "events", "--field-selector", "involvedObject.name=hello")
    assert re.search(r"Normal\s+Scheduled\s+pod/hello\s+Successfully assigned default/hello to node-", events)
    await k.run("delete", "pod", "hello")


async def test_statefulset_pods_come_in_order(sandbox: Sandbox) -> None:
    k = sandbox
    sts = {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "db"},
        "spec": {
            "replicas": 3,
            "serviceName": "db",
            "selector": {"matchLabels": {"app": "db"}},
            "template": {
                "metadata": {"labels": {"app": "db"}},
                "spec": {
                    "schedulerName": "volcano",
                    "containers": [
                        {"name": "db", "image": "postgres", "resources": {"requests": {"cpu": "100m"}}}
                    ],
                },
            },
        },
    }
    await k.run("apply", "-f", "-", stdin=json.dumps(sts))
    await k.until("3 Running db pods", lambda: _equal(k.phases("app=db"), ["Running"] * 3))
    pods = sorted(await k.pods("app=db"), key=lambda p: p["metadata"]["creationTimestamp"])
    assert [p["metadata"]["name"] for p in pods] == ["db-0", "db-1", "db-2"]
    starts = [p["status"]["startTime"] for p in pods]
    assert starts == sorted(starts)  # each one started only once the one before was Ready
    await k.run("set", "image", "statefulset/db", "db=postgres:17")
    await k.run("rollout", "status", "statefulset/db", "--timeout=40s")
    pods = await k.pods("app=db")
    assert sorted((p["metadata"]["name"], p["spec"]["containers"][0]["image"]) for p in pods) == [
        (f"db-{i}", "postgres:17") for i in range(3)
    ]
    await k.run("scale", "statefulset", "db", "--replicas=1")
    await k.until(
        "db scaled to db-0",
        lambda: _equal(_names(k, "app=db"), ["db-0"]),
    )
    await k.run("delete", "statefulset", "db")
    await k.until("db pods collected", lambda: _gone(k, "pods", "app=db"))


def _vcjob(name: str, priority: str, replicas: int, min_available: int, cpu: str) -> dict[str, Any]:
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {
            "minAvailable": min_available,
            "schedulerName": "volcano",
            "queue": "default",
            "priorityClassName": priority,
            "tasks": [
                {
                    "name": "worker",
                    "replicas": replicas,
                    "template": {
                        "spec": {
                            "containers": [
                                {"name": "w", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}
                            ]
                        }
                    },
                }
            ],
        },
    }


async def test_preempted_volcano_job_is_recreated_and_scheduled_again(sandbox: Sandbox) -> None:
    k = sandbox
    for name, value in (("wl-high", 1000), ("wl-low", 10)):
        pc = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}}
        await k.run("apply", "-f", "-", stdin=json.dumps({**pc, "value": value}))
    # 3 of the 4 CPUs; one pod may go (minAvailable 2). high fits no node until one of low's goes
    # (and fits under the overcommit plugin's enqueue limit, so it is considered at all)
    await k.run("apply", "-f", "-", stdin=json.dumps(_vcjob("low", "wl-low", 3, 2, "1")))
    await k.until("low Running", lambda: _equal(k.phases("volcano.sh/job-name=low"), ["Running"] * 3))
    await k.until(
        "low's RUNNINGS column", lambda: _shown(k, r"^low\s+Running\s+2\s+3\s", "get", "vcjob", "low")
    )

    await k.run("apply", "-f", "-", stdin=json.dumps(_vcjob("high", "wl-high", 1, 1, "1500m")))
    await k.until("high Running", lambda: _equal(k.phases("volcano.sh/job-name=high"), ["Running"]))
    # the evicted pod of low came back (same name, new uid) and waits for room
    await k.until(
        "low's victim recreated and Pending",
        lambda: _equal(k.phases("volcano.sh/job-name=low"), ["Pending"] + ["Running"] * 2),
    )
    victim = next(p for p in await k.pods("volcano.sh/job-name=low") if p["status"]["phase"] == "Pending")
    name = victim["metadata"]["name"]
    assert re.fullmatch(r"low-worker-[0-2]", name)
    evicted = await k.out("get", "events", "--field-selector", f"involvedObject.name={name}")
    assert re.search(r"Warning\s+Evict\s+pod/" + name, evicted), evicted  # the daemon preempted it
    await k.until(
        "a FailedScheduling event for the victim",
        lambda: _shown(k, r"Warning\s+FailedScheduling\s+Pod/" + name, "events", "--for", f"pod/{name}"),
    )
    described = await k.out("describe", "pod", name)
    assert re.search(r"Warning\s+FailedScheduling\s+\S+\s+volcano\s+", described), described

    await k.run("delete", "vcjob", "high")
    await k.until(
        "low whole again", lambda: _equal(k.phases("volcano.sh/job-name=low"), ["Running"] * 3), timeout=60
    )
    await k.run("delete", "vcjob", "low")


async def _equal(got: Awaitable[Any], want: Any) -> bool:
    return bool(await got == want)


async def _names(k: Sandbox, selector: str) -> list[str]:
    return sorted(p["metadata"]["name"] for p in await k.pods(selector) if _live(p))


async def _gone(k: Sandbox, kinds: str, selector: str) -> bool:
    return not (await k.json("get", kinds, "-l", selector))["items"]


async def _shown(k: Sandbox, pattern: str, *args: str) -> bool:
    return re.search(pattern, await k.out(*args), re.MULTILINE) is not None


def _live(pod: dict[str, Any]) -> bool:
    return not pod["metadata"].get("deletionTimestamp")
