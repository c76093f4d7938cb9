"""network-topology-aware's node scores, checked against Volcano's TestBatchNodeOrderFn.

The cluster of every case: leaves s3 (2 CPU, 4G), s4 (4 CPU, 4G), s5 (2 CPU, 8G), s6 (4 CPU,
8G) of two nodes each, s3/s4 under s1, s5/s6 under s2, both under s0; one pending pod asking
2 CPU and 4G (and 8 example.com/foo where the case has that resource). The scores are what the
plugin's batch node-order function gives each node, with Volcano's tolerance of 0.1: the two
nodes of a leaf always score the same, so no allocate outcome could show them.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
import yaml

from scheduler.actions.allocate_topology import prepare
from scheduler.framework.cycle import open_session
from scheduler.framework.session import Session, SessionOptions
from scheduler.model.cluster import ClusterState
from scheduler.model.objects import TaskInfo
from scheduler.model.resources import Resource
from scheduler.model.topology import CLUSTER_TOP
from scheduler.registry import parse
from tests.builders import node, pod, podgroup, queue
from tests.unit.test_topology import hypernode

LEAVES = (("s3", "2", "4G", "8"), ("s4", "4", "4G", "8"), ("s5", "2", "8G", "16"), ("s6", "4", "8G", "16"))
TREE = (("s0", 3, ["s1", "s2"]), ("s1", 2, ["s3", "s4"]), ("s2", 2, ["s5", "s6"]))
CUSTOM = {
    "weight": 10,
    "hypernode.binpack.cpu": 1,
    "hypernode.binpack.memory": 4,
    "hypernode.binpack.resources": "nvidia.com/gpu, example.com/foo",
    "hypernode.binpack.resources.nvidia.com/gpu": 2,
    "hypernode.binpack.resources.example.com/foo": 3,
    "hypernode.binpack.normal-pod.enable": True,
    "hypernode.binpack.normal-pod.fading": 0,
}


def _leaf_scores(s3: float, s4: float, s5: float, s6: float) -> dict[str, float]:
    return {
        f"{leaf}-n{i}": v
        for leaf, v in zip(("s3", "s4", "s5", "s6"), (s3, s4, s5, s6), strict=True)
        for i in (1, 2)
    }


def _pod(name: str, foo: bool, on: str = "", labels: dict | None = None) -> dict[str, Any]:
    phase = "Running" if on else "Pending"
    p = pod(name, cpu="2", memory="4G", ns="ns1", group="pg1", node_name=on, phase=phase, labels=labels)
    if foo:
        p["spec"]["containers"][0]["resources"]["requests"]["example.com/foo"] = "8"
    return p


def _cluster(
    foo: bool, pg: dict[str, Any], pods: list[dict[str, Any]], foo_on_both: bool = True
) -> ClusterState:
    """`foo_on_both` False: only the first node of each leaf has example.com/foo."""
    state = ClusterState()
    state.apply_queue(queue("q1"))
    for leaf, cpu, memory, foos in LEAVES:
        for i in (1, 2):
            extra = {"example.com/foo": foos if i == 1 or foo_on_both else "0"} if foo else None
            state.apply_node(node(f"{leaf}-n{i}", cpu=cpu, memory=memory, pods="10", extra=extra))
        state.apply_hypernode(hypernode(leaf, 1, [f"{leaf}-n1", f"{leaf}-n2"]))
    for name, tier, children in TREE:
        state.apply_hypernode(hypernode(name, tier, children=children))
    state.apply_podgroup(pg)
    for p in pods:
        state.apply_pod(p)
    return state


def _session(state: ClusterState, arguments: dict[str, Any]) -> tuple[Session, TaskInfo]:
    plugin: dict[str, Any] = {"name": "network-topology-aware"}
    if arguments:
        plugin["arguments"] = arguments
    conf = yaml.safe_dump({"actions": "allocate", "tiers": [{"plugins": [plugin]}]})
    ssn = open_session(state.snapshot(), parse(conf), SessionOptions(), random.Random(0))
    task = next(t for j in ssn.jobs.values() for t in j.tasks.values() if not t.node_name)
    return ssn, task


def _assert_scores(got: dict[str, float], want: dict[str, float]) -> None:
    assert {n: s for n, s in got.items() if s} == {n: pytest.approx(s, abs=0.1) for n, s in want.items() if s}
    for n, s in want.items():
        assert got.get(n, 0.0) == pytest.approx(s, abs=0.1), n


NORMAL = [
    pytest.param(False, [], {"hypernode.binpack.normal-pod.enable": False}, {}, id="normal-pod-binpack-off"),
    pytest.param(False, [], {}, _leaf_scores(25.8, 21.6, 19.9, 15.7), id="default-arguments"),
    pytest.param(True, [], CUSTOM, _leaf_scores(500.0, 468.75, 281.3, 250.0), id="customized-arguments"),
    pytest.param(
        True,
        [("p2", "s3-n1"), ("p3", "s3-n2")],
        CUSTOM,
        _leaf_scores(0.0, 468.8, 281.3, 250.0),
        id="customized-arguments-non-empty-nodes",
    ),
]


@pytest.mark.parametrize(("foo", "running", "arguments", "want"), NORMAL)
def test_batch_node_order_for_normal_pods(
    foo: bool, running: list[tuple[str, str]], arguments: dict[str, Any], want: dict[str, float]
) -> None:
    """A pod of a job without a network topology: HyperNode bin packing of every tier, fading
    by tier, weighted per resource (a full leaf, s3 in the last case, scores 0)."""
    pods = [_pod("p1", foo), *(_pod(n, foo, on) for n, on in running)]
    ssn, task = _session(_cluster(foo, podgroup("pg1", ns="ns1", queue="q1"), pods), arguments)
    _assert_scores(ssn.batch_node_order_scores(task, ssn.node_list), want)


def test_batch_node_order_for_a_task_with_network_topology() -> None:
    """A hard sub-job whose job holds s1: leaves score by the tier of their common HyperNode with
    s1 (s3, s4 under s1: 2/3; s5, s6 only under s0: 1/3), and among the best the leaf holding the
    sub-job's running task (s4) gains its share of the sub-job's tasks (1/2)."""
    pg = podgroup("pg1", ns="ns1", queue="q1", min_member=2)
    hard = {"mode": "hard", "highestTierAllowed": 2}
    pg["spec"]["networkTopology"] = hard
    pg["spec"]["subGroupPolicy"] = [
        {
            "name": "task1",
            "matchLabelKeys": ["volcano.sh/task-spec"],
            "subGroupSize": 1,
            "networkTopology": hard,
        }
    ]
    worker = {"volcano.sh/task-spec": "worker"}
    pods = [_pod("p1", False, labels=worker), _pod("p2", False, "s4-n1", labels=worker)]
    ssn, task = _session(_cluster(False, pg, pods), {})
    job = ssn.jobs[task.job]
    prepare(ssn, job, [task])  # the sub-jobs, as allocate builds them before it scores
    # Volcano's test sets the task's job HyperNode by hand; allocate sets it from the job's
    ssn.task_job_hypernode[task.uid] = "s1"
    _assert_scores(ssn.batch_node_order_scores(task, ssn.node_list), _leaf_scores(66.7, 116.7, 33.3, 33.3))


HYPERNODE_ORDER = [
    pytest.param(False, {}, (25.0, 58.3, 45.8, 0.0, 100.0, 0.0, 75.0, 25.0), id="default-arguments"),
    pytest.param(
        True,
        {**CUSTOM, "hypernode.binpack.cpu": 3},
        (266.7, 700.0, 450.0, 0.0, 0.0, 0.0, 800.0, 266.7),
        id="customized-arguments",
    ),
]


@pytest.mark.parametrize(("foo", "arguments", "want"), HYPERNODE_ORDER)
def test_hypernode_order_for_a_subjob(foo: bool, arguments: dict[str, Any], want: tuple[float, ...]) -> None:
    """Volcano's TestHyperNodeOrderFn: a sub-job of two pending pods (4 CPU, 4G each, and 8
    example.com/foo where the case has it, a resource only each leaf's first node offers) scores
    every HyperNode by bin packing its whole request there (0 where it does not fit)."""
    pg = podgroup("pg1", ns="ns1", queue="q1", min_member=2)
    pg["spec"]["networkTopology"] = {"mode": "hard", "highestTierAllowed": 2}
    pg["spec"]["subGroupPolicy"] = [
        {"name": "task1", "matchLabelKeys": ["volcano.sh/task-spec"], "subGroupSize": 1}
    ]
    pods = []
    for name in ("p1", "p2"):
        p = _pod(name, foo, labels={"volcano.sh/task-spec": "worker"})
        p["spec"]["containers"][0]["resources"]["requests"].update({"cpu": "4", "memory": "4G"})
        pods.append(p)
    ssn, task = _session(_cluster(foo, pg, pods, foo_on_both=False), arguments)
    job = ssn.jobs[task.job]
    prepare(ssn, job, list(job.tasks.values()))
    names = ["s0", "s1", "s2", "s3", "s4", "s5", "s6", CLUSTER_TOP]
    got = ssn.plugins["network-topology-aware"].hypernode_order(ssn, ssn.task_subjob[task.uid], names)
    assert [got[n] for n in names] == [pytest.approx(w, abs=0.1) for w in want]


# ------------------------------------------ TestNetworkTopologyAwareNodeScore_Hard / _Soft --
# HyperNode trees of those tests: (name, tier, member HyperNodes, member nodes)
LEAF_NODES = {leaf: [f"{leaf}-n1", f"{leaf}-n2"] for leaf in ("s1", "s2", "s3", "s4", "s5", "s6")}
THREE_TIERS = [
    ("s0", 3, ["s1", "s2"], []),
    ("s1", 2, ["s3", "s4"], []),
    ("s2", 2, ["s5", "s6"], []),
    *((leaf, 1, [], LEAF_NODES[leaf]) for leaf in ("s3", "s4", "s5", "s6")),
]
# s2's subtree hangs under no top: s5 and s6 share no HyperNode with s3
ORPHAN = [("s0", 3, ["s1"], []), *THREE_TIERS[1:]]
TWO_TIERS = [("s0", 2, ["s1", "s2"], []), ("s1", 1, [], LEAF_NODES["s1"]), ("s2", 1, [], LEAF_NODES["s2"])]
ONE_TIER = TWO_TIERS[1:]
FIRST = [("p4", "", "worker")]
ON_S3 = [("p1", "s3-n1", "master"), ("p2", "s3-n2", "worker"), ("p3", "", "worker")]
ON_S1 = [("p1", "s1-n1", "master"), ("p2", "", "worker")]
SPREAD = [
    ("p1", "s3-n1", "master"),
    ("p2", "s3-n2", "worker"),
    ("p3", "s4-n1", "worker"),
    ("p4", "", "worker"),
]
SCORED = ["s3-n1", "s4-n1", "s5-n1"]

# per case: the job's HyperNode, pods, tree, weight, nodes scored, their scores
RESCHEDULED = {
    "first": ("", FIRST, THREE_TIERS, 1, SCORED, [0, 0, 0]),
    "no-common-hypernode": ("s3", ON_S3, ORPHAN, 1, ["s5-n1", "s6-n1"], [0, 0]),
    "lca-tier": ("s3", ON_S3, THREE_TIERS, 1, SCORED, [100, 66.6, 33.3]),
    "two-tiers": ("s1", ON_S1, TWO_TIERS, 1, ["s1-n1", "s2-n1"], [100, 50]),
    "one-tier": ("s1", ON_S1, ONE_TIER, 1, ["s1-n1", "s2-n1"], [100, 0]),
    "weight-2": ("s3", ON_S3, THREE_TIERS, 2, SCORED, [200, 133.3, 66.6]),
    "task-share-breaks-ties": ("s1", SPREAD, THREE_TIERS, 1, SCORED, [116.6, 91.6, 33.3]),
}
# Volcano runs every case in hard and in soft mode (cases-unit-topology.yaml maps the names)
RESCHEDULED_PARAMS = [
    pytest.param("hard", *RESCHEDULED["first"], id="hard-first"),
    pytest.param("hard", *RESCHEDULED["no-common-hypernode"], id="hard-no-common-hypernode"),
    pytest.param("hard", *RESCHEDULED["lca-tier"], id="hard-lca-tier"),
    pytest.param("hard", *RESCHEDULED["two-tiers"], id="hard-two-tiers"),
    pytest.param("hard", *RESCHEDULED["one-tier"], id="hard-one-tier"),
    pytest.param("hard", *RESCHEDULED["weight-2"], id="hard-weight-2"),
    pytest.param("hard", *RESCHEDULED["task-share-breaks-ties"], id="hard-task-share-breaks-ties"),
    pytest.param("soft", *RESCHEDULED["first"], id="soft-first"),
    pytest.param("soft", *RESCHEDULED["no-common-hypernode"], id="soft-no-common-hypernode"),
    pytest.param("soft", *RESCHEDULED["lca-tier"], id="soft-lca-tier"),
    pytest.param("soft", *RESCHEDULED["two-tiers"], id="soft-two-tiers"),
    pytest.param("soft", *RESCHEDULED["one-tier"], id="soft-one-tier"),
    pytest.param("soft", *RESCHEDULED["weight-2"], id="soft-weight-2"),
    pytest.param("soft", *RESCHEDULED["task-share-breaks-ties"], id="soft-task-share-breaks-ties"),
]


@pytest.mark.parametrize(
    ("mode", "allocated", "pods", "tree", "weight", "scored", "want"), RESCHEDULED_PARAMS
)
def test_node_score_of_a_rescheduled_job(
    mode: str,
    allocated: str,
    pods: list[tuple[str, str, str]],
    tree: list[tuple[str, int, list[str], list[str]]],
    weight: int,
    scored: list[str],
    want: list[float],
) -> None:
    """A job with a network topology, some pods placed: a node scores by the tier of its leaf's
    lowest common HyperNode with the job's (1 on it, 0 with none in common), and when several
    nodes share the best score each gains the share of the job's tasks its leaf holds."""
    state = ClusterState()
    state.apply_queue(queue("q1"))
    for name, tier, children, nodes in tree:
        for n in nodes:
            state.apply_node(node(n, cpu="2", memory="4Gi", pods="10"))
        state.apply_hypernode(hypernode(name, tier, nodes, children))
    pg = podgroup("pg1", ns="c1", queue="q1", min_member=1)
    pg["spec"]["networkTopology"] = {"mode": mode, "highestTierAllowed": 0}
    state.apply_podgroup(pg)
    for name, on, role in pods:
        phase = "Running" if on else "Pending"
        state.apply_pod(
            pod(name, cpu="2", memory="4G", ns="c1", group="pg1", node_name=on, phase=phase,
                labels={"volcano.sh/task-spec": role})
        )  # fmt: skip
    ssn, task = _session(state, {"weight": weight})
    prepare(ssn, ssn.jobs[task.job], [task])
    ssn.task_job_hypernode[task.uid] = allocated  # Volcano's test sets it by hand
    nodes = [n for n in ssn.node_list if n.name in scored]
    got = ssn.batch_node_order_scores(task, nodes)
    assert [got.get(n, 0.0) for n in scored] == [pytest.approx(w, abs=0.1) for w in want]


