"""Network topology: the HyperNode tree, bad HyperNodes, job constraints and partitions.

Each test is a small cluster of 2-CPU nodes under HyperNodes, run through `simulate`; what a user
sees (where pods go, why one stays pending, which problem is reported) is what is asserted.
"""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.conf import ConfigError
from scheduler.model.convert import ConvertError, hypernode_to_spec, podgroup_to_job
from scheduler.model.topology import CLUSTER_TOP, build_topology
from scheduler.model.vcjob import expand_job
from scheduler.registry import parse
from scheduler.sim.simulate import format_table
from scheduler.sim.topologygen import TopologySpecError, make_hypernodes, parse_topology_spec
from tests.builders import node, pod, podgroup, run, tiers

CONF = tiers(
    "enqueue, allocate, backfill",
    ["priority", "gang", "conformance"],
    ["drf", "predicates", "proportion", "nodeorder", "network-topology-aware"],
)


def hypernode(name: str, tier: int, nodes: list[str] = (), children: list[str] = (), **extra: Any) -> dict:  # type: ignore[assignment]
    members = [{"type": "Node", "selector": {"exactMatch": {"name": n}}} for n in nodes]
    members += [{"type": "HyperNode", "selector": {"exactMatch": {"name": c}}} for c in children]
    spec = {"tier": tier, "members": members, **extra}
    return {
        "apiVersion": "topology.volcano.sh/v1alpha1",
        "kind": "HyperNode",
        "metadata": {"name": name},
        "spec": spec,
    }


def two_leaves(cpu: str = "2") -> list[dict]:
    """s0 (n0, n1) and s1 (n2, n3) under s2, as the Volcano tests build them."""
    return [
        *(node(f"n{i}", cpu=cpu) for i in range(4)),
        hypernode("s0", 1, ["n0", "n1"], tierName="rack"),
        hypernode("s1", 1, ["n2", "n3"], tierName="rack"),
        hypernode("s2", 2, children=["s0", "s1"], tierName="zone"),
    ]


def gang(name: str, pods: int, cpu: str = "2", topology: dict | None = None, **spec: Any) -> list[dict]:
    pg = podgroup(name, min_member=pods)
    if topology is not None:
        pg["spec"]["networkTopology"] = topology
    pg["spec"].update(spec)
    return [pg, *(pod(f"{name}-{i}", cpu=cpu, group=name) for i in range(pods))]


def leaf(result: Any, pod_key: str) -> str:
    return {"n0": "s0", "n1": "s0", "n2": "s1", "n3": "s1"}[result.bindings[pod_key]]


def test_tree_members_by_name_regex_and_label() -> None:
    labels = {f"n{i}": {"rack": "a" if i < 2 else "b"} for i in range(6)}
    specs = [
        hypernode_to_spec(hypernode("s0", 1, ["n0", "n1"])),
        hypernode_to_spec(
            {
                "kind": "HyperNode",
                "metadata": {"name": "s1"},
                "spec": {
                    "tier": 1,
                    "members": [{"type": "Node", "selector": {"regexMatch": {"pattern": "^n[23]$"}}}],
                },
            }
        ),
        hypernode_to_spec(
            {
                "kind": "HyperNode",
                "metadata": {"name": "s3"},
                "spec": {
                    "tier": 1,
                    "members": [{"type": "Node", "selector": {"labelMatch": {"matchLabels": {"rack": "c"}}}}],
                },
            }
        ),
        hypernode_to_spec(hypernode("s2", 2, children=["s0", "s1"])),
    ]
    labels["n4"] = {"rack": "c"}
    topo = build_topology(specs, labels)
    assert topo.problems == []
    assert topo.hypernodes["s1"].nodes == {"n2", "n3"}
    assert topo.hypernodes["s3"].nodes == {"n4"}
    assert topo.hypernodes["s2"].nodes == {"n0", "n1", "n2", "n3"}
    assert (topo.hypernodes["s0"].parent, topo.hypernodes["s2"].parent) == ("s2", CLUSTER_TOP)
    # n5 is under no HyperNode: only the virtual cluster top (one tier above the highest) holds it
    assert topo.top.tier == 3 and "n5" in topo.top.nodes and "n5" not in topo.leaf_of
    assert topo.lca("s0", "s1") == "s2"


