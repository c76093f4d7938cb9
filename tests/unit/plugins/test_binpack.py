"""binpack: Volcano's formula and arguments, with worked numbers."""

from __future__ import annotations

import pytest

from scheduler.framework.arguments import ArgumentError, Arguments
from scheduler.plugins.binpack import BinpackPlugin
from tests.unit.plugins.plugin_world import World, tier


def _score(w: World, args: str = "") -> float:
    ssn = w.session(tier("binpack", args))
    task = next(t for t in ssn.jobs["ns"].tasks.values() if t.name == "new")
    return ssn.node_order_score(task, ssn.nodes["n"])


def _world(task_cpu: float = 1, task_mem: float = 1, gpu: float = 0) -> World:
    w = World()
    w.node("n", cpu=4, mem_gi=8, scalars={"nvidia.com/gpu": 4000})
    w.pod("old", on="n", cpu=1, mem_gi=2, scalars={"nvidia.com/gpu": 1000})
    w.pod("new", cpu=task_cpu, mem_gi=task_mem, scalars={"nvidia.com/gpu": gpu * 1000} if gpu else None)
    return w


def test_default_weights_average_cpu_and_memory_fill() -> None:
    # cpu (1+1)/4 = 0.5, memory (2+1)/8 = 0.375 -> 100 x 0.875 / 2 = 43.75
    assert _score(_world()) == pytest.approx(43.75)


def test_cpu_weight_and_plugin_weight_scale_the_score() -> None:
    # cpu 0.5 x 3 + memory 0.375 x 1 = 1.875, / 4 = 0.46875, x 100 x 2 = 93.75
    assert _score(_world(), "binpack.weight: 2\nbinpack.cpu: 3") == pytest.approx(93.75)


def test_extra_resources_count_only_when_listed() -> None:
    w = _world(gpu=1)
    assert _score(w) == pytest.approx(43.75)
    # gpu (1+1)/4 = 0.5 x 2 = 1.0; cpu 0.5, memory 0.375 -> 1.875 / 4 = 0.46875 -> 46.875
    args = "binpack.resources: nvidia.com/gpu\nbinpack.resources.nvidia.com/gpu: 2"
    assert _score(w, args) == pytest.approx(46.875)


def test_a_resource_that_would_overflow_zeroes_the_whole_score() -> None:
    assert _score(_world(task_cpu=4)) == 0.0


def test_negative_resource_weights_are_taken_as_one() -> None:
    assert _score(_world(), "binpack.cpu: -5\nbinpack.memory: -1") == pytest.approx(43.75)


def test_a_zero_resource_weight_keeps_the_resource_out_of_the_sum() -> None:
    # memory weight 0 contributes 0 and adds 0 to the weight sum: cpu 0.5 / 1 -> 50
    assert _score(_world(), "binpack.memory: 0") == pytest.approx(50.0)


def test_weight_zero_registers_no_node_order() -> None:
    w = _world()
    ssn = w.session(tier("binpack", "binpack.weight: 0"))
    assert not ssn.has("node_order")


def test_a_non_integer_weight_is_rejected() -> None:
    with pytest.raises(ArgumentError):
        BinpackPlugin.validate(Arguments({"binpack.cpu": "heavy"}, "binpack"))


@pytest.mark.parametrize(
    "args", ["", "binpack.resources: nvidia.com/gpu\nbinpack.resources.nvidia.com/gpu: 2"]
)
def test_the_many_node_form_scores_each_node_as_the_one_node_form(args: str) -> None:
    w = World()
    for i, cpu in enumerate((2, 4, 8)):
        w.node(f"n{i}", cpu=cpu, mem_gi=8, scalars={"nvidia.com/gpu": 4000})
        w.pod(f"old{i}", on=f"n{i}", cpu=1, mem_gi=i + 1, scalars={"nvidia.com/gpu": 1000})
    w.pod("new", cpu=1.5, mem_gi=1, scalars={"nvidia.com/gpu": 1000})
    many_ssn, one_ssn = w.session(tier("binpack", args)), w.session(tier("binpack", args))
    task = next(t for t in many_ssn.jobs["ns"].tasks.values() if t.name == "new")
    nodes = many_ssn.node_list
    many = many_ssn._node_order_many["binpack"](task, nodes)
    one = [one_ssn.node_order_score(task, one_ssn.nodes[n.name]) for n in nodes]
    assert many == one and len(set(one)) == 3  # apart from a fresh plugin's one-node answers
    assert many_ssn._node_order_many["binpack"](task, nodes) == many  # again, from its memo


def test_score_shape_is_cpu_and_memory_unless_other_resources_are_weighted() -> None:
    """What the placement cache may share scores by: tasks with equal shapes score alike."""
    w = _world(gpu=1)
    ssn = w.session(tier("binpack"))
    task = next(t for t in ssn.jobs["ns"].tasks.values() if t.name == "new")
    assert ssn.score_shape(task) == ((task.resreq.milli_cpu, task.resreq.memory),)
    listed = w.session(tier("binpack", "binpack.resources: nvidia.com/gpu"))
    task = next(t for t in listed.jobs["ns"].tasks.values() if t.name == "new")
    assert listed.score_shape(task) is None  # the GPU request now counts: no promise


def test_the_cpu_memory_score_is_the_general_formula_float_for_float() -> None:
    """With only cpu and memory weighted (the default) the score is read from the request's and
    nodes' attributes: the same float as the general walk over the request's resources, under
    each weight mix, for requests below the resource threshold, nodes without a resource, and
    requests that would overflow a node."""
    from scheduler.model.node import NodeInfo
    from scheduler.model.objects import TaskInfo
    from scheduler.model.resources import Resource

    requests = [(0.0, 0.0), (0.05, 2.0**30), (500.0, 0.0), (1000.0, 3 * 2.0**30), (3000.0, 7 * 2.0**30)]
    nodes = [(4000.0, 8 * 2.0**30), (0.0, 8 * 2.0**30), (4000.0, 0.0), (3000.0, 2.0**33)]
    used = [(0.0, 0.0), (1000.0, 2 * 2.0**30), (2500.0, 6 * 2.0**30)]
    compared = 0
    for args in ({}, {"binpack.cpu": 3, "binpack.weight": 2}, {"binpack.memory": 0}, {"binpack.cpu": 0}):
        plugin = BinpackPlugin(Arguments(args))
        for cpu, mem in requests:
            task = TaskInfo.__new__(TaskInfo)
            task.resreq = Resource(cpu, mem, {"nvidia.com/gpu": 1000.0})
            for (acpu, amem), (ucpu, umem) in ((a, u) for a in nodes for u in used):
                n = NodeInfo.__new__(NodeInfo)
                n.allocatable, n.used = Resource(acpu, amem), Resource(ucpu, umem)
                want = plugin._score(task, n)
                got = plugin._score_cpu_memory(task, n)
                assert got == want and type(got) is type(want), (args, cpu, mem, acpu, amem, ucpu, umem)
                compared += want > 0
    assert compared > 20  # not only zeroes
