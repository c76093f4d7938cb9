"""The sandbox's node lifecycle controller: a node's Ready condition becomes taints.

Kubernetes' node lifecycle controller taints a node whose Ready condition is `False` with
`node.kubernetes.io/not-ready` and one whose condition is `Unknown` (its kubelet stopped posting
status) with `node.kubernetes.io/unreachable`, each with effect NoSchedule and NoExecute, and lifts
them when the node is Ready again. Volcano, and so vc-scheduler, reads only those taints (and
`spec.unschedulable`), never the conditions, so the sandbox must play this part for a stopped
kubelet to keep pods away.

A simulated kubelet stops when its node is annotated `sandbox.vc-scheduler.io/kubelet: stopped`
and resumes when the annotation goes. The controller marks a stopped kubelet's node Ready=Unknown
at once (the real one waits for the node monitor grace period). The NoExecute taints do not evict
pods here: the sandbox has no taint manager.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Any

from scheduler.sim.restclient import NODES, ApiError, RestClient

log = logging.getLogger(__name__)

KUBELET_ANNOTATION = "sandbox.vc-scheduler.io/kubelet"
KUBELET_STOPPED = "stopped"
NOT_READY_TAINT = "node.kubernetes.io/not-ready"
UNREACHABLE_TAINT = "node.kubernetes.io/unreachable"
# the reason the real controller gives when it takes over a silent kubelet's Ready condition
STATUS_UNKNOWN_REASON = "NodeStatusUnknown"
_TAINT_FOR_STATUS = {"False": NOT_READY_TAINT, "Unknown": UNREACHABLE_TAINT}
_EFFECTS = ("NoSchedule", "NoExecute")


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def kubelet_stopped(node: dict[str, Any]) -> bool:
    annotations = (node.get("metadata") or {}).get("annotations") or {}
    return annotations.get(KUBELET_ANNOTATION) == KUBELET_STOPPED


def ready_condition(node: dict[str, Any]) -> dict[str, Any] | None:
    for c in (node.get("status") or {}).get("conditions") or []:
        if isinstance(c, dict) and c.get("type") == "Ready":
            return c
    return None


def with_ready(node: dict[str, Any], status: str, reason: str, message: str) -> list[dict[str, Any]]:
    """The node's conditions with Ready replaced (a merge patch replaces the whole list)."""
    stamp = now()
    ready = {
        "type": "Ready",
        "status": status,
        "reason": reason,
        "message": message,
        "lastHeartbeatTime": stamp,
        "lastTransitionTime": stamp,
    }
    others = [
        c
        for c in (node.get("status") or {}).get("conditions") or []
        if isinstance(c, dict) and c.get("type") != "Ready"
    ]
    return [*others, ready]


def wanted_taints(node: dict[str, Any]) -> list[dict[str, Any]] | None:
    """The node's taints as the controller leaves them, or None when they are right already."""
    cond = ready_condition(node)
    key = _TAINT_FOR_STATUS.get(str((cond or {}).get("status")))
    taints = [t for t in (node.get("spec") or {}).get("taints") or [] if isinstance(t, dict)]
    ours = (NOT_READY_TAINT, UNREACHABLE_TAINT)
    kept = [t for t in taints if t.get("key") not in ours]
    wanted = {(key, e) for e in _EFFECTS} if key else set()
    if {(t.get("key"), t.get("effect")) for t in taints if t.get("key") in ours} == wanted:
        return None
    added = [
        {"key": key, "effect": e, **({"timeAdded": now()} if e == "NoExecute" else {})}
        for e in _EFFECTS
        if key
    ]
    return kept + added


class NodeLifecycleController:
    def __init__(self, client: RestClient) -> None:
        self.client = client

    async def run(self) -> None:
        async for kind, node in self.client.watch(NODES):
            if kind == "DELETED":
                continue
            try:
                await self.reconcile(node)
            except ApiError as exc:
                log.warning("node lifecycle: node %s: %s", (node.get("metadata") or {}).get("name"), exc)

    async def reconcile(self, node: dict[str, Any]) -> None:
        name = node["metadata"]["name"]
        cond = ready_condition(node)
        if kubelet_stopped(node) and (cond is None or cond.get("status") != "Unknown"):
            conditions = with_ready(
                node, "Unknown", STATUS_UNKNOWN_REASON, "Kubelet stopped posting node status."
            )
            # the taints follow when this update comes back through the watch
            await self.client.patch(NODES, name, {"status": {"conditions": conditions}}, sub="status")
            return
        taints = wanted_taints(node)
        if taints is not None:
            await self.client.patch(NODES, name, {"spec": {"taints": taints}})
