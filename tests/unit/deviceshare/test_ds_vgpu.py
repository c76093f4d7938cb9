"""vGPU ledgers: card order, filters, scores and annotations (spec 3, worked examples of spec 7)."""

from __future__ import annotations

import pytest
from dshelpers import T4, V100, cards, pod, vgpu_limits, vgpu_node

from scheduler.plugins.deviceshare import annotations as ann
from scheduler.plugins.deviceshare.config import (
    DEFAULT_CONFIG,
    POLICY_BINPACK,
    POLICY_NONE,
    POLICY_SPREAD,
    parse_device_config,
)
from scheduler.plugins.deviceshare.requests import vgpu_request
from scheduler.plugins.deviceshare.vgpu import VgpuLedger, VgpuTable, vgpu_card_metrics, vgpu_usage_of

PCT_CONFIG = parse_device_config("nvidia: {resourceMemoryPercentageName: volcano.sh/vgpu-memory-percentage}")


def ledger(registered, cfg=DEFAULT_CONFIG, **kw) -> VgpuLedger:
    led, why = VgpuLedger.from_node(vgpu_node("n1", registered, **kw), cfg)
    assert led is not None, why
    return led


def request(p, cfg=DEFAULT_CONFIG):
    r, err = vgpu_request(p, cfg)
    assert err == "", err
    assert r is not None
    return r


def allocate(led: VgpuLedger, p, policy: int = POLICY_NONE, cfg=DEFAULT_CONFIG) -> str:
    """Choose cards like the plugin's Allocate and return the vgpu-ids-new value written."""
    r = request(p, cfg)
    f = led.fit(r, policy)
    assert f.ok, f.reason
    segs = led.segments(r, f.picks)
    led.add_pod(p.uid, r.group_key, segs)
    return ann.encode_pod_devices(segs)


def test_example4_hami_core_without_policy_takes_the_highest_index_card() -> None:
    led = ledger(
        "GPU-0,10,16384,NVIDIA-Tesla T4,true,hami-core:GPU-1,10,16384,NVIDIA-Tesla T4,true,hami-core:"
    )
    ids = allocate(led, pod("p", vgpu_limits(1, 4096, 25)))
    assert ids == "GPU-1,NVIDIA,4096,25:"


def test_example5_binpack_prefers_the_used_card_and_scores_fifty() -> None:
    led = ledger(cards(2))
    led.add_pod("old", "", [[ann.DeviceEntry("GPU-0", 4096, 0)]])
    r = request(pod("p", vgpu_limits(1, 4096)))
    f = led.fit(r, POLICY_BINPACK)
    assert [p.device_id for p in f.picks[0]] == ["GPU-0"]
    assert f.score == pytest.approx(50.0)


def test_example5_spread_prefers_the_least_shared_card() -> None:
    led = ledger(cards(2))
    led.add_pod("old", "", [[ann.DeviceEntry("GPU-0", 4096, 0)]])
    f = led.fit(request(pod("p", vgpu_limits(1, 4096))), POLICY_SPREAD)
    assert [p.device_id for p in f.picks[0]] == ["GPU-1"]


def test_seed004_binpack_puts_the_pod_on_the_fuller_v100_card() -> None:
    led = ledger(
        "GPU-v100-a,10,32768,NVIDIA-Tesla V100-PCIE-32GB,true,hami-core:"
        "GPU-v100-b,10,32768,NVIDIA-Tesla V100-PCIE-32GB,true,hami-core:"
    )
    led.add_pod("running", "", ann.decode_pod_devices("GPU-v100-b,NVIDIA,8000,20:"))
    p = pod("hami-pod", vgpu_limits(1, 3000, 50), annotations={ann.VGPU_MODE: "hami-core"})
    assert allocate(led, p, POLICY_BINPACK) == "GPU-v100-b,NVIDIA,3000,50:"


