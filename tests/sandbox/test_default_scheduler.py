"""The sandbox's stand-in for kube-scheduler (`sandbox --default-scheduler`): it binds the pods of
the default scheduler where they fit, and leaves the `volcano` pods to vc-scheduler."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest

from scheduler.sim.apiserver import ApiServer
from scheduler.sim.defaultscheduler import DefaultScheduler
from scheduler.sim.nodegen import make_nodes, parse_node_spec
from scheduler.sim.restclient import PODS, RestClient

Obj = dict[str, Any]


def pod(name: str, cpu: str = "1", **spec: Any) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}],
            **spec,
        },
    }


@pytest.fixture
async def client(server: ApiServer) -> AsyncIterator[RestClient]:
    # node-0 and node-1 with 2 CPUs; node-1 is tainted
    nodes = make_nodes([parse_node_spec("2:cpu=2,memory=8Gi")])
    nodes[1]["spec"] = {"taints": [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]}
    for n in nodes:
        server.store.create(n)
    c = RestClient(server.url)
    task = asyncio.ensure_future(DefaultScheduler(c).run())
    try:
        yield c
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await c.close()


async def node_of(client: RestClient, name: str, timeout: float = 5.0) -> str:
    """The pod's node once bound; "" if it is still unbound after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        p = await client.get(PODS, name, "default")
        if p["spec"].get("nodeName"):
            return str(p["spec"]["nodeName"])
        await asyncio.sleep(0.05)
    return ""


async def test_default_scheduler_binds_where_the_pod_fits_and_leaves_volcano_pods(client: RestClient) -> None:
    await client.create(PODS, pod("web-1"), "default")
    await client.create(PODS, pod("web-2", schedulerName="default-scheduler"), "default")
    assert await node_of(client, "web-1") == "node-0"  # node-1's taint is not tolerated
    assert await node_of(client, "web-2") == "node-0"
    # node-0 is full (2 x 1 CPU): a third pod waits, one tolerating the taint goes to node-1
    await client.create(PODS, pod("web-3"), "default")
    tolerant = pod("web-4", tolerations=[{"key": "dedicated", "operator": "Exists"}])
    await client.create(PODS, tolerant, "default")
    assert await node_of(client, "web-4") == "node-1"
    assert await node_of(client, "web-3", timeout=1.0) == ""
    await client.create(PODS, pod("batch", cpu="100m", schedulerName="volcano"), "default")
    await client.create(PODS, pod("picky", cpu="100m", nodeSelector={"disk": "ssd"}), "default")
    assert await node_of(client, "batch", timeout=1.0) == ""
    assert await node_of(client, "picky", timeout=0.5) == ""
