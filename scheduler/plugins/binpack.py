"""binpack: prefer the nodes that the task fills most (spec 7.8).

Arguments, as Volcano names them: `binpack.weight` (1), `binpack.cpu` (1), `binpack.memory` (1),
`binpack.resources` (comma-separated extra resource names) and `binpack.resources.<name>` (1 each).
A negative cpu, memory or resource weight is taken as 1. With `binpack.weight` 0 the plugin
registers nothing.

Score of a task on a node, over the resources the task requests (>= 0.1 in the resource's unit)
that have a configured weight w:
    used = node.used[r] + request[r]; if used > allocatable[r] the whole score is 0;
    part_r = used x w / allocatable[r] (0 when the node has none of r or w is 0);
    score = 100 x binpack.weight x sum(part_r) / sum(w)
e.g. 1 CPU asked on a 4-CPU / 8Gi node using 1 CPU and 2Gi, 1Gi asked: cpu (1+1)/4 = 0.5,
memory (2+1)/8 = 0.375, score = 100 x (0.5 + 0.375) / 2 = 43.75.
"""

from __future__ import annotations

from collections.abc import Iterable

from scheduler.framework.arguments import Arguments
from scheduler.framework.plugin import Plugin
from scheduler.framework.session import Session
from scheduler.model.node import NodeInfo
from scheduler.model.objects import TaskInfo
from scheduler.model.resources import CPU, EPSILON, MEMORY
from scheduler.plugins.k8s.noderesources import CpuMemoryMemo

WEIGHT = "binpack.weight"
CPU_WEIGHT = "binpack.cpu"
MEMORY_WEIGHT = "binpack.memory"
RESOURCES = "binpack.resources"


def _non_negative(w: int) -> int:
    return 1 if w < 0 else w


def _combined(parts: Iterable[tuple[float, int, float, float]], weight: int) -> float:
    """The score from (request, weight, allocatable, used) of each weighted resource the task
    asks for, in the request's order (see the module docstring)."""
    total = 0.0
    weight_sum = 0
    for request, w, capacity, in_use in parts:
        if request < EPSILON:
            continue
        if capacity != 0 and w != 0:
            final = request + in_use
            if final > capacity:
                return 0.0
            total += final * w / capacity
        weight_sum += w
    if weight_sum > 0:
        total /= weight_sum
    return total * 100 * weight


class BinpackPlugin(Plugin):
    name = "binpack"

    def __init__(self, arguments: Arguments) -> None:
        super().__init__(arguments)
        self.weight = arguments.get_int(WEIGHT, 1)
        self.resource_weights: dict[str, int] = {}
        for res in arguments.get_str(RESOURCES, "").split(","):
            res = res.strip()
            if res:
                self.resource_weights[res] = _non_negative(arguments.get_int(f"{RESOURCES}.{res}", 1))
        # cpu and memory are always weighted; their own keys win over a listing in binpack.resources
        self.resource_weights[CPU] = _non_negative(arguments.get_int(CPU_WEIGHT, 1))
        self.resource_weights[MEMORY] = _non_negative(arguments.get_int(MEMORY_WEIGHT, 1))
        # without extra resources (the default) a score reads cpu and memory only
        self._cpu_memory_only = set(self.resource_weights) == {CPU, MEMORY}
        self._memo = CpuMemoryMemo()

    def score(self, task: TaskInfo, node: NodeInfo) -> float:
        if self._cpu_memory_only:
            return self._memo.score(task, node, self._score_cpu_memory)
        return self._score(task, node)

    def scores(self, task: TaskInfo, nodes: list[NodeInfo]) -> list[float]:
        """score() for each node, in order, without a chain of calls per node."""
        if not self._cpu_memory_only:
            return [self._score(task, n) for n in nodes]
        return self._memo.scores(task.resreq, nodes, lambda node: self._score_cpu_memory(task, node))

    def _score_cpu_memory(self, task: TaskInfo, node: NodeInfo) -> float:
        """_score when only cpu and memory are weighted (the default), written out from the
        attributes instead of a walk over the request's items (this runs for every node a
        placement changed): the same steps in the same order as _combined, so the same float. A
        request below the threshold counts as a weight of 0, which adds nothing either way."""
        req, alloc, used = task.resreq, node.allocatable, node.used
        weights = self.resource_weights
        cpu, memory = req.milli_cpu, req.memory
        w_cpu = 0 if cpu < EPSILON else weights[CPU]
        w_memory = 0 if memory < EPSILON else weights[MEMORY]
        cap_cpu, cap_memory = alloc.milli_cpu, alloc.memory
        total = 0.0
        if cap_cpu != 0 and w_cpu != 0:
            cpu += used.milli_cpu
            if cpu > cap_cpu:
                return 0.0
            total += cpu * w_cpu / cap_cpu
        if cap_memory != 0 and w_memory != 0:
            memory += used.memory
            if memory > cap_memory:
                return 0.0
            total += memory * w_memory / cap_memory
        if w_cpu + w_memory > 0:
            total /= w_cpu + w_memory
        return total * 100 * self.weight

    def _score(self, task: TaskInfo, node: NodeInfo) -> float:
        alloc, used, weights = node.allocatable, node.used, self.resource_weights
        parts = []
        for name, request in task.resreq.items():
            w = weights.get(name)
            if w is not None:
                parts.append((request, w, alloc.get(name), used.get(name)))
        return _combined(parts, self.weight)

    def shape(self, task: TaskInfo) -> tuple[float, float] | None:
        """What score() reads of the task: its cpu and memory requests, when no other resource
        is weighted (the default); None otherwise."""
        if not self._cpu_memory_only:
            return None
        req = task.resreq
        return req.milli_cpu, req.memory

    def on_session_open(self, ssn: Session) -> None:
        if self.weight != 0:
            ssn.add_node_order_fn(self.name, self.score, self.scores, self.shape)
