"""Volcano's pkg/scheduler/api/devices/nvidia/vgpu tests that check one function (a codec, a score,
a ledger's bookkeeping), translated case by case: each test id is the upstream case name, and the
expected value is the one the Go test asserts. Card-level fit/no-fit cases of the same files are
scenarios (tests/scenarios/volcano/dev-*).
"""

from __future__ import annotations

import pytest
from dshelpers import pod, task, vgpu_limits, vgpu_node

from scheduler.framework.arguments import Arguments
from scheduler.plugins.deviceshare import DeviceSharePlugin
from scheduler.plugins.deviceshare import annotations as ann
from scheduler.plugins.deviceshare.config import DEFAULT_CONFIG, POLICY_BINPACK, POLICY_NONE, POLICY_SPREAD
from scheduler.plugins.deviceshare.fit import card_score
from scheduler.plugins.deviceshare.requests import vgpu_request
from scheduler.plugins.deviceshare.vgpu import KIND, VgpuLedger

UTILS = "pkg/scheduler/api/devices/nvidia/vgpu/utils_test.go"


def ledger(*cards: tuple[str, int, int]) -> VgpuLedger:
    """A node of NVIDIA hami-core cards (uuid, split count, MiB), as upstream's makeGPUDevices."""
    reg = [ann.RegisteredCard(u, n, mem, "NVIDIA", True) for u, n, mem in cards]
    led, why = VgpuLedger.from_node(vgpu_node("node-1", reg), DEFAULT_CONFIG)
    assert led is not None, why
    return led


def place(
    led: VgpuLedger, uid: str, limits: dict, policy: int, annotations: dict | None = None
) -> str | None:
    """Fit and charge one pod like the plugin's allocate; the first card's UUID, None when it does not fit."""
    p = pod(uid, limits, annotations=annotations, uid=uid)
    r, err = vgpu_request(p, DEFAULT_CONFIG)
    assert r is not None, err
    f = led.fit(r, policy)
    if not f.ok:
        return None
    led.add_pod(uid, r.group_key, led.segments(r, f.picks))
    return f.picks[0][0].device_id


# -- utils_test.go :: TestGetPodGroupKey ----------------------------------------------------------
@pytest.mark.parametrize(
    ("namespace", "annotations", "want"),
    [
        pytest.param("ns", {}, "", id="nil annotations"),
        pytest.param(
            "default", {ann.GROUP_NAME: "my-pg"}, "default/my-pg", id="scheduling.k8s.io/group-name"
        ),
        pytest.param(
            "ns1",
            {ann.GROUP_NAME_VOLCANO: "job-pg"},
            "ns1/job-pg",
            id="scheduling.volcano.sh/group-name (Volcano API)",
        ),
        pytest.param(
            "ns",
            {ann.GROUP_NAME: "k8s-pg", ann.GROUP_NAME_VOLCANO: "volcano-pg"},
            "ns/k8s-pg",
            id="k8s annotation takes precedence over volcano",
        ),
    ],
)
def test_get_pod_group_key(namespace: str, annotations: dict[str, str], want: str) -> None:
    assert ann.pod_group_key(namespace, annotations) == want


# -- utils_test.go :: TestGPUScore: one card's score in the state given (16384 MiB, 4 slots)
SPREAD_SCORE_DEPARTURE = pytest.mark.xfail(
    strict=True,
    reason="deliberate departure (docs/device-sharing.md): spread scores a card by its free slots and "
    "memory before charging; Volcano's spread score is 100 only for an idle card, after charging",
)


@pytest.mark.parametrize(
    ("policy", "used_num", "used_mem", "want"),
    [
        pytest.param(POLICY_SPREAD, 0, 0, 100.0, id="spread rewards idle GPU"),
        pytest.param(
            POLICY_SPREAD, 1, 4096, 0.0, id="spread does not reward shared GPU", marks=SPREAD_SCORE_DEPARTURE
        ),
        pytest.param(POLICY_SPREAD, 4, 16384, 0.0, id="spread does not reward full GPU"),
        pytest.param(POLICY_BINPACK, 4, 16384, 100.0, id="binpack rewards full GPU most"),
        pytest.param(POLICY_BINPACK, 0, 0, 0.0, id="binpack does not reward idle GPU"),
        pytest.param(POLICY_NONE, 1, 4096, 0.0, id="unset policy returns zero"),
    ],
)
def test_gpu_score(policy: int, used_num: int, used_mem: int, want: float) -> None:
    assert card_score(policy, 4, 16384, used_num, used_mem, used_mem) == want


# -- utils_test.go :: TestBinpackStacksSequentialPods
def test_binpack_stacks_sequential_pods() -> None:
    led = ledger(("GPU-0000A", 4, 16384), ("GPU-0000B", 4, 16384), ("GPU-0000C", 4, 16384))
    limits = vgpu_limits(1, 4096, 25)
    got = [place(led, f"uid-{n}", limits, POLICY_BINPACK) for n in "abc"]
    assert None not in got
    assert len(set(got)) == 1, got


