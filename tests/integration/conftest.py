"""Fixtures: the sandbox API server with a small cluster, and daemons running in-process against it."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

apiserver = pytest.importorskip("scheduler.sim.apiserver", reason="the sandbox API server is not available")

from scheduler.daemon import Daemon, parse_args  # noqa: E402
from tests.builders import node  # noqa: E402

ApiServer = apiserver.ApiServer

FAST_LEASE = [
    "--leader-elect-lease-duration=2s",
    "--leader-elect-renew-deadline=1500ms",
    "--leader-elect-retry-period=200ms",
]


class Cluster:
    def __init__(self, srv: Any, tmp: Path) -> None:
        self.srv = srv
        self.store = srv.store
        self.kubeconfig = str(tmp / "kubeconfig")
        srv.write_kubeconfig(self.kubeconfig)
        self.daemons: list[tuple[Daemon, asyncio.Task[int]]] = []

    # -------------------------------------------------------------- objects --
    def create(self, obj: dict[str, Any]) -> dict[str, Any]:
        return self.store.create(obj)

    def podgroup(self, name: str, min_member: int = 1, ns: str = "default", inqueue: bool = False) -> None:
        self.create(
            {
                "apiVersion": "scheduling.volcano.sh/v1beta1",
                "kind": "PodGroup",
                "metadata": {"name": name, "namespace": ns},
                "spec": {"minMember": min_member, "queue": "default"},
            }
        )
        if inqueue:
            self.store.patch(
                "podgroups", ns, name, {"status": {"phase": "Inqueue"}}, "merge", subresource="status"
            )

    def pod(self, name: str, group: str, cpu: str = "1", ns: str = "default") -> None:
        self.create(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": name,
                    "namespace": ns,
                    "annotations": {"scheduling.k8s.io/group-name": group},
                },
                "spec": {
                    "schedulerName": "volcano",
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

    def job(self, name: str, pods: int, cpu: str = "1", min_member: int | None = None) -> None:
        self.podgroup(name, pods if min_member is None else min_member)
        for i in range(pods):
            self.pod(f"{name}-{i}", name, cpu)

    def configmap(self, text: str) -> None:
        body = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "volcano-scheduler-configmap", "namespace": "volcano-system"},
            "data": {"volcano-scheduler.conf": text},
        }
        if self.store.get("configmaps", "volcano-system", "volcano-scheduler-configmap") is None:
            self.create(body)
        else:
            self.store.patch(
                "configmaps", "volcano-system", "volcano-scheduler-configmap", {"data": body["data"]}, "merge"
            )

    # -------------------------------------------------------------- reading --
    def node_of(self, name: str, ns: str = "default") -> str:
        p = self.store.get("pods", ns, name)
        return ((p or {}).get("spec") or {}).get("nodeName") or ""

    def bound(self, ns: str = "default") -> dict[str, str]:
        return {
            p["metadata"]["name"]: p["spec"]["nodeName"]
            for p in self.store.list("pods", ns)
            if p["spec"].get("nodeName")
        }

    def binding_requests(self) -> list[dict[str, Any]]:
        return [r for r in self.srv.request_log if r.get("subresource") == "binding"]

    def successful_binds_per_pod(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for r in self.binding_requests():
            if r.get("code") == 201:
                out[r["name"]] = out.get(r["name"], 0) + 1
        return out

    # -------------------------------------------------------------- daemons --
    async def start_daemon(self, *flags: str) -> Daemon:
        opts = parse_args(
            [
                "--kubeconfig",
                self.kubeconfig,
                "--schedule-period=100ms",
                "--listen-address=127.0.0.1:0",
                "--enable-metrics",
                *flags,
            ]
        )
        d = Daemon(opts)
        task = asyncio.ensure_future(d.run())
        self.daemons.append((d, task))
        await wait_for(lambda: d.synced.is_set() or task.done(), 10, "daemon initial sync")
        return d

    async def stop_daemon(self, d: Daemon) -> int:
        for dd, task in self.daemons:
            if dd is d:
                d.stop()
                return await asyncio.wait_for(task, 20)
        raise AssertionError("not a daemon of this cluster")

    async def kill_daemon(self, d: Daemon) -> None:
        """A crash: no drain, no lease release."""
        for dd, task in self.daemons:
            if dd is d:
                if d.lease_thread is not None:
                    await d.lease_thread.stop(release=False)
                elif d.elector is not None:

                    async def no_release() -> None:
                        return None

                    d.elector.release = no_release  # type: ignore[method-assign]
                for t in d._tasks:
                    t.cancel()
                task.cancel()
                await asyncio.gather(task, *d._tasks, return_exceptions=True)
                if d.server is not None:
                    await d.server.stop()
                if d.client is not None:
                    await d.client.close()
                return


async def wait_for(cond: Callable[[], Any], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def seeded(c: Cluster) -> Cluster:
    """The system namespaces, the default queue and three 4-CPU nodes."""
    for ns in ("volcano-system", "kube-system"):
        if c.store.get("namespaces", None, ns) is None:
            c.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    if c.store.get("queues", None, "default") is None:
        c.create(
            {
                "apiVersion": "scheduling.volcano.sh/v1beta1",
                "kind": "Queue",
                "metadata": {"name": "default"},
                "spec": {"weight": 1, "reclaimable": True},
            }
        )
    for i in range(3):
        c.create(node(f"n{i}", cpu="4", memory="16Gi"))
    return c


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[Cluster]:
    srv = ApiServer(host="127.0.0.1", port=0)
    await srv.start()
    c = seeded(Cluster(srv, tmp_path))
    try:
        yield c
    finally:
        for d, task in c.daemons:
            if not task.done():
                d.stop()
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(task, 15)
        await srv.stop()
