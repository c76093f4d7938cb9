"""Why a task fits nowhere: per-node reasons and the message a user reads on the pod.

`0/5 nodes are unavailable: 2 node(s) had untolerated taint {gpu: true}, 3 Insufficient cpu.` —
the histogram is the alphabetically sorted "<count> <reason>" list over all nodes' reasons.
"""

from __future__ import annotations

ALL_NODES_UNAVAILABLE = "all nodes are unavailable"


class FitErrors:
    __slots__ = ("err", "hypernode", "nodes")

    def __init__(self, err: str = "") -> None:
        self.nodes: dict[str, list[str]] = {}
        self.err = err
        # the HyperNode the nodes were searched in (network topology), named in the message
        self.hypernode = ""

    def set_node_error(self, node: str, reasons: list[str] | str) -> None:
        self.nodes[node] = [reasons] if isinstance(reasons, str) else list(reasons)

    def set_error(self, err: str) -> None:
        self.err = err

    def __bool__(self) -> bool:
        return bool(self.nodes) or bool(self.err)

    def histogram(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for reasons in self.nodes.values():
            for r in reasons:
                counts[r] = counts.get(r, 0) + 1
        return counts

    def message(self) -> str:
        if not self.nodes:
            return self.err or ALL_NODES_UNAVAILABLE
        parts = sorted(f"{n} {r}" for r, n in self.histogram().items())
        msg = f"0/{len(self.nodes)} nodes are unavailable: {', '.join(parts)}."
        return f"In hyperNode {self.hypernode}: {msg}" if self.hypernode else msg

    __str__ = message
