"""nodeorder: each kube-scheduler scorer's 0..100 score and Volcano's weighting, with worked numbers."""

from __future__ import annotations

import math

import pytest

from scheduler.framework.arguments import ArgumentError, Arguments
from scheduler.plugins.nodeorder import NodeOrderPlugin, default_normalize
from tests.unit.plugins.plugin_world import World, tier

ONLY = {
    "least": "leastrequested.weight",
    "most": "mostrequested.weight",
    "balanced": "balancedresource.weight",
    "nodeaffinity": "nodeaffinity.weight",
    "podaffinity": "podaffinity.weight",
    "taint": "tainttoleration.weight",
    "spread": "podtopologyspread.weight",
}


def _only(scorer: str, weight: int = 1) -> str:
    lines = [f"{key}: {weight if name == scorer else 0}" for name, key in ONLY.items()]
    return tier("nodeorder", "\n".join(lines))


def _scores(w: World, conf: str, task: str = "new") -> dict[str, float]:
    ssn = w.session(conf)
    t = next(t for j in ssn.jobs.values() for t in j.tasks.values() if t.name == task)
    return ssn.batch_node_order_scores(t, ssn.node_list)


def _two_nodes() -> World:
    w = World()
    w.node("busy", cpu=4, mem_gi=8)
    w.node("idle", cpu=4, mem_gi=8)
    w.pod("old", on="busy", cpu=2, mem_gi=1)
    w.pod("new", cpu=1, mem_gi=1)
    return w


def test_least_requested_prefers_the_emptier_node() -> None:
    # busy: cpu (4-3)/4 -> 25, memory (8-2)/8 -> 75 => 50; idle: cpu 75, memory 87 => 81
    assert _scores(_two_nodes(), _only("least")) == {"busy": 50.0, "idle": 81.0}


def test_most_requested_prefers_the_fuller_node() -> None:
    # busy: cpu 75, memory 25 => 50; idle: cpu 25, memory 12 => 18
    assert _scores(_two_nodes(), _only("most")) == {"busy": 50.0, "idle": 18.0}


def test_balanced_resource_prefers_equal_cpu_and_memory_fractions() -> None:
    # busy: 0.75 vs 0.25 -> std 0.25 -> 75; idle: 0.25 vs 0.125 -> std 0.0625 -> 93
    assert _scores(_two_nodes(), _only("balanced")) == {"busy": 75.0, "idle": 93.0}


def test_default_weights_sum_the_scorers() -> None:
    # least 50 + balanced 75 + taint 100 x 3 = 425 on busy; 81 + 93 + 300 = 474 on idle
    assert _scores(_two_nodes(), tier("nodeorder")) == {"busy": 425.0, "idle": 474.0}


def test_weights_multiply_and_zero_switches_a_scorer_off() -> None:
    assert _scores(_two_nodes(), _only("least", 3)) == {"busy": 150.0, "idle": 243.0}
    w = _two_nodes()
    ssn = w.session(tier("nodeorder", "\n".join(f"{k}: 0" for k in ONLY.values())))
    assert not ssn.has("batch_node_order")


def test_preferred_node_affinity_is_normalised_to_the_best_node() -> None:
    w = World()
    w.node("both", labels={"zone": "a", "ssd": "1"})
    w.node("zone", labels={"zone": "a"})
    w.node("none")
    aff = {
        "nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 20,
                    "preference": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]},
                },
                {"weight": 60, "preference": {"matchExpressions": [{"key": "ssd", "operator": "Exists"}]}},
            ]
        }
    }
    w.pod("new", affinity=aff)
    # raw 80, 20, 0 -> 100 x raw / 80 = 100, 25, 0; weight 2
    assert _scores(w, _only("nodeaffinity", 2)) == {"both": 200.0, "zone": 50.0, "none": 0.0}


def test_taint_toleration_score_is_reversed_prefer_no_schedule_count() -> None:
    soft = [{"key": "a", "effect": "PreferNoSchedule"}, {"key": "b", "effect": "PreferNoSchedule"}]
    w = World()
    w.node("two", taints=soft)
    w.node("one", taints=soft[:1])
    w.node("clean")
    w.pod("new")
    # counts 2, 1, 0 -> 100 - 100 x c / 2 = 0, 50, 100
    assert _scores(w, _only("taint")) == {"two": 0.0, "one": 50.0, "clean": 100.0}


def test_pod_affinity_score_is_min_max_normalised_over_topology_domains() -> None:
    w = World()
    w.node("a1", labels={"zone": "a"})
    w.node("a2", labels={"zone": "a"})
    w.node("b1", labels={"zone": "b"})
    w.node("c1", labels={"zone": "c"})
    w.pod("cache", on="a1", labels={"app": "cache"})
    w.pod("db", on="b1", labels={"app": "db"})
    aff = {
        "podAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 10,
                    "podAffinityTerm": {
                        "labelSelector": {"matchLabels": {"app": "cache"}},
                        "topologyKey": "zone",
                    },
                }
            ]
        },
        "podAntiAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 5,
                    "podAffinityTerm": {
                        "labelSelector": {"matchLabels": {"app": "db"}},
                        "topologyKey": "zone",
                    },
                }
            ]
        },
    }
    w.pod("new", affinity=aff)
    # raw: zone a +10, zone b -5, zone c 0 -> min -5, max 10: 100 x (s + 5) / 15
    assert _scores(w, _only("podaffinity")) == {"a1": 100.0, "a2": 100.0, "b1": 0.0, "c1": 33.0}


