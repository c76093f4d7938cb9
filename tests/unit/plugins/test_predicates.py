"""predicates: each filter's verdict, message and resolvability through a real session."""

from __future__ import annotations

import pytest

from scheduler.framework.arguments import ArgumentError, Arguments
from scheduler.framework.status import Unfit
from scheduler.model.objects import TaskStatus
from scheduler.plugins.k8s.podindex import session_pods
from scheduler.plugins.predicates import PredicatesPlugin
from tests.unit.plugins.plugin_world import World, tier

CONF = tier("predicates")


def _verdicts(w: World, task_name: str, conf: str = CONF) -> dict[str, Unfit | None]:
    ssn = w.session(conf)
    task = next(t for j in ssn.jobs.values() for t in j.tasks.values() if t.name == task_name)
    assert ssn.pre_predicate(task) is None
    return {n.name: ssn.predicate(task, n) for n in ssn.node_list}


def _anti(key: str, labels: dict, topology: str = "kubernetes.io/hostname") -> dict:
    return {
        key: {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": labels}, "topologyKey": topology}
            ]
        }
    }


def test_a_full_node_has_too_many_pods_which_eviction_can_cure() -> None:
    w = World()
    w.node("full", pods=2)
    w.node("free", pods=3)
    for i in range(2):
        w.pod(f"p{i}", on="full")
        w.pod(f"q{i}", on="free")
    w.pod("new")
    v = _verdicts(w, "new")
    assert v["full"] == Unfit("Too many pods", resolvable=True)
    assert v["free"] is None


def test_a_cordoned_node_is_unresolvable_unless_the_pod_tolerates_the_unschedulable_taint() -> None:
    w = World()
    w.node("cordoned", unschedulable=True)
    w.pod("plain")
    w.pod("tolerant", tolerations=[{"key": "node.kubernetes.io/unschedulable", "operator": "Exists"}])
    assert _verdicts(w, "plain")["cordoned"] == Unfit("node(s) were unschedulable", resolvable=False)
    assert _verdicts(w, "tolerant")["cordoned"] is None


def test_spec_node_name_rules_out_every_other_node() -> None:
    w = World()
    w.node("a")
    w.node("b")
    w.pod("pinned", node_name="b")
    v = _verdicts(w, "pinned")
    assert v["a"] == Unfit("node(s) didn't match the requested node name", resolvable=False)
    assert v["b"] is None


def test_node_selector_and_affinity_mismatch_is_unresolvable_and_can_be_switched_off() -> None:
    w = World()
    w.node("a", labels={"zone": "a"})
    w.node("b", labels={"zone": "b"})
    w.pod("picky", node_selector={"zone": "a"})
    v = _verdicts(w, "picky")
    assert v["a"] is None
    assert v["b"] == Unfit("node(s) didn't match Pod's node affinity/selector", resolvable=False)
    off = _verdicts(w, "picky", tier("predicates", "predicate.NodeAffinityEnable: false"))
    assert off["b"] is None


def test_host_port_conflict_is_resolvable_and_freed_by_an_eviction_in_the_session() -> None:
    w = World()
    w.node("n")
    holder = w.pod("holder", on="n", host_ports=[("TCP", "0.0.0.0", 8080)])
    w.pod("new", host_ports=[("TCP", "10.1.1.1", 8080)])
    ssn = w.session(CONF)
    new = next(t for t in ssn.jobs["ns"].tasks.values() if t.name == "new")
    node = ssn.nodes["n"]
    ssn.pre_predicate(new)
    assert ssn.predicate(new, node) == Unfit(
        "node(s) didn't have free ports for the requested pod ports", True
    )
    evicted, old = ssn.mark_releasing(ssn.jobs["ns"].tasks[holder.uid])
    assert ssn.predicate(new, node) is None
    ssn.unmark_releasing(evicted, old)
    assert ssn.predicate(new, node) is not None


