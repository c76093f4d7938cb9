"""A binary heap ordered by a session compare function, evaluated at push/pop time like Volcano's.

Order functions read live session state (drf and proportion shares change as tasks are placed), so
the heap compares with whatever the state is when it moves an element, exactly as Go's heap does.
"""

from __future__ import annotations

import functools
import heapq
from collections.abc import Callable, Iterable
from typing import Any, Generic, TypeVar, cast

T = TypeVar("T")


class PriorityQueue(Generic[T]):
    # The heap holds functools.cmp_to_key wrappers: their `<` is `cmp(a, b) < 0` evaluated in C,
    # the same comparison a Python wrapper made with one Python call more per comparison (the job
    # heap of 1,000 one-pod jobs compares ~10 times per pop).
    __slots__ = ("_cmp", "_heap", "_key")

    def __init__(self, cmp: Callable[[T, T], int], items: Iterable[T] = ()) -> None:
        self._cmp = cmp
        self._key = functools.cmp_to_key(cmp)
        self._heap: list[Any] = list(map(self._key, items))
        heapq.heapify(self._heap)

    def push(self, item: T) -> None:
        heapq.heappush(self._heap, self._key(item))

    def pop(self) -> T:
        return cast("T", heapq.heappop(self._heap).obj)

    def clone(self) -> PriorityQueue[T]:
        """An independent queue with the same elements (the heap order carries over)."""
        q: PriorityQueue[T] = PriorityQueue(self._cmp)
        q._key = self._key
        q._heap = list(self._heap)
        return q

    def empty(self) -> bool:
        return not self._heap

    def __len__(self) -> int:
        return len(self._heap)
