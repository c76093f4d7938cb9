"""kube-scheduler's resource scores (NodeResourcesFit LeastAllocated / MostAllocated and
NodeResourcesBalancedAllocation) on 0..100, with its integer arithmetic.

"Requested" on a node is what the session has on it (`node.used`: allocated, bound, running and
releasing tasks) plus the task's own request; kube-scheduler additionally counts a zero CPU or
memory request as 100m / 200Mi for LeastAllocated and MostAllocated, which a node total cannot
express, so that substitution is not made here.

* LeastAllocated (cpu weight 50, memory 50): per resource (allocatable - requested) x 100 /
  allocatable, 0 when over-requested; weighted mean, integer division; resources the node does
  not have are skipped.
* MostAllocated (cpu 1, memory 1): requested x 100 / allocatable, requested capped at
  allocatable; weighted mean.
* BalancedAllocation (cpu, memory, nvidia.com/gpu): fractions requested / allocatable capped at 1,
  over the resources the node has (an extended resource only when the pod asks for it); score =
  (1 - standard deviation of the fractions) x 100, truncated; with two resources the deviation is
  |f1 - f2| / 2. A pod requesting none of them is not scored (kube-scheduler's PreScore skip).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, TypeVar

from scheduler.model.node import NodeInfo
from scheduler.model.objects import TaskInfo
from scheduler.model.resources import CPU, MEMORY, Resource
from scheduler.plugins.k8s import cpumemscore as python_scores
from scheduler.plugins.k8s.cpumemscore_impl import scores_impl

T = TypeVar("T")

LEAST_ALLOCATED_RESOURCES = ((CPU, 50), (MEMORY, 50))
MOST_ALLOCATED_RESOURCES = ((CPU, 1), (MEMORY, 1))
GPU = "nvidia.com/gpu"
BALANCED_RESOURCES = (CPU, MEMORY, GPU)


def _alloc_and_requested(node: NodeInfo, req: Resource, name: str) -> tuple[int, int]:
    if name == CPU:
        return int(node.allocatable.milli_cpu), int(node.used.milli_cpu + req.milli_cpu)
    if name == MEMORY:
        return int(node.allocatable.memory), int(node.used.memory + req.memory)
    pod_req = req.scalars.get(name, 0.0)
    if pod_req == 0:
        # an extended resource the pod does not ask for does not take part
        return 0, 0
    return int(node.allocatable.scalars.get(name, 0.0)), int(node.used.scalars.get(name, 0.0) + pod_req)


def _weighted_mean(
    node: NodeInfo, req: Resource, weighted: tuple[tuple[str, int], ...], score: Callable[[int, int], int]
) -> int:
    """The integer weighted mean of score(allocatable, requested) over the resources the node has."""
    total = weights = 0
    for name, w in weighted:
        alloc, requested = _alloc_and_requested(node, req, name)
        if alloc == 0:
            continue
        total += score(alloc, requested) * w
        weights += w
    return total // weights if weights else 0


def least_allocated(node: NodeInfo, req: Resource) -> int:
    return _weighted_mean(
        node,
        req,
        LEAST_ALLOCATED_RESOURCES,
        lambda alloc, requested: 0 if requested > alloc else (alloc - requested) * 100 // alloc,
    )


def most_allocated(node: NodeInfo, req: Resource) -> int:
    return _weighted_mean(
        node, req, MOST_ALLOCATED_RESOURCES, lambda alloc, requested: min(requested, alloc) * 100 // alloc
    )


class CpuMemoryMemo:
    """The last score of each node for a score that reads only cpu and memory (the node's
    allocatable and used, the task's request).

    A placement changes one node, and the placement cache then asks that node's score once per
    task shape; shapes that differ only outside cpu and memory (device requests, other scalars)
    get the score computed for the first one. A hit needs the same allocatable object and equal
    used and requested cpu and memory, i.e. exactly the inputs of the computation.
    """

    __slots__ = ("_slots",)

    def __init__(self) -> None:
        self._slots: dict[str, tuple[Resource, tuple[float, float, float, float], Any]] = {}

    def score(self, task: TaskInfo, node: NodeInfo, compute: Callable[[TaskInfo, NodeInfo], T]) -> T:
        used, req = node.used, task.resreq
        key = (used.milli_cpu, used.memory, req.milli_cpu, req.memory)
        slot = self._slots.get(node.name)
        if slot is not None and slot[1] == key and slot[0] is node.allocatable:
            return slot[2]  # type: ignore[no-any-return]
        s = compute(task, node)
        self._slots[node.name] = (node.allocatable, key, s)
        return s

    def scores(self, req: Resource, nodes: list[NodeInfo], compute: Callable[[NodeInfo], T]) -> list[T]:
        """score for several nodes of one request, `compute` taking the node alone: the same slots
        walk as the compiled score's Python twin (its weights are only read by the compiled one)."""
        return python_scores.scores(  # type: ignore[return-value]
            self._slots,
            nodes,
            req.milli_cpu,
            req.memory,
            0,
            0,
            0,
            0,
            compute,  # type: ignore[arg-type]
        )

    def cpu_memory_scores(
        self,
        req: Resource,
        nodes: list[NodeInfo],
        weights: tuple[int, int, int, int],
        compute: Callable[[NodeInfo], int],
    ) -> list[int]:
        """score() over several nodes, for nodeorder's resource score of a request without GPU
        (`compute` taking the node alone). `weights` are the least/most-requested and balanced
        weights and the constant that `compute` applies, so that the compiled twin
        (cpumemscore_impl) can compute the same integers without calling it."""
        wl, wm, wb, taint = weights
        impl = self.implementation(weights)
        return impl.scores(self._slots, nodes, req.milli_cpu, req.memory, wl, wm, wb, taint, compute)  # type: ignore[no-any-return]

    @property
    def slots(self) -> dict[str, tuple[Resource, tuple[float, float, float, float], Any]]:
        """The memo's slots, for a caller that calls `implementation(weights).scores` itself."""
        return self._slots

    @staticmethod
    def implementation(weights: tuple[int, int, int, int]) -> Any:
        """The scores module for these weights: the compiled one when they are in its bound."""
        wl, wm, wb, taint = weights
        b = _WEIGHT_BOUND
        in_bound = -b < wl < b and -b < wm < b and -b < wb < b and -b < taint < b
        return scores_impl if in_bound else python_scores


# weights beyond this are left to the Python twin (the compiled one multiplies in 64-bit integers)
_WEIGHT_BOUND = 1 << 31


def requests_none_of(req: Resource, names: tuple[str, ...] = BALANCED_RESOURCES) -> bool:
    return all(req.get(n) == 0 for n in names)


def balanced_allocation(node: NodeInfo, req: Resource) -> int:
    fractions: list[float] = []
    for name in BALANCED_RESOURCES:
        alloc, requested = _alloc_and_requested(node, req, name)
        if alloc == 0:
            continue
        fractions.append(min(requested / alloc, 1.0))
    std = 0.0
    if len(fractions) == 2:
        std = abs((fractions[0] - fractions[1]) / 2)
    elif len(fractions) > 2:
        mean = sum(fractions) / len(fractions)
        std = math.sqrt(sum((f - mean) ** 2 for f in fractions) / len(fractions))
    return int((1 - std) * 100)


def resource_scores(node: NodeInfo, req: Resource, wl: int, wm: int, wb: int) -> int:
    """wl x least_allocated + wm x most_allocated + wb x balanced_allocation, with the same integer
    results, reading the node's cpu and memory once (this runs for every node a task shape sees).
    A pod asking for the GPU takes the general path (the GPU joins the balanced fractions)."""
    if req.scalars.get(GPU, 0.0) != 0:
        s = 0
        if wl:
            s += wl * least_allocated(node, req)
        if wm:
            s += wm * most_allocated(node, req)
        if wb:
            s += wb * balanced_allocation(node, req)
        return s
    alloc, used = node.allocatable, node.used
    ac, rc = int(alloc.milli_cpu), int(used.milli_cpu + req.milli_cpu)
    am, rm = int(alloc.memory), int(used.memory + req.memory)
    s = 0
    if wl:
        score = weights = 0
        if ac != 0:
            score += (0 if rc > ac else (ac - rc) * 100 // ac) * 50
            weights += 50
        if am != 0:
            score += (0 if rm > am else (am - rm) * 100 // am) * 50
            weights += 50
        s += wl * (score // weights if weights else 0)
    if wm:
        score = weights = 0
        if ac != 0:
            score += min(rc, ac) * 100 // ac
            weights += 1
        if am != 0:
            score += min(rm, am) * 100 // am
            weights += 1
        s += wm * (score // weights if weights else 0)
    if wb:
        if ac != 0 and am != 0:
            std = abs((min(rc / ac, 1.0) - min(rm / am, 1.0)) / 2)
        else:
            std = 0.0
        s += wb * int((1 - std) * 100)
    return s