def test_existing_pods_preferred_terms_attract_the_incoming_pod() -> None:
    w = World()
    w.node("n1")
    w.node("n2")
    likes = {
        "podAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 7,
                    "podAffinityTerm": {
                        "labelSelector": {"matchLabels": {"app": "web"}},
                        "topologyKey": "kubernetes.io/hostname",
                    },
                }
            ]
        }
    }
    w.pod("friend", on="n1", affinity=likes)
    w.pod("new", labels={"app": "web"})
    assert _scores(w, _only("podaffinity")) == {"n1": 100.0, "n2": 0.0}


def test_topology_spread_scores_emptier_domains_higher() -> None:
    w = World()
    w.node("a1", labels={"zone": "a"})
    w.node("b1", labels={"zone": "b"})
    w.node("nozone")
    for i in range(3):
        w.pod(f"a{i}", on="a1", labels={"app": "web"})
    w.pod("b0", on="b1", labels={"app": "web"})
    spread = [
        {
            "maxSkew": 1,
            "topologyKey": "zone",
            "whenUnsatisfiable": "ScheduleAnyway",
            "labelSelector": {"matchLabels": {"app": "web"}},
        }
    ]
    w.pod("new", labels={"app": "web"}, topology_spread=spread)
    # two zones: weight ln(4); raw a = round(3 ln 4) = 4, b = round(ln 4) = 1
    # normalised 100 x (max + min - s) / max: a = 100 x 1 / 4 = 25, b = 100 x 4 / 4 = 100; nozone ignored
    assert round(3 * math.log(4)) == 4
    assert _scores(w, _only("spread")) == {"a1": 25.0, "b1": 100.0, "nozone": 0.0}


def test_default_normalize_divides_by_the_maximum_and_can_reverse() -> None:
    assert default_normalize({"a": 3, "b": 1, "c": 0}) == {"a": 100, "b": 33, "c": 0}
    assert default_normalize({"a": 3, "b": 1, "c": 0}, reverse=True) == {"a": 0, "b": 67, "c": 100}
    assert default_normalize({"a": 0}, reverse=True) == {"a": 100}


def test_a_non_integer_weight_is_rejected() -> None:
    with pytest.raises(ArgumentError):
        NodeOrderPlugin.validate(Arguments({"nodeaffinity.weight": "high"}, "nodeorder"))


def _cached_vs_fresh(w: World, fits: list | None = None) -> list[tuple[dict[str, float], dict[str, float]]]:
    from scheduler.framework.cycle import open_session
    from scheduler.framework.fiterrors import FitErrors
    from scheduler.framework.placement import PlacementCache, allocate_predicate, score_nodes
    from scheduler.model.objects import QueueInfo, TaskStatus
    from scheduler.model.snapshot import Snapshot
    from scheduler.registry import parse

    conf = 'actions: "allocate"\ntiers:\n- plugins:\n  - name: predicates\n  - name: nodeorder\n  - name: binpack\n'
    snap = Snapshot(
        nodes=w.nodes,
        jobs=w.jobs,
        queues={"default": QueueInfo("default", 1)},
        namespaces={},
        has_required_anti_affinity=False,
    )
    ssn = open_session(snap, parse(conf))
    tasks = sorted(
        (t for j in ssn.jobs.values() for t in j.tasks.values() if t.status == TaskStatus.PENDING),
        key=lambda t: t.name,
    )
    cache = PlacementCache(ssn, allocate_predicate(ssn))
    assert cache.enabled and cache.splits is not None  # the cached, split path is the one taken
    pairs = []
    for t in tasks:
        nodes = cache.feasible(t, FitErrors())
        pairs.append((cache.scores(t, nodes), score_nodes(ssn, t, nodes)))
        if fits is not None:
            fits.append(
                (
                    [n.name for n in cache.idle_fit(t, nodes)],
                    [n.name for n in nodes if t.init_resreq.less_equal(n.idle)],
                )
            )
        ssn.place(t, max(nodes, key=lambda n: n.name), TaskStatus.ALLOCATED)
    return pairs


