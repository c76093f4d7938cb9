"""The kube-scheduler rules in scheduler.plugins.k8s, one rule per test."""

from __future__ import annotations

import pytest

from scheduler.plugins.k8s.labels import compile_selector, selector_matches
from scheduler.plugins.k8s.nodeaffinity import preferred_score, preferred_terms, required_node_affinity
from scheduler.plugins.k8s.noderesources import balanced_allocation, least_allocated, most_allocated
from scheduler.plugins.k8s.ports import ports_fit
from scheduler.plugins.k8s.taints import (
    count_intolerable_prefer_no_schedule,
    find_untolerated_taint,
    prefer_no_schedule_tolerations,
    tolerates,
    tolerates_unschedulable,
    untolerated_taint_reason,
)
from tests.unit.plugins.plugin_world import GI, World


def test_a_missing_selector_selects_nothing_and_an_empty_one_everything() -> None:
    assert not selector_matches(None, {"app": "web"})
    assert selector_matches({}, {"app": "web"})
    assert selector_matches({}, {})


@pytest.mark.parametrize(
    ("expr", "labels", "expected"),
    [
        ({"key": "tier", "operator": "In", "values": ["a", "b"]}, {"tier": "b"}, True),
        ({"key": "tier", "operator": "In", "values": ["a"]}, {}, False),
        ({"key": "tier", "operator": "NotIn", "values": ["a"]}, {}, True),
        ({"key": "tier", "operator": "NotIn", "values": ["a"]}, {"tier": "a"}, False),
        ({"key": "tier", "operator": "Exists"}, {"tier": ""}, True),
        ({"key": "tier", "operator": "DoesNotExist"}, {"tier": "x"}, False),
        ({"key": "tier", "operator": "In", "values": []}, {"tier": "x"}, False),
        ({"key": "tier", "operator": "Gt", "values": ["1"]}, {"tier": "2"}, False),
    ],
)
def test_label_selector_expressions_follow_kubernetes_operators(
    expr: dict, labels: dict, expected: bool
) -> None:
    assert compile_selector({"matchExpressions": [expr]}).matches(labels) is expected


def test_match_labels_and_expressions_must_all_hold() -> None:
    sel = compile_selector(
        {"matchLabels": {"app": "web"}, "matchExpressions": [{"key": "v", "operator": "Exists"}]}
    )
    assert sel.matches({"app": "web", "v": "1"})
    assert not sel.matches({"app": "web"})
    assert not sel.matches({"app": "db", "v": "1"})


def _req(terms: list | None = None, selector: dict | None = None):  # type: ignore[no-untyped-def]
    aff = (
        {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}}
        if terms is not None
        else {}
    )
    return required_node_affinity(selector or {}, aff)


def test_node_selector_and_required_terms_must_both_match() -> None:
    req = _req([{"matchExpressions": [{"key": "gpu", "operator": "Exists"}]}], {"zone": "a"})
    assert req.matches("n1", {"zone": "a", "gpu": "t4"})
    assert not req.matches("n1", {"zone": "b", "gpu": "t4"})
    assert not req.matches("n1", {"zone": "a"})


def test_required_terms_are_ored_and_an_empty_term_matches_nothing() -> None:
    req = _req([{}, {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["b"]}]}])
    assert req.matches("n1", {"zone": "b"})
    assert not req.matches("n1", {"zone": "a"})
    assert not _req([]).matches("n1", {})


def test_gt_and_lt_compare_integers_and_fail_on_a_non_integer_label() -> None:
    req = _req(
        [
            {
                "matchExpressions": [
                    {"key": "cores", "operator": "Gt", "values": ["8"]},
                    {"key": "cores", "operator": "Lt", "values": ["64"]},
                ]
            }
        ]
    )
    assert req.matches("n", {"cores": "16"})
    assert not req.matches("n", {"cores": "8"})
    assert not req.matches("n", {"cores": "many"})