# -- utils_test.go :: TestDecodeContainerDevicesRejectsInvalidUsage
@pytest.mark.parametrize(
    ("value", "want"),
    [
        pytest.param("GPU-0,NVIDIA,4096,30:", [("GPU-0", "NVIDIA", 4096, 30)], id="valid entry"),
        pytest.param("GPU-0,NVIDIA,-5,30:", [], id="negative memory is skipped"),
        pytest.param("GPU-0,NVIDIA,4096,-1:", [], id="negative cores is skipped"),
        pytest.param("GPU-0,NVIDIA,abc,30:", [], id="non-numeric usage is skipped"),
        pytest.param("GPU-0,NVIDIA:", [], id="entry with missing fields is skipped"),
        pytest.param(
            "GPU-0,NVIDIA,-5,30:GPU-1,NVIDIA,2048,10:",
            [("GPU-1", "NVIDIA", 2048, 10)],
            id="valid entry kept when mixed with invalid",
        ),
    ],
)
def test_decode_container_devices_rejects_invalid_usage(value: str, want: list[tuple]) -> None:
    (segment,) = ann.decode_pod_devices(value)
    assert [(e.uuid, e.type, e.mem, e.cores) for e in segment] == want


# -- device_info_test.go :: TestGetGPUMemoryOfPod
def test_get_gpu_memory_of_pod() -> None:
    p = pod("p", vgpu_limits(1, 3000), vgpu_limits(3, 5000))
    r, err = vgpu_request(p, DEFAULT_CONFIG)
    assert r is not None, err
    assert [(c.nums, c.mem) for c in r.containers] == [(1, 3000), (3, 5000)]


# -- hamicore_test.go: a card's counters when pods are charged and released by UID
def _hami_card() -> VgpuLedger:
    return ledger(("GPU-0", 4, 16384))


def _charge(led: VgpuLedger, uid: str) -> None:
    led.add_pod(uid, "", [[ann.DeviceEntry("GPU-0", 1000, 25)]])


def _allocate_then_snapshot(led: VgpuLedger) -> None:
    # our allocation charges through the same path as the snapshot's replay of the annotation
    place(led, "pod-a", vgpu_limits(1, 1000, 25), POLICY_NONE)
    _charge(led, "pod-a")


@pytest.mark.parametrize(
    "setup",
    [
        pytest.param(lambda led: None, id="fresh add increments counters and seeds PodMap"),
        pytest.param(lambda led: _charge(led, "pod-a"), id="duplicate add is a no-op"),
        pytest.param(
            _allocate_then_snapshot, id="add after Allocate's TryAddPod and addToPodMap does not double-count"
        ),
    ],
)
def test_hami_core_factory_add_pod(setup) -> None:
    led = _hami_card()
    setup(led)
    _charge(led, "pod-a")
    assert led.card_state() == [(1, 1000, 25)]
    assert "pod-a" in led.pods


def test_hami_core_factory_add_pod_distinct_uids_accumulate() -> None:
    led = _hami_card()
    for uid in ("pod-a", "pod-b", "pod-c"):
        _charge(led, uid)
    assert led.card_state() == [(3, 3000, 75)]


def test_hami_core_factory_sub_pod_removes_entry() -> None:
    led = _hami_card()
    _charge(led, "pod-a")
    assert led.remove_pod("pod-a")
    assert "pod-a" not in led.pods
    assert led.card_state() == [(0, 0, 0)]
    _charge(led, "pod-a")
    assert led.card_state()[0][:2] == (1, 1000)


# -- device_info_test.go :: TestReleaseReturnsSpeculativeAnnotationKeys / TestReleaseKeepsCommittedAnnotations:
# releasing a pod (gang discard, preemption) drops the vGPU keys it would be bound with unless the
# device plugin already committed it (bind-phase success); the API object is never touched here.
@pytest.mark.parametrize(
    ("phase", "stripped"),
    [
        pytest.param(ann.BIND_PHASE_ALLOCATING, True, id="TestReleaseReturnsSpeculativeAnnotationKeys"),
        pytest.param(ann.BIND_PHASE_SUCCESS, False, id="TestReleaseKeepsCommittedAnnotations"),
    ],
)
def test_release(phase: str, stripped: bool) -> None:
    anns = {
        ann.VGPU_NODE: "node-a",
        ann.VGPU_IDS_NEW: "GPU-aaaa,NVIDIA,80,0:",
        ann.DEVICES_TO_ALLOCATE: "GPU-aaaa,NVIDIA,80,0:",
        ann.VGPU_TIME: "1700000000",
        ann.BIND_TIME: "1700000000",
        ann.BIND_PHASE: phase,
        "keep-me": "yes",
    }
    p = pod("worker-0", vgpu_limits(1, 80), annotations=anns)
    t = task(p)
    t.bind_annotations = {k: v for k, v in anns.items() if k != "keep-me"}
    node = vgpu_node("node-a", [ann.RegisteredCard("GPU-aaaa", 10, 16384, "NVIDIA", True)])
    led, _ = VgpuLedger.from_node(node, DEFAULT_CONFIG)
    assert led is not None
    node.devices[KIND] = led
    DeviceSharePlugin(Arguments({"deviceshare.VGPUEnable": True}))._release(t, node)
    for k in (ann.VGPU_NODE, ann.VGPU_IDS_NEW, ann.DEVICES_TO_ALLOCATE, ann.BIND_PHASE):
        assert (k not in t.bind_annotations) is stripped, k
    assert p.annotations == anns  # the pod as read from the API server is left alone
