"""The sandbox's controllers, kubelets and garbage collector against its API server, no scheduler:
the tests bind pods themselves (as the daemon would) and watch what the components make of them.

Volcano Job lifecycle policies (RestartJob up to maxRetry, TaskCompleted -> CompleteJob,
minSuccess, PodFailed -> AbortJob), the status counters, pods that finish on `sleep N` with their
exit code or restart under restartPolicy Always, pod IPs from the node's podCIDR, and cascading
and orphaning deletes.
"""

from __future__ import annotations

import asyncio
import ipaddress
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from scheduler.sim.apiserver import ApiServer
from scheduler.sim.controllers import JobController
from scheduler.sim.gc import GarbageCollector
from scheduler.sim.kubelet import SimulatedKubelets, run_plan
from scheduler.sim.nodegen import make_nodes, parse_node_spec
from scheduler.sim.restclient import BATCH_JOBS, CONFIGMAPS, PODS, VCJOBS, RestClient
from scheduler.sim.workloads import JOB_INDEX, WorkloadControllers, rollout_plan

Obj = dict[str, Any]


class Cluster:
    def __init__(self, server: ApiServer, client: RestClient) -> None:
        self.server = server
        self.store = server.store
        self.client = client

    def pods(self, job: str) -> list[Obj]:
        return [
            p
            for p in self.store.list("pods")
            if (p["metadata"].get("labels") or {}).get("volcano.sh/job-name") == job
        ]

    def vcjob(self, name: str) -> Obj:
        return self.store.get("jobs.batch.volcano.sh", "default", name)

    def phase(self, name: str) -> str | None:
        return ((self.vcjob(name).get("status") or {}).get("state") or {}).get("phase")

    def bind_all(self, job: str) -> None:
        """What the scheduler does: bind every unbound pod of the job."""
        for p in self.pods(job):
            if not p["spec"].get("nodeName") and not p["metadata"].get("deletionTimestamp"):
                self.store.bind(
                    "default", p["metadata"]["name"], {"target": {"kind": "Node", "name": "node-0"}}
                )

    async def until(self, what: str, check: Callable[[], Any], timeout: float = 10) -> None:
        deadline = time.monotonic() + timeout
        while not check():
            assert time.monotonic() < deadline, f"timed out waiting for {what}"
            await asyncio.sleep(0.05)

    async def create_job(self, job: Obj) -> None:
        await self.client.create(VCJOBS, job, "default")
        await self.until(f"{job['metadata']['name']} expanded", lambda: self.phase(job["metadata"]["name"]))


@pytest.fixture
async def cluster(server: ApiServer) -> AsyncIterator[Cluster]:
    client = RestClient(server.url)
    for node in make_nodes([parse_node_spec("1:cpu=64,memory=256Gi")]):
        server.store.create(node)
    kubelets = SimulatedKubelets(client, start_delay=0.05, termination_delay=0.05)
    comps = [
        asyncio.ensure_future(c)
        for c in (
            kubelets.run(),
            JobController(client).run(),
            WorkloadControllers(client).run(),
            GarbageCollector(server.store).run(),
        )
    ]
    try:
        yield Cluster(server, client)
    finally:
        for c in comps:
            c.cancel()
        await asyncio.gather(*comps, return_exceptions=True)
        await kubelets.stop()
        await client.close()


def vcjob(name: str, tasks: list[Obj], **spec: Any) -> Obj:
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"schedulerName": "volcano", "tasks": tasks, **spec},
    }


def task(name: str, replicas: int, command: list[str] | None = None, **extra: Any) -> Obj:
    container: Obj = {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "100m"}}}
    if command:
        container["command"] = command
    return {
        "name": name,
        "replicas": replicas,
        "template": {"spec": {"containers": [container], "restartPolicy": "Never"}},
        **extra,
    }


