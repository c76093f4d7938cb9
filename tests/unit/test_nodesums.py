"""The cluster totals a session opens with (framework/nodesums): kept from one session to the next
and redone for the nodes that changed, always bit for bit what a walk over the nodes gives."""

from __future__ import annotations

import random
from typing import Any

from scheduler.framework.cycle import close_session, open_session, run_actions
from scheduler.framework.nodesums import (
    CARRY,
    _fresh_scalars,
    _fresh_scalars_by_node,
    _Kept,
    _scalars,
    node_totals,
    walk_totals,
)
from scheduler.framework.session import Session, SessionOptions
from scheduler.model.cluster import ClusterState
from scheduler.model.objects import TaskStatus
from scheduler.model.resources import Resource
from scheduler.registry import default_configuration
from scheduler.sim.bench import gen_nodes, gen_pending_jobs, gen_queues, gen_running


def _cluster(nodes: int = 30) -> tuple[ClusterState, list[str]]:
    state = ClusterState()
    gen_nodes(state, nodes)
    queues = gen_queues(state, 2, 0, nodes)
    gen_running(state, 3 * nodes, nodes, queues)
    gen_pending_jobs(state, 40, 10, queues, random.Random(5))
    return state, queues


def _open(state: ClusterState) -> Session:
    return open_session(state.snapshot(), default_configuration(), SessionOptions(), rng=random.Random(1))


def _fields(r: Resource) -> tuple[Any, ...]:
    return (r.milli_cpu, r.memory, r.pods, r.scalars)


def _walked(ssn: Session) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    alloc = Resource()
    used = Resource()
    for n in ssn.node_list:
        alloc.add(n.allocatable)
        used.add(n.used)
    return _fields(alloc), _fields(used)


def _kept(ssn: Session) -> Any:
    """What the session keeps for the next one (its own carry, not what it was handed)."""
    changes = ssn._job_changes
    assert changes is not None
    return changes.carry[CARRY][1]


def test_the_totals_are_kept_and_redone_for_changed_nodes_only() -> None:
    state, _ = _cluster()
    kept = None
    for period in range(4):
        ssn = _open(state)
        assert (_fields(ssn.total_resource), _fields(ssn.used_total())) == _walked(ssn)
        now = _kept(ssn)
        assert isinstance(now, _Kept)
        if period:
            # the previous session's totals were built on (the same object), not walked again
            assert now is kept
        kept = now
        # the session binds a few pods: their nodes change for the next period
        run_actions(ssn)
        res = close_session(ssn)
        assert res.binds
        for b in res.binds[: 3 + period]:
            state.assume_bound(b.task.key, b.node, b.annotations)


def test_the_used_total_after_a_placement_is_walked() -> None:
    state, _ = _cluster()
    ssn = _open(state)
    before = _fields(ssn.used_total())
    task = next(t for j in ssn.jobs.values() for t in j.tasks.values() if not t.node_name)
    ssn.place(task, ssn.node_list[3], TaskStatus.ALLOCATED)
    after = ssn.used_total()
    assert _fields(after) == _walked(ssn)[1] and _fields(after) != before


def test_changed_views_at_any_position_are_redone_exactly() -> None:
    """node_totals over a kept state whose views differ at some positions: the walk's totals."""
    state, _ = _cluster(12)
    first = _open(state)
    _, _, kept = node_totals(first.node_list, None)
    assert kept is not None
    state2, _ = _cluster(12)
    rng = random.Random(3)
    for node in state2.nodes.values():
        node.used.milli_cpu += rng.choice((0, 100, 2500))
    other = _open(state2).node_list
    mixed = [o if i % 3 == 0 else n for i, (n, o) in enumerate(zip(first.node_list, other, strict=True))]
    alloc, used, again = node_totals(mixed, kept)
    assert again is kept
    walked = walk_totals(mixed)
    assert (_fields(alloc), _fields(used)) == (_fields(walked[0]), _fields(walked[1]))


def test_amounts_that_are_not_exact_are_walked_and_not_kept() -> None:
    state, _ = _cluster(6)
    base = _open(state).node_list
    n = base[2]
    for change in ("fraction", "scalar", "huge"):
        saved = (n.used.milli_cpu, dict(n.allocatable.scalars), n.allocatable.memory)
        if change == "fraction":
            n.used.milli_cpu += 0.5
        elif change == "scalar":
            n.allocatable.scalars["nvidia.com/gpu"] = 0.25
        else:
            n.allocatable.memory = float(2**53 - 1)  # odd: the sum past 2**53 is not a float exactly
        alloc, used, kept = node_totals(base, None)
        walked = walk_totals(base)
        assert (_fields(alloc), _fields(used)) == (_fields(walked[0]), _fields(walked[1]))
        assert kept is None, change
        n.used.milli_cpu, n.allocatable.scalars, n.allocatable.memory = saved[0], saved[1], saved[2]
    assert node_totals(base, None)[2] is not None