def test_match_fields_select_the_node_by_metadata_name() -> None:
    req = _req([{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n2"]}]}])
    assert req.matches("n2", {})
    assert not req.matches("n1", {})
    notin = _req([{"matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["n2"]}]}])
    assert notin.matches("n1", {}) and not notin.matches("n2", {})


def test_preferred_node_affinity_sums_the_weights_of_matching_terms() -> None:
    aff = {
        "nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 30,
                    "preference": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]},
                },
                {"weight": 50, "preference": {"matchExpressions": [{"key": "ssd", "operator": "Exists"}]}},
                {"weight": 0, "preference": {"matchExpressions": [{"key": "ssd", "operator": "Exists"}]}},
            ]
        }
    }
    terms = preferred_terms(aff)
    assert preferred_score(terms, "n", {"zone": "a", "ssd": "1"}) == 80
    assert preferred_score(terms, "n", {"ssd": "1"}) == 50
    assert preferred_score(terms, "n", {}) == 0


def test_toleration_matching_by_key_value_operator_and_effect() -> None:
    taint = {"key": "gpu", "value": "yes", "effect": "NoSchedule"}
    assert tolerates({"key": "gpu", "value": "yes"}, taint)
    assert tolerates({"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}, taint)
    assert not tolerates({"key": "gpu", "value": "no"}, taint)
    assert not tolerates({"key": "gpu", "operator": "Exists", "effect": "NoExecute"}, taint)
    assert tolerates({"operator": "Exists"}, taint)  # empty key + Exists tolerates everything
    assert not tolerates({"value": "no"}, taint)  # an empty key skips the key test, not the value test


def test_only_no_schedule_and_no_execute_taints_keep_a_pod_off() -> None:
    taints = [
        {"key": "soft", "effect": "PreferNoSchedule"},
        {"key": "a", "value": "1", "effect": "NoExecute"},
    ]
    found = find_untolerated_taint(taints, [])
    assert found is not None and untolerated_taint_reason(found) == "node(s) had untolerated taint {a: 1}"
    assert find_untolerated_taint(taints, [{"key": "a", "operator": "Exists"}]) is None


def test_the_unschedulable_taint_toleration_lets_a_pod_onto_a_cordoned_node() -> None:
    assert tolerates_unschedulable(
        [{"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}]
    )
    assert not tolerates_unschedulable([{"key": "other", "operator": "Exists"}])


def test_prefer_no_schedule_count_ignores_tolerations_of_other_effects() -> None:
    taints = [
        {"key": "a", "effect": "PreferNoSchedule"},
        {"key": "b", "effect": "PreferNoSchedule"},
        {"key": "c", "effect": "NoSchedule"},
    ]
    tols = prefer_no_schedule_tolerations(
        [{"key": "a", "operator": "Exists", "effect": "NoSchedule"}, {"key": "b", "operator": "Exists"}]
    )
    assert count_intolerable_prefer_no_schedule(taints, tols) == 1


def test_host_ports_conflict_on_the_same_ip_or_through_the_wildcard() -> None:
    used = {("TCP", "10.0.0.1", 80): 1}
    assert not ports_fit([("TCP", "10.0.0.1", 80)], used)
    assert not ports_fit([("TCP", "0.0.0.0", 80)], used)
    assert ports_fit([("TCP", "10.0.0.2", 80)], used)
    assert ports_fit([("UDP", "10.0.0.1", 80)], used)
    assert not ports_fit([("TCP", "10.0.0.2", 8080)], {("TCP", "0.0.0.0", 8080): 1})
    assert ports_fit([("TCP", "10.0.0.1", 80)], used, freed={("TCP", "10.0.0.1", 80): 1})


def test_resource_scores_on_a_half_cpu_quarter_memory_node() -> None:
    # 4 CPU / 8Gi node with 1 CPU / 1Gi used, task asks 1 CPU / 1Gi: cpu 2/4, memory 2/8
    w = World()
    n = w.node("n", cpu=4, mem_gi=8)
    w.pod("old", on="n", cpu=1, mem_gi=1)
    t = w.pod("new", cpu=1, mem_gi=1)
    # least: cpu (4000-2000)x100/4000 = 50, memory (8-2)x100/8 = 75, mean 62 (integer)
    assert least_allocated(n, t.resreq) == 62
    # most: cpu 50, memory 25, mean 37
    assert most_allocated(n, t.resreq) == 37
    # balanced: |0.5 - 0.25| / 2 = 0.125 -> (1 - 0.125) x 100 = 87
    assert balanced_allocation(n, t.resreq) == 87


def test_least_allocated_gives_zero_for_an_over_requested_resource() -> None:
    w = World()
    n = w.node("n", cpu=2, mem_gi=8)
    w.pod("old", on="n", cpu=2, mem_gi=0)
    t = w.pod("new", cpu=1, mem_gi=2)
    # cpu 3000 > 2000 -> 0; memory (8-2)x100/8 = 75; mean 37
    assert least_allocated(n, t.resreq) == 37
    assert n.used.memory == 0 * GI
