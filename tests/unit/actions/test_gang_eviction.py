"""gangpreempt and gangreclaim through a full session: a gang gets its minimum or evicts nothing."""

from __future__ import annotations

import pytest

from tests.builders import node, pod, podgroup, priority_class, queue, run, tiers

GANG_PREEMPT = tiers("gangpreempt", ["conformance", "gang", "priority"], ["proportion"])
GANG_RECLAIM = tiers("gangreclaim", ["conformance", "gang", "priority", "capacity"])


def _victims(n: int, phase: str = "Running", q: str = "q1", min_member: int = 1) -> list[dict]:
    out: list[dict] = []
    for i in range(n):
        out.append(podgroup(f"low{i}", min_member, queue=q, phase="Running", priority_class="low"))
        out.append(
            pod(f"low{i}-0", cpu="2", group=f"low{i}", node_name=f"n{i}", phase=phase, priority_class="low")
        )
    return out


def _gang(size: int, q: str = "q1", cpu: str = "2") -> list[dict]:
    objs = [podgroup("high", size, queue=q, priority_class="high")]
    objs += [pod(f"high-{i}", cpu=cpu, group="high", priority_class="high") for i in range(size)]
    return objs


BASE = [priority_class("low", 10), priority_class("high", 100), queue("q1")]


def test_a_gang_preemptor_evicts_enough_lower_priority_jobs_for_its_whole_gang() -> None:
    nodes = [node("n0", cpu="2"), node("n1", cpu="2")]
    out = run(GANG_PREEMPT, [*BASE, *nodes, *_victims(2), *_gang(2)])
    assert sorted(out.evictions) == ["c1/low0-0", "c1/low1-0"]
    assert sorted(out.pipelined) == ["c1/high-0", "c1/high-1"]


def test_nothing_is_evicted_when_the_whole_gang_cannot_fit() -> None:
    # two nodes of victims, but the gang needs three slots: task-by-task preempt would evict
    nodes = [node("n0", cpu="2"), node("n1", cpu="2")]
    out = run(GANG_PREEMPT, [*BASE, *nodes, *_victims(2), *_gang(3)])
    assert out.evictions == []
    assert out.pipelined == {}


def test_a_victim_podgroup_marked_not_preemptable_is_kept() -> None:
    nodes = [node("n0", cpu="2"), node("n1", cpu="2")]
    objs = [*BASE, *nodes, *_victims(2), *_gang(2)]
    low1 = next(o for o in objs if o["kind"] == "PodGroup" and o["metadata"]["name"] == "low1")
    low1["metadata"]["annotations"] = {"volcano.sh/preemptable": "false"}
    out = run(GANG_PREEMPT, objs)
    assert out.evictions == []


def test_gang_reclaim_takes_back_from_another_reclaimable_queue() -> None:
    nodes = [node("n0", cpu="2"), node("n1", cpu="2")]
    q1 = queue("q1")
    q1["spec"]["deserved"] = {"cpu": "4", "memory": "8Gi"}
    objs = [
        priority_class("low", 10),
        priority_class("high", 100),
        q1,
        queue("q2", reclaimable=True),
        *nodes,
        *_victims(2, q="q2"),
        *_gang(2, q="q1"),
    ]
    out = run(GANG_RECLAIM, objs)
    assert sorted(out.evictions) == ["c1/low0-0", "c1/low1-0"]


def _partitioned_victim(min_subgroups: int) -> list[dict]:
    """A low-priority job of two partitions of two pods (one pod per node), `minSubGroups` of
    them required, and minMember 2."""
    pg = podgroup("low", 2, queue="q1", phase="Running", priority_class="low")
    pg["spec"]["subGroupPolicy"] = [
        {"name": "part", "subGroupSize": 2, "minSubGroups": min_subgroups, "matchLabelKeys": ["part"]}
    ]
    pods = [
        pod(
            f"low-{p}{i}",
            cpu="2",
            group="low",
            node_name=f"n{2 * p + i}",
            phase="Running",
            priority_class="low",
            labels={"part": str(p)},
        )
        for p in range(2)
        for i in range(2)
    ]
    return [pg, *pods]


