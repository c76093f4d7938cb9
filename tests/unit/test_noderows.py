"""The resource rows the placement cache's resource fit reads show the nodes as they are: a node
changed between two shapes' scans answers the second shape from its new resources."""

from __future__ import annotations

from scheduler.framework.fiterrors import FitErrors
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
from scheduler.model.objects import TaskStatus
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