# ------------------------------------------------------------ TestHyperNodeGradientPreFiltering --
GI_BYTES = 2**30


def _gradient_cluster(min_cpu: int, min_gi: int) -> ClusterState:
    """1,000 nodes of 4 CPU and 8Gi in 100 tier-1 HyperNodes of 10 under one tier-2 HyperNode,
    and a job whose gang (one pending pod) needs `min_cpu` cores and `min_gi` GiB."""
    state = ClusterState()
    state.apply_queue(queue("q1"))
    leaves = []
    for i in range(100):
        names = [f"node-{i * 10 + j}" for j in range(10)]
        for n in names:
            state.apply_node(node(n, cpu="4", memory="8Gi"))
        state.apply_hypernode(hypernode(f"hn-1-{i}", 1, names))
        leaves.append(f"hn-1-{i}")
    state.apply_hypernode(hypernode("hn-2-0", 2, children=leaves))
    minimum = {"cpu": str(min_cpu), "memory": f"{min_gi}Gi"}
    state.apply_podgroup(podgroup("j", ns="ns1", queue="q1", min_resources=minimum))
    state.apply_pod(pod("j-0", cpu=str(min_cpu), memory=f"{min_gi}Gi", ns="ns1", group="j"))
    return state


GRADIENT = [
    # (unit, highest tier allowed, minimum (cores, GiB), idle, future idle of hn-1-0, purpose, selected)
    pytest.param("job", 2, (20, 40), (30, 60), (35, 70), "allocate", True, id="Job - idle sufficient, futureIdle sufficient"),
    pytest.param("job", 2, (20, 40), (30, 60), (15, 30), "allocate", True, id="Job - idle sufficient, futureIdle insufficient"),
    pytest.param("job", 2, (20, 40), (15, 30), (30, 60), "allocate", True, id="Job - idle insufficient, futureIdle sufficient"),
    pytest.param("job", 2, (20, 40), (15, 30), (15, 30), "allocate", False, id="Job - idle insufficient, futureIdle insufficient"),
    pytest.param("subjob", 1, (10, 20), (20, 40), (25, 50), "allocate", True, id="SubJob - idle sufficient, futureIdle sufficient"),
    pytest.param("subjob", 1, (10, 20), (20, 40), (5, 10), "allocate", True, id="SubJob - idle sufficient, futureIdle insufficient"),
    pytest.param("subjob", 1, (10, 20), (5, 10), (20, 40), "allocate", True, id="SubJob - idle insufficient, futureIdle sufficient"),
    pytest.param("subjob", 1, (10, 20), (5, 10), (5, 10), "allocate", False, id="SubJob - idle insufficient, futureIdle insufficient"),
    pytest.param("job", 2, (20, 40), (15, 30), (15, 30), "evict", True, id="Evict purpose - idle insufficient, futureIdle insufficient"),
    pytest.param("job", 2, (50, 100), (15, 30), (15, 30), "evict", False, id="Evict purpose - allocatable insufficient"),
]  # fmt: skip


