"""A keyed PriorityQueue keeps its entries as a sorted run: it must pop exactly what a heap
compared by the same function pops, whatever the order of pushes and pops."""

from __future__ import annotations

import random

import pytest

from scheduler.framework.pqueue import PriorityQueue


def _cmp(a: tuple, b: tuple) -> int:
    return -1 if a < b else (1 if b < a else 0)


def _run(queue: PriorityQueue[tuple], rng: random.Random, n: int) -> list[tuple]:
    """Pushes of random items (many out of order) with pops in between, the queue emptied twice."""
    out: list[tuple] = []
    for i in range(n):
        queue.push((rng.randrange(50), f"u{i:04d}"))
        if rng.random() < 0.45 and not queue.empty():
            out.append(queue.pop())
        if i == n // 2:
            while not queue.empty():
                out.append(queue.pop())
    while not queue.empty():
        assert len(queue) > 0
        out.append(queue.pop())
    assert len(queue) == 0
    return out


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_keyed_queue_pops_what_the_compare_heap_pops(seed: int) -> None:
    plain = _run(PriorityQueue(_cmp), random.Random(seed), 600)
    keyed = _run(PriorityQueue.keyed(_cmp, lambda item: item), random.Random(seed), 600)
    assert keyed == plain
    assert len(plain) == 600


def test_queue_made_from_keys_goes_on_with_its_compare_after_a_push() -> None:
    rng = random.Random(5)
    items = [(rng.randrange(40), f"t{i:03d}") for i in range(200)]
    plain = PriorityQueue(_cmp, items)
    keyed = PriorityQueue.from_keys(_cmp, items, list(items))
    got, want = [], []
    for _ in range(120):  # beyond the popped entries a run keeps before it drops them
        got.append(keyed.pop())
        want.append(plain.pop())
    late = (3, "late")
    keyed.push(late)
    plain.push(late)
    copy = keyed.clone()
    while not plain.empty():
        got.append(keyed.pop())
        want.append(plain.pop())
    assert got == want
    assert keyed.empty()
    assert len(copy) == 81
    assert [copy.pop() for _ in range(81)] == want[120:]
