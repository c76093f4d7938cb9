"""A binary heap ordered by a session compare function, evaluated at push/pop time like Volcano's.

Order functions read live session state (drf and proportion shares change as tasks are placed), so
the heap compares with whatever the state is when it moves an element, exactly as Go's heap does.
"""

from __future__ import annotations

import bisect
import functools
import heapq
from collections.abc import Callable, Iterable
from typing import Any, Generic, TypeVar

T = TypeVar("T")

# popped entries a sorted run keeps before it drops them (one list shift per this many pops)
_KEEP_POPPED = 64


class PriorityQueue(Generic[T]):
    # The heap holds functools.cmp_to_key wrappers: their `<` is `cmp(a, b) < 0` evaluated in C,
    # the same comparison a Python wrapper made with one Python call more per comparison (the job
    # heap of 1,000 one-pod jobs compares ~10 times per pop).
    #
    # With `sort_key` (a caller whose elements do not change while queued, see keyed()) the queue
    # holds (key, element) pairs instead, as a sorted run: `_heap[_head:]` ascending, the entries
    # before `_head` popped. No two keys are equal, so the run pops exactly what a heap of the
    # pairs pops, without a heap's ~20 tuple comparisons per pop (~3 % of a session of one-pod
    # jobs): a pop is an index step, a push in order one comparison, one out of order a bisection.
    # A run is also a heap, which is what going back to `cmp` (_to_cmp) relies on.
    __slots__ = ("_cmp", "_head", "_heap", "_key", "_sort_key")

    def __init__(self, cmp: Callable[[T, T], int], items: Iterable[T] = ()) -> None:
        self._cmp = cmp
        self._key = functools.cmp_to_key(cmp)
        self._sort_key: Callable[[T], Any] | None = None
        self._head = 0
        self._heap: list[Any] = list(map(self._key, items))
        heapq.heapify(self._heap)

    @classmethod
    def keyed(cls, cmp: Callable[[T, T], int], sort_key: Callable[[T], Any] | None) -> PriorityQueue[T]:
        """An empty queue ordered by `sort_key`, which must order as `cmp` does (distinct elements
        never tie) for elements that stay unchanged while queued; `sort_key` returning None for an
        element turns the queue back to `cmp` for good. Without a key, a plain queue."""
        q: PriorityQueue[T] = cls(cmp)
        q._sort_key = sort_key
        return q

    @classmethod
    def from_keys(cls, cmp: Callable[[T, T], int], items: list[T], keys: list[Any]) -> PriorityQueue[T]:
        """A queue of `items` whose sort keys are `keys` (none None, no two equal, ordering them
        as `cmp` does), sorted at once: it pops what a queue compared by `cmp` pops. A later
        push turns it back to `cmp` (the sorted run is a heap for `cmp` too)."""
        q: PriorityQueue[T] = cls(cmp)
        q._sort_key = _no_key
        q._heap = sorted(zip(keys, items, strict=True))
        return q

    def push(self, item: T) -> None:
        sk = self._sort_key
        if sk is not None:
            k = sk(item)
            if k is not None:
                entry = (k, item)
                run = self._heap
                if not run or run[-1] < entry:
                    run.append(entry)
                else:
                    bisect.insort(run, entry, lo=self._head)
                return
            self._to_cmp()
        heapq.heappush(self._heap, self._key(item))

    def _to_cmp(self) -> None:
        """Go on with `cmp`: the run's order holds for it (every comparison so far agreed)."""
        self._sort_key = None
        self._heap = [self._key(item) for _, item in self._heap[self._head :]]
        self._head = 0

    def pop(self) -> T:
        # no typing.cast: it is a Python call per pop (the heap's entries are untyped)
        if self._sort_key is not None:
            run, head = self._heap, self._head
            item: T = run[head][1]
            head += 1
            if head == len(run):
                run.clear()
                head = 0
            elif head >= _KEEP_POPPED and 2 * head >= len(run):
                del run[:head]
                head = 0
            self._head = head
            return item
        item = heapq.heappop(self._heap).obj
        return item

    def clone(self) -> PriorityQueue[T]:
        """An independent queue with the same elements (the heap order carries over)."""
        q: PriorityQueue[T] = PriorityQueue(self._cmp)
        q._key = self._key
        q._sort_key = self._sort_key
        q._heap = self._heap[self._head :]
        return q

    def empty(self) -> bool:
        # a run is emptied by the pop that takes its last entry: no entry left means none queued
        return not self._heap

    def __bool__(self) -> bool:
        # what empty() says, for a caller that tests the queue as it tests a list (not __len__'s sum)
        return bool(self._heap)

    def __len__(self) -> int:
        return len(self._heap) - self._head


def _no_key(item: object) -> None:
    """The sort key of a queue made from_keys: none, so a push turns it back to its compare."""
    return None
