"""Volcano's pkg/scheduler/api/devices/ascend/hami/device_info_test.go, case by case: test ids are the
upstream case names and expected values the Go test's. The chip is the test's Ascend310P (our
built-in default: 21527 of 24576 MiB, 8 AI cores, vir01/vir02/vir04), or its Ascend910A device.
"""

from __future__ import annotations

from datetime import datetime

import pytest
from dshelpers import ASCEND910A_VNPU, pod, task

from scheduler import registry
from scheduler.framework.arguments import Arguments
from scheduler.framework.session import SessionOptions
from scheduler.model.node import NodeInfo
from scheduler.model.resources import Resource
from scheduler.plugins.deviceshare import DeviceSharePlugin
from scheduler.plugins.deviceshare import annotations as ann
from scheduler.plugins.deviceshare.ascend import AscendLedger, NpuChip
from scheduler.plugins.deviceshare.config import (
    DEFAULT_CONFIG,
    DEFAULT_VNPU,
    POLICY_BINPACK,
    POLICY_SPREAD,
    VnpuChip,
    VnpuTemplate,
)
from scheduler.plugins.deviceshare.requests import (
    ascend_request,
    trim_to_template,
)
from scheduler.registry import parse
from scheduler.sim.simulate import simulate
from tests import builders as b

P310 = DEFAULT_VNPU
# createTestAscendAllocateDevice's config, with the one template of the "partial memory" case
A910 = VnpuChip(
    "Ascend910A",
    "910A",
    "huawei.com/Ascend910A",
    "huawei.com/Ascend910A-memory",
    32768,
    32768,
    30,
    0,
    (VnpuTemplate("vir01", 4096, 1, 0),),
)


def npu_node(chip: VnpuChip, register: str, annotations: dict[str, str] | None = None) -> NodeInfo:
    alloc = {"cpu": "64", "memory": "256Gi", "pods": "110", chip.resource_name: "8"}
    node = NodeInfo(
        "node-a",
        Resource.from_list(alloc),
        annotations={ann.ascend_register_key(chip.common_word): register, **(annotations or {})},
    )
    node.raw_capacity = dict(alloc)
    return node


def chip_ledger(chip: VnpuChip, *chips: tuple[str, int, int, int], hami_core: bool = False) -> AscendLedger:
    """A node's ledger of chips (id, count, devmem, devcore)."""
    cards = [
        ann.AscendCard(i, n, mem, core, chip.common_word, True, -1, k)
        for k, (i, n, mem, core) in enumerate(chips)
    ]
    return AscendLedger("node-a", chip, cards, hami_core)


# -- Test_trimMemory ---------------------------------------------------------------------------------
TRIM = [
    (0, 3072), (1, 3072), (100, 3072), (3071, 3072), (3072, 3072), (3073, 6144), (6143, 6144), (6144, 6144),
    (6144, 6144), (6145, 12288), (12288, 12288), (12289, 21527), (21527, 21527), (21528, 21527),
    (24576, 21527), (24577, 0),
]  # fmt: skip


@pytest.mark.parametrize(
    ("asked", "want"), [pytest.param(a, w, id=f"test{i + 1}") for i, (a, w) in enumerate(TRIM)]
)
def test_trim_memory(asked: int, want: int) -> None:
    got = trim_to_template(P310, asked)
    # Go returns 0 for "above the chip's capacity"; we return no rounding at all
    assert (got[0] if got is not None else 0) == want


# -- Test_fit "test4" (the other cases are scenarios, dev-ascend-fit-*): fit() is handed 24576 MiB as
# is, more than the chip's 21527; a pod's request is always rounded first (to 21527, which fits an
# idle chip), so only the per-chip rule can be checked.
def test_fit() -> None:
    idle = NpuChip(0, "68496E64", 7, 21527, 8, True, -1)
    assert AscendLedger.chip_fits(idle, 24576, 0, False) is False


