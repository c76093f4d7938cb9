"""One bad node or one failing plugin never stops the cluster; sessions that keep failing fail /healthz."""

from __future__ import annotations

from typing import Any

import aiohttp
import pytest

from scheduler.plugins.predicates import PredicatesPlugin
from tests.integration.conftest import Cluster, wait_for
from tests.integration.test_daemon_device_metrics import CONF, GPU

# the register annotation that made every session raise OverflowError before range checks
HUGE = "GPU-x,10,99999999999999999999999999,NVIDIA-Tesla V100-PCIE-32GB,true,hami-core:"


def gpu_node(name: str, register: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {"kubernetes.io/hostname": name},
            "annotations": {"volcano.sh/node-vgpu-register": register},
        },
        "status": {
            "capacity": dict(GPU),
            "allocatable": dict(GPU),
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def vgpu_pod(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "schedulerName": "volcano",
            "containers": [
                {
                    "name": "main",
                    "image": "busybox",
                    "resources": {
                        "limits": {"volcano.sh/vgpu-number": "1", "volcano.sh/vgpu-memory": "1024"},
                        "requests": {"cpu": "100m"},
                    },
                }
            ],
        },
    }


async def get(port: int, path: str) -> tuple[int, str]:
    async with aiohttp.ClientSession() as s, s.get(f"http://127.0.0.1:{port}{path}") as r:
        return r.status, await r.text()


@pytest.mark.parametrize(
    "register",
    [
        HUGE,
        "GPU-x,-10,1024,NVIDIA-T4,true,hami-core:",
        "GPU-x,ten,1024,NVIDIA-T4,true,hami-core:",
        "GPU-ü,10,1024,NVIDIA-T4,true,hami-core:",
        "GPU-dup,10,1024,NVIDIA-T4,true,hami-core:GPU-dup,10,1024,NVIDIA-T4,true,hami-core:",
    ],
)
async def test_valid_pods_keep_binding_next_to_a_garbage_vgpu_node(cluster: Cluster, register: str) -> None:
    cluster.configmap(CONF)
    cluster.create(gpu_node("bad", register))
    cluster.create(gpu_node("good", "GPU-a,10,32768,NVIDIA-Tesla V100-PCIE-32GB,true,hami-core:"))
    d = await cluster.start_daemon()
    for i in range(3):
        cluster.create(vgpu_pod(f"v{i}"))
    cluster.job("cpu", 2)
    await wait_for(lambda: len(cluster.bound()) == 5, 20, "every valid pod bound")
    assert {cluster.node_of(f"v{i}") for i in range(3)} == {"good"}  # never the unreadable node
    assert d.session_errors == 0 and d.failed_in_a_row == 0

    def node_event() -> list[dict[str, Any]]:
        return [
            e
            for e in cluster.store.list("events", "default")
            if e["involvedObject"]["kind"] == "Node" and e["involvedObject"]["name"] == "bad"
        ]

    await wait_for(node_event, 10, "a Warning event on the bad node")
    ev = node_event()[0]
    assert ev["type"] == "Warning" and ev["reason"] == "InvalidDeviceRegistration"
    assert "node bad" in ev["message"] and "vGPU registration" in ev["message"]


