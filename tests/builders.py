"""Small builders of Kubernetes objects for tests, and a one-call session runner."""

from __future__ import annotations

from typing import Any

from scheduler.framework.session import SessionOptions
from scheduler.registry import parse
from scheduler.sim.simulate import SimulationResult, simulate


def node(
    name: str,
    cpu: str = "4",
    memory: str = "8Gi",
    pods: str = "110",
    labels: dict | None = None,
    taints: list | None = None,
    extra: dict | None = None,
    annotations: dict | None = None,
) -> dict[str, Any]:
    alloc = {"cpu": cpu, "memory": memory, "pods": pods, **(extra or {})}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels or {}, "annotations": annotations or {}},
        "spec": {"taints": taints or []},
        "status": {
            "capacity": dict(alloc),
            "allocatable": alloc,
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def pod(
    name: str,
    cpu: str = "1",
    memory: str = "1Gi",
    ns: str = "c1",
    group: str | None = None,
    node_name: str = "",
    phase: str = "Pending",
    role: str = "",
    priority: int | None = None,
    priority_class: str = "",
    annotations: dict | None = None,
    labels: dict | None = None,
    selector: dict | None = None,
    limits: dict | None = None,
    spec: dict | None = None,
) -> dict[str, Any]:
    ann = dict(annotations or {})
    if group:
        ann["scheduling.k8s.io/group-name"] = group
    if role:
        ann["volcano.sh/task-spec"] = role
    requests = {"cpu": cpu, "memory": memory} if cpu or memory else {}
    resources: dict[str, Any] = {"requests": {k: v for k, v in requests.items() if v}}
    if limits:
        resources["limits"] = limits
    s: dict[str, Any] = {
        "schedulerName": "volcano",
        "containers": [{"name": "main", "image": "busybox", "resources": resources}],
    }
    if node_name:
        s["nodeName"] = node_name
    if priority is not None:
        s["priority"] = priority
    if priority_class:
        s["priorityClassName"] = priority_class
    if selector:
        s["nodeSelector"] = selector
    s.update(spec or {})
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "annotations": ann, "labels": labels or {}},
        "spec": s,
        "status": {"phase": phase},
    }


def podgroup(
    name: str,
    min_member: int = 1,
    ns: str = "c1",
    queue: str = "default",
    phase: str = "Inqueue",
    priority_class: str = "",
    min_task_member: dict | None = None,
    min_resources: dict | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {"minMember": min_member, "queue": queue}
    if priority_class:
        spec["priorityClassName"] = priority_class
    if min_task_member:
        spec["minTaskMember"] = min_task_member
    if min_resources:
        spec["minResources"] = min_resources
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": ns},
        "spec": spec,
        "status": {"phase": phase},
    }


def queue(
    name: str,
    weight: int = 1,
    capability: dict | None = None,
    reclaimable: bool | None = None,
    guarantee: dict | None = None,
    state: str = "Open",
) -> dict[str, Any]:
    spec: dict[str, Any] = {"weight": weight}
    if capability:
        spec["capability"] = capability
    if reclaimable is not None:
        spec["reclaimable"] = reclaimable
    if guarantee:
        spec["guarantee"] = {"resource": guarantee}
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": name},
        "spec": spec,
        "status": {"state": state},
    }


def priority_class(name: str, value: int) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
    }


def tiers(actions: str, *tier_plugins: list[str], args: dict[str, dict] | None = None) -> str:
    lines = [f'actions: "{actions}"', "tiers:"]
    for plugins in tier_plugins:
        lines.append("- plugins:")
        for p in plugins:
            lines.append(f"  - name: {p}")
            if args and p in args:
                lines.append(f"    arguments: {args[p]!r}".replace("'", '"'))
    return "\n".join(lines) + "\n"


def run(conf_text: str, objects: list[dict[str, Any]], cycles: int = 1, seed: int = 0) -> SimulationResult:
    return simulate(objects, parse(conf_text), cycles=cycles, seed=seed, options=SessionOptions())