def test_example6_pod_group_spread_puts_group_members_on_different_cards() -> None:
    group = {ann.GROUP_NAME: "job-1"}
    spread = {**group, ann.VGPU_PODGROUP_POLICY: "spread"}
    led = ledger(cards(2, count=4))
    first = allocate(led, pod("a", vgpu_limits(1, 4096, 25), annotations=spread), POLICY_BINPACK)
    second = allocate(led, pod("b", vgpu_limits(1, 4096, 25), annotations=spread), POLICY_BINPACK)
    assert first.split(",")[0] != second.split(",")[0]
    led2 = ledger(cards(2, count=4))
    first = allocate(led2, pod("a", vgpu_limits(1, 4096, 25), annotations=group), POLICY_BINPACK)
    second = allocate(led2, pod("b", vgpu_limits(1, 4096, 25), annotations=group), POLICY_BINPACK)
    assert first.split(",")[0] == second.split(",")[0]


def test_example7_exclusive_cores_skip_a_shared_card_and_count_only_takes_whole_memory() -> None:
    led = ledger(cards(1))
    led.add_pod("sharer", "", [[ann.DeviceEntry("GPU-0", 1000, 0)]])
    f = led.fit(request(pod("p", vgpu_limits(1, 1000, 100))), POLICY_NONE)
    assert not f.ok and f.reason == "not enough gpu fitted on this node"
    # vgpu-number only: the demand is 100 % of the card's memory, so a card with 1000 MiB used is too small
    assert not led.fit(request(pod("q", vgpu_limits(1))), POLICY_NONE).ok
    empty = ledger(cards(1))
    assert allocate(empty, pod("q", vgpu_limits(1))) == "GPU-0,NVIDIA,16384,0:"


def test_card_fully_taken_by_core_exclusive_use_refuses_zero_core_sharers() -> None:
    led = ledger(cards(1))
    led.add_pod("excl", "", [[ann.DeviceEntry("GPU-0", 100, 100)]])
    assert not led.fit(request(pod("p", vgpu_limits(1, 100))), POLICY_NONE).ok


def test_more_cards_than_the_node_has_is_reported_as_such() -> None:
    f = ledger(cards(2)).fit(request(pod("p", vgpu_limits(3, 100))), POLICY_NONE)
    assert not f.ok and f.reason == "no enough gpu cards on node"


def test_split_count_limits_the_sharers_of_a_card() -> None:
    led = ledger(cards(1, count=2))
    allocate(led, pod("a", vgpu_limits(1, 10)))
    allocate(led, pod("b", vgpu_limits(1, 10)))
    assert not led.fit(request(pod("c", vgpu_limits(1, 10))), POLICY_NONE).ok


def test_two_cards_per_container_are_distinct() -> None:
    led = ledger(cards(2))
    assert allocate(led, pod("p", vgpu_limits(2, 2000))) == "GPU-1,NVIDIA,2000,0:GPU-0,NVIDIA,2000,0:"


def test_percentage_requests_take_that_share_of_each_card() -> None:
    led = ledger(cards(1, devmem=32768), PCT_CONFIG)
    ids = allocate(led, pod("p", vgpu_limits(1, pct=25)), cfg=PCT_CONFIG)
    assert ids == "GPU-0,NVIDIA,8192,0:"


def test_our_choice_every_regular_container_gets_a_segment_upstream_omits_non_gpu_containers() -> None:
    """Upstream encodes only vGPU containers, so a GPU container that is not first gets the wrong
    devices from the plugin (segment i -> spec.containers[i]). We write an empty segment for each
    container without vGPU, which both decoders skip."""
    led = ledger(cards(1))
    ids = allocate(led, pod("p", {"cpu": "1"}, vgpu_limits(1, 3000)))
    assert ids == ";GPU-0,NVIDIA,3000,0:"
    segs = ann.decode_pod_devices(ids)
    assert segs[0] == [] and segs[1][0].uuid == "GPU-0"
    # a rebuilt ledger counts it exactly like the live one
    again = ledger(cards(1))
    again.add_pod(ids and "uid-default-p", "", segs)
    assert again.card_state() == led.card_state()