@pytest.mark.parametrize(("kind", "tier", "minimum", "idle", "future", "purpose", "selected"), GRADIENT)
def test_hypernode_gradient_pre_filtering(
    kind: str,
    tier: int,
    minimum: tuple[int, int],
    idle: tuple[int, int],
    future: tuple[int, int],
    purpose: str,
    selected: bool,
) -> None:
    """A HyperNode enters the gradient when the gang's minimum fits its idle or its future idle
    resources (allocation), or its allocatable ones (eviction): hn-1-0's are set by hand, as
    Volcano's test does, and the gradient lists tiers in ascending order."""
    from scheduler.actions.allocate_topology import JobUnit
    from scheduler.model.subjob import SubJob
    from scheduler.model.topology import NetworkTopologySpec

    ssn, task = _session(_gradient_cluster(*minimum), {})
    job = ssn.jobs[task.job]
    spec = NetworkTopologySpec("hard", tier)
    unit: Any = (
        JobUnit(job, spec)
        if kind == "job"
        else SubJob("j-sub", "j-sub", job.uid, network_topology=spec, task_uids=[task.uid])
    )
    plugin = ssn.plugins["network-topology-aware"]
    usage = plugin._usage("hn-1-0")
    usage.idle = Resource(idle[0] * 1000, idle[1] * GI_BYTES)
    usage.future_idle = Resource(future[0] * 1000, future[1] * GI_BYTES)
    gradient = plugin.eligible_gradient(unit, ssn.topology.hypernodes["hn-2-0"], purpose)
    assert any(hn.name == "hn-1-0" for group in gradient for hn in group) is selected
    tiers = [group[0].tier for group in gradient if group]
    assert tiers == sorted(tiers)