def test_the_first_untolerated_hard_taint_is_named_in_the_message() -> None:
    w = World()
    w.node(
        "t",
        taints=[
            {"key": "soft", "effect": "PreferNoSchedule"},
            {"key": "dedicated", "value": "ml", "effect": "NoSchedule"},
        ],
    )
    w.pod("plain")
    w.pod(
        "ml", tolerations=[{"key": "dedicated", "operator": "Equal", "value": "ml", "effect": "NoSchedule"}]
    )
    assert _verdicts(w, "plain")["t"] == Unfit(
        "node(s) had untolerated taint {dedicated: ml}", resolvable=False
    )
    assert _verdicts(w, "ml")["t"] is None


def test_an_unresolvable_failure_wins_over_an_earlier_resolvable_one() -> None:
    # pod count fails first, but the taint rules the node out for preemption too
    w = World()
    w.node("n", pods=1, taints=[{"key": "k", "value": "v", "effect": "NoExecute"}])
    w.pod("there", on="n")
    w.pod("new")
    assert _verdicts(w, "new")["n"] == Unfit("node(s) had untolerated taint {k: v}", resolvable=False)


def test_required_pod_affinity_needs_a_matching_pod_in_the_same_topology_domain() -> None:
    w = World()
    w.node("a1", labels={"zone": "a"})
    w.node("a2", labels={"zone": "a"})
    w.node("b1", labels={"zone": "b"})
    w.node("nolabel")
    w.pod("cache", on="a1", labels={"app": "cache"})
    w.pod("web", affinity=_anti("podAffinity", {"app": "cache"}, "zone"))
    v = _verdicts(w, "web")
    assert v["a1"] is None and v["a2"] is None
    assert v["b1"] == Unfit("node(s) didn't match pod affinity rules", resolvable=False)
    assert v["nolabel"] == Unfit("node(s) didn't match pod affinity rules", resolvable=False)


def test_the_first_pod_of_a_self_affine_group_may_go_anywhere_with_the_topology_label() -> None:
    w = World()
    w.node("a1", labels={"zone": "a"})
    w.node("nolabel")
    w.pod("w0", labels={"app": "web"}, affinity=_anti("podAffinity", {"app": "web"}, "zone"))
    v = _verdicts(w, "w0")
    assert v["a1"] is None
    assert v["nolabel"] == Unfit("node(s) didn't match pod affinity rules", resolvable=False)


def test_pod_anti_affinity_and_existing_pods_anti_affinity_are_resolvable() -> None:
    w = World()
    w.node("n1")
    w.node("n2")
    w.node("n3")
    w.pod("db", on="n1", labels={"app": "db"})
    w.pod("loner", on="n2", labels={"app": "loner"}, affinity=_anti("podAntiAffinity", {"app": "web"}))
    w.pod("web", labels={"app": "web"}, affinity=_anti("podAntiAffinity", {"app": "db"}))
    v = _verdicts(w, "web")
    assert v["n1"] == Unfit("node(s) didn't match pod anti-affinity rules", resolvable=True)
    assert v["n2"] == Unfit("node(s) didn't satisfy existing pods anti-affinity rules", resolvable=True)
    assert v["n3"] is None


def test_affinity_terms_look_only_in_their_namespaces_or_namespace_selector() -> None:
    w = World()
    w.namespaces = {"ns": {}, "other": {"team": "x"}}
    w.node("n1")
    w.node("n2")
    w.pod("db", ns="other", on="n1", labels={"app": "db"})
    same_ns = _anti("podAntiAffinity", {"app": "db"})
    by_selector = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "labelSelector": {"matchLabels": {"app": "db"}},
                    "namespaceSelector": {"matchLabels": {"team": "x"}},
                    "topologyKey": "kubernetes.io/hostname",
                }
            ]
        }
    }
    w.pod("a", affinity=same_ns)
    w.pod("b", affinity=by_selector)
    assert _verdicts(w, "a")["n1"] is None
    assert _verdicts(w, "b")["n1"] == Unfit("node(s) didn't match pod anti-affinity rules", resolvable=True)