def test_later_containers_see_earlier_containers_charges_and_may_share_the_card() -> None:
    led = ledger(cards(1, devmem=10000))
    ids = allocate(led, pod("p", vgpu_limits(1, 4000), vgpu_limits(1, 4000)))
    assert ids == "GPU-0,NVIDIA,4000,0:;GPU-0,NVIDIA,4000,0:"
    assert led.card_state() == [(2, 8000, 0)]
    assert not led.fit(request(pod("p2", vgpu_limits(1, 4000), vgpu_limits(1, 4000))), POLICY_NONE).ok


def test_our_choice_unhealthy_cards_are_never_chosen_upstream_still_schedules_them() -> None:
    """Upstream records the register's health flag but still picks the card; kubelet admission
    then fails. We skip it, and also honour volcano.sh/gpu-unhealthy-ids by index or UUID."""
    sick = ledger(cards(2, health=[True, False]))
    assert allocate(sick, pod("p", vgpu_limits(1, 100))) == "GPU-0,NVIDIA,100,0:"
    by_uuid = ledger(cards(2), annotations={ann.GPU_UNHEALTHY_IDS: "GPU-1"})
    assert allocate(by_uuid, pod("p", vgpu_limits(1, 100))) == "GPU-0,NVIDIA,100,0:"
    by_index = ledger(cards(2), annotations={ann.GPU_UNHEALTHY_IDS: "0"})
    assert allocate(by_index, pod("p", vgpu_limits(1, 100))) == "GPU-1,NVIDIA,100,0:"


def test_our_choice_spread_node_score_prefers_emptier_nodes_upstream_scores_zero_always() -> None:
    """Upstream computes the spread card score after charging the card, so it is always 0 and
    spread cannot prefer emptier nodes; ours is computed before charging."""
    busy, empty = ledger(cards(2)), ledger(cards(2))
    busy.add_pod("x", "", [[ann.DeviceEntry("GPU-0", 8000, 0)], [ann.DeviceEntry("GPU-1", 8000, 0)]])
    r = request(pod("p", vgpu_limits(1, 1000)))
    assert empty.fit(r, POLICY_SPREAD).score == 100.0
    assert 0 < busy.fit(r, POLICY_SPREAD).score < empty.fit(r, POLICY_SPREAD).score


def test_our_choice_mps_register_makes_an_mps_node_upstream_treats_it_as_hami_core() -> None:
    """Upstream maps a register mode `mps` to hami-core, so a pod asking vgpu-mode mps never fits.
    Ours: an MPS node (hami-core accounting) that fits mps pods and pods without a mode only."""
    mps = ledger(cards(1, mode="mps"))
    core = ledger(cards(1))
    want_mps = request(pod("p", vgpu_limits(1, 100), annotations={ann.VGPU_MODE: "mps"}))
    want_core = request(pod("q", vgpu_limits(1, 100), annotations={ann.VGPU_MODE: "hami-core"}))
    any_mode = request(pod("r", vgpu_limits(1, 100)))
    assert mps.fit(want_mps, POLICY_NONE).ok
    assert not core.fit(want_mps, POLICY_NONE).ok
    f = mps.fit(want_core, POLICY_NONE)
    assert not f.ok and "pod required sharing mode hami-core is not the same as the node mode mps" in f.reason
    assert mps.fit(any_mode, POLICY_NONE).ok and core.fit(any_mode, POLICY_NONE).ok