# -- TestAscendDevice_GetNodeDevices_HAMiVnpuCore
@pytest.mark.parametrize(
    ("flag", "want"),
    [
        pytest.param("true", True, id="node_support_hami_vnpu_core"),
        pytest.param("false", False, id="node_not_support_hami_vnpu_core"),
        pytest.param(None, False, id="node_without_hami_vnpu_core_annotation"),
    ],
)
def test_get_node_devices_hami_vnpu_core(flag: str | None, want: bool) -> None:
    register = '[{"id":"dev-1","index":0,"count":1,"devmem":32768,"devcore":30}]'
    annotations = {} if flag is None else {ann.HAMI_VNPU_CORE: flag}
    led, why = AscendLedger.from_node(npu_node(A910, register, annotations), A910, DEFAULT_CONFIG)
    assert led is not None, why
    assert len(led.chips) == 1
    assert led.hami_core is want


# -- Test_verifyReq (310P)
@pytest.mark.parametrize(
    ("nums", "mem", "ok"),
    [
        pytest.param(1, 1024, True, id="single_device_with_partial_memory_should_pass"),
        pytest.param(2, 1024, False, id="multiple_devices_with_partial_memory_should_fail"),
        pytest.param(2, 21527, True, id="multiple_devices_with_full_memory_should_pass"),
    ],
)
def test_verify_req(nums: int, mem: int, ok: bool) -> None:
    req, err = ascend_request(
        pod("p", {P310.resource_name: str(nums), P310.resource_memory_name: str(mem)}), P310
    )
    assert (req is not None) is ok, err


# -- TestAscendDevices_AddResource: chips of 32000 MiB / 100 cores; the pod's devices-allocated value
ONE = "device-1,Ascend910,16000,50"
ADD = [
    ("Successfully add single device resource", 1, [], ONE, {"device-1": (1, 16000, 50)}),
    (
        "Successfully add multiple device resources",
        2,
        [],
        "device-1,Ascend910,8000,25:device-2,Ascend910,8000,25",
        {"device-1": (1, 8000, 25), "device-2": (1, 8000, 25)},
    ),
    (
        "Add resource to existing device usage - accumulate",
        1,
        [("existing-pod", "device-1,Ascend910,8000,25")],
        "device-1,Ascend910,8000,25",
        {"device-1": (2, 16000, 50)},
    ),
    (
        "Add same pod multiple times - should not duplicate",
        1,
        [("test-pod", ONE)],
        ONE,
        {"device-1": (1, 16000, 50)},
    ),
    ("Pod has invalid annotation format", 1, [], "invalid format", {"device-1": (0, 0, 0)}),
    ("Pod missing required annotation", 1, [], None, {"device-1": (0, 0, 0)}),
    (
        "Device not found in devices map",
        1,
        [],
        "non-existent-device,Ascend910,16000,50",
        {"device-1": (0, 0, 0)},
    ),
    (
        "Multiple containers with different devices",
        3,
        [],
        "device-1,Ascend910,4000,10:device-2,Ascend910,4000,10",
        {"device-1": (1, 4000, 10), "device-2": (1, 4000, 10), "device-3": (0, 0, 0)},
    ),
]


@pytest.mark.parametrize(("n", "before", "value", "want"), [pytest.param(*c[1:], id=c[0]) for c in ADD])
def test_ascend_devices_add_resource(n, before, value, want) -> None:
    chip = VnpuChip(
        "Ascend910", "910", "huawei.com/Ascend910", "huawei.com/Ascend910Memory", 32000, 32000, 0, 0, ()
    )
    led = chip_ledger(chip, *[(f"device-{i + 1}", 1, 32000, 100) for i in range(n)])
    for uid, v in before:
        led.add_pod(uid, ann.decode_generic_devices(v))
    led.add_pod("test-pod", ann.decode_generic_devices(value))
    assert {c.id: (c.used, c.used_mem, c.used_cores) for c in led.chips} == want


# -- TestCalScore
CAL = [
    ("spread rewards idle device", POLICY_SPREAD, 0, 0, 32768, 100.0),
    ("devmem is zero", POLICY_SPREAD, 0, 0, 0, 0.0),
    ("binpack devmem is zero", POLICY_BINPACK, 0, 0, 0, 0.0),
    ("spread does not reward shared device", POLICY_SPREAD, 1, 0, 32768, 0.0),
    ("binpack rewards full device most", POLICY_BINPACK, 0, 32768, 32768, 100.0),
    ("binpack does not reward idle device", POLICY_BINPACK, 0, 0, 32768, 0.0),
    ("binpack scales with memory usage", POLICY_BINPACK, 0, 16384, 32768, 50.0),
]


