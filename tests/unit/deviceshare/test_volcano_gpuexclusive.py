"""Volcano's pkg/scheduler/plugins/deviceshare/gpuexclusive_test.go and deviceshare_test.go, case by
case (test ids are the upstream case names, expected values the Go test's): which exclusivity rules a
pod matches, how the rules argument is read, and which cards a rule closes to a pod.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from dshelpers import pod, task, vgpu_node

from scheduler.framework.arguments import Arguments
from scheduler.plugins.deviceshare import annotations as ann
from scheduler.plugins.deviceshare.config import (
    DEFAULT_CONFIG,
    POLICY_BINPACK,
    POLICY_SPREAD,
    DeviceShareArgs,
)
from scheduler.plugins.deviceshare.exclusive import ExclusiveRules, matching_rules
from scheduler.plugins.deviceshare.requests import vgpu_request
from scheduler.plugins.deviceshare.vgpu import KIND, VgpuLedger


def rules_of(raw: object) -> tuple:
    """The exclusivity rules the plugin reads from its GPUExclusiveRules argument."""
    values = {} if raw is None else {"deviceshare.GPUExclusiveRules": raw}
    return DeviceShareArgs.parse(Arguments(values)).exclusive_rules


RULES = rules_of([{"app": "training", "team": "ml"}, {"workload": "inference"}])
TRAIN = {"app": "training", "team": "ml"}
INFER = {"workload": "inference"}


# -- TestPodMatchesRule
@pytest.mark.parametrize(
    ("labels", "rule", "want"),
    [
        pytest.param(TRAIN, 0, True, id="pod matches rule 0 (app=training, team=ml)"),
        pytest.param({**TRAIN, "env": "prod"}, 0, True, id="pod matches rule 0 with extra labels"),
        pytest.param({"app": "training"}, 0, False, id="pod missing one label from rule 0"),
        pytest.param({"app": "training", "team": "data"}, 0, False, id="pod has wrong value for rule 0"),
        pytest.param(INFER, 1, True, id="pod matches rule 1 (workload=inference)"),
        pytest.param({}, 0, False, id="pod with nil labels matches nothing"),
    ],
)
def test_pod_matches_rule(labels: dict[str, str], rule: int, want: bool) -> None:
    assert (rule in matching_rules(labels, RULES)) is want


# -- TestMatchingRules
@pytest.mark.parametrize(
    ("labels", "want"),
    [
        pytest.param(TRAIN, 1, id="matches rule 0 only"),
        pytest.param(INFER, 1, id="matches rule 1 only"),
        pytest.param({**TRAIN, **INFER}, 2, id="matches both rules"),
        pytest.param({"app": "serving"}, 0, id="matches no rules"),
        pytest.param({}, 0, id="nil labels matches nothing"),
    ],
)
def test_matching_rules(labels: dict[str, str], want: int) -> None:
    assert len(matching_rules(labels, RULES)) == want


# -- TestLoadGPUExclusiveConfig
@pytest.mark.parametrize(
    ("raw", "want"),
    [
        pytest.param(None, (), id="defaults with no rules"),
        pytest.param(
            [{"app": "training", "team": "ml"}, {"workload": "inference"}],
            ((("app", "training"), ("team", "ml")), (("workload", "inference"),)),
            id="rules from map[string]interface{}",
        ),
        # a YAML map decodes to the same Python dict whatever Go type it would have had
        pytest.param(
            [{"app": "training"}], ((("app", "training"),),), id="rules from map[interface{}]interface{}"
        ),
    ],
)
def test_load_gpu_exclusive_config(raw, want) -> None:
    assert rules_of(raw) == want


# -- TestParseExclusiveRulesHandlesEdgeCases: Volcano reads no rule from these (and goes on), and so do we
@pytest.mark.parametrize(
    "raw",
    [
        pytest.param(None, id="nil input"),
        pytest.param("not a slice", id="wrong type"),
        pytest.param([], id="empty slice"),
        pytest.param([{}], id="empty map skipped"),
    ],
)
def test_parse_exclusive_rules_handles_edge_cases(raw) -> None:
    assert rules_of(raw) == ()


# -- cards a rule closes: a node of GPU-0..GPU-n (10 slots); pods hold cards by UID
def exclusive_node(n: int, holders: dict[str, tuple[int, dict[str, str]]]):
    reg = [ann.RegisteredCard(f"GPU-{i}", 10, 16384, "NVIDIA", True) for i in range(n)]
    node = vgpu_node("test-node", reg)
    led, why = VgpuLedger.from_node(node, DEFAULT_CONFIG)
    assert led is not None, why
    node.devices[KIND] = led
    ex = ExclusiveRules(RULES)
    for name, (card, labels) in holders.items():
        p = pod(name, labels=labels, uid=f"uid-{name}")
        node.tasks[p.uid] = task(p)
        led.add_pod(p.uid, "", [[ann.DeviceEntry(f"GPU-{card}", 0, 0)]])
        ex.track(p)
    return node, led, ex


def newcomer(name: str, labels: dict[str, str]):
    return pod(name, {ann.VGPU_NUMBER: "1"}, labels=labels, uid=f"uid-{name}")


HELD = {"pod-a": (0, TRAIN), "pod-b": (1, INFER)}


def test_cap_gpus_only_affects_specified_indices() -> None:
    _, led, _ = exclusive_node(4, {"x": (0, {}), "y": (1, {})})
    counts = lambda: [led.table.count[led.base + c] for c in range(4)]  # noqa: E731
    with led.capped([0, 1]):
        assert counts() == [1, 1, 10, 10]
    assert counts() == [10, 10, 10, 10]


def test_reserved_gpus_for_pod() -> None:
    _, led, ex = exclusive_node(3, HELD)
    assert ex.closed_cards(newcomer("pod-c", TRAIN), led) == [0]
    assert ex.closed_cards(newcomer("pod-e", {"app": "serving"}), led) == []


def test_pod_matching_multiple_rules_sees_union_of_reserved_gpus() -> None:
    _, led, ex = exclusive_node(3, HELD)
    assert ex.closed_cards(newcomer("pod-x", {**TRAIN, **INFER}), led) == [0, 1]


def test_non_matching_pod_does_not_reserve() -> None:
    _, led, ex = exclusive_node(1, {})
    other = newcomer("pod-x", {"app": "serving"})
    assert ex.closed_cards(other, led) == []
    assert ex.pod_rules.get(other.uid) == frozenset()


def test_end_to_end_exclusive() -> None:
    _, led, ex = exclusive_node(4, HELD)
    t = led.table
    with led.capped(ex.closed_cards(newcomer("pod-c", TRAIN), led)):
        available = sum(t.count[led.base + c] > t.used_num[led.base + c] for c in range(4))
    assert available == 3
    assert ex.closed_cards(newcomer("pod-e", {"app": "serving"}), led) == []
    assert [t.count[led.base + c] for c in range(4)] == [10, 10, 10, 10]


def test_on_session_open_wraps_devices() -> None:
    node, led, _ = exclusive_node(2, {"pod-a": (0, TRAIN)})
    ex = ExclusiveRules.build(RULES, SimpleNamespace(node_list=[node]))
    assert ex.closed_cards(newcomer("pod-c", TRAIN), led) == [0]


# -- deviceshare_test.go :: TestArguments
def test_arguments() -> None:
    a = DeviceShareArgs.parse(
        Arguments(
            {
                "deviceshare.VGPUEnable": True,
                "deviceshare.SchedulePolicy": "binpack",
                "deviceshare.ScheduleWeight": 10,
            }
        )
    )
    assert (a.weight, a.policy_name, a.policy) == (10, "binpack", POLICY_BINPACK)


# -- deviceshare_test.go :: TestVgpuScore: the node's device score (Volcano checks only an upper bound)
def test_vgpu_score() -> None:
    def node_ledger(name: str) -> VgpuLedger:
        led, why = VgpuLedger.from_node(
            vgpu_node(name, [ann.RegisteredCard("GPU-0", 10, 30000, "NVIDIA", True)]), DEFAULT_CONFIG
        )
        assert led is not None, why
        return led

    limits = {ann.VGPU_NUMBER: "1", ann.VGPU_MEMORY: "1000"}
    r, err = vgpu_request(pod("p3", {"cpu": "2", "memory": "10Gi", **limits}, ns="c1"), DEFAULT_CONFIG)
    assert r is not None, err
    node1 = node_ledger("node1")
    node1.add_pod("old", "", [[ann.DeviceEntry("GPU-0", 3000, 0)]])
    binpack = node1.fit(r, POLICY_BINPACK)
    assert binpack.ok and binpack.score - 4000 * 100 / 30000 <= 0.05
    spread = node_ledger("node2").fit(r, POLICY_SPREAD)
    assert spread.ok and spread.score - 100 <= 0.05