def test_anti_affinity_sees_placements_made_earlier_in_the_session() -> None:
    w = World()
    w.node("n1")
    w.node("n2")
    anti = _anti("podAntiAffinity", {"app": "web"})
    w.pod("w0", labels={"app": "web"}, affinity=anti)
    w.pod("w1", labels={"app": "web"}, affinity=anti)
    ssn = w.session(CONF)
    tasks = {t.name: t for t in ssn.jobs["ns"].tasks.values()}
    ssn.pre_predicate(tasks["w0"])
    assert ssn.predicate(tasks["w0"], ssn.nodes["n1"]) is None
    ssn.place(tasks["w0"], ssn.nodes["n1"], TaskStatus.ALLOCATED)
    ssn.pre_predicate(tasks["w1"])
    assert ssn.predicate(tasks["w1"], ssn.nodes["n1"]) is not None
    assert ssn.predicate(tasks["w1"], ssn.nodes["n2"]) is None


def _anti_affinity_world() -> World:
    w = World()
    w.node("n1")
    w.pod("db", on="n1", labels={"app": "db"})
    w.pod("web", affinity=_anti("podAntiAffinity", {"app": "db"}))
    return w


CONFLICT = Unfit("node(s) didn't match pod anti-affinity rules", resolvable=True)


@pytest.mark.parametrize("preemptable", [True, False])
def test_an_eviction_lifts_an_anti_affinity_conflict_only_in_a_dry_run_with_the_preemptable_switch(
    preemptable: bool,
) -> None:
    # Volcano computes a preemptor's affinity counts once (PreFilter) and replays victims' removals
    # into them only in the topology-aware dry run, for a predicates plugin whose
    # enablePreemptable (or enabledAllocatable) switch is on.
    ssn = _anti_affinity_world().session(
        CONF + f"    enablePreemptable: {str(preemptable).lower()}\n    enabledAllocatable: false\n"
    )
    tasks = {t.name: t for t in ssn.jobs["ns"].tasks.values()}
    web, n1 = tasks["web"], ssn.nodes["n1"]
    ssn.pre_predicate(web)
    assert ssn.predicate(web, n1) == CONFLICT
    db, status = ssn.mark_releasing(tasks["db"])
    assert ssn.predicate(web, n1) == CONFLICT  # an eviction outside a dry run is not seen
    ssn.unmark_releasing(db, status)
    ssn.victim_dry_run = True
    ssn.mark_releasing(db)
    assert ssn.predicate(web, n1) == (None if preemptable else CONFLICT)
    ssn.victim_dry_run = False


def test_the_next_attempt_sees_the_evictions_made_before_it() -> None:
    ssn = _anti_affinity_world().session(CONF)
    tasks = {t.name: t for t in ssn.jobs["ns"].tasks.values()}
    ssn.mark_releasing(tasks["db"])
    ssn.pre_predicate(tasks["web"])
    assert ssn.predicate(tasks["web"], ssn.nodes["n1"]) is None


def _spread(max_skew: int = 1, key: str = "zone", when: str = "DoNotSchedule", **extra: object) -> list[dict]:
    return [
        {
            "maxSkew": max_skew,
            "topologyKey": key,
            "whenUnsatisfiable": when,
            "labelSelector": {"matchLabels": {"app": "web"}},
            **extra,
        }
    ]


def test_topology_spread_allows_at_most_max_skew_above_the_emptiest_domain() -> None:
    # zone a holds 2 web pods, zone b 1: a new web pod in a makes 3 - 1 = 2 > 1, in b 2 - 1 = 1
    w = World()
    w.node("a1", labels={"zone": "a"})
    w.node("b1", labels={"zone": "b"})
    w.node("nozone")
    for i in range(2):
        w.pod(f"a{i}", on="a1", labels={"app": "web"})
    w.pod("b0", on="b1", labels={"app": "web"})
    w.pod("new", labels={"app": "web"}, topology_spread=_spread())
    v = _verdicts(w, "new")
    assert v["a1"] == Unfit("node(s) didn't match pod topology spread constraints", resolvable=True)
    assert v["b1"] is None
    assert v["nozone"] == Unfit(
        "node(s) didn't match pod topology spread constraints (missing required label)", False
    )


