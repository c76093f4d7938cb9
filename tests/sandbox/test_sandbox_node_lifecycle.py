"""The sandbox's node lifecycle: a stopped simulated kubelet makes its node unreachable (taints), as
Kubernetes' node lifecycle controller does, because the scheduler reads taints, not conditions."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

from scheduler.sim.apiserver import ApiServer
from scheduler.sim.kubelet import SimulatedKubelets
from scheduler.sim.nodelifecycle import KUBELET_ANNOTATION, NodeLifecycleController
from scheduler.sim.restclient import NODES, PODS, RestClient
from tests.sandbox.objects import node, pod


@pytest.fixture
async def client(server: ApiServer) -> AsyncIterator[RestClient]:
    c = RestClient(server.url)
    kubelets = SimulatedKubelets(c, start_delay=0.01)
    tasks = [asyncio.ensure_future(kubelets.run()), asyncio.ensure_future(NodeLifecycleController(c).run())]
    try:
        yield c
    finally:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await c.close()


async def until(probe: Callable[[], Awaitable[Any]], what: str, timeout: float = 10.0) -> Any:
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        got = await probe()
        if got:
            return got
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)


def taints(n: dict[str, Any]) -> set[tuple[str, str]]:
    return {(t["key"], t["effect"]) for t in (n.get("spec") or {}).get("taints") or []}


def ready(n: dict[str, Any]) -> str:
    return next(c["status"] for c in n["status"]["conditions"] if c["type"] == "Ready")


UNREACHABLE = {
    ("node.kubernetes.io/unreachable", "NoSchedule"),
    ("node.kubernetes.io/unreachable", "NoExecute"),
}


async def test_a_stopped_kubelet_taints_its_node_unreachable_and_holds_its_pods(client: RestClient) -> None:
    body = node("n1")
    body["spec"] = {"taints": [{"key": "team", "value": "a", "effect": "NoSchedule"}]}
    await client.create(NODES, body)
    await client.patch(NODES, "n1", {"metadata": {"annotations": {KUBELET_ANNOTATION: "stopped"}}})

    async def unreachable() -> dict[str, Any] | None:
        n = await client.get(NODES, "n1")
        return n if ready(n) == "Unknown" and taints(n) >= UNREACHABLE else None

    n = await until(unreachable, "the unreachable taints")
    assert ("team", "NoSchedule") in taints(n)  # the node's own taints stay

    await client.create(PODS, pod("p", nodeName="n1"), "default")
    await asyncio.sleep(0.3)
    assert (await client.get(PODS, "p", "default"))["status"]["phase"] == "Pending"

    await client.patch(NODES, "n1", {"metadata": {"annotations": {KUBELET_ANNOTATION: None}}})

    async def recovered() -> dict[str, Any] | None:
        n = await client.get(NODES, "n1")
        return n if ready(n) == "True" and taints(n) == {("team", "NoSchedule")} else None

    await until(recovered, "Ready and the taints lifted")

    async def running() -> bool:
        return (await client.get(PODS, "p", "default"))["status"]["phase"] == "Running"

    await until(running, "the waiting pod to start")


async def test_a_node_reported_not_ready_is_tainted_not_ready(client: RestClient) -> None:
    await client.create(NODES, node("n2"))
    await client.patch(
        NODES, "n2", {"status": {"conditions": [{"type": "Ready", "status": "False"}]}}, sub="status"
    )

    async def tainted() -> bool:
        return taints(await client.get(NODES, "n2")) == {
            ("node.kubernetes.io/not-ready", "NoSchedule"),
            ("node.kubernetes.io/not-ready", "NoExecute"),
        }

    await until(tainted, "the not-ready taints")


async def test_a_node_without_conditions_gets_ready_from_its_kubelet(client: RestClient) -> None:
    body = node("n3")
    del body["status"]["conditions"]
    await client.create(NODES, body)

    async def is_ready() -> bool:
        n = await client.get(NODES, "n3")
        return bool(n["status"].get("conditions")) and ready(n) == "True" and not taints(n)

    await until(is_ready, "the kubelet's Ready condition")