def test_uuid_allow_and_deny_lists_choose_cards() -> None:
    led = ledger(cards(3))
    allow = pod("p", vgpu_limits(1, 10), annotations={ann.VGPU_USE_UUID: " GPU-0 , "})
    assert allocate(led, allow) == "GPU-0,NVIDIA,10,0:"
    deny = pod("q", vgpu_limits(1, 10), annotations={ann.VGPU_NOUSE_UUID: "GPU-2,GPU-1"})
    assert allocate(led, deny) == "GPU-0,NVIDIA,10,0:"
    nowhere = ledger(cards(1)).fit(
        request(pod("r", vgpu_limits(1, 10), annotations={ann.VGPU_USE_UUID: "GPU-9"})), 0
    )
    assert not nowhere.ok and ann.VGPU_USE_UUID in nowhere.reason


def test_gpu_type_filters_are_case_insensitive_substrings_and_nouse_only_without_use() -> None:
    led = ledger([*cards(1, type_=V100), ann.RegisteredCard("GPU-t4", 10, 16384, T4, True, "hami-core")])
    assert allocate(led, pod("p", vgpu_limits(1, 10), annotations={ann.USE_GPUTYPE: "v100"})).startswith(
        "GPU-0,"
    )
    assert allocate(led, pod("q", vgpu_limits(1, 10), annotations={ann.NOUSE_GPUTYPE: "T4"})).startswith(
        "GPU-0,"
    )
    both = pod("r", vgpu_limits(1, 10), annotations={ann.USE_GPUTYPE: "T4", ann.NOUSE_GPUTYPE: "T4"})
    assert allocate(led, both).startswith("GPU-t4,")


def test_cards_of_other_vendors_are_never_used() -> None:
    led = ledger([ann.RegisteredCard("GPU-x", 10, 16384, "AMD-MI100", True, "hami-core")])
    assert not led.fit(request(pod("p", vgpu_limits(1, 10))), POLICY_NONE).ok


@pytest.mark.parametrize(
    ("limits", "annotations", "reason"),
    [
        (vgpu_limits(1, 100, 150), {}, "volcano.sh/vgpu-cores 150 is more than 100 percent of a card"),
        (vgpu_limits(1, pct=120), {}, "volcano.sh/vgpu-memory-percentage 120 is more than 100 percent"),
        (vgpu_limits(-1, 100), {}, "is negative"),
        ({ann.VGPU_NUMBER: "1", ann.VGPU_MEMORY: "1.5"}, {}, "must be a whole number"),
        ({ann.VGPU_NUMBER: "one"}, {}, "is not a quantity"),
        (vgpu_limits(1, 100), {ann.VGPU_MODE: "turbo"}, "unknown volcano.sh/vgpu-mode 'turbo'"),
    ],
)
def test_impossible_requests_are_refused_with_their_reason(limits, annotations, reason) -> None:
    r, err = vgpu_request(pod("p", limits, annotations=annotations), PCT_CONFIG)
    assert r is None and reason in err


def test_pods_asking_only_cores_or_only_init_containers_do_not_use_vgpu() -> None:
    assert vgpu_request(pod("p", {ann.VGPU_CORES: "50"}), DEFAULT_CONFIG) == (None, "")
    assert vgpu_request(pod("p", {"cpu": "1"}, init=[vgpu_limits(1, 10)]), DEFAULT_CONFIG) == (None, "")


@pytest.mark.parametrize(
    ("register", "why"),
    [
        ("GPU-0,10,16384", "no ':'-terminated entry"),
        ("GPU-0,10,16384,NVIDIA-T4:", "need 6"),
        ("::", "lists no card"),
    ],
)
def test_garbled_registration_leaves_the_node_without_a_ledger(register, why) -> None:
    led, reason = VgpuLedger.from_node(vgpu_node("n", register), DEFAULT_CONFIG)
    assert led is None and why in reason


