"""Garbage objects for the fuzz experiment: every kind the scheduler reads, broken one field at a time.

Each object is a valid-looking skeleton with one field replaced by a bad value (huge, negative,
non-numeric, unicode, wrong type, empty, duplicated). The list is deterministic and every entry is
distinct; `bad_objects(n)` gives the first n, cycling through kinds so a short run tries them all.
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Iterator
from typing import Any

BAD_NUMBERS: tuple[Any, ...] = (
    "99999999999999999999999999",
    "1e40",
    "-5",
    "abc",
    "١٢",  # Arabic-Indic digits
    "1_000",
    "",
    None,
    [],
    {"a": 1},
    True,
    2**70,
    -1.5,
    "NaN",
    "Inf",
)
HUGE = "9" * 30
REGISTERS = (
    f"GPU-x,10,{HUGE},NVIDIA-T4,true,hami-core:",
    f"GPU-x,{HUGE},1024,NVIDIA-T4,true,hami-core:",
    "GPU-x,-10,1024,NVIDIA-T4,true,hami-core:",
    "GPU-x,10,-1024,NVIDIA-T4,true,hami-core:",
    "GPU-x,ten,1024,NVIDIA-T4,true,hami-core:",
    "GPU-ü,10,1024,NVIDIA-T4,true,hami-core:",
    "GPU-x,10,1024,NVIDIA-T4™,true,hami-core:",
    "GPU-dup,10,1024,NVIDIA-T4,true,hami-core:GPU-dup,10,1024,NVIDIA-T4,true,hami-core:",
    ":::",
    "",
    "GPU-x,10,1024:",
    "GPU-x" * 2000 + ",10,1024,NVIDIA-T4,true,hami-core:",
    ",10,1024,NVIDIA-T4,true,hami-core:",
    "GPU-x,10,1024,NVIDIA-T4,true,mig:",
)
VGPU_ALLOC = {
    "volcano.sh/vgpu-number": "20",
    "volcano.sh/vgpu-memory": "2048",
    "volcano.sh/vgpu-cores": "200",
}


def _set(obj: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    cur = out
    keys = path.split(".")
    for k in keys[:-1]:
        cur = cur.setdefault(k, {}) if isinstance(cur.get(k), dict) or k not in cur else cur[k]
    cur[keys[-1]] = value
    return out


def _node(name: str) -> dict[str, Any]:
    alloc = {"cpu": "4", "memory": "8Gi", "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {}, "annotations": {}},
        "status": {
            "capacity": dict(alloc),
            "allocatable": alloc,
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def _pod(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "fuzz", "annotations": {}},
        "spec": {
            "schedulerName": "volcano",
            "containers": [
                {"name": "c", "image": "x", "resources": {"requests": {"cpu": "10m"}, "limits": {}}}
            ],
        },
    }


def _podgroup(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "fuzz"},
        "spec": {"minMember": 1, "queue": "default"},
    }


def _queue(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": name},
        "spec": {"weight": 1},
    }


def _hypernode(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "topology.volcano.sh/v1alpha1",
        "kind": "HyperNode",
        "metadata": {"name": name},
        "spec": {"tier": 1, "members": [{"type": "Node", "selector": {"exactMatch": {"name": "n0"}}}]},
    }


def _configmap(ns: str, name: str, key: str, value: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": ns},
        "data": {key: value},
    }


BAD_CONFS = (
    "actions: [",
    "actions: 'allocate, nosuchaction'",
    "actions: allocate\ntiers: 5",
    "actions: allocate\ntiers:\n- plugins:\n  - name: nosuchplugin",
    "actions: allocate\ntiers:\n- plugins:\n  - name: gang\n    arguments: [1, 2]",
    "actions: allocate\ntiers:\n- plugins:\n  - name: deviceshare\n    arguments: {deviceshare.VGPUEnable: maybe}",
    "\x00\x01\x02",
    "- just\n- a\n- list",
    "actions: " + "allocate, " * 2000,
    "tiers:\n" + "- plugins: []\n" * 500,
)


def _kinds() -> Iterator[Iterator[dict[str, Any]]]:
    n = itertools.count()

    def name(kind: str) -> str:
        return f"fuzz-{kind}-{next(n)}"

    def nodes() -> Iterator[dict[str, Any]]:
        for field in ("cpu", "memory", "pods", "volcano.sh/vgpu-memory"):
            for v in BAD_NUMBERS:
                yield _set(_node(name("node")), f"status.allocatable.{field}", v)
        for reg in REGISTERS:
            obj = _node(name("node"))
            obj["status"]["allocatable"].update(VGPU_ALLOC)
            obj["metadata"]["annotations"]["volcano.sh/node-vgpu-register"] = reg
            yield obj
        for v in BAD_NUMBERS[:6]:
            yield _set(_node(name("node")), "metadata.annotations", {"volcano.sh/gpu-unhealthy-ids": str(v)})
            yield _set(_node(name("node")), "spec.taints", [{"key": v, "effect": v}])

    def pods() -> Iterator[dict[str, Any]]:
        for res in (
            "cpu",
            "memory",
            "volcano.sh/vgpu-memory",
            "volcano.sh/vgpu-number",
            "volcano.sh/vgpu-cores",
        ):
            for v in BAD_NUMBERS:
                obj = _pod(name("pod"))
                obj["spec"]["containers"][0]["resources"]["limits"][res] = v
                yield obj
        for key, v in (
            ("scheduling.k8s.io/group-name", "no-such-group"),
            ("scheduling.volcano.sh/queue-name", "no-such-queue"),
            ("volcano.sh/vgpu-ids-new", f"GPU-x,NVIDIA,{HUGE},{HUGE}:"),
            ("volcano.sh/vgpu-mode", "ü"),
            ("volcano.sh/vgpu-use-gpuuuid", "," * 100),
        ):
            yield _set(_pod(name("pod")), "metadata.annotations", {key: v})
        for field, v in (("priority", HUGE), ("priority", "high"), ("containers", []), ("containers", None)):
            yield _set(_pod(name("pod")), f"spec.{field}", v)

    def podgroups() -> Iterator[dict[str, Any]]:
        for field in ("minMember", "minResources", "queue", "minTaskMember", "priorityClassName"):
            for v in BAD_NUMBERS:
                yield _set(_podgroup(name("pg")), f"spec.{field}", v)
        for v in ("1e40", "-1", "abc"):
            yield _set(_podgroup(name("pg")), "spec.minResources", {"cpu": v})

    def queues() -> Iterator[dict[str, Any]]:
        for field in ("weight", "capability", "guarantee", "state", "parent", "reclaimable"):
            for v in BAD_NUMBERS:
                yield _set(_queue(name("queue")), f"spec.{field}", v)
        for v in ("1e40", "-1", "abc"):
            yield _set(_queue(name("queue")), "spec.capability", {"cpu": v})

    def hypernodes() -> Iterator[dict[str, Any]]:
        for field in ("tier", "members"):
            for v in BAD_NUMBERS:
                yield _set(_hypernode(name("hn")), f"spec.{field}", v)

    def configmaps() -> Iterator[dict[str, Any]]:
        for conf in BAD_CONFS:
            yield _configmap("volcano-system", "volcano-scheduler-configmap", "volcano-scheduler.conf", conf)
        for v in ("nvidia: [", "nvidia: 5", "nvidia:\n  resourceMemoryName: ''", "{}", "\x00"):
            yield _configmap("kube-system", "volcano-vgpu-device-config", "device-config.yaml", v)

    return iter([nodes(), pods(), podgroups(), queues(), hypernodes(), configmaps()])


def bad_objects(limit: int) -> list[dict[str, Any]]:
    """The first `limit` garbage objects, round-robin over the kinds (then what is left of each)."""
    out: list[dict[str, Any]] = []
    gens = list(_kinds())
    while gens and len(out) < limit:
        for g in list(gens):
            obj = next(g, None)
            if obj is None:
                gens.remove(g)
                continue
            out.append(obj)
            if len(out) >= limit:
                break
    return out


PATHS = {
    "Node": ("/api/v1", "nodes", False),
    "Pod": ("/api/v1", "pods", True),
    "ConfigMap": ("/api/v1", "configmaps", True),
    "PodGroup": ("/apis/scheduling.volcano.sh/v1beta1", "podgroups", True),
    "Queue": ("/apis/scheduling.volcano.sh/v1beta1", "queues", False),
    "HyperNode": ("/apis/topology.volcano.sh/v1alpha1", "hypernodes", False),
}


def collection_path(obj: dict[str, Any]) -> str:
    prefix, plural, namespaced = PATHS[obj["kind"]]
    ns = obj["metadata"].get("namespace") if namespaced else None
    return f"{prefix}/namespaces/{ns}/{plural}" if ns else f"{prefix}/{plural}"