@pytest.mark.parametrize(
    ("objects", "problem"),
    [
        (
            [hypernode("s0", 1, ["n0", "n1"]), hypernode("s1", 1, ["n1", "n2"])],
            "node n1 is a member of both HyperNode s0 and HyperNode s1 (tier 1)",
        ),
        (
            [hypernode("a", 2, ["n0"], children=["b"]), hypernode("b", 1, ["n1"], children=["a"])],
            "HyperNode cycle: a -> b -> a",
        ),
        (
            [hypernode("s0", 1, ["n0"]), hypernode("top", 3, children=["s0"])],
            "tier gap: no HyperNode of tier 2 between tiers 1 and 3 (top)",
        ),
        (
            [
                {
                    "kind": "HyperNode",
                    "metadata": {"name": "bad-rx"},
                    "spec": {
                        "tier": 1,
                        "members": [{"type": "Node", "selector": {"regexMatch": {"pattern": "n[0-"}}}],
                    },
                }
            ],
            "HyperNode bad-rx: invalid regexMatch pattern 'n[0-'",
        ),
    ],
    ids=["member-in-two-of-a-tier", "cycle", "tier-gap", "invalid-regex"],
)
def test_bad_hypernodes_are_reported_by_name_and_scheduling_goes_on(
    objects: list[dict], problem: str
) -> None:
    cluster = [*(node(f"n{i}") for i in range(3)), *objects, *gang("j", 2, cpu="1")]
    result = run(CONF, cluster)
    assert any(problem in w for w in result.warnings), result.warnings
    assert sorted(result.bindings) == ["c1/j-0", "c1/j-1"]


def test_hard_tier_1_keeps_the_gang_in_one_leaf_or_pending() -> None:
    fits = run(CONF, [*two_leaves(), *gang("j", 2, topology={"mode": "hard", "highestTierAllowed": 1})])
    assert leaf(fits, "c1/j-0") == leaf(fits, "c1/j-1")
    too_big = run(CONF, [*two_leaves(), *gang("j", 3, topology={"mode": "hard", "highestTierAllowed": 1})])
    assert too_big.bindings == {}
    assert "highestTierAllowed 1" in too_big.pending["c1/j-0"], too_big.pending


def test_tier_name_is_resolved_and_an_unknown_one_keeps_the_job_pending() -> None:
    by_name = run(CONF, [*two_leaves(), *gang("j", 3, topology={"mode": "hard", "highestTierName": "zone"})])
    assert len(by_name.bindings) == 3
    unknown = run(
        CONF, [*two_leaves(), *gang("j", 2, topology={"mode": "hard", "highestTierName": "rack-x"})]
    )
    assert unknown.bindings == {}
    assert "no HyperNode has tierName 'rack-x'" in unknown.pending["c1/j-0"]


def test_soft_mode_prefers_one_leaf_but_never_blocks() -> None:
    small = run(CONF, [*two_leaves(), *gang("j", 2, topology={"mode": "soft"})])
    assert leaf(small, "c1/j-0") == leaf(small, "c1/j-1")
    big = run(CONF, [*two_leaves(), *gang("j", 4, topology={"mode": "soft"})])
    assert len(big.bindings) == 4


def test_partitions_each_in_their_own_leaf() -> None:
    job = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "train", "namespace": "c1"},
        "spec": {
            "minAvailable": 4,
            "networkTopology": {"mode": "hard", "highestTierAllowed": 2},
            "tasks": [
                {
                    "name": "w",
                    "replicas": 4,
                    "partitionPolicy": {
                        "totalPartitions": 2,
                        "partitionSize": 2,
                        "networkTopology": {"mode": "hard", "highestTierAllowed": 1},
                    },
                    "template": {
                        "spec": {
                            "containers": [
                                {"name": "c", "image": "x", "resources": {"requests": {"cpu": "2"}}}
                            ]
                        }
                    },
                }
            ],
        },
    }
    result = run(CONF, [*two_leaves(), job])
    assert len(result.bindings) == 4
    assert leaf(result, "c1/train-w-0") == leaf(result, "c1/train-w-1")
    assert leaf(result, "c1/train-w-2") == leaf(result, "c1/train-w-3")
    assert leaf(result, "c1/train-w-0") != leaf(result, "c1/train-w-2")
    assert "HyperNode s2" in format_table(result)


def test_partition_policy_and_network_topology_are_validated() -> None:
    job = {
        "kind": "Job",
        "metadata": {"name": "j", "namespace": "c1"},
        "spec": {
            "tasks": [
                {"name": "w", "replicas": 3, "partitionPolicy": {"totalPartitions": 2, "partitionSize": 2}}
            ]
        },
    }
    with pytest.raises(
        ConvertError, match=r"Job c1/j: .*totalPartitions x partitionSize \(2 x 2\) must equal replicas \(3\)"
    ):
        expand_job(job)
    pg = podgroup("pg")
    pg["spec"]["networkTopology"] = {"mode": "hard", "highestTierAllowed": 1, "highestTierName": "rack"}
    with pytest.raises(ConvertError, match=r"PodGroup c1/pg: .*cannot both be set"):
        podgroup_to_job(pg)
    pg["spec"]["networkTopology"] = {"mode": "strict"}
    with pytest.raises(ConvertError, match="mode must be hard or soft"):
        podgroup_to_job(pg)


