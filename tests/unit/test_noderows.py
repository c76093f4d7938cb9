"""The resource rows the placement cache's resource fit reads show the nodes as they are: a node
changed between two shapes' scans answers the second shape from its new resources."""

from __future__ import annotations

import random
from typing import Any

from scheduler.framework.cycle import run_session
from scheduler.framework.fiterrors import FitErrors
from scheduler.framework.noderows import ResourceRows
from scheduler.framework.nodewindow import FIT, REFUSED
from scheduler.framework.placement import (
    PlacementCache,
    allocate_predicate,
    allocate_predicate_many,
    allocate_predicate_many_idle,
    predicate_nodes,
)
from scheduler.framework.session import SessionOptions
from scheduler.model import resfit
from scheduler.model.cluster import ClusterState
from scheduler.model.objects import TaskStatus
from scheduler.registry import default_configuration
from tests.builders import node, pod, podgroup, queue
from tests.unit.test_session_many import _pending, _session


def _cache(ssn: object) -> PlacementCache:
    return PlacementCache(
        ssn,  # type: ignore[arg-type]
        allocate_predicate(ssn),  # type: ignore[arg-type]
        check_many=allocate_predicate_many(ssn),  # type: ignore[arg-type]
        check_many_idle=allocate_predicate_many_idle(ssn),  # type: ignore[arg-type]
    )


def _resource_answers(task: object, nodes: list) -> tuple[list[int], bytearray]:
    codes = bytearray(len(nodes))
    return resfit.misfits_idle(task.init_resreq, nodes, list(range(len(nodes))), codes, FIT, REFUSED), codes  # type: ignore[attr-defined]


def test_rows_follow_a_node_changed_between_two_shapes() -> None:
    """Shape A builds the rows; a 3-CPU pod then goes to a 4-CPU node; shape B (another vGPU
    request, the same 3 CPUs) must see that node short of CPU, as the node's Resources say."""
    ssn = _session(nodes=12, pods=6)
    cache = _cache(ssn)
    nodes = ssn.node_list
    tasks = _pending(ssn)
    first, second = tasks[0], next(t for t in tasks[1:] if cache._key(t)[2:] != cache._key(tasks[0])[2:])
    rows = cache._resource_rows()
    all_at = list(range(len(nodes)))
    small = next(i for i, n in enumerate(nodes) if n.idle.milli_cpu < 6000)
    assert (
        rows.misfits_idle(second.init_resreq, nodes, all_at, bytearray(len(nodes)), FIT, REFUSED)
        == (_resource_answers(second, nodes)[0])
    )
    assert small not in _resource_answers(second, nodes)[0]  # it fits before the placement
    ssn.place(first, nodes[small], TaskStatus.ALLOCATED)
    got_codes = bytearray(len(nodes))
    got = cache._resource_rows().misfits_idle(second.init_resreq, nodes, all_at, got_codes, FIT, REFUSED)
    want, want_codes = _resource_answers(second, nodes)
    assert small in want  # the placement used the node's CPU: a stale row would still fit
    assert got == want and got_codes == want_codes


def test_a_scan_after_a_placement_is_the_fresh_scan() -> None:
    """Every shape's window, scanned after placements on nodes other shapes had scanned, is the
    window a fresh predicate scan finds, with the same errors."""
    ssn = _session(nodes=24, pods=8)
    ssn.options = SessionOptions(minimum_feasible_nodes=5, percentage_nodes_to_find=30)
    cache = _cache(ssn)
    check = allocate_predicate(ssn)
    nodes = ssn.node_list
    for k, task in enumerate(_pending(ssn)):
        start = ssn.predicate_round_robin
        errors = FitErrors()
        got = cache.feasible(task, errors)
        ssn.predicate_round_robin = start
        want_errors = FitErrors()
        want = predicate_nodes(ssn, task, nodes, check, want_errors)
        assert got == want and errors.nodes == want_errors.nodes
        if got:
            ssn.place(task, got[k % len(got)], TaskStatus.ALLOCATED)


def test_rows_taken_from_the_last_session_are_the_rows_built_afresh(monkeypatch: Any) -> None:
    """allocate's cache takes the rows the last session's cache kept and writes again only the
    nodes that may differ: after running pods came and went, sessions bound pods (some binds not
    confirmed) and nodes were replaced, they are the rows a build over every node gives."""
    taken = [0]
    kept_rows = PlacementCache._kept_rows

    def compared(self: PlacementCache) -> ResourceRows | None:
        rows = kept_rows(self)
        if rows is not None:
            fresh = ResourceRows(self.nodes, rows.seq)
            fresh.keys = dict(rows.keys)
            fresh._build()
            assert rows.nodes is self.nodes
            assert (rows.values, rows.ok, rows.stride) == (fresh.values, fresh.ok, fresh.stride)
            taken[0] += 1
        return rows

    monkeypatch.setattr(PlacementCache, "_kept_rows", compared)
    rng = random.Random(11)
    state = ClusterState()
    state.apply_queue(queue("default"))
    for i in range(8):
        state.apply_node(node(f"n{i}", cpu="8", memory="16Gi", extra={"nvidia.com/gpu": "2"}))
    # never fits: allocate keeps its refusals, and the cache its rows, every session
    state.apply_podgroup(podgroup("big"))
    state.apply_pod(pod("big-0", cpu="64", group="big"))
    conf = default_configuration()
    for serial in range(50):
        name = f"n{rng.randrange(8)}"
        pick = rng.random()
        if pick < 0.3:
            state.apply_pod(pod(f"r{serial}", cpu="1", node_name=name, phase="Running"))
        elif pick < 0.45:
            on = sorted(t.key for t in state.tasks.values() if t.node_name)
            if on:
                ns, pname = rng.choice(on).split("/")
                state.remove_pod(ns, pname)
        elif pick < 0.55:
            state.apply_node(
                node(name, cpu=rng.choice(["8", "12"]), memory="16Gi", extra={"nvidia.com/gpu": "2"})
            )
        else:
            state.apply_podgroup(podgroup(f"g{serial}", min_member=1))
            gpu = {"nvidia.com/gpu": "1"} if rng.random() < 0.3 else None
            state.apply_pod(pod(f"g{serial}-0", cpu=str(rng.randint(1, 3)), group=f"g{serial}", limits=gpu))
        res = run_session(state.snapshot(), conf, SessionOptions(deterministic=True), random.Random(serial))
        for b in res.binds:
            if rng.random() < 0.8:
                state.assume_bound(b.task.key, b.node, b.annotations)
    assert taken[0] > 30