def test_garbage_numbers_in_the_registration_make_the_node_unusable_with_the_reason() -> None:
    # a registration the device plugin cannot have written is not trusted card by card
    led, why = VgpuLedger.from_node(
        vgpu_node("n1", "GPU-0,ten,16384,NVIDIA-T4,true,hami-core:GPU-1,10,16384,NVIDIA-T4,maybe,hami-core:"),
        DEFAULT_CONFIG,
    )
    assert led is None and "count 'ten'" in why
    # an unhealthy card ("maybe" is not true) in a readable registration is only that card
    led = ledger("GPU-0,10,16384,NVIDIA-T4,maybe,hami-core:")
    assert not led.fit(request(pod("p", vgpu_limits(1, 10))), POLICY_NONE).ok


def test_rebuild_skips_garbled_entries_and_cards_that_are_gone() -> None:
    led = ledger(cards(2))
    led.add_pod(
        "a", "", ann.decode_pod_devices("GPU-0,NVIDIA,x,0:GPU-0,NVIDIA:GPU-7,NVIDIA,5,0:GPU-1,NVIDIA,100,10:")
    )
    assert led.card_state() == [(0, 0, 0), (1, 100, 10)]


def test_release_frees_exactly_what_the_pod_held() -> None:
    led = ledger(cards(2))
    allocate(led, pod("a", vgpu_limits(2, 1000, 10)))
    led.remove_pod("uid-default-a")
    assert led.card_state() == [(0, 0, 0), (0, 0, 0)]
    assert not led.remove_pod("uid-default-a")


def test_batch_fit_over_a_shared_table_agrees_with_each_node() -> None:
    table = VgpuTable()
    leds = [VgpuLedger.from_node(vgpu_node(f"n{i}", cards(2)), DEFAULT_CONFIG, table)[0] for i in range(3)]
    leds[1].add_pod("x", "", [[ann.DeviceEntry("GPU-0", 16000, 0)], [ann.DeviceEntry("GPU-1", 16000, 0)]])
    leds[2].add_pod("y", "", [[ann.DeviceEntry("GPU-0", 4000, 0)]])
    r = request(pod("p", vgpu_limits(1, 2000)))
    codes, scores = table.fit_all(r, POLICY_BINPACK)
    assert list(codes) == [0, 2, 0]
    assert [scores[i] for i in (0, 2)] == [leds[0].fit(r, 1).score, leds[2].fit(r, 1).score]


def test_metrics_and_queue_accounting_read_the_ledger_and_annotations() -> None:
    led = ledger(cards(1))
    led.add_pod("a", "", [[ann.DeviceEntry("GPU-0", 3000, 30)]])
    m = vgpu_card_metrics(led)[0]
    assert (m["memory_allocated"], m["cores_allocated"], m["memory_limit"], m["shared_pods"]) == (
        3000,
        30,
        16384,
        1,
    )
    assert vgpu_usage_of({ann.VGPU_IDS_NEW: "GPU-0,NVIDIA,2000,10:;GPU-1,NVIDIA,3000,20:"}) == (5000, 30)


def test_exclusivity_rules_match_all_labels_and_leave_mig_cards_alone() -> None:
    from dshelpers import A100_GEOMETRY

    from scheduler.plugins.deviceshare.config import parse_device_config
    from scheduler.plugins.deviceshare.exclusive import ExclusiveRules, matching_rules, parse_rules
    from scheduler.plugins.deviceshare.vgpu import VgpuLedger

    rules, warnings = parse_rules([{"app": "train", "team": "ml"}, {"workload": "infer"}])
    assert warnings == ()
    assert matching_rules({"app": "train", "team": "ml", "x": "1"}, rules) == {0}
    assert matching_rules({"app": "train"}, rules) == set()
    assert matching_rules({"workload": "infer", "app": "train", "team": "ml"}, rules) == {0, 1}
    ex = ExclusiveRules(rules)
    holder = pod("holder", labels={"workload": "infer"})
    asker = pod("asker", labels={"workload": "infer"})
    ex.track(holder)
    core = VgpuLedger.from_node(vgpu_node("h", cards(2)), parse_device_config(None))[0]
    core.add_pod(holder.uid, "", [[ann.DeviceEntry("GPU-1", 100, 0)]])
    assert ex.closed_cards(asker, core) == [1]
    assert ex.closed_cards(pod("free"), core) == []  # matches no rule
    mig = VgpuLedger.from_node(
        vgpu_node("m", cards(1, devmem=81920, type_="NVIDIA-A100-SXM4-80GB", mode="mig")),
        parse_device_config(A100_GEOMETRY),
    )[0]
    assert mig.mode == "mig"
    mig.add_pod(holder.uid, "", [[ann.DeviceEntry("GPU-0[group1-0]", 100, 0)]])
    assert ex.closed_cards(asker, mig) == []  # MIG slices are isolated in hardware