def test_plugin_loads_and_refuses_bad_arguments() -> None:
    conf = parse(CONF)
    assert not any("network-topology-aware" in w for w in conf.warnings)
    bad = tiers(
        "allocate", ["gang", "network-topology-aware"], args={"network-topology-aware": {"weight": "heavy"}}
    )
    with pytest.raises(ConfigError, match="weight"):
        parse(bad)


def test_normal_pods_fill_the_fuller_leaf_first() -> None:
    """The guide's 3.3.3: with s0 partly used, a new pod goes to s0's free node, not to s1."""
    running = pod("busy", cpu="2", node_name="n0", phase="Running", group="busy")
    objects = [*two_leaves(), podgroup("busy", phase="Running"), running, *gang("j", 1)]
    assert run(CONF, objects).bindings == {"c1/j-0": "n1"}


def test_generated_topology() -> None:
    levels = parse_topology_spec("spine=2,leaf=2")
    hns = {h["metadata"]["name"]: h["spec"] for h in make_hypernodes(levels, [f"n{i}" for i in range(5)])}
    assert (hns["spine-0"]["tier"], hns["leaf-3"]["tier"], hns["leaf-3"]["tierName"]) == (2, 1, "leaf")
    assert [m["selector"]["exactMatch"]["name"] for m in hns["spine-1"]["members"]] == ["leaf-2", "leaf-3"]
    assert sum(len(h["members"]) for n, h in hns.items() if n.startswith("leaf")) == 5
    with pytest.raises(TopologySpecError, match="not name=count"):
        parse_topology_spec("spine4")


def test_vgpu_gang_goes_to_the_hypernode_whose_cards_fit() -> None:
    """deviceshare inside the HyperNode search: leaf-0 has T4 cards (15 GB), leaf-1 A100s (80 GB);
    a gang of two 40 GB vGPU pods limited to one leaf lands on leaf-1 with a card each."""
    from scheduler.sim.nodegen import make_nodes, parse_node_spec

    nodes = make_nodes([parse_node_spec("2:gpu=1xT4"), parse_node_spec("2:gpu=1xA100-80GB")])
    hns = make_hypernodes(parse_topology_spec("spine=1,leaf=2"), [n["metadata"]["name"] for n in nodes])
    conf = tiers(
        "enqueue, allocate, backfill",
        ["priority", "gang", "conformance"],
        ["drf", "predicates", "proportion", "nodeorder", "deviceshare", "network-topology-aware"],
        args={"deviceshare": {"deviceshare.VGPUEnable": True}},
    )
    pg = podgroup("train", min_member=2)
    pg["spec"]["networkTopology"] = {"mode": "hard", "highestTierAllowed": 1}
    pods = [
        pod(
            f"train-{i}",
            group="train",
            limits={"volcano.sh/vgpu-number": "1", "volcano.sh/vgpu-memory": "40000"},
        )
        for i in range(2)
    ]
    result = run(conf, [*nodes, *hns, pg, *pods])
    assert sorted(result.bindings.values()) == ["gpu-node-2", "gpu-node-3"], result.pending
    assert all("volcano.sh/vgpu-ids-new" in result.annotations[k] for k in result.bindings)


def test_a_job_with_a_network_topology_does_not_preempt() -> None:
    """As Volcano (its issue 4374): the same starving high-priority job preempts without a
    networkTopology and does not with one."""
    from tests.builders import priority_class

    conf = tiers(
        "enqueue, allocate, preempt",
        ["priority", "gang", "conformance"],
        ["drf", "predicates", "proportion", "nodeorder", "network-topology-aware"],
    )
    base = [
        *two_leaves(),
        priority_class("low", 1),
        priority_class("high", 100),
        podgroup("low", min_member=1, phase="Running", priority_class="low"),
        *(
            pod(f"low-{i}", cpu="2", group="low", node_name=f"n{i}", phase="Running", priority_class="low")
            for i in range(4)
        ),
    ]

    def high(topology: dict | None) -> list[dict]:
        pg = podgroup("high", min_member=1, priority_class="high")
        if topology:
            pg["spec"]["networkTopology"] = topology
        return [pg, pod("high-0", cpu="2", group="high", priority_class="high")]

    assert run(conf, [*base, *high(None)]).evictions
    assert run(conf, [*base, *high({"mode": "hard", "highestTierAllowed": 1})]).evictions == []
