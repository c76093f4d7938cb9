"""Which nodes the session's lock intents hold, as a count per (node, lock key).

Every device pod placed in a session records a lock intent in `ssn.node_locks`, and the next
placement on any node first asks whether that node is held: a pass over the whole list made a
session placing thousands of device pods quadratic (1,000 one-pod vGPU jobs: ~500,000 tuple
comparisons). The counts answer with one lookup. Only the plugin changes the list (through
`append` and `remove` here); the counts are taken from the list again whenever it is another
list or its length is not the one the plugin left, so a change made elsewhere is not missed by
length.
"""

from __future__ import annotations

from collections import Counter

LockIntent = tuple[str, str, str]  # (node, lock key, lock value)


class HeldLocks:
    __slots__ = ("counts", "length", "locks")

    def __init__(self) -> None:
        self.locks: list[LockIntent] | None = None
        self.length = -1
        self.counts: Counter[tuple[str, str]] = Counter()

    def _sync(self, locks: list[LockIntent]) -> None:
        if locks is not self.locks or len(locks) != self.length:
            self.locks = locks
            self.counts = Counter((n, k) for n, k, _ in locks)
            self.length = len(locks)

    def held(self, locks: list[LockIntent], node: str, key: str) -> bool:
        """Whether some intent in `locks` holds `node` under `key`."""
        self._sync(locks)
        return self.counts[(node, key)] > 0

    def append(self, locks: list[LockIntent], entry: LockIntent) -> None:
        self._sync(locks)
        locks.append(entry)
        self.counts[(entry[0], entry[1])] += 1
        self.length += 1

    def remove(self, locks: list[LockIntent], entry: LockIntent) -> None:
        """Drop `entry` from `locks` if it is there (its first occurrence, as list.remove)."""
        self._sync(locks)
        if entry in locks:
            locks.remove(entry)
            self.counts[(entry[0], entry[1])] -= 1
            self.length -= 1