def test_reverse_and_cap_eviction_gradients() -> None:
    """Eviction looks at the widest domains first and at no more HyperNodes than its bound
    (hypernode.gradient.evict.max-hypernodes); without a bound the gradient stays as it is."""
    from scheduler.model.topology import HyperNodeInfo
    from scheduler.plugins.network_topology_aware import reverse_and_cap

    a, b, c, d = (HyperNodeInfo(n, 1) for n in "abcd")
    gradients = [[a, b], [c, d]]
    assert [[h.name for h in g] for g in reverse_and_cap(gradients, 3)] == [["c", "d"], ["b"]]
    assert reverse_and_cap(gradients, 0) == gradients


def test_hard_topology_without_a_feasible_domain_has_no_gradient() -> None:
    """Volcano's TestHyperNodeGradientForSubJobFn_NoSubJobPolicyRespectsHardTopology: a sub-job
    bound to tier 1 that needs 20 CPU, where each tier-1 zone holds 16, gets no domain to evict
    in; the search never falls back to the region or the cluster's top."""
    from scheduler.model.subjob import SubJob
    from scheduler.model.topology import NetworkTopologySpec
    from scheduler.plugins.network_topology_aware import PURPOSE_EVICT

    state = ClusterState()
    state.apply_queue(queue("q1"))
    for zone in ("a", "d"):
        names = [f"node-{zone}-1", f"node-{zone}-2"]
        for n in names:
            state.apply_node(node(n, cpu="8"))
        state.apply_hypernode(hypernode(f"zone-{zone}", 1, names))
    state.apply_hypernode(hypernode("region", 2, children=["zone-a", "zone-d"]))
    pg = podgroup("j", ns="ns1", queue="q1")
    pg["spec"]["networkTopology"] = {"mode": "hard", "highestTierAllowed": 1}
    state.apply_podgroup(pg)
    state.apply_pod(pod("pending-task", cpu="20", ns="ns1", group="j"))
    ssn, task = _session(state, {})
    sub = SubJob(
        "sid", "gid", task.job, network_topology=NetworkTopologySpec("hard", 1), task_uids=[task.uid]
    )
    plugin = ssn.plugins["network-topology-aware"]
    assert plugin.gradient(sub, ssn.topology.hypernodes[CLUSTER_TOP], PURPOSE_EVICT) == []