def test_extended_resources_are_kept_per_name_in_the_order_a_walk_meets_them() -> None:
    """Real nodes report ephemeral-storage and hugepages, GPU nodes a device: the totals are kept
    with them, named in the order a walk over the nodes meets the names, as nodes gain and lose
    names at any position (the first node with a name included)."""
    state, _ = _cluster(12)
    base = _open(state).node_list
    rng = random.Random(11)
    names = ("ephemeral-storage", "hugepages-2Mi", "nvidia.com/gpu", "example.com/fpga")
    for node in base:
        node.allocatable.scalars = {"ephemeral-storage": 500e9, "hugepages-2Mi": 0.0}
    _, _, kept = node_totals(base, None)
    assert kept is not None
    for _ in range(60):
        node = base[rng.randrange(len(base))]
        for side in (node.allocatable, node.used):
            picked = rng.sample(names, rng.randint(0, 3))
            side.scalars = {name: float(rng.choice((0, 1000, 8000, 2**40))) for name in picked}
        versions = [rng.random() for _ in base]  # every position looked at again
        alloc, used, again = node_totals(base, kept, versions)
        walked = walk_totals(base)
        assert (_fields(alloc), _fields(used)) == (_fields(walked[0]), _fields(walked[1]))
        assert list(alloc.scalars) == list(walked[0].scalars)
        assert list(used.scalars) == list(walked[1].scalars)
        assert again is kept


def test_totals_beyond_2_to_the_53_are_kept_while_a_power_of_two_divides_every_amount() -> None:
    """20,000 nodes of 512 GiB hold more than 2**53 bytes: a float sum of multiples of 2**39 is
    still exact there, so the totals are kept; one amount that is odd makes them walked again."""
    state, _ = _cluster(12)
    base = _open(state).node_list
    for node in base:
        node.allocatable.memory = float(2**50)
        node.allocatable.scalars = {"ephemeral-storage": float(2**51)}
    alloc, used, kept = node_totals(base, None)
    walked = walk_totals(base)
    assert kept is not None and alloc.memory == 12 * 2**50 > 2**53
    assert (_fields(alloc), _fields(used)) == (_fields(walked[0]), _fields(walked[1]))
    base[5].allocatable.memory = float(2**50 + 1)
    alloc, used, again = node_totals(base, kept, [object() for _ in base])
    walked = walk_totals(base)
    assert again is None and (_fields(alloc), _fields(used)) == (_fields(walked[0]), _fields(walked[1]))


def test_many_changed_nodes_naming_the_same_extended_resources_are_redone_exactly() -> None:
    """After a big session most nodes changed only in their pods: they name the same extended
    resources with the same amounts, which is found for all of them at once; a node among them
    that gains, loses or changes an amount (0 included) is still redone exactly."""
    state, _ = _cluster(40)
    base = _open(state).node_list
    for node in base:
        node.allocatable.scalars = {"ephemeral-storage": 500e9, "hugepages-2Mi": 0.0}
        node.used.scalars = {"ephemeral-storage": 1000.0} if node.name < base[20].name else {}
    _, _, kept = node_totals(base, None)
    assert kept is not None
    rng = random.Random(3)
    for _ in range(80):
        for node in rng.sample(base, 15):
            node.used.milli_cpu += 1000.0
        if rng.random() < 0.4:
            node = rng.choice(base)
            side = rng.choice((node.allocatable, node.used))
            picked = rng.sample(("ephemeral-storage", "hugepages-2Mi", "nvidia.com/gpu"), rng.randint(0, 2))
            side.scalars = {name: float(rng.choice((0, 1000, 500e9))) for name in picked}
        alloc, used, again = node_totals(base, kept, [object() for _ in base])  # all looked at again
        walked = walk_totals(base)
        assert (_fields(alloc), _fields(used)) == (_fields(walked[0]), _fields(walked[1]))
        assert list(alloc.scalars) == list(walked[0].scalars)
        assert list(used.scalars) == list(walked[1].scalars)
        assert again is kept


class _Side:
    """Just what _fresh_scalars reads of a node: its allocatable's extended resources."""

    def __init__(self, scalars: dict[str, Any]) -> None:
        self.allocatable = Resource()
        self.allocatable.scalars = scalars


def test_fresh_extended_resources_by_column_equal_the_node_by_node_pass() -> None:
    rng = random.Random(7)
    names = ["ephemeral-storage", "nvidia.com/gpu", "hugepages-2Mi", "example.com/fpga"]
    cases: list[list[dict[str, Any]]] = []
    for _ in range(40):
        nodes = []
        for _ in range(rng.randint(0, 12)):
            picked = rng.sample(names, rng.randint(0, len(names)))
            nodes.append({n: float(rng.choice([0, 1000, 3 << 20, 5 * 1024**3])) for n in picked})
        cases.append(nodes)
    # amounts the kept totals refuse, and amounts of other types (the node-by-node pass decides)
    cases += [
        [{"a": 1000.0}, {"a": 1.5}],
        [{"a": 1000.0}, {"a": -1000.0}],
        [{"a": float("nan")}],
        [{"a": float("inf")}],
        [{"a": -0.0}, {"b": 2000.0, "a": 8.0}],
        [{"a": 1000}, {"a": 2000.0}],
        [{"a": None}, {"a": 1000.0}],
        [{"a": True}],
    ]
    for dicts in cases:
        nodes = [_Side(d) for d in dicts]
        got = _fresh_scalars(nodes, _scalars[0])  # type: ignore[arg-type]
        want = _fresh_scalars_by_node(dicts, len(dicts))
        if want is None:
            assert got is None, dicts
            continue
        assert got is not None, dicts
        for field in ("values", "present", "sums", "shifts"):
            assert list(getattr(got, field).items()) == list(getattr(want, field).items()), (field, dicts)