def test_garbled_vgpu_registration_keeps_pods_off_the_node_with_the_reason(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # upstream: no ledger, the deviceshare predicate passes, the pod is bound and the plugin fails it
    import copy

    from scheduler import registry
    from scheduler.framework.session import SessionOptions
    from scheduler.plugins.deviceshare import DeviceSharePlugin
    from scheduler.registry import parse
    from scheduler.sim.simulate import simulate
    from tests import builders as b

    monkeypatch.setitem(registry.PLUGINS, "deviceshare", DeviceSharePlugin)
    extra = {ann.VGPU_NUMBER: "10", ann.VGPU_MEMORY: "16384", ann.VGPU_CORES: "100"}
    objects = [
        b.queue("default"),
        b.node("bad", extra=extra, annotations={ann.VGPU_REGISTER: "GPU-a,10,16384:"}),
        b.pod("p", cpu="1", limits=vgpu_limits(1, 1000)),
    ]
    conf = b.tiers(
        "enqueue, allocate",
        ["predicates", "deviceshare"],
        args={"deviceshare": {"deviceshare.VGPUEnable": True}},
    )
    out = simulate(
        copy.deepcopy(objects), parse(conf), cycles=1, seed=0, options=SessionOptions(deterministic=True)
    )
    assert out.bindings == {}
    assert "garbled vGPU registration entry 'GPU-a,10,16384': 3 fields, need 6" in out.pending["c1/p"]
    assert any("node bad: garbled vGPU registration" in w for w in out.warnings)


def test_ledgers_of_later_sessions_follow_a_changed_or_garbled_registration() -> None:
    """Registrations are decoded once and remembered by their text: a node re-registering other
    cards gets them, and a registration that turns garbled keeps its reason every session."""
    first = VgpuLedger.from_node(vgpu_node("n", cards(2)), DEFAULT_CONFIG)[0]
    again = VgpuLedger.from_node(vgpu_node("n", cards(2)), DEFAULT_CONFIG)[0]
    assert first is not None and again is not None and again.uuids == first.uuids == ["GPU-0", "GPU-1"]
    changed = VgpuLedger.from_node(vgpu_node("n", cards(3, prefix="GPU-B")), DEFAULT_CONFIG)[0]
    assert changed is not None and changed.uuids == ["GPU-B0", "GPU-B1", "GPU-B2"]
    for _ in range(2):
        led, why = VgpuLedger.from_node(vgpu_node("n", "GPU-0,10,16384,NVIDIA-T4:"), DEFAULT_CONFIG)
        assert led is None and "need 6" in why


def test_amounts_parsed_before_give_the_same_answers_and_errors_name_their_container() -> None:
    from scheduler.plugins.deviceshare.requests import device_amount

    for _ in range(2):  # the second time from the memo of valid amounts
        assert device_amount("main", ann.VGPU_MEMORY, "4096") == (4096, "")
        assert device_amount("main", ann.VGPU_MEMORY, "2Ki") == (2048, "")
        assert device_amount("main", ann.VGPU_MEMORY, 3) == (3, "")
        for ctr in ("a", "b"):
            v, err = device_amount(ctr, ann.VGPU_MEMORY, "-1")
            assert v == 0 and err.startswith(f"container {ctr}: ") and "negative" in err
