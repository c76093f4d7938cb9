"""nodeorder's per-node resource score over many nodes, memoised per node: the pure-Python twin of
`native/cpumemscore.pyx`.

For a request asking no GPU, the score of a node is wl x LeastAllocated + wm x MostAllocated + wb x
BalancedAllocation over its cpu and memory, plus a constant (TaintToleration when no node has a
taint); `compute(node)` gives it (noderesources.resource_scores). Each node's last score is kept in
`slots` under its name with exactly the inputs it was computed from (its allocatable object, its
used cpu and memory, the request's), as CpuMemoryMemo keeps it. The compiled module gives the same
integers from the same slots; `cpumemscore_impl` picks one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from scheduler.model.node import NodeInfo


def scores(
    slots: dict[str, tuple[Any, tuple[float, float, float, float], Any]],
    nodes: list[NodeInfo],
    req_cpu: float,
    req_mem: float,
    wl: int,
    wm: int,
    wb: int,
    taint: int,
    compute: Callable[[NodeInfo], int],
) -> list[int]:
    """Each node's score, from its slot when its inputs are unchanged, else `compute`d and kept.
    The weights are those `compute` applies (the compiled module computes with them itself)."""
    out: list[int] = []
    for node in nodes:
        used = node.used
        key = (used.milli_cpu, used.memory, req_cpu, req_mem)
        slot = slots.get(node.name)
        if slot is not None and slot[1] == key and slot[0] is node.allocatable:
            out.append(slot[2])
            continue
        s = compute(node)
        slots[node.name] = (node.allocatable, key, s)
        out.append(s)
    return out
