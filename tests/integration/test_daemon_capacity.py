"""The daemon with capacity and hierarchical queues against the sandbox API server: Queue
status.allocated, the capacity gauges, and a ResourceQuota and a PDB it reads through its informers."""

from __future__ import annotations

from typing import Any

from tests.integration.conftest import Cluster, wait_for
from tests.integration.test_daemon_device_metrics import scrape_until

CONF = """actions: "enqueue, allocate, backfill, reclaim"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: predicates
  - name: capacity
    enableHierarchy: true
  - name: resourcequota
  - name: pdb
  - name: nodeorder
"""


def queue(name: str, parent: str, deserved_cpu: str) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": name},
        "spec": {"parent": parent, "deserved": {"cpu": deserved_cpu, "memory": "4Gi"}},
        "status": {"state": "Open"},
    }


def pod(name: str, queue_name: str, cpu: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "default",
            "annotations": {"scheduling.volcano.sh/queue-name": queue_name},
        },
        "spec": {
            "schedulerName": "volcano",
            "containers": [
                {"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}
            ],
        },
    }


async def test_capacity_tree_status_metrics_and_quota(cluster: Cluster) -> None:
    cluster.configmap(CONF)
    if cluster.store.get("queues", None, "root") is None:
        cluster.create(
            {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "root"}}
        )
    cluster.create(queue("dept", "root", "4"))
    cluster.create(queue("team", "dept", "2"))
    cluster.create(
        {
            "apiVersion": "v1",
            "kind": "ResourceQuota",
            "metadata": {"name": "small", "namespace": "default"},
            "spec": {"hard": {"cpu": "3"}},
        }
    )
    cluster.create(pod("fits", "team", "2"))
    cluster.create(pod("over-quota", "team", "4"))
    d = await cluster.start_daemon("--leader-elect=false")
    await wait_for(lambda: cluster.node_of("fits") != "", 10, "the pod in the leaf queue bound")

    def allocated(name: str) -> str:
        q = cluster.store.get("queues", None, name) or {}
        return str(((q.get("status") or {}).get("allocated") or {}).get("cpu", ""))

    await wait_for(
        lambda: allocated("team") == "2" and allocated("dept") == "2", 10, "queue status.allocated"
    )
    text = await scrape_until(
        d.ports[0], lambda t: 'volcano_queue_deserved_milli_cpu{queue_name="team"} 2000.0' in t
    )
    assert 'volcano_queue_deserved_milli_cpu{queue_name="team"} 2000.0' in text
    assert 'volcano_queue_allocated_milli_cpu{queue_name="dept"} 2000.0' in text
    assert 'volcano_queue_real_capacity_milli_cpu{queue_name="team"}' in text

    def quota_message() -> str:
        p = cluster.store.get("pods", "default", "over-quota") or {}
        conds = (p.get("status") or {}).get("conditions") or []
        return " ".join(c.get("message", "") for c in conds if c.get("type") == "PodScheduled")

    # 4 CPUs are above the namespace's quota of 3: the pod says so, and stays unbound
    await wait_for(lambda: "ResourceQuota default/small" in quota_message(), 10, "the quota message")
    assert cluster.node_of("over-quota") == ""