@pytest.mark.parametrize(
    ("policy", "used", "used_mem", "devmem", "want"), [pytest.param(*c[1:], id=c[0]) for c in CAL]
)
def test_cal_score(policy: int, used: int, used_mem: int, devmem: int, want: float) -> None:
    c = NpuChip(0, "d", 1, devmem, 30, True, -1, used, used_mem, 0)
    assert AscendLedger.chip_score(policy, c) == want


# -- TestHAMiReleaseReturnsSpeculativeAnnotationKeys / TestHAMiReleaseKeepsCommittedAnnotations:
# releasing a pod drops the HAMi Ascend keys it would be bound with unless the device plugin
# already committed it (hami.io/bind-phase success); the pod as read from the API is left alone.
@pytest.mark.parametrize(
    ("phase", "stripped"),
    [
        pytest.param("allocating", True, id="TestHAMiReleaseReturnsSpeculativeAnnotationKeys"),
        pytest.param("success", False, id="TestHAMiReleaseKeepsCommittedAnnotations"),
    ],
)
def test_hami_release(phase: str, stripped: bool) -> None:
    anns = {
        ann.HAMI_ASSIGNED_NODE: "node-a",
        ann.HAMI_ASSIGNED_TIME: "1700000000",
        ann.HAMI_BIND_PHASE: phase,
        ann.HAMI_BIND_TIME: "1700000000",
        "predicate-time": "1700000000",
        ann.ascend_to_allocate_key("Ascend910A"): "GPU-aaaa,Ascend910A,4096,0",
        ann.ascend_allocated_key("Ascend910A"): "GPU-aaaa,Ascend910A,4096,0",
        ann.ascend_huawei_key("Ascend910A"): '[{"UUID":"GPU-aaaa","Temp":"vir04"}]',
        "keep-me": "yes",
    }
    p = pod("worker-0", {A910.resource_name: "1"}, annotations=anns)
    t = task(p)
    t.bind_annotations = {k: v for k, v in anns.items() if k != "keep-me"}
    node = npu_node(A910, '[{"id":"GPU-aaaa","count":1,"devmem":32768,"devcore":30,"health":true}]')
    node.devices[A910.common_word] = chip_ledger(A910, ("GPU-aaaa", 1, 32768, 30))
    DeviceSharePlugin(Arguments({"deviceshare.AscendHAMiVNPUEnable": True}))._release(t, node)
    for k in anns:
        if k != "keep-me" and k != ann.HAMI_ASSIGNED_TIME and k != ann.HAMI_BIND_TIME:
            assert (k not in t.bind_annotations) is stripped, k
    assert p.annotations == anns


# -- TestAllocateAddsNodeLockAscendWhenEnabled
def test_allocate_adds_node_lock_ascend_when_enabled(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(registry.PLUGINS, "deviceshare", DeviceSharePlugin)
    alloc = {"cpu": "8", "memory": "8Gi", "pods": "110", A910.resource_name: "1"}
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": "test-node-lock-enabled",
            "annotations": {
                ann.ascend_register_key(
                    "Ascend910A"
                ): '[{"id":"device-1","count":1,"devmem":32768,"devcore":30,"health":true}]'
            },
        },
        "status": {
            "capacity": dict(alloc),
            "allocatable": alloc,
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }
    cm = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "volcano-vgpu-device-config", "namespace": "kube-system"},
        "data": {"device-config.yaml": "vnpus:" + ASCEND910A_VNPU},
    }
    conf = b.tiers(
        "allocate",
        ["deviceshare"],
        args={"deviceshare": {"deviceshare.AscendHAMiVNPUEnable": True, "deviceshare.NodeLockEnable": True}},
    )
    objects = [cm, b.queue("default"), node, b.pod("allocate-node-lock", limits={A910.resource_name: "1"})]
    out = simulate(objects, parse(conf), cycles=1, seed=0, options=SessionOptions(deterministic=True))
    assert list(out.bindings.values()) == ["test-node-lock-enabled"], out.pending
    ((node_name, key, value),) = out.cycles[0].node_locks
    assert (node_name, key) == ("test-node-lock-enabled", "hami.io/mutex.lock")
    datetime.strptime(value, "%Y-%m-%dT%H:%M:%SZ")  # RFC 3339