def test_a_partition_the_victim_needs_is_a_whole_bundle() -> None:
    # the gang needs one node: with both partitions required, any eviction breaks the victim, so
    # allowWholeBundle=false forbids it; with one required, the victim can spare a partition, and
    # the spare one goes as a bundle (a broken partition is worth nothing), as in Volcano
    nodes = [node(f"n{i}", cpu="2") for i in range(4)]
    no_whole = GANG_PREEMPT.replace(
        'actions: "gangpreempt"',
        'actions: "gangpreempt"\nconfigurations:\n- name: gangpreempt\n  arguments: {allowWholeBundle: false}',
    )
    out = run(no_whole, [*BASE, *nodes, *_partitioned_victim(2), *_gang(1)])
    assert out.evictions == []
    out = run(no_whole, [*BASE, *nodes, *_partitioned_victim(1), *_gang(1)])
    assert sorted(out.evictions) == ["c1/low-00", "c1/low-01"]


def _hypernode(name: str, members: list[str]) -> dict:
    return {
        "apiVersion": "topology.volcano.sh/v1alpha1",
        "kind": "HyperNode",
        "metadata": {"name": name},
        "spec": {
            "tier": 1,
            "members": [{"type": "Node", "selector": {"exactMatch": {"name": m}}} for m in members],
        },
    }


def _victim(name: str, on: str) -> list[dict]:
    return [
        podgroup(name, 1, queue="q1", phase="Running", priority_class="low"),
        pod(f"{name}-0", cpu="2", group=name, node_name=on, phase="Running", priority_class="low"),
    ]


@pytest.mark.parametrize("hard", [True, False], ids=["hard", "flat"])
def test_a_hard_topology_gang_evicts_inside_one_hypernode(hard: bool) -> None:
    # victims leave in the reverse of job order (the last created first): low-z (hn-a), then
    # low-c, low-b (hn-b).
    # n1 holds a pod as important as the gang. Without a topology the gang takes n0 and n3; kept
    # inside one HyperNode only hn-b can hold it, and low-z stays.
    conf = tiers("gangpreempt", ["conformance", "gang", "priority"], ["network-topology-aware"])
    nodes = [node(f"n{i}", cpu="2") for i in range(4)]
    keeper = [
        podgroup("peer", 1, queue="q1", phase="Running", priority_class="high"),
        pod("peer-0", cpu="2", group="peer", node_name="n1", phase="Running", priority_class="high"),
    ]
    victims = [*_victim("low-b", "n2"), *_victim("low-c", "n3"), *_victim("low-z", "n0")]
    gang = _gang(2)
    if hard:
        gang[0]["spec"]["networkTopology"] = {"mode": "hard", "highestTierAllowed": 1}
    topo = [_hypernode("hn-a", ["n0", "n1"]), _hypernode("hn-b", ["n2", "n3"])]
    out = run(conf, [*BASE, *nodes, *topo, *keeper, *victims, *gang])
    if hard:
        assert sorted(out.evictions) == ["c1/low-b-0", "c1/low-c-0"]
        assert sorted(out.pipelined.values()) == ["n2", "n3"]
    else:
        assert sorted(out.evictions) == ["c1/low-c-0", "c1/low-z-0"]
        assert sorted(out.pipelined.values()) == ["n0", "n3"]


@pytest.mark.parametrize("voters", [["proportion"], ["gang", "proportion"]], ids=["alone", "with-gang"])
def test_gang_reclaim_needs_a_plugin_that_votes_on_gang_victims(voters: list[str]) -> None:
    # proportion lets q1 reclaim (below its deserved share) but casts no gang-eviction vote,
    # as in Volcano: alone it allows no victim; gang's vote allows any
    nodes = [node("n0", cpu="2"), node("n1", cpu="2")]
    objs = [*BASE[:2], queue("q1"), queue("q2", reclaimable=True), *nodes, *_victims(2, q="q2"), *_gang(1)]
    evicted = run(tiers("gangreclaim", voters), objs).evictions
    assert len(evicted) == (0 if voters == ["proportion"] else 1)


def test_a_max_domains_that_is_not_positive_is_replaced_by_the_default_with_a_warning() -> None:
    conf = GANG_PREEMPT.replace(
        'actions: "gangpreempt"',
        'actions: "gangpreempt"\nconfigurations:\n- name: gangpreempt\n  arguments: {maxDomains: 0}',
    )
    nodes = [node("n0", cpu="2"), node("n1", cpu="2")]
    out = run(conf, [*BASE, *nodes, *_victims(2), *_gang(2)])
    assert any("maxDomains must be positive" in w for w in out.warnings)
    assert sorted(out.evictions) == ["c1/low0-0", "c1/low1-0"]  # still searched, in the cluster
