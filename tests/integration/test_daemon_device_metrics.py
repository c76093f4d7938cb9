"""The vGPU card gauges follow what the daemon bound, through the API, and go away with the node."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable
from typing import Any

import aiohttp

from tests.integration.conftest import Cluster, wait_for

CONF = """actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
- plugins:
  - name: predicates
  - name: deviceshare
    arguments:
      deviceshare.VGPUEnable: true
  - name: proportion
  - name: nodeorder
"""

GPU = {
    "cpu": "16",
    "memory": "64Gi",
    "pods": "110",
    "volcano.sh/vgpu-number": "20",
    "volcano.sh/vgpu-memory": "65536",
    "volcano.sh/vgpu-cores": "200",
}


async def scrape(port: int) -> str:
    async with aiohttp.ClientSession() as s, s.get(f"http://127.0.0.1:{port}/metrics") as r:
        return await r.text()


async def test_vgpu_gauges_follow_binds_and_vanish_with_the_node(cluster: Cluster) -> None:
    cluster.configmap(CONF)
    cluster.create(
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": "g1",
                "labels": {"kubernetes.io/hostname": "g1"},
                "annotations": {
                    "volcano.sh/node-vgpu-register": "GPU-a,10,32768,NVIDIA-Tesla V100-PCIE-32GB,true,hami-core:"
                    "GPU-b,10,32768,NVIDIA-Tesla V100-PCIE-32GB,true,hami-core:"
                },
            },
            "status": {
                "capacity": dict(GPU),
                "allocatable": dict(GPU),
                "conditions": [{"type": "Ready", "status": "True"}],
            },
        }
    )
    cluster.podgroup("cuda", 1)
    cluster.create(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": "cuda-0",
                "namespace": "default",
                "annotations": {"scheduling.k8s.io/group-name": "cuda"},
            },
            "spec": {
                "schedulerName": "volcano",
                "containers": [
                    {
                        "name": "main",
                        "image": "cuda",
                        "resources": {
                            "limits": {
                                "volcano.sh/vgpu-number": "1",
                                "volcano.sh/vgpu-memory": "3000",
                                "volcano.sh/vgpu-cores": "30",
                            }
                        },
                    }
                ],
            },
        }
    )
    d = await cluster.start_daemon("--leader-elect=false")
    await wait_for(lambda: cluster.node_of("cuda-0") == "g1", 10, "the vGPU pod bound")
    port = d.ports[0]

    # a session after the bind shows the pod on one of the two cards
    text = await scrape_until(
        port, lambda t: re.search(r'shared_number\{NodeName="g1",devID="GPU-[ab]"\} 1.0', t)
    )
    card = "GPU-a" if 'devID="GPU-a"} 1.0' in text else "GPU-b"
    other = "GPU-b" if card == "GPU-a" else "GPU-a"
    assert f'volcano_vgpu_device_allocated_memory{{NodeName="g1",devID="{card}"}} 3000.0' in text
    assert f'volcano_vgpu_device_allocated_cores{{NodeName="g1",devID="{card}"}} 30.0' in text
    assert f'volcano_vgpu_device_memory_limit{{NodeName="g1",devID="{card}"}} 32768.0' in text
    assert f'volcano_vgpu_device_shared_number{{NodeName="g1",devID="{other}"}} 0.0' in text

    cluster.store.delete("nodes", None, "g1")
    cluster.job("later", 1)  # a change, so that a session runs without g1
    text = await scrape_until(port, lambda t: 'NodeName="g1"' not in t)
    assert "volcano_vgpu_device_allocated_memory{" not in text


async def scrape_until(port: int, ok: Callable[[str], Any], timeout: float = 10.0) -> str:
    deadline = time.monotonic() + timeout
    while True:
        text = await scrape(port)
        if ok(text) or time.monotonic() > deadline:
            return text
        await asyncio.sleep(0.1)


def vgpu_pod(name: str, memory: str, cores: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "default",
            "annotations": {"scheduling.k8s.io/group-name": name},
        },
        "spec": {
            "schedulerName": "volcano",
            "containers": [
                {
                    "name": "main",
                    "image": "cuda",
                    "resources": {
                        "limits": {
                            "volcano.sh/vgpu-number": "1",
                            "volcano.sh/vgpu-memory": memory,
                            "volcano.sh/vgpu-cores": cores,
                        }
                    },
                }
            ],
        },
    }


async def test_a_restarted_daemon_rebuilds_card_usage_from_pod_annotations(cluster: Cluster) -> None:
    """Two 16 GiB cards: after a restart the daemon must still know which card the first pod holds.

    The node's scalar vgpu-memory (32,768) would admit all three 10,000 MiB pods; only the cards'
    ledgers, rebuilt from the pods' annotations, can tell that the third one fits on neither card.
    """
    cluster.configmap(CONF)
    two_cards = {
        **GPU,
        "volcano.sh/vgpu-number": "20",
        "volcano.sh/vgpu-memory": "32768",
        "volcano.sh/vgpu-cores": "200",
    }
    cluster.create(
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": "g1",
                "labels": {"kubernetes.io/hostname": "g1"},
                "annotations": {
                    "volcano.sh/node-vgpu-register": "GPU-a,10,16384,NVIDIA-Tesla V100-PCIE-16GB,true,hami-core:"
                    "GPU-b,10,16384,NVIDIA-Tesla V100-PCIE-16GB,true,hami-core:"
                },
            },
            "status": {
                "capacity": dict(two_cards),
                "allocatable": dict(two_cards),
                "conditions": [{"type": "Ready", "status": "True"}],
            },
        }
    )
    cluster.podgroup("first", 1)
    cluster.create(vgpu_pod("first", "10000", "30"))
    d = await cluster.start_daemon("--leader-elect=false")
    await wait_for(lambda: cluster.node_of("first") == "g1", 10, "the first vGPU pod bound")
    await cluster.stop_daemon(d)
    ann = cluster.store.get("pods", "default", "first")["metadata"]["annotations"]
    assert "GPU-" in ann.get("volcano.sh/vgpu-ids-new", ""), ann

    for name in ("second", "third"):
        cluster.podgroup(name, 1)
        cluster.create(vgpu_pod(name, "10000", "30"))
    await cluster.start_daemon("--leader-elect=false")
    await wait_for(
        lambda: any(cluster.node_of(n) for n in ("second", "third")),
        10,
        "one more pod bound after the restart",
    )
    await asyncio.sleep(0.8)
    bound = sorted(n for n in ("first", "second", "third") if cluster.node_of(n))
    assert len(bound) == 2, f"6,384 MiB are left on each card, yet {bound} are bound"
    assert set(cluster.successful_binds_per_pod().values()) == {1}