async def test_a_plugin_raising_for_one_node_costs_only_that_node(
    cluster: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = PredicatesPlugin.on_session_open

    def open_with_a_bug(self: Any, ssn: Any) -> None:
        real(self, ssn)
        fn = ssn._registered["predicate"]["predicates"]

        def predicate(task: Any, node: Any) -> Any:
            if node.name == "n0":
                raise RuntimeError("bug on odd input")
            return fn(task, node)

        ssn._registered["predicate"]["predicates"] = predicate
        # the plugin's many-node form shares its code, so a real bug would be in both: without
        # it, the session asks the buggy one-node form for every node
        ssn._predicate_many.pop("predicates", None)

    monkeypatch.setattr(PredicatesPlugin, "on_session_open", open_with_a_bug)
    d = await cluster.start_daemon()
    cluster.job("j", 4, cpu="2")
    await wait_for(lambda: len(cluster.bound()) == 4, 20, "the job bound on the other nodes")
    assert "n0" not in cluster.bound().values()
    assert d.session_errors == 0
    _status, text = await get(d.ports[0], "/metrics")
    assert 'volcano_plugin_errors_total{plugin="predicates"}' in text


async def test_healthz_fails_after_sessions_keep_failing(
    cluster: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    d = await cluster.start_daemon("--healthz-max-failed-sessions=3")
    status, _ = await get(d.ports[0], "/healthz")
    assert status == 200

    def broken(_ssn: Any, _timings: Any = None) -> None:
        raise OverflowError("int too big to convert")

    monkeypatch.setattr("scheduler.daemon.run_actions", broken)
    cluster.job("j", 1)
    await wait_for(lambda: d.failed_in_a_row >= 3, 10, "three failed sessions")
    status, text = await get(d.ports[0], "/healthz")
    assert status == 500 and "sessions failed" in text and "OverflowError: int too big" in text
    _status, metrics = await get(d.ports[0], "/metrics")
    failures = [ln for ln in metrics.splitlines() if ln.startswith("volcano_session_failures_total ")]
    assert failures and float(failures[0].split()[1]) >= 3
    monkeypatch.undo()  # the cause goes away: the next good session makes it healthy again
    await wait_for(lambda: d.failed_in_a_row == 0, 10, "a good session")
    status, _ = await get(d.ports[0], "/healthz")
    assert status == 200


def condition(cluster: Cluster, name: str) -> str:
    pod = cluster.store.get("pods", "default", name) or {}
    for c in (pod.get("status") or {}).get("conditions") or []:
        if c.get("type") == "PodScheduled" and c.get("status") == "False":
            return str(c.get("message") or "")
    return ""


async def test_pods_we_cannot_schedule_say_why(cluster: Cluster) -> None:
    await cluster.start_daemon()
    cluster.pod("lost", "nope")  # its PodGroup does not exist
    cluster.create(
        {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "PodGroup",
            "metadata": {"name": "garbled", "namespace": "default"},
            "spec": {"minMember": 1, "queue": "default", "minResources": {"cpu": "lots"}},
        }
    )
    cluster.pod("in-garbled", "garbled")
    cluster.create(
        {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "PodGroup",
            "metadata": {"name": "queueless", "namespace": "default"},
            "spec": {"minMember": 1, "queue": "no-such-queue"},
        }
    )
    cluster.pod("in-queueless", "queueless")
    cluster.job("fine", 1)
    await wait_for(lambda: cluster.node_of("fine-0"), 20, "the valid pod bound")
    await wait_for(
        lambda: all(condition(cluster, n) for n in ("lost", "in-garbled", "in-queueless")),
        20,
        "three conditions",
    )
    assert "PodGroup default/nope does not exist" in condition(cluster, "lost")
    assert "PodGroup default/garbled is malformed" in condition(cluster, "in-garbled")
    assert "cpu" in condition(cluster, "in-garbled")
    assert "queue no-such-queue of PodGroup default/queueless does not exist" in condition(
        cluster, "in-queueless"
    )


async def test_an_orphan_podgroup_reserves_no_queue_resources(cluster: Cluster) -> None:
    cluster.create(
        {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "Queue",
            "metadata": {"name": "small"},
            "spec": {"weight": 1, "capability": {"cpu": "4"}},
        }
    )
    # a bare pod's group, Inqueue with the whole queue reserved; its pod is gone (no GC here)
    cluster.create(
        {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "PodGroup",
            "metadata": {
                "name": "left-behind",
                "namespace": "default",
                "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "gone", "uid": "u-gone"}],
            },
            "spec": {"minMember": 1, "queue": "small", "minResources": {"cpu": "4"}},
        }
    )
    cluster.store.patch(
        "podgroups", "default", "left-behind", {"status": {"phase": "Inqueue"}}, "merge", subresource="status"
    )
    cluster.create(
        {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "PodGroup",
            "metadata": {"name": "newcomer", "namespace": "default"},
            "spec": {"minMember": 2, "queue": "small", "minResources": {"cpu": "2"}},
        }
    )
    for i in range(2):
        cluster.pod(f"newcomer-{i}", "newcomer")
    await cluster.start_daemon()
    await wait_for(lambda: len(cluster.bound()) == 2, 20, "the newcomer admitted and bound")