async def test_pod_evicted_restarts_the_whole_job_until_max_retry(cluster: Cluster) -> None:
    await cluster.create_job(
        vcjob(
            "rj",
            [task("w", 2)],
            minAvailable=2,
            maxRetry=2,
            policies=[{"event": "PodEvicted", "action": "RestartJob"}],
        )
    )
    cluster.bind_all("rj")
    await cluster.until("rj Running", lambda: cluster.phase("rj") == "Running")
    status = cluster.vcjob("rj")["status"]
    assert (status["running"], status["pending"], status["minAvailable"]) == (2, 0, 2)
    assert status["taskStatusCount"] == {"w": {"phase": {"Running": 2}}}
    first_uids = {p["metadata"]["uid"] for p in cluster.pods("rj")}

    await cluster.client.delete(PODS, "rj-w-0", "default")  # a preemption: the other pod goes too
    await cluster.until(
        "every pod recreated",
        lambda: (
            len(cluster.pods("rj")) == 2
            and not first_uids & {p["metadata"]["uid"] for p in cluster.pods("rj")}
        ),
    )
    assert cluster.vcjob("rj")["status"]["retryCount"] == 1
    assert cluster.phase("rj") in ("Restarting", "Pending")
    assert all(p["metadata"]["annotations"]["volcano.sh/job-version"] == "1" for p in cluster.pods("rj"))
    cluster.bind_all("rj")
    await cluster.until("rj Running again", lambda: cluster.phase("rj") == "Running")

    await cluster.client.delete(PODS, "rj-w-1", "default")
    await cluster.until("rj Failed at maxRetry", lambda: cluster.phase("rj") == "Failed")
    assert cluster.vcjob("rj")["status"]["retryCount"] == 2
    await cluster.until("rj's pods killed", lambda: not cluster.pods("rj"))


async def test_without_a_policy_an_evicted_pod_is_recreated_alone(cluster: Cluster) -> None:
    await cluster.create_job(vcjob("sj", [task("w", 2)], minAvailable=1))
    cluster.bind_all("sj")
    await cluster.until("sj Running", lambda: cluster.phase("sj") == "Running")
    kept = next(p for p in cluster.pods("sj") if p["metadata"]["name"] == "sj-w-1")["metadata"]["uid"]
    old = next(p for p in cluster.pods("sj") if p["metadata"]["name"] == "sj-w-0")["metadata"]["uid"]
    await cluster.client.delete(PODS, "sj-w-0", "default")

    def recreated() -> bool:
        uids = {p["metadata"]["name"]: p["metadata"]["uid"] for p in cluster.pods("sj")}
        return uids.get("sj-w-0") not in (None, old) and uids.get("sj-w-1") == kept

    await cluster.until("sj-w-0 recreated, sj-w-1 untouched", recreated)
    assert cluster.vcjob("sj")["status"].get("retryCount", 0) == 0


async def test_task_completed_completes_the_job_and_stops_the_rest(cluster: Cluster) -> None:
    await cluster.create_job(
        vcjob(
            "tc",
            [
                task(
                    "chief",
                    1,
                    ["sleep", "0.3"],
                    policies=[{"event": "TaskCompleted", "action": "CompleteJob"}],
                ),
                task("worker", 2),
            ],
        )
    )
    cluster.bind_all("tc")
    await cluster.until("tc Completed", lambda: cluster.phase("tc") == "Completed", timeout=15)
    await cluster.until(
        "the workers killed",
        lambda: [p["metadata"]["name"] for p in cluster.pods("tc")] == ["tc-chief-0"],
    )
    assert cluster.pods("tc")[0]["status"]["phase"] == "Succeeded"


async def test_min_success_completes_the_job(cluster: Cluster) -> None:
    await cluster.create_job(
        vcjob("ms", [task("w", 3, ["sh", "-c", "sleep 0.2"])], minAvailable=3, minSuccess=2)
    )
    cluster.bind_all("ms")
    await cluster.until("ms Completed", lambda: cluster.phase("ms") == "Completed", timeout=15)
    assert cluster.vcjob("ms")["status"]["succeeded"] >= 2


