"""capacity's queue order over a tree and its share, each against the plain form of its rule.

The queue order is asked ~6 times for every queue a heap pops, and the share at every session
open and placement, so both are written for speed; these tests hold them to the straightforward
forms: leaves compared through their ancestors just below the deepest one they share (Volcano's
getQueueLevel over the ancestor lists), and the dominant ratio over the dimensions the queue
deserves (Volcano's ResourceNames).
"""

from __future__ import annotations

import itertools
import random

import pytest

from scheduler.framework.arguments import Arguments
from scheduler.model.objects import QueueInfo
from scheduler.model.resources import Resource
from scheduler.plugins.capacity import CapacityPlugin, _compare_share, _level
from scheduler.plugins.capacity.attrs import ROOT, QueueAttr, build_tree
from scheduler.plugins.capacity.compare import share, share_by_names

GI = 2**30


def _order_by_level(attrs: dict[str, QueueAttr], left: QueueInfo, right: QueueInfo) -> int:
    """The tree's queue order as the ancestor lists state it."""
    if left.priority != right.priority:
        return -1 if left.priority > right.priority else 1
    la, ra = attrs.get(left.name), attrs.get(right.name)
    if la is None or ra is None:
        return 0
    l_leaf, r_leaf = not la.children, not ra.children
    if l_leaf != r_leaf:
        return -1 if l_leaf else 1
    if not l_leaf:
        return _compare_share(la, ra)
    level = _level(la, ra)
    lp = la.ancestors[level + 1] if level + 1 < len(la.ancestors) else la.name
    rp = ra.ancestors[level + 1] if level + 1 < len(ra.ancestors) else ra.name
    return _compare_share(attrs[lp], attrs[rp])


def _random_tree(rng: random.Random, size: int) -> dict[str, QueueInfo]:
    """Queues under root at uneven depths, some with a priority of their own."""
    queues = {ROOT: QueueInfo(ROOT)}
    for i in range(size):
        parent = rng.choice(list(queues))
        queues[f"q{i}"] = QueueInfo(
            f"q{i}", parent="" if parent == ROOT else parent, priority=rng.choice([0, 0, 1])
        )
    return queues


@pytest.mark.parametrize("seed", range(8))
def test_the_tree_order_is_the_order_by_queue_level_for_every_pair(seed: int) -> None:
    rng = random.Random(seed)
    queues = _random_tree(rng, rng.randint(3, 40))
    plugin = CapacityPlugin(Arguments())
    plugin.hierarchy = True
    tree, _ = build_tree(queues, {}, Resource(64000, 256 * GI))
    plugin.attrs = tree.attrs
    for attr in tree.attrs.values():
        # few distinct shares, so that ties (and the deserved-or-not rule after them) come up
        attr.share = rng.choice([0.0, 0.25, 0.5, 0.5, 1.0, 1.5])
        attr.deserved = rng.choice([Resource(), Resource(1000, GI)])
    for left, right in itertools.product(queues.values(), repeat=2):
        want = _order_by_level(tree.attrs, left, right)
        assert plugin._tree_queue_order(left, right) == want, (left.name, right.name)


def test_root_alone_orders_as_before() -> None:
    queues = {ROOT: QueueInfo(ROOT)}
    plugin = CapacityPlugin(Arguments())
    plugin.attrs = build_tree(queues, {}, Resource(1000, GI))[0].attrs
    assert plugin._tree_queue_order(queues[ROOT], queues[ROOT]) == 0


def test_the_share_is_the_dominant_ratio_over_the_deserved_dimensions() -> None:
    rng = random.Random(7)
    values = [0.0, -0.0, 0.05, 0.1, 1.0, 500.0, 2000.0, 3.5 * GI, float("inf"), -1000.0]
    for _ in range(3000):
        deserved = Resource(rng.choice(values), rng.choice(values))
        allocated = Resource(rng.choice(values), rng.choice(values))
        if rng.random() < 0.2:
            deserved.scalars["nvidia.com/gpu"] = rng.choice(values)
            allocated.scalars["nvidia.com/gpu"] = rng.choice(values)
        got, want = share(allocated, deserved), share_by_names(allocated, deserved)
        assert got == want or (got != got and want != want), (allocated, deserved)