@pytest.mark.parametrize("tainted", [False, True])
def test_cached_split_scores_equal_fresh_scores_after_placements(tainted: bool) -> None:
    w = World()
    soft = [{"key": "a", "effect": "PreferNoSchedule"}]
    w.node("n1", cpu=3, labels={"zone": "a"})
    w.node("n2", cpu=7, mem_gi=5, taints=soft if tainted else None)
    w.node("n3", cpu=5, labels={"zone": "a"})
    aff = {
        "nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 20,
                    "preference": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]},
                }
            ]
        }
    }
    for i in range(3):
        w.pod(f"plain{i}", ns="p", cpu=0.7, mem_gi=0.3)
        w.pod(f"aff{i}", ns="q", cpu=0.3, mem_gi=0.9, affinity=aff)
        w.pod(f"same{i}", ns="r", cpu=0.7, mem_gi=0.3)  # another job of plain's shape shares its scores
    pairs = _cached_vs_fresh(w)
    assert len(pairs) == 9
    for cached, fresh in pairs:
        assert cached == fresh
    # the placements moved the scores: the cache must have followed them
    assert pairs[0][1] != pairs[1][1] or pairs[0][1] != pairs[2][1]


def test_cached_idle_fit_follows_placements() -> None:
    from scheduler.model.objects import TaskStatus

    w = World()
    w.node("n1", cpu=4)
    w.node("n2", cpu=2)
    # n2 keeps fitting FutureIdle thanks to the releasing pod after the first placement eats Idle
    w.pod("leaving", ns="old", on="n2", cpu=1, mem_gi=0.1, status=TaskStatus.RELEASING)
    for i in range(2):
        w.pod(f"p{i}", ns="p", cpu=0.7, mem_gi=0.1)
    fits: list = []
    _cached_vs_fresh(w, fits)
    assert fits == [(["n1", "n2"], ["n1", "n2"]), (["n1"], ["n1"])]


def test_resource_scores_fast_path_equals_the_three_scorers() -> None:
    import random

    from scheduler.model.node import NodeInfo
    from scheduler.model.resources import Resource
    from scheduler.plugins.k8s.noderesources import (
        balanced_allocation,
        least_allocated,
        most_allocated,
        resource_scores,
    )

    rng = random.Random(3)
    gi = 2**30
    for i in range(400):
        cpu = rng.choice([0, 1000, 3000, 32000])
        mem = rng.choice([0, 1 * gi, 7 * gi, 128 * gi])
        node = NodeInfo(f"n{i}", Resource(cpu, mem))
        node.used = Resource(rng.randrange(0, 40000), rng.randrange(0, 140) * gi // 3)
        scalars = {"nvidia.com/gpu": 1000.0} if i % 7 == 0 else None
        req = Resource(rng.choice([0, 100, 1500, 4000]), rng.choice([0, gi // 5, 3 * gi]), scalars)
        for wl, wm, wb in [(1, 0, 1), (2, 3, 0), (0, 1, 5), (1, 1, 1)]:
            want = (
                wl * least_allocated(node, req)
                + wm * most_allocated(node, req)
                + wb * balanced_allocation(node, req)
            )
            assert resource_scores(node, req, wl, wm, wb) == want, (node.name, wl, wm, wb)


def test_score_shape_is_cpu_and_memory_unless_the_task_asks_whole_gpus() -> None:
    w = World()
    w.node("n", cpu=4, mem_gi=8, scalars={"nvidia.com/gpu": 4000})
    w.pod("plain", cpu=1, mem_gi=1)
    w.pod("gpu", cpu=1, mem_gi=1, scalars={"nvidia.com/gpu": 1000})
    ssn = w.session(tier("nodeorder"))
    tasks = {t.name: t for t in ssn.jobs["ns"].tasks.values()}
    plain = tasks["plain"].resreq
    assert ssn.score_shape(tasks["plain"]) == ((plain.milli_cpu, plain.memory),)
    assert ssn.score_shape(tasks["gpu"]) is None  # the GPU joins the balanced fractions


def test_per_node_scores_follow_the_request_when_tasks_alternate() -> None:
    # per_nodes keeps a plan (weights, scorer) for the last request object it met: tasks asked in
    # turn, a whole-GPU one among them, must each get their own request's score
    w = World()
    w.node("a", cpu=8, mem_gi=16, scalars={"nvidia.com/gpu": 4000})
    w.node("b", cpu=4, mem_gi=32, scalars={"nvidia.com/gpu": 4000})
    w.pod("old", on="a", cpu=3, mem_gi=2)
    w.pod("small", cpu=1, mem_gi=1)
    w.pod("large", cpu=3, mem_gi=12)
    w.pod("gpu", cpu=1, mem_gi=1, scalars={"nvidia.com/gpu": 2000})
    ssn = w.session(tier("nodeorder"))
    plugin = ssn.plugins["nodeorder"]
    assert isinstance(plugin, NodeOrderPlugin)
    tasks = {t.name: t for t in ssn.jobs["ns"].tasks.values()}
    want = {(t, n.name): plugin._per_node(tasks[t], n) for t in tasks for n in ssn.node_list}
    assert want[("small", "a")] != want[("large", "a")] != want[("gpu", "a")]
    for name in ["small", "large", "gpu", "small", "gpu", "large", "large", "old"]:
        for n in ssn.node_list:
            assert plugin.per_node(tasks[name], n) == want[(name, n.name)], (name, n.name)
        assert plugin.per_nodes(tasks[name], ssn.node_list) == [want[(name, n.name)] for n in ssn.node_list]
