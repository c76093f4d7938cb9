"""The Kubernetes controllers behind the objects the `pdb` and `resourcequota` plugins read.

- Disruption controller: each PodDisruptionBudget's `status.disruptionsAllowed`, `currentHealthy`,
  `desiredHealthy`, `expectedPods`. A pod is healthy when it runs and is not being deleted;
  `minAvailable`/`maxUnavailable` may be counts or percentages (rounded up, as Kubernetes does).
- Resource quota controller: each ResourceQuota's `status.hard` (the spec's) and `status.used`
  for the compute names a quota may list (`cpu`/`requests.cpu`, `memory`/`requests.memory`,
  `limits.*`, `requests.<extended>`, `pods`) over the namespace's live pods. Admission does not
  enforce quotas.

Both recompute the objects of a namespace whenever one of its pods or the object changes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
from typing import Any

from scheduler.model.resources import QuantityError, format_quantity, quantity_in_unit
from scheduler.sim.apiserver.selectors import selector_terms
from scheduler.sim.reconcile_queue import ReconcileQueue
from scheduler.sim.restclient import PODS, ApiError, Resource, RestClient

log = logging.getLogger(__name__)

PDBS = Resource("/apis/policy/v1", "poddisruptionbudgets", True)
QUOTAS = Resource("/api/v1", "resourcequotas", True)
_DONE = ("Succeeded", "Failed")


class _StatusController:
    """Keeps the status of one namespaced kind in step with the pods of its namespace."""

    kind: Resource = PDBS

    def __init__(self, client: RestClient) -> None:
        self.client = client
        self.objects: dict[str, dict[str, Any]] = {}
        # namespaces to recompute; a burst of pod changes is one recomputation
        self._queue: ReconcileQueue[None] = ReconcileQueue(0.05)

    async def run(self) -> None:
        await asyncio.gather(self._watch(self.kind), self._watch(PODS), self._settle())

    async def _watch(self, res: Resource) -> None:
        async for event, obj in self.client.watch(res):
            md = obj.get("metadata") or {}
            ns = str(md.get("namespace") or "default")
            if res is self.kind:
                key = f"{ns}/{md.get('name')}"
                if event == "DELETED":
                    self.objects.pop(key, None)
                    continue
                self.objects[key] = obj
            self._queue.mark(ns, None)

    async def _settle(self) -> None:
        while True:
            dirty = await self._queue.batch()
            for key, obj in list(self.objects.items()):
                if key.split("/", 1)[0] in dirty:
                    with contextlib.suppress(ApiError):
                        await self._update(obj)

    async def _update(self, obj: dict[str, Any]) -> None:
        md = obj["metadata"]
        ns = md.get("namespace") or "default"
        status = await self.status_of(obj, ns)
        current = obj.get("status") or {}
        if all(current.get(k) == v for k, v in status.items()):
            return
        try:
            await self.client.patch(self.kind, md["name"], {"status": status}, ns, sub="status")
        except (ApiError, ValueError) as exc:
            log.warning("%s %s/%s: status not written: %s", self.kind.plural, ns, md.get("name"), exc)

    async def status_of(self, obj: dict[str, Any], namespace: str) -> dict[str, Any]:
        raise NotImplementedError


# ------------------------------------------------------------------ disruption budgets --
def selector_string(selector: dict[str, Any] | None) -> str | None:
    """A LabelSelector as the `labelSelector` query string; None when it selects nothing or has
    an operator the query grammar lacks."""
    if not isinstance(selector, dict):
        return None
    terms = selector_terms(selector)
    if not terms or None in terms:
        return None
    return ",".join(t for t in terms if t is not None)


def _amount(value: Any, total: int) -> int:
    if isinstance(value, str) and value.endswith("%"):
        return math.ceil(total * float(value[:-1]) / 100)
    return int(value)


def budget_status(spec: dict[str, Any], pods: list[dict[str, Any]]) -> dict[str, int]:
    live = [p for p in pods if not (p.get("metadata") or {}).get("deletionTimestamp")]
    expected = len(live)
    healthy = sum(1 for p in live if (p.get("status") or {}).get("phase") == "Running")
    if spec.get("minAvailable") is not None:
        desired = _amount(spec["minAvailable"], expected)
    elif spec.get("maxUnavailable") is not None:
        desired = max(expected - _amount(spec["maxUnavailable"], expected), 0)
    else:
        desired = expected
    return {
        "expectedPods": expected,
        "currentHealthy": healthy,
        "desiredHealthy": desired,
        "disruptionsAllowed": max(healthy - desired, 0),
    }


class DisruptionController(_StatusController):
    kind = PDBS

    async def status_of(self, obj: dict[str, Any], namespace: str) -> dict[str, Any]:
        spec = obj.get("spec") or {}
        sel = selector_string(spec.get("selector"))
        pods: list[dict[str, Any]] = []
        if sel is not None:
            pods = (await self.client.list(PODS, namespace, labelSelector=sel)).get("items") or []
        return budget_status(spec, pods)


# ------------------------------------------------------------------ resource quotas --
def _add_requests(pod: dict[str, Any], req: dict[str, float], lim: dict[str, float]) -> None:
    for c in (pod.get("spec") or {}).get("containers") or []:
        res = c.get("resources") or {}
        limits = res.get("limits") or {}
        requests = {**limits, **(res.get("requests") or {})}  # requests default to limits
        for into, src in ((req, requests), (lim, limits)):
            for name, q in src.items():
                with contextlib.suppress(QuantityError):
                    into[name] = into.get(name, 0.0) + quantity_in_unit(name, q)


def quota_used(hard: dict[str, Any], pods: list[dict[str, Any]]) -> dict[str, str]:
    live = [
        p
        for p in pods
        if not (p.get("metadata") or {}).get("deletionTimestamp")
        and (p.get("status") or {}).get("phase") not in _DONE
    ]
    req: dict[str, float] = {}
    lim: dict[str, float] = {}
    for p in live:
        _add_requests(p, req, lim)
    used: dict[str, str] = {}
    for name in hard:
        if name == "pods":
            used[name] = str(len(live))
        elif name.startswith("requests."):
            base = name[len("requests.") :]
            used[name] = format_quantity(base, req.get(base, 0.0))
        elif name.startswith("limits."):
            base = name[len("limits.") :]
            used[name] = format_quantity(base, lim.get(base, 0.0))
        elif name in ("cpu", "memory", "ephemeral-storage"):
            used[name] = format_quantity(name, req.get(name, 0.0))
    return used


class QuotaController(_StatusController):
    kind = QUOTAS

    async def status_of(self, obj: dict[str, Any], namespace: str) -> dict[str, Any]:
        hard = dict((obj.get("spec") or {}).get("hard") or {})
        pods = (await self.client.list(PODS, namespace)).get("items") or []
        return {"hard": hard, "used": quota_used(hard, pods)}
