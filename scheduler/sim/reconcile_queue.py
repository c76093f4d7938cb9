"""The work queue of the sandbox's controllers: objects marked by watch events, reconciled in
batches once a burst of events has settled, so that a controller handles an object once per burst
rather than once per event (as client-go's rate-limited work queues do for the real controllers).
"""

from __future__ import annotations

import asyncio
from typing import Generic, TypeVar

V = TypeVar("V")


class ReconcileQueue(Generic[V]):
    """Keys to reconcile, each with what the controller needs to find its object again."""

    def __init__(self, pause: float) -> None:
        self._pause = pause
        self._marked: dict[str, V] = {}
        self._wake = asyncio.Event()

    def mark(self, key: str, value: V) -> None:
        self._marked[key] = value
        self._wake.set()

    async def batch(self) -> dict[str, V]:
        """The keys marked so far, in marking order: waits for a mark, then `pause` seconds for the
        rest of its burst."""
        await self._wake.wait()
        self._wake.clear()
        await asyncio.sleep(self._pause)
        marked, self._marked = self._marked, {}
        return marked
