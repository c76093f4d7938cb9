"""Session.predicate_at, the plugins asked by node position, answers exactly what predicate_many
and predicate answer node by node: the same verdicts in the same order, on nodes that are full,
cordoned, tainted, without room for the vGPU ask or without a vGPU ledger at all, before and after
placements change them; a plugin whose many form was replaced or dropped is asked through what
replaced it, and a failure is contained to its node as predicate contains it."""

from __future__ import annotations

import random
from typing import Any

from scheduler.framework.cycle import open_session
from scheduler.framework.session import Session, SessionOptions
from scheduler.framework.status import Unfit
from scheduler.model.cluster import ClusterState
from scheduler.model.node import NodeInfo
from scheduler.model.objects import TaskInfo, TaskStatus
from scheduler.plugins.deviceshare import annotations as ann
from scheduler.registry import parse
from scheduler.sim.nodegen import make_nodes, parse_node_spec
from tests.unit.test_session_many import WEIGHTED, _pending, _reasons, _session, _with_a_bug


def _mixed_session(seed: int) -> Session:
    """vGPU nodes of two sizes and CPU-only nodes (no vGPU ledger), one-pod jobs asking one to
    three cards of two sizes; some nodes cordoned, tainted or one pod short of full."""
    state = ClusterState()
    specs = [
        parse_node_spec("10:cpu=8,memory=32Gi,gpu=2xA100-40GB"),
        parse_node_spec("4:cpu=64,memory=256Gi"),
        parse_node_spec("10:cpu=64,memory=256Gi,gpu=8xA100-40GB"),
    ]
    for node in make_nodes(specs):
        state.apply_node(node)
    state.apply_queue(
        {"kind": "Queue", "metadata": {"name": "default"}, "spec": {"weight": 1}, "status": {"state": "Open"}}
    )
    rng = random.Random(seed)
    for j in range(12):
        name = f"job-{j}"
        meta = {"name": name, "namespace": "ml", "creationTimestamp": float(j)}
        state.apply_podgroup({"kind": "PodGroup", "metadata": meta, "spec": {"minMember": 1, "queue": "default"},
                              "status": {"phase": "Inqueue"}})  # fmt: skip
        limits = {
            ann.VGPU_NUMBER: str(rng.choice((1, 2, 3))),
            ann.VGPU_MEMORY: str(rng.choice((1024, 30000))),
            ann.VGPU_CORES: "10",
        }
        state.apply_pod({
            "kind": "Pod",
            "metadata": {**meta, "uid": f"uid-{name}", "annotations": {"scheduling.k8s.io/group-name": name}},
            "spec": {"schedulerName": "volcano", "containers": [
                {"name": "main", "resources": {"requests": {"cpu": "1"}, "limits": limits}}]},
            "status": {"phase": "Pending"},
        })  # fmt: skip
    ssn = open_session(state.snapshot(), parse(WEIGHTED), SessionOptions(), rng=random.Random(seed))
    nodes = ssn.node_list
    nodes[1].unschedulable = True
    nodes[12].taints = [{"key": "k", "value": "v", "effect": "NoSchedule"}]
    nodes[16].max_task_num = len(nodes[16].tasks) + 1  # full after one placement
    return ssn


def _three_ways(ssn: Session, task: TaskInfo, at: list[int]) -> tuple[list[Any], list[Any], list[Any]]:
    nodes = [ssn.node_list[i] for i in at]
    return (
        _reasons(ssn.predicate_at(task, at)),
        _reasons(ssn.predicate_many(task, nodes)),
        _reasons([ssn.predicate(task, n) for n in nodes]),
    )


def test_asks_by_position_answer_what_the_nodes_answer_one_by_one() -> None:
    for seed in range(4):
        ssn = _mixed_session(seed)
        rng = random.Random(seed)
        total = len(ssn.node_list)
        refused = passed = 0
        for task in _pending(ssn):
            at = rng.sample(range(total), rng.randint(1, total))
            by_at, many, one = _three_ways(ssn, task, at)
            assert by_at == many == one
            refused += sum(r is not None for r in by_at)
            passed += by_at.count(None)
            # the task placed on a node that fits it: that node changes for the next task's ask
            fits = [i for i, r in zip(at, by_at, strict=True) if r is None]
            if fits:
                ssn.place(task, ssn.node_list[rng.choice(fits)], TaskStatus.ALLOCATED)
        assert refused and passed
        assert not ssn.plugin_errors


def test_a_node_that_fills_up_is_refused_by_position_after_its_placement() -> None:
    ssn = _mixed_session(7)
    full = ssn.node_list[16]
    first, second = _pending(ssn)[:2]
    at = list(range(len(ssn.node_list)))
    assert _reasons(ssn.predicate_at(first, at))[16] is None  # builds the flags: plain
    ssn.place(first, full, TaskStatus.ALLOCATED)
    got = _reasons(ssn.predicate_at(second, at))
    assert got[16] == "Too many pods"
    assert got == _reasons([ssn.predicate(second, n) for n in ssn.node_list])


def test_a_replaced_many_form_is_asked_instead_of_the_form_by_position() -> None:
    """A plugin whose one-node function was replaced and many form dropped (as tests and wrappers
    do) is asked node by node: its bug is met and contained to its node, as predicate contains it."""
    ssn = _session()
    bad, refused = ssn.node_list[3].name, ssn.node_list[5].name
    _with_a_bug(ssn, "predicate", "deviceshare", bad, refused)
    task = _pending(ssn)[0]
    at = list(range(len(ssn.node_list)))
    got = ssn.predicate_at(task, at)
    errors = list(ssn.plugin_errors)
    want = [ssn.predicate(task, n) for n in ssn.node_list]
    assert _reasons(got) == _reasons(want)
    assert "refused by the test" in _reasons(got)
    assert len(errors) == 1 and errors[0].where == f"node {bad}"


def test_a_form_by_position_that_raises_sends_the_nodes_down_the_one_node_path() -> None:
    ssn = _session()
    task = _pending(ssn)[0]
    want = _reasons([ssn.predicate(task, n) for n in ssn.node_list])

    def broken(task: TaskInfo, at: list[int]) -> list[int]:
        raise RuntimeError("bug in the form by position")

    many, _ = ssn._predicate_at["deviceshare"]
    ssn._predicate_at["deviceshare"] = (many, broken)
    assert _reasons(ssn.predicate_at(task, list(range(len(ssn.node_list))))) == want
    assert not ssn.plugin_errors  # the one-node forms did not fail: nothing to record


def test_a_form_by_position_may_leave_a_task_to_the_many_form() -> None:
    """None from a form by position: the plugin's many form answers (here for every task, as the
    predicates plugin answers for a pod with a node selector)."""
    ssn = _session(nodes=12)
    asked: list[list[NodeInfo]] = []
    many, _ = ssn._predicate_at["predicates"]

    def listing(task: TaskInfo, nodes: list[NodeInfo]) -> list[Unfit | None]:
        asked.append(nodes)
        return many(task, nodes)

    ssn._predicate_many["predicates"] = listing
    ssn._predicate_at["predicates"] = (listing, lambda task, at: None)
    task = _pending(ssn)[0]
    at = [5, 0, 7, 3]
    by_at, _, one = _three_ways(ssn, task, at)
    assert by_at == one
    passed = [ssn.node_list[i] for i, r in zip(at, by_at, strict=True) if r is None]
    assert asked[0] == passed  # the nodes deviceshare (the tier before) passed, in their order
