"""MIG cards: geometry choice, slice ids, rebuild (spec 4, example 8 of spec 7)."""

from __future__ import annotations

from dshelpers import A100, A100_GEOMETRY, T4, cards, pod, vgpu_limits, vgpu_node

from scheduler.plugins.deviceshare import annotations as ann
from scheduler.plugins.deviceshare.config import DEFAULT_CONFIG, POLICY_NONE, parse_device_config
from scheduler.plugins.deviceshare.requests import vgpu_request
from scheduler.plugins.deviceshare.vgpu import VgpuLedger

CFG = parse_device_config(A100_GEOMETRY)


def mig_ledger(n: int = 1, cfg=CFG) -> VgpuLedger:
    led, why = VgpuLedger.from_node(vgpu_node("m", cards(n, devmem=81920, type_=A100, mode="mig")), cfg)
    assert led is not None, why
    return led


def alloc(led: VgpuLedger, name: str, mem: int | None = None, pct: int | None = None) -> str | None:
    r, err = vgpu_request(pod(name, vgpu_limits(1, mem, pct=pct)), CFG)
    assert r is not None, err
    f = led.fit(r, POLICY_NONE)
    if not f.ok:
        return None
    segs = led.segments(r, f.picks)
    led.add_pod(f"uid-{name}", "", segs)
    return ann.encode_pod_devices(segs)


def test_example8_small_request_cuts_group1_and_a_large_one_no_longer_fits() -> None:
    led = mig_ledger()
    assert led.mode == "mig"
    assert alloc(led, "a", 3000) == "GPU-0[group1-0],NVIDIA,3000,0:"
    # the card is now cut into group1 (7 x 9728 MiB): 20000 MiB cannot be served
    assert alloc(led, "b", 20000) is None
    assert alloc(led, "c", 9000) == "GPU-0[group1-1],NVIDIA,9000,0:"


def test_the_slice_memory_is_charged_not_the_request() -> None:
    led = mig_ledger()
    alloc(led, "a", 3000)
    assert led.card_state() == [(1, 9728, 0)]


def test_large_request_on_an_empty_card_takes_the_first_group_that_fits() -> None:
    led = mig_ledger()
    assert alloc(led, "a", 30000) == "GPU-0[group3-0],NVIDIA,30000,0:"
    assert alloc(led, "b", 30000) == "GPU-0[group3-1],NVIDIA,30000,0:"
    assert alloc(led, "c", 100) is None  # group3 has only two 3g.40gb slices


def test_positions_count_across_the_profiles_of_a_group() -> None:
    led = mig_ledger()
    led.add_pod("x", "", ann.decode_pod_devices("GPU-0[group2-0],NVIDIA,15000,0:"))
    # only profiles already in use are offered on a partitioned card (upstream quirk kept)
    assert alloc(led, "a", 5000) == "GPU-0[group2-1],NVIDIA,5000,0:"
    led2 = mig_ledger()
    led2.add_pod("y", "", ann.decode_pod_devices("GPU-0[group2-3],NVIDIA,5000,0:"))
    assert led2.state()[1] == ((1, ((1, (0,)),)),)


def test_rebuild_from_annotations_equals_the_live_ledger_and_release_unpartitions() -> None:
    live = mig_ledger()
    written = {name: alloc(live, name, 3000) for name in ("a", "b", "c")}
    rebuilt = mig_ledger()
    for name, ids in written.items():
        rebuilt.add_pod(f"uid-{name}", "", ann.decode_pod_devices(ids))
    assert rebuilt.state() == live.state()
    for name in written:
        live.remove_pod(f"uid-{name}")
    # Upstream keeps the card's group until the next snapshot; ours is unpartitioned at once.
    assert live.state() == mig_ledger().state()
    assert alloc(live, "big", 70000) == "GPU-0[group4-0],NVIDIA,70000,0:"


def test_mig_entry_without_slice_and_clashing_slices_are_not_counted() -> None:
    led = mig_ledger()
    led.add_pod("plain", "", ann.decode_pod_devices("GPU-0,NVIDIA,3000,0:"))
    led.add_pod("a", "", ann.decode_pod_devices("GPU-0[group1-0],NVIDIA,3000,0:"))
    led.add_pod("dup", "", ann.decode_pod_devices("GPU-0[group1-0],NVIDIA,3000,0:"))
    led.add_pod("other-group", "", ann.decode_pod_devices("GPU-0[group3-0],NVIDIA,3000,0:"))
    assert led.card_state() == [(1, 9728, 0)]


def test_without_known_geometry_a_mig_node_falls_back_to_hami_core() -> None:
    led = mig_ledger(cfg=DEFAULT_CONFIG)
    assert led.mode == "hami-core"
    led2, _ = VgpuLedger.from_node(vgpu_node("m", cards(1, type_=T4, mode="mig")), CFG)
    assert led2 is not None and led2.mode == "hami-core"


def test_pod_asking_mig_mode_does_not_fit_a_hami_core_node() -> None:
    r, _ = vgpu_request(pod("p", vgpu_limits(1, 10), annotations={ann.VGPU_MODE: "mig"}), CFG)
    led, _ = VgpuLedger.from_node(vgpu_node("h", cards(1)), CFG)
    assert r is not None and led is not None
    assert not led.fit(r, POLICY_NONE).ok
    assert mig_ledger().fit(r, POLICY_NONE).ok


def test_memory_factor_scales_the_request_and_the_charge() -> None:
    cfg = parse_device_config(A100_GEOMETRY.replace("nvidia:\n", "nvidia:\n  gpuMemoryFactor: 2\n"))
    led, _ = VgpuLedger.from_node(vgpu_node("m", cards(1, devmem=40960, type_=A100, mode="mig")), cfg)
    assert led is not None
    r, _ = vgpu_request(pod("p", vgpu_limits(1, 5000)), cfg)
    assert r is not None
    f = led.fit(r, POLICY_NONE)
    # 5000 x 2 = 10000 MiB real: 1g.10gb (9728) is too small, so group2's 2g.20gb is cut
    assert f.picks[0][0].device_id == "GPU-0[group2-0]"
    led.add_pod("p", "", led.segments(r, f.picks))
    assert led.card_state() == [(1, 19968 // 2, 0)]
