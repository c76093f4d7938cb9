"""GPU sharing by memory and number (spec 2, examples 1-3 of spec 7, spec 8 choices)."""

from __future__ import annotations

import pytest
from dshelpers import pod, share_node

from scheduler.plugins.deviceshare import annotations as ann
from scheduler.plugins.deviceshare.config import POLICY_BINPACK, POLICY_NONE, POLICY_SPREAD
from scheduler.plugins.deviceshare.gpushare import GpuShareLedger, gpushare_node_metrics
from scheduler.plugins.deviceshare.requests import gpushare_request


def mem_req(mib: int, **kw):
    r, err = gpushare_request(pod("p", {ann.GPU_MEMORY: str(mib)}, **kw), True, False)
    assert r is not None, err
    return r


def num_req(k: int, **kw):
    r, err = gpushare_request(pod("p", {ann.GPU_NUMBER: str(k)}, **kw), False, True)
    assert r is not None, err
    return r


def place(led: GpuShareLedger, uid: str, req, policy: int = POLICY_NONE) -> list[int]:
    f = led.fit(req, policy)
    assert f.ok, f.reason
    led.add_pod(uid, req.memory, "Pending", f.cards)
    return f.cards


def test_example1_seed000_two_small_pods_share_card_0_and_a_big_one_takes_card_1() -> None:
    led = GpuShareLedger.from_node(share_node("n"))
    assert led is not None
    assert [c.memory for c in led.cards.values()] == [11178] * 8
    assert place(led, "a", mem_req(1024)) == [0]
    assert place(led, "b", mem_req(1024)) == [0]
    assert place(led, "c", mem_req(11000)) == [1]
    assert ann.encode_gpu_index([0]) == "0"


def test_example2_unhealthy_card_is_never_chosen() -> None:
    led = GpuShareLedger.from_node(share_node("n", annotations={ann.GPU_UNHEALTHY_IDS: "0,x"}))
    assert led is not None and 0 not in led.cards
    assert place(led, "a", mem_req(1024)) == [1]


def test_example3_number_mode_takes_idle_cards_and_reports_shortage() -> None:
    led = GpuShareLedger.from_node(share_node("n", memory="4000", number="4"))
    assert led is not None
    assert place(led, "a", num_req(2)) == [0, 1]
    f = led.fit(num_req(3), POLICY_NONE)
    assert not f.ok and f.reason == "no enough gpu number on node n"
    assert ann.encode_gpu_index([0, 1, 2]) == "0,1,2"


def test_memory_shortage_names_the_node() -> None:
    led = GpuShareLedger.from_node(share_node("n1", memory="2000", number="2"))
    assert led is not None
    f = led.fit(mem_req(1001), POLICY_NONE)
    assert not f.ok and f.reason == "no enough gpu memory on node n1"


def test_our_choice_binpack_and_spread_pick_cards_upstream_always_takes_the_lowest_index() -> None:
    """Upstream ignores SchedulePolicy for gpu-memory (lowest index that fits, score 0); seeds
    000/002 promise binpack = fullest card and spread = emptiest card, with a node score."""
    led = GpuShareLedger.from_node(share_node("n", memory="30000", number="3"))
    assert led is not None
    led.add_pod("x", 5000, "Running", [1])
    assert led.fit(mem_req(1000), POLICY_NONE).cards == [0]
    assert led.fit(mem_req(1000), POLICY_BINPACK).cards == [1]
    assert led.fit(mem_req(1000), POLICY_SPREAD).cards == [0]
    empty = GpuShareLedger.from_node(share_node("m", memory="30000", number="3"))
    assert empty is not None
    assert led.fit(mem_req(1000), POLICY_BINPACK).score > empty.fit(mem_req(1000), POLICY_BINPACK).score
    assert led.fit(mem_req(1000), POLICY_SPREAD).score == empty.fit(mem_req(1000), POLICY_SPREAD).score
    led.add_pod("y", 5000, "Running", [0])
    led.add_pod("z", 5000, "Running", [2])
    assert led.fit(mem_req(1000), POLICY_SPREAD).score < empty.fit(mem_req(1000), POLICY_SPREAD).score
    assert led.fit(mem_req(1000), POLICY_NONE).score == 0.0


def test_our_choice_preset_gpu_index_restricts_the_cards_upstream_overwrites_it() -> None:
    """Seed 002 tells users to set gpu-index to pick cards ("use GPU 0 and GPU 2"); upstream
    overwrites it. We treat it as the allowed set and write back the subset we chose."""
    led = GpuShareLedger.from_node(share_node("n", memory="4000", number="4"))
    assert led is not None
    assert place(led, "a", num_req(2, annotations={ann.GPU_INDEX: "0,2"})) == [0, 2]
    f = led.fit(num_req(1, annotations={ann.GPU_INDEX: "2"}), POLICY_NONE)
    assert not f.ok
    assert led.fit(mem_req(10, annotations={ann.GPU_INDEX: "3"}), POLICY_NONE).cards == [3]


def test_completed_pods_keep_a_card_busy_but_free_its_memory() -> None:
    led = GpuShareLedger.from_node(share_node("n", memory="2000", number="1"))
    assert led is not None
    led.add_pod("done", 2000, "Succeeded", [0])
    assert led.fit(mem_req(2000), POLICY_NONE).ok
    assert not led.fit(num_req(1), POLICY_NONE).ok


def test_pod_amounts_read_limits_and_take_the_max_of_init_containers() -> None:
    p = pod(
        "p",
        {ann.GPU_MEMORY: "1000"},
        {ann.GPU_MEMORY: "500"},
        init=[{ann.GPU_MEMORY: "2000"}, {ann.GPU_MEMORY: "10"}],
    )
    r, _ = gpushare_request(p, True, False)
    assert r is not None and r.memory == 2000
    q = pod("q", {ann.GPU_MEMORY: "1000"}, {ann.GPU_MEMORY: "500"}, init=[{ann.GPU_MEMORY: "100"}])
    r, _ = gpushare_request(q, True, False)
    assert r is not None and r.memory == 1500


@pytest.mark.parametrize(
    ("limits", "annotations", "reason"),
    [
        ({ann.GPU_MEMORY: "-5"}, {}, "is negative"),
        ({ann.GPU_MEMORY: "0.5"}, {}, "must be a whole number"),
        ({ann.GPU_MEMORY: "lots"}, {}, "is not a quantity"),
        ({ann.GPU_MEMORY: "10"}, {ann.GPU_INDEX: "0,one"}, "is not a list of card indices"),
    ],
)
def test_impossible_requests_are_refused_with_their_reason(limits, annotations, reason) -> None:
    r, err = gpushare_request(pod("p", limits, annotations=annotations), True, False)
    assert r is None and reason in err


def test_nodes_without_both_resources_or_with_zero_cards_have_no_ledger() -> None:
    assert GpuShareLedger.from_node(share_node("n", number="0")) is None
    n = share_node("n")
    del n.raw_capacity[ann.GPU_MEMORY]
    assert GpuShareLedger.from_node(n) is None


def test_metrics_report_memory_and_busy_cards() -> None:
    led = GpuShareLedger.from_node(share_node("n", memory="2000", number="2"))
    assert led is not None
    led.add_pod("a", 300, "Running", [1])
    m = gpushare_node_metrics(led)
    assert (m["memory_used"], m["memory_total"], m["cards_busy"]) == (300, 2000, 1)
