"""The nodes' Idle and FutureIdle as rows of one array of doubles, for allocate's resource fit.

A cold task shape asks the resource fit of every node of its scan window; reading three Resources
and their scalar dicts per node cost ~1.5 us a node in a session (attribute reads and cache
misses), 9 % of a 1,000-node vGPU session. The rows are read instead: a node's row is written when
the rows are built and again whenever the session's change log names it, so a row always shows
its node as the resource fit would read it (nodes' resources change only through the session's
placement primitives, which log every node they touch; the cached verdicts rely on the same).
"""

from __future__ import annotations

from array import array

from scheduler.model.node import NodeInfo
from scheduler.model.resfit_impl import resfit_impl
from scheduler.model.resources import Resource

# the per-node values before the scalars: Idle cpu, Idle memory, FutureIdle cpu, FutureIdle memory
_FIXED = 4


class ResourceRows:
    """Rows for `nodes` (row i is nodes[i]), with the scalar keys asked so far."""

    __slots__ = ("key_list", "keys", "nodes", "ok", "seq", "stale", "stride", "values")

    def __init__(self, nodes: list[NodeInfo], seq: int, keys: list[str] | None = None) -> None:
        self.nodes = nodes
        # the change log's length the rows are up to date with
        self.seq = seq
        # scalar key -> its index among a row's scalars (columns 4 + 2j: Idle, 4 + 2j + 1: FutureIdle);
        # `keys` are the first ones (those of the first request to be checked)
        self.keys: dict[str, int] = {k: j for j, k in enumerate(keys)} if keys else {}
        self.key_list: list[str] = []
        self.stride = _FIXED
        self.values = array("d")
        # 0 where a node's values are not all exact floats: the fit asks its Resources
        self.ok = bytearray()
        # rows of nodes changed since they were written, written again before the next check
        # (in the compiled pass that precedes it, not a Python call per change)
        self.stale: list[int] = []
        self._build()

    def _build(self) -> None:
        n = len(self.nodes)
        self.stride = _FIXED + 2 * len(self.keys)
        self.values = array("d", bytes(8 * self.stride * n))
        self.ok = bytearray(n)
        self.key_list = list(self.keys)
        resfit_impl.rows_fill(self.values, self.ok, self.stride, self.key_list, self.nodes, list(range(n)))
        self.stale = []

    def refresh(self, at: list[int]) -> None:
        """Rewrite the rows at positions `at` (nodes that changed), and those marked stale."""
        self.stale.extend(at)
        if self.stale:
            resfit_impl.rows_refill(self.values, self.ok, self.stride, self.key_list, self.nodes, self.stale)

    def misfits_idle(
        self, req: Resource, nodes: list[NodeInfo], at: list[int], codes: bytearray, fit: int, refused: int
    ) -> list[int]:
        """resfit's misfits_idle for nodes[k] at row at[k], read from the rows (the stale ones
        written first)."""
        keys = self.keys
        if req.scalars and not keys.keys() >= req.scalars.keys():
            # a key not asked before: every row gets its columns (once per key in a session)
            for key in req.scalars:
                keys.setdefault(key, len(keys))
            self._build()
        elif self.stale:
            resfit_impl.rows_refill(self.values, self.ok, self.stride, self.key_list, self.nodes, self.stale)
        return resfit_impl.rows_misfits_idle(
            req, self.values, self.ok, self.stride, keys, nodes, at, codes, fit, refused
        )