async def test_pod_failed_aborts_the_job(cluster: Cluster) -> None:
    await cluster.create_job(
        vcjob(
            "pf",
            [task("w", 2, ["sh", "-c", "sleep 0.2; exit 3"])],
            policies=[{"events": ["PodFailed"], "action": "AbortJob"}],
        )
    )
    cluster.bind_all("pf")
    await cluster.until("pf Aborted", lambda: cluster.phase("pf") == "Aborted", timeout=15)
    pod = next(p for p in cluster.pods("pf") if p["status"]["phase"] == "Failed")
    assert pod["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 3


async def test_pod_run_time_exit_code_restarts_and_ip(cluster: Cluster) -> None:
    def pod(name: str, command: list[str], policy: str) -> Obj:
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {
                "nodeName": "node-0",
                "restartPolicy": policy,
                "containers": [{"name": "c", "image": "busybox", "command": command}],
            },
        }

    await cluster.client.create(PODS, pod("done", ["sleep", "0.2"], "Never"), "default")
    await cluster.client.create(PODS, pod("loop", ["sh", "-c", "sleep 0.2"], "Always"), "default")
    await cluster.client.create(PODS, pod("forever", ["sleep", "infinity"], "Never"), "default")

    def get(name: str) -> Obj:
        return cluster.store.get("pods", "default", name)

    await cluster.until("done Succeeded", lambda: get("done")["status"].get("phase") == "Succeeded")
    await cluster.until(
        "loop restarted",
        lambda: get("loop")["status"].get("containerStatuses", [{}])[0].get("restartCount", 0) >= 1,
    )
    assert get("loop")["status"]["phase"] == "Running" and get("forever")["status"]["phase"] == "Running"
    node = cluster.store.get("nodes", None, "node-0")
    cidr = ipaddress.ip_network(node["spec"]["podCIDR"])
    ips = {get(n)["status"]["podIP"] for n in ("loop", "forever")}
    assert len(ips) == 2 and all(ipaddress.ip_address(ip) in cidr for ip in ips)
    assert get("forever")["status"]["hostIP"] == node["status"]["addresses"][0]["address"]


def test_run_plan_reads_sleep_and_exit_from_command_and_args() -> None:
    def plan(command: list[str], args: list[str] | None = None) -> tuple[float, int] | None:
        return run_plan({"spec": {"containers": [{"command": command, "args": args or []}]}})

    assert plan(["sleep", "30"]) == (30.0, 0)
    assert plan(["sh", "-c"], ["sleep 2m; exit 4"]) == (120.0, 4)
    assert plan(["/bin/sh", "-c", "echo hi && sleep 1.5"]) == (1.5, 0)
    assert plan(["sleep", "infinity"]) is None
    assert plan(["nginx"]) is None


async def test_delete_cascades_to_dependents_unless_orphaned(cluster: Cluster) -> None:
    def cm(name: str, owner: Obj | None = None) -> Obj:
        md: Obj = {"name": name, "namespace": "default"}
        if owner is not None:
            md["ownerReferences"] = [
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "name": owner["metadata"]["name"],
                    "uid": owner["metadata"]["uid"],
                }
            ]
        return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": md}

    owner = await cluster.client.create(CONFIGMAPS, cm("owner"), "default")
    await cluster.client.create(CONFIGMAPS, cm("child", owner), "default")
    # a dependent naming an owner the sandbox never held stays (see scheduler.sim.gc)
    ghost = {"metadata": {"name": "ghost", "uid": "no-such-uid"}}
    await cluster.client.create(CONFIGMAPS, cm("stray", ghost), "default")
    await cluster.client.delete(CONFIGMAPS, "owner", "default")
    await cluster.until(
        "child collected", lambda: cluster.store.get("configmaps", "default", "child") is None
    )
    assert cluster.store.get("configmaps", "default", "stray") is not None

    owner = await cluster.client.create(CONFIGMAPS, cm("owner2"), "default")
    await cluster.client.create(CONFIGMAPS, cm("kept", owner), "default")
    await cluster.client.request(
        "DELETE",
        CONFIGMAPS.path("default", "owner2"),
        {"kind": "DeleteOptions", "propagationPolicy": "Orphan"},
    )
    await asyncio.sleep(0.3)
    kept = cluster.store.get("configmaps", "default", "kept")
    assert kept is not None and "ownerReferences" not in kept["metadata"]


def _rs(replicas: int, available: int) -> Obj:
    return {"spec": {"replicas": replicas}, "status": {"availableReplicas": available}}


