"""Preemption through the API: the victim is told why, marked as a disruption target and deleted."""

from __future__ import annotations

from pathlib import Path

from tests.integration.conftest import Cluster, wait_for

PREEMPT = """actions: "enqueue, allocate, preempt"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: predicates
  - name: nodeorder
"""


def pod_with_priority(cluster: Cluster, name: str, group: str, pc: str, cpu: str) -> None:
    cluster.create(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": name,
                "namespace": "default",
                "annotations": {"scheduling.k8s.io/group-name": group},
            },
            "spec": {
                "schedulerName": "volcano",
                "priorityClassName": pc,
                "containers": [
                    {
                        "name": "main",
                        "image": "busybox",
                        "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}},
                    }
                ],
            },
        }
    )


async def test_a_high_priority_pod_evicts_a_low_priority_one(cluster: Cluster, tmp_path: Path) -> None:
    for name, value in (("low", 1), ("high", 1000)):
        cluster.create(
            {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": name},
                "value": value,
            }
        )
    conf = tmp_path / "volcano-scheduler.conf"
    conf.write_text(PREEMPT)
    cluster.podgroup("low", 1)
    for i in range(3):
        pod_with_priority(cluster, f"low-{i}", "low", "low", "4")
    d = await cluster.start_daemon("--leader-elect=false", f"--scheduler-conf={conf}")
    await wait_for(lambda: len(cluster.bound()) == 3, 10, "low priority pods fill the nodes")
    cluster.create(
        {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "PodGroup",
            "metadata": {"name": "high", "namespace": "default"},
            "spec": {"minMember": 1, "queue": "default", "priorityClassName": "high"},
        }
    )
    pod_with_priority(cluster, "high-0", "high", "high", "4")

    def victims() -> list[dict]:
        return [p for p in cluster.store.list("pods", "default") if p["metadata"].get("deletionTimestamp")]

    await wait_for(victims, 10, "a victim is deleted")
    [victim] = victims()
    assert victim["metadata"]["name"].startswith("low-")
    conds = {c["type"]: c for c in victim["status"]["conditions"]}
    assert (conds["DisruptionTarget"]["status"], conds["DisruptionTarget"]["reason"]) == (
        "True",
        "PreemptionByScheduler",
    )
    assert conds["DisruptionTarget"]["message"] == "volcano: preempting to accommodate a higher priority pod"
    assert (conds["Ready"]["status"], conds["Ready"]["reason"]) == ("False", "Evict")
    assert conds["Ready"]["message"] == "Pod is evicted, because of preempt"
    await wait_for(
        lambda: any(
            e["reason"] == "Evict" and e["involvedObject"]["name"] == victim["metadata"]["name"]
            for e in cluster.store.list("events", "default")
        ),
        5,
        "Evict event on the victim",
    )
    assert d.evictor is not None
    # the store shows the delete before the daemon has read the DELETE's answer and counted it
    await wait_for(lambda: d.evictor.evicted == 1, 5, "the evictor counts the delete")
    deletes = [
        r for r in cluster.srv.request_log if r.get("verb") == "delete" and r.get("resource") == "pods"
    ]
    assert len(deletes) == 1, "the victim is deleted once, not once per session"
    assert d.evictor.evicted == 1
    high = cluster.store.get("pods", "default", "high-0")
    await wait_for(
        lambda: (cluster.store.get("pods", "default", "high-0").get("status") or {}).get("nominatedNodeName"),
        5,
        "the preemptor is nominated to the victim's node",
    )
    high = cluster.store.get("pods", "default", "high-0")
    assert high["status"]["nominatedNodeName"] == victim["spec"]["nodeName"]
    assert not high["spec"].get("nodeName"), "it waits for the victim to go (no kubelet finishes it here)"