def test_min_domains_counts_the_global_minimum_as_zero_while_domains_are_missing() -> None:
    w = World()
    w.node("a1", labels={"zone": "a"})
    w.node("b1", labels={"zone": "b"})
    w.pod("a0", on="a1", labels={"app": "web"})
    w.pod("b0", on="b1", labels={"app": "web"})
    w.pod("new", labels={"app": "web"}, topology_spread=_spread(minDomains=3))
    # 1 + 1 - 0 = 2 > 1 on both nodes: a third zone is needed
    assert all(v is not None for v in _verdicts(w, "new").values())


def test_spread_counts_only_nodes_matching_the_pods_node_selector() -> None:
    w = World()
    w.node("a1", labels={"zone": "a", "pool": "x"})
    w.node("b1", labels={"zone": "b", "pool": "y"})
    w.pod("a0", on="a1", labels={"app": "web"})
    w.pod("new", labels={"app": "web"}, node_selector={"pool": "x"}, topology_spread=_spread())
    # zone b is not eligible, so the minimum is zone a's 1: 1 + 1 - 1 = 1 <= 1
    assert _verdicts(w, "new")["a1"] is None


def test_switches_turn_filters_off_and_volume_switches_are_accepted() -> None:
    w = World()
    w.node("t", taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}])
    w.pod("new")
    conf = tier(
        "predicates",
        "predicate.TaintTolerationEnable: false\npredicate.VolumeBindingEnable: true\n"
        "predicate.GPUSharingEnable: false",
    )
    assert _verdicts(w, "new", conf)["t"] is None


@pytest.mark.parametrize(
    "key", ["predicate.PodAffinityEnable", "predicate.CacheEnable", "predicate.GPUSharingEnable"]
)
def test_a_non_boolean_switch_is_rejected(key: str) -> None:
    with pytest.raises(ArgumentError):
        PredicatesPlugin.validate(Arguments({key: "maybe"}, "predicates"))


def test_a_pod_without_constraints_never_builds_the_label_index() -> None:
    w = World()
    w.node("n")
    w.pod("other", on="n", labels={"app": "x"})
    w.pod("plain")
    ssn = w.session(CONF)
    task = next(t for t in ssn.jobs["ns"].tasks.values() if t.name == "plain")
    ssn.pre_predicate(task)
    assert ssn.predicate(task, ssn.nodes["n"]) is None
    assert not session_pods(ssn).pods


def test_predicate_many_answers_what_predicate_answers_for_plain_and_constrained_pods() -> None:
    # plain pods take predicate_many's short path (full, cordoned and tainted nodes go to the
    # full check), pods with a node name, selector or ports the general one: both agree with
    # predicate node by node, and an eviction in the session frees the full node for both
    w = World()
    w.node("full", pods=1)
    w.node("cordoned", unschedulable=True)
    w.node("tainted", taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}])
    w.node("soft", taints=[{"key": "s", "effect": "PreferNoSchedule"}])
    w.node("both", pods=1, taints=[{"key": "k", "value": "v", "effect": "NoExecute"}])
    w.node("free", labels={"zone": "a"})
    holder = w.pod("holder", on="full")
    w.pod("other", on="both")
    w.pod("plain")
    w.pod("tolerant", tolerations=[{"operator": "Exists"}])
    w.pod("picky", node_selector={"zone": "a"})
    w.pod("pinned", node_name="tainted")
    w.pod("ported", host_ports=[("TCP", "0.0.0.0", 80)])
    ssn = w.session(CONF)
    tasks = [t for t in ssn.jobs["ns"].tasks.values() if t.status == TaskStatus.PENDING]
    seen: set[object] = set()
    for evict in (False, True):
        if evict:
            ssn.mark_releasing(ssn.jobs["ns"].tasks[holder.uid])
        for task in tasks:
            assert ssn.pre_predicate(task) is None
            many = ssn.predicate_many(task, ssn.node_list)
            assert many == [ssn.predicate(task, n) for n in ssn.node_list]
            seen.update(many)
    assert Unfit("Too many pods", resolvable=True) in seen and None in seen
    assert Unfit("node(s) were unschedulable", resolvable=False) in seen
