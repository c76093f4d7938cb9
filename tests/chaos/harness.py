"""A sandbox for chaos experiments: the API server, simulated kubelets and Volcano's controllers in
this process, scheduler daemons as real child processes (so they can be killed with -9 or stopped
with SIGSTOP), and a `Checker` on the API server's record."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from scheduler.sim.apiserver import ApiServer
from scheduler.sim.controllers import JobController, PodGroupController
from scheduler.sim.kubelet import SimulatedKubelets
from scheduler.sim.restclient import RestClient
from tests.builders import node
from tests.chaos.checker import Checker

REPO = Path(__file__).resolve().parents[2]
FAST_LEASE = (
    "--leader-elect-lease-duration=2s",
    "--leader-elect-renew-deadline=1500ms",
    "--leader-elect-retry-period=200ms",
)
VALID = "chaos.vc-scheduler.io/valid"  # label of the pods an experiment expects to be scheduled


class Daemon:
    """One scheduler daemon process; its log is kept in a file for the failure message."""

    def __init__(self, proc: asyncio.subprocess.Process, log: Path) -> None:
        self.proc = proc
        self.log = log
        self.killed = False

    @property
    def alive(self) -> bool:
        return self.proc.returncode is None

    def signal(self, sig: int) -> None:
        if self.alive:
            os.kill(self.proc.pid, sig)

    def kill9(self) -> None:
        self.killed = True
        self.signal(signal.SIGKILL)

    def tail(self, lines: int = 30) -> str:
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        return "\n".join(text.splitlines()[-lines:])


class Chaos:
    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.srv = ApiServer(host="127.0.0.1", port=0)
        self.store = self.srv.store
        self.kubeconfig = str(tmp / "kubeconfig")
        self.daemons: list[Daemon] = []
        self.tasks: list[asyncio.Task[Any]] = []
        self.checker: Checker | None = None
        self.kubelets: SimulatedKubelets | None = None
        self.client: RestClient | None = None

    async def start(self, nodes: list[dict[str, Any]]) -> Checker:
        await self.srv.start()
        self.srv.write_kubeconfig(self.kubeconfig)
        for ns in ("default", "kube-system", "volcano-system"):
            if self.store.get("namespaces", None, ns) is None:
                self.store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        self.store.create(
            {
                "apiVersion": "scheduling.volcano.sh/v1beta1",
                "kind": "Queue",
                "metadata": {"name": "default"},
                "spec": {"weight": 1, "reclaimable": True},
            }
        )
        for n in nodes:
            self.store.create(n)
        self.checker = Checker(self.store, lambda p: VALID in ((p.get("metadata") or {}).get("labels") or {}))
        self.client = RestClient(self.srv.url, token=self.srv.token)
        self.kubelets = SimulatedKubelets(self.client, start_delay=0.05, termination_delay=0.05)
        for comp in (
            self.kubelets.run(),
            JobController(self.client).run(),
            PodGroupController(self.client).run(),
        ):
            self.tasks.append(asyncio.ensure_future(comp))
        return self.checker

    async def stop(self) -> None:
        for d in self.daemons:
            if d.alive:
                d.signal(signal.SIGCONT)
                d.signal(signal.SIGKILL)
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(d.proc.wait(), 10)
        pending = [*self.tasks, *(self.kubelets._tasks if self.kubelets is not None else ())]
        for t in pending:
            t.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        if self.checker is not None:
            self.checker.close()
        if self.client is not None:
            await self.client.close()
        await self.srv.stop()

    # ------------------------------------------------------------------ daemons --
    async def daemon(self, *flags: str) -> Daemon:
        log = self.tmp / f"daemon-{len(self.daemons)}.log"
        cmd = [
            sys.executable,
            "-m",
            "scheduler",
            "--kubeconfig",
            self.kubeconfig,
            "--schedule-period=100ms",
            "--listen-address=127.0.0.1:0",
            *flags,
        ]
        with open(log, "wb") as out:
            proc = await asyncio.create_subprocess_exec(
                *cmd, stdout=out, stderr=out, env={**os.environ, "PYTHONPATH": str(REPO)}
            )
        d = Daemon(proc, log)
        self.daemons.append(d)
        return d

    def log_has(self, d: Daemon, text: str) -> bool:
        return d.log.exists() and text in d.log.read_text(errors="replace")

    def daemons_alive(self) -> bool:
        return all(d.alive or d.killed for d in self.daemons)

    def leader(self) -> str:
        lease = self.store.get("leases", "volcano-system", "volcano")
        return ((lease or {}).get("spec") or {}).get("holderIdentity") or ""

    # ------------------------------------------------------------------ objects --
    def pods(self, prefix: str, n: int, cpu: str = "250m", **extra: Any) -> list[str]:
        names = []
        for i in range(n):
            name = f"{prefix}-{i}"
            self.store.create(valid_pod(name, cpu, **extra))
            names.append(name)
        return names

    def bound(self, names: list[str] | None = None) -> int:
        want = set(names) if names is not None else None
        return sum(
            1
            for p in self.store.list("pods", "default")
            if p["spec"].get("nodeName") and (want is None or p["metadata"]["name"] in want)
        )

    async def until(self, cond: Callable[[], Any], timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if cond():
                return
            await asyncio.sleep(0.05)
        logs = "\n".join(f"--- {d.log.name}\n{d.tail()}" for d in self.daemons)
        raise AssertionError(f"timed out after {timeout}s waiting for {what}\n{logs}")

    def verdict(self) -> list[str]:
        assert self.checker is not None
        return self.checker.finish(self.daemons_alive())


def valid_pod(
    name: str,
    cpu: str = "250m",
    priority_class: str = "",
    limits: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "schedulerName": "volcano",
        "containers": [
            {
                "name": "main",
                "image": "busybox",
                "resources": {"requests": {"cpu": cpu, "memory": "64Mi"}, "limits": dict(limits or {})},
            }
        ],
    }
    if priority_class:
        spec["priorityClassName"] = priority_class
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "default",
            "labels": {VALID: "true"},
            "annotations": dict(annotations or {}),
        },
        "spec": spec,
    }


def cpu_nodes(n: int, cpu: str = "2") -> list[dict[str, Any]]:
    return [node(f"n{i}", cpu=cpu, memory="16Gi") for i in range(n)]