def test_rolling_update_steps_stay_within_surge_and_unavailability() -> None:
    rolling = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}
    # start: 4 old available, new empty: one surge pod, no old pod may go yet
    assert rollout_plan(rolling, 4, _rs(0, 0), [_rs(4, 4)], True) == (1, [4])
    # the surge pod is available: one old pod goes, and no more new ones until it went
    assert rollout_plan(rolling, 4, _rs(1, 1), [_rs(4, 4)], True) == (1, [3])
    assert rollout_plan(rolling, 4, _rs(1, 1), [_rs(3, 3)], True) == (2, [3])
    # unavailable old pods (never scheduled) go at once, whatever the budget
    assert rollout_plan(rolling, 4, _rs(1, 0), [_rs(4, 1)], True) == (1, [1])
    # defaults 25%/25% of 4: surge 1, unavailable 1
    assert rollout_plan({}, 4, _rs(0, 0), [_rs(4, 4)], True) == (1, [3])


def test_recreate_waits_for_the_old_pods_to_be_gone() -> None:
    assert rollout_plan({"type": "Recreate"}, 3, _rs(0, 0), [_rs(3, 3)], True) == (0, [0])
    assert rollout_plan({"type": "Recreate"}, 3, _rs(0, 0), [_rs(0, 0)], False) == (3, [0])


def _batch_job(name: str, command: list[str], **spec: Any) -> Obj:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "c", "image": "busybox", "command": command}],
                }
            },
            **spec,
        },
    }


async def _bind_job_pods(cluster: Cluster, job: str, until: Callable[[], bool]) -> None:
    """Bind the Job's pods as they come (the scheduler's part) until `until()`."""
    deadline = time.monotonic() + 15
    while not until():
        assert time.monotonic() < deadline, f"job {job} did not get there"
        for p in cluster.store.list("pods"):
            labels = p["metadata"].get("labels") or {}
            if labels.get("job-name") == job and not p["spec"].get("nodeName"):
                cluster.store.bind(
                    "default", p["metadata"]["name"], {"target": {"kind": "Node", "name": "node-0"}}
                )
        await asyncio.sleep(0.05)


async def test_indexed_job_runs_every_index_once(cluster: Cluster) -> None:
    job = _batch_job("idx", ["sleep", "0.1"], completions=3, parallelism=2, completionMode="Indexed")
    await cluster.client.create(BATCH_JOBS, job, "default")

    def status() -> Obj:
        return cluster.store.get("jobs.batch", "default", "idx").get("status") or {}

    await _bind_job_pods(cluster, "idx", lambda: status().get("completedIndexes") == "0-2")
    pods = [
        p for p in cluster.store.list("pods") if (p["metadata"].get("labels") or {}).get("job-name") == "idx"
    ]
    indexes = sorted(p["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"] for p in pods)
    assert indexes == ["0", "1", "2"]
    for p in pods:
        env = p["spec"]["containers"][0]["env"]
        assert env == [{"name": "JOB_COMPLETION_INDEX", "value": p["metadata"]["annotations"][JOB_INDEX]}]
        assert p["metadata"]["name"].startswith(f"idx-{env[0]['value']}-")
    await cluster.until(
        "idx Complete", lambda: any(c["type"] == "Complete" for c in status().get("conditions", []))
    )


async def test_job_past_its_active_deadline_fails_and_stops_its_pods(cluster: Cluster) -> None:
    await cluster.client.create(
        BATCH_JOBS, _batch_job("slow", ["sleep", "600"], activeDeadlineSeconds=1), "default"
    )

    def failed() -> Obj | None:
        conds = (cluster.store.get("jobs.batch", "default", "slow").get("status") or {}).get(
            "conditions"
        ) or []
        return next((c for c in conds if c["type"] == "Failed"), None)

    await _bind_job_pods(cluster, "slow", lambda: failed() is not None)
    assert failed()["reason"] == "DeadlineExceeded"
    await cluster.until(
        "slow's pod stopped",
        lambda: (
            not [
                p
                for p in cluster.store.list("pods")
                if (p["metadata"].get("labels") or {}).get("job-name") == "slow"
                and not p["metadata"].get("deletionTimestamp")
            ]
        ),
    )
