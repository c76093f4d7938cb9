"""A stand-in for kube-scheduler in the sandbox (`vc-scheduler sandbox --default-scheduler`).

Binds the pods that belong to the cluster's default scheduler (`spec.schedulerName` unset or
`default-scheduler`), so ordinary workloads such as vc-scheduler's own Deployment run there as on
a cluster, while the vc-scheduler daemon keeps the `volcano` pods. It is not kube-scheduler: a
node qualifies when it is Ready and schedulable, matches the pod's `nodeSelector`, has no
NoSchedule/NoExecute taint the pod does not tolerate, and has room for the pod's CPU and memory
requests next to the requests of the pods bound to it; of those, the one with the most free CPU
(then by name) gets the pod. Affinity, spreading and preemption are left out.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from scheduler.model.resources import QuantityError, quantity_in_unit
from scheduler.sim.restclient import NODES, PODS, ApiError, Resource, RestClient

log = logging.getLogger(__name__)

Obj = dict[str, Any]
DEFAULT = "default-scheduler"
_DONE = ("Succeeded", "Failed")


def is_default(pod: Obj) -> bool:
    return (pod.get("spec") or {}).get("schedulerName") in (None, "", DEFAULT)


def requests(pod: Obj) -> tuple[float, float]:
    """(milli-CPU, memory bytes) the pod's containers request; a bad quantity counts as 0."""
    cpu = mem = 0.0
    for c in (pod.get("spec") or {}).get("containers") or []:
        req = (c.get("resources") or {}).get("requests") or {}
        for name, value in req.items():
            try:
                if name == "cpu":
                    cpu += quantity_in_unit("cpu", value)
                elif name == "memory":
                    mem += quantity_in_unit("memory", value)
            except QuantityError:
                log.warning(
                    "pod %s: bad %s request %r, counted as 0", pod["metadata"].get("name"), name, value
                )
    return cpu, mem


def tolerates(pod: Obj, taint: Obj) -> bool:
    for t in (pod.get("spec") or {}).get("tolerations") or []:
        if t.get("effect") and t.get("effect") != taint.get("effect"):
            continue
        if t.get("operator") == "Exists" and (not t.get("key") or t.get("key") == taint.get("key")):
            return True
        if t.get("key") == taint.get("key") and t.get("value", "") == taint.get("value", ""):
            return True
    return False


def _ready(node: Obj) -> bool:
    conds = (node.get("status") or {}).get("conditions") or []
    return all(c.get("status") == "True" for c in conds if c.get("type") == "Ready")


def fits(pod: Obj, node: Obj) -> bool:
    spec = node.get("spec") or {}
    if spec.get("unschedulable") or not _ready(node):
        return False
    labels = (node.get("metadata") or {}).get("labels") or {}
    selector = (pod.get("spec") or {}).get("nodeSelector") or {}
    if any(labels.get(k) != v for k, v in selector.items()):
        return False
    return all(
        tolerates(pod, t) for t in spec.get("taints") or [] if t.get("effect") in ("NoSchedule", "NoExecute")
    )


def choose(pod: Obj, nodes: dict[str, Obj], used: dict[str, tuple[float, float]]) -> str | None:
    cpu, mem = requests(pod)
    best: tuple[float, str] | None = None
    for name, node in nodes.items():
        if not fits(pod, node):
            continue
        alloc = (node.get("status") or {}).get("allocatable") or {}
        try:
            free_cpu = quantity_in_unit("cpu", alloc.get("cpu", "0")) - used.get(name, (0.0, 0.0))[0]
            free_mem = quantity_in_unit("memory", alloc.get("memory", "0")) - used.get(name, (0.0, 0.0))[1]
        except QuantityError:
            continue
        if free_cpu < cpu or free_mem < mem:
            continue
        if best is None or (-free_cpu, name) < best:
            best = (-free_cpu, name)
    return best[1] if best else None


class DefaultScheduler:
    def __init__(self, client: RestClient) -> None:
        self.client = client
        self.nodes: dict[str, Obj] = {}
        self.pods: dict[str, Obj] = {}
        self._wake = asyncio.Event()

    async def run(self) -> None:
        await asyncio.gather(
            self._mirror(NODES, self.nodes, lambda md: str(md.get("name"))),
            self._mirror(PODS, self.pods, lambda md: f"{md.get('namespace')}/{md.get('name')}"),
            self._schedule(),
        )

    async def _mirror(self, res: Resource, into: dict[str, Obj], key: Callable[[Obj], str]) -> None:
        """Keep `into` equal to the objects of `res` (by `key` of their metadata); wake the binder."""
        async for event, obj in self.client.watch(res):
            k = key(obj.get("metadata") or {})
            if event == "DELETED":
                into.pop(k, None)
            else:
                into[k] = obj
            self._wake.set()

    def _used(self) -> dict[str, tuple[float, float]]:
        used: dict[str, tuple[float, float]] = {}
        for p in self.pods.values():
            node = (p.get("spec") or {}).get("nodeName")
            if node and (p.get("status") or {}).get("phase") not in _DONE:
                cpu, mem = requests(p)
                u = used.get(node, (0.0, 0.0))
                used[node] = (u[0] + cpu, u[1] + mem)
        return used

    async def _schedule(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            used = self._used()
            for key, pod in sorted(self.pods.items()):
                md, spec = pod["metadata"], pod.get("spec") or {}
                if spec.get("nodeName") or md.get("deletionTimestamp") or not is_default(pod):
                    continue
                node = choose(pod, self.nodes, used)
                if node is None:
                    continue  # tried again on the next change of a node or pod
                body = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": md["name"]},
                        "target": {"apiVersion": "v1", "kind": "Node", "name": node}}  # fmt: skip
                try:
                    await self.client.request("POST", PODS.path(md["namespace"], md["name"], "binding"), body)
                except ApiError as exc:
                    log.warning("pod %s: binding to %s refused: %s", key, node, exc)
                    continue
                cpu, mem = requests(pod)
                u = used.get(node, (0.0, 0.0))
                used[node] = (u[0] + cpu, u[1] + mem)
                spec["nodeName"] = node  # until the watch brings the bound pod
