"""Why a task fits nowhere: per-node reasons and the message a user reads on the pod.

`0/5 nodes are unavailable: 2 node(s) had untolerated taint {gpu: true}, 3 Insufficient cpu.` —
the histogram is the alphabetically sorted "<count> <reason>" list over all nodes' reasons.
"""

from __future__ import annotations

ALL_NODES_UNAVAILABLE = "all nodes are unavailable"


class FitErrors:
    __slots__ = ("_said", "err", "hypernode", "nodes")

    def __init__(self, err: str = "") -> None:
        self.nodes: dict[str, list[str]] = {}
        self.err = err
        # the HyperNode the nodes were searched in (network topology), named in the message
        self.hypernode = ""
        # the last message and what it was built from (see message)
        self._said: tuple[dict[str, list[str]], int, str, str, str] | None = None

    def set_node_error(self, node: str, reasons: list[str] | str) -> None:
        self.nodes[node] = [reasons] if isinstance(reasons, str) else list(reasons)
        self._said = None

    def set_error(self, err: str) -> None:
        self.err = err

    def forget(self) -> None:
        """Drop the kept message: for code that changes `nodes` in place (set_node_error does this)."""
        self._said = None

    def __bool__(self) -> bool:
        return bool(self.nodes) or bool(self.err)

    def histogram(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for reasons in self.nodes.values():
            for r in reasons:
                counts[r] = counts.get(r, 0) + 1
        return counts

    def message(self) -> str:
        """The message, kept while `nodes` (the same dict, as long), `err` and `hypernode` are as
        they were: a pod that fits nowhere is worded up to three times as a session closes (its
        condition, its gang's message twice), each a pass over every node's reasons (~0.7 ms at
        5,000 nodes). In-place changes of `nodes` go through set_node_error or forget()."""
        nodes = self.nodes
        said = self._said
        if (
            said is not None
            and said[0] is nodes
            and said[1] == len(nodes)
            and said[2] == self.err
            and said[3] == self.hypernode
        ):
            return said[4]
        msg = self._word()
        self._said = (nodes, len(nodes), self.err, self.hypernode, msg)
        return msg

    def _word(self) -> str:
        if not self.nodes:
            return self.err or ALL_NODES_UNAVAILABLE
        parts = sorted(f"{n} {r}" for r, n in self.histogram().items())
        msg = f"0/{len(self.nodes)} nodes are unavailable: {', '.join(parts)}."
        return f"In hyperNode {self.hypernode}: {msg}" if self.hypernode else msg

    __str__ = message
