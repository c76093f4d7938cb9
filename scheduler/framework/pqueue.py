"""A binary heap ordered by a session compare function, evaluated at push/pop time like Volcano's.

Order functions read live session state (drf and proportion shares change as tasks are placed), so
the heap compares with whatever the state is when it moves an element, exactly as Go's heap does.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable
from typing import Generic, TypeVar

T = TypeVar("T")


class _Entry(Generic[T]):
    __slots__ = ("cmp", "item")

    def __init__(self, item: T, cmp: Callable[[T, T], int]) -> None:
        self.item = item
        self.cmp = cmp

    def __lt__(self, other: _Entry[T]) -> bool:
        return self.cmp(self.item, other.item) < 0


class PriorityQueue(Generic[T]):
    __slots__ = ("_cmp", "_heap")

    def __init__(self, cmp: Callable[[T, T], int], items: Iterable[T] = ()) -> None:
        self._cmp = cmp
        self._heap: list[_Entry[T]] = [_Entry(i, cmp) for i in items]
        heapq.heapify(self._heap)

    def push(self, item: T) -> None:
        heapq.heappush(self._heap, _Entry(item, self._cmp))

    def pop(self) -> T:
        return heapq.heappop(self._heap).item

    def clone(self) -> PriorityQueue[T]:
        """An independent queue with the same elements (the heap order carries over)."""
        q: PriorityQueue[T] = PriorityQueue(self._cmp)
        q._heap = list(self._heap)
        return q

    def empty(self) -> bool:
        return not self._heap

    def __len__(self) -> int:
        return len(self._heap)
