"""The issue's walkthroughs, with the daemon against the sandbox API server over HTTP.

- seed 003: three priority classes, three 3 x 2-CPU gang jobs on 6 CPUs: the high job runs,
  the others wait whole; when the high job goes, the medium one takes its place.
- gang: a job that cannot fit whole binds nothing, while a smaller job beside it runs.
- queues share the cluster by weight (1:3 over 12 CPUs -> 3 and 9 pods).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import yaml

from tests.integration.conftest import Cluster, wait_for

SEED_003 = (
    Path(__file__).resolve().parents[2] / "tests" / "scenarios" / "priority-gang-seed003" / "cluster.yaml"
)


def replace_nodes(cluster: Cluster, count: int, cpu: str) -> None:
    for n in cluster.store.list("nodes"):
        cluster.store.delete("nodes", None, n["metadata"]["name"])
    for i in range(count):
        cluster.create(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": f"node-{i}"},
                "status": {
                    "capacity": {"cpu": cpu, "memory": "8Gi", "pods": "110"},
                    "allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"},
                    "conditions": [{"type": "Ready", "status": "True"}],
                },
            }
        )


def pod(name: str, group: str, cpu: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "default",
            "annotations": {"scheduling.k8s.io/group-name": group},
        },
        "spec": {
            "schedulerName": "volcano",
            "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}],
        },
    }


def podgroup(name: str, min_member: int, queue: str = "default") -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"minMember": min_member, "queue": queue},
    }


def phase(cluster: Cluster, group: str) -> str:
    return ((cluster.store.get("podgroups", "default", group) or {}).get("status") or {}).get("phase", "")


async def test_seed_003_high_runs_then_medium_takes_its_place(cluster: Cluster) -> None:
    replace_nodes(cluster, 0, "0")
    for doc in yaml.safe_load_all(SEED_003.read_text()):
        if doc and not (doc["kind"] == "Queue" and doc["metadata"]["name"] == "default"):
            cluster.create(doc)
    await cluster.start_daemon("--leader-elect=false")
    high = {f"priority-high-test-{i}" for i in range(3)}
    await wait_for(lambda: set(cluster.bound()) == high, 10, "the high-priority job bound")
    await wait_for(
        lambda: phase(cluster, "priority-med") and phase(cluster, "priority-low"), 5, "statuses written"
    )
    await asyncio.sleep(0.5)  # more sessions: the waiting jobs stay whole, nothing is bound twice
    assert set(cluster.bound()) == high
    assert sorted(cluster.bound().values()) == ["node-0", "node-1", "node-2"]
    assert phase(cluster, "priority-high") == "Running"
    assert {phase(cluster, "priority-med"), phase(cluster, "priority-low")} <= {"Pending", "Inqueue"}

    # the job finishes: its pods and PodGroup go (grace 0: no kubelet in this test)
    for name in high:
        cluster.store.delete("pods", "default", name, grace_period_seconds=0)
    cluster.store.delete("podgroups", "default", "priority-high")
    med = {f"priority-med-test-{i}" for i in range(3)}
    await wait_for(lambda: set(cluster.bound()) == med, 10, "the medium-priority job bound")
    await asyncio.sleep(0.5)
    assert set(cluster.bound()) == med
    assert set(cluster.successful_binds_per_pod().values()) == {1}
    low_pods = [
        p for p in cluster.store.list("pods", "default") if p["metadata"]["name"].startswith("priority-low")
    ]
    assert len(low_pods) == 3 and not any(p["spec"].get("nodeName") for p in low_pods)


async def test_a_gang_that_cannot_fit_whole_binds_nothing(cluster: Cluster) -> None:
    # 3 nodes x 4 CPUs; "big" needs 4 x 4 CPUs, "small" 2 x 1 CPU
    cluster.create(podgroup("big", 4))
    for i in range(4):
        cluster.create(pod(f"big-{i}", "big", "4"))
    cluster.create(podgroup("small", 2))
    for i in range(2):
        cluster.create(pod(f"small-{i}", "small", "1"))
    await cluster.start_daemon("--leader-elect=false")
    await wait_for(lambda: set(cluster.bound()) == {"small-0", "small-1"}, 10, "the small gang bound")
    await asyncio.sleep(0.8)
    assert set(cluster.bound()) == {"small-0", "small-1"}, "no member of the big gang may be bound"
    assert not [r for r in cluster.binding_requests() if r["name"].startswith("big-")]
    big = cluster.store.get("pods", "default", "big-0")
    await wait_for(
        lambda: any(
            c.get("type") == "PodScheduled" and c.get("status") == "False"
            for c in (cluster.store.get("pods", "default", "big-0").get("status") or {}).get("conditions")
            or []
        ),
        5,
        "big-0 marked unschedulable",
    )
    big = cluster.store.get("pods", "default", "big-0")
    [cond] = [c for c in big["status"]["conditions"] if c["type"] == "PodScheduled"]
    # Volcano's reasons: "Unschedulable" (no node fits the pod) or "Schedulable" (it fit in the
    # session, but its gang was discarded as a whole); which one depends on the task order
    assert cond["reason"] in ("Unschedulable", "Schedulable"), cond


async def test_queues_share_the_cluster_by_weight(cluster: Cluster) -> None:
    for name, weight in (("q1", 1), ("q2", 3)):
        cluster.create(
            {
                "apiVersion": "scheduling.volcano.sh/v1beta1",
                "kind": "Queue",
                "metadata": {"name": name},
                "spec": {"weight": weight, "reclaimable": True},
            }
        )
        cluster.store.patch(
            "queues", None, name, {"status": {"state": "Open"}}, "merge", subresource="status"
        )
    for q in ("q1", "q2"):
        for j in range(12):
            cluster.create(podgroup(f"{q}-j{j}", 1, queue=q))
            cluster.create(pod(f"{q}-j{j}-0", f"{q}-j{j}", "1"))
    await cluster.start_daemon("--leader-elect=false")

    def per_queue() -> tuple[int, int]:
        b = cluster.bound()
        return sum(1 for k in b if k.startswith("q1-")), sum(1 for k in b if k.startswith("q2-"))

    # 12 CPUs, weights 1:3, both queues asking for 12: deserved 3 and 9 CPUs
    await wait_for(lambda: per_queue() == (3, 9), 10, "3 pods of q1 and 9 of q2 bound")
    await asyncio.sleep(0.5)
    assert per_queue() == (3, 9)
