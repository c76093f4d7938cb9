"""Plugin arguments, device-config.yaml, the wire codecs and node-lock decisions."""

from __future__ import annotations

import pytest

from scheduler.framework.arguments import ArgumentError, Arguments
from scheduler.plugins.deviceshare import DeviceSharePlugin
from scheduler.plugins.deviceshare import annotations as ann
from scheduler.plugins.deviceshare.config import (
    DEFAULT_CONFIG,
    POLICY_BINPACK,
    POLICY_NONE,
    DeviceShareArgs,
    parse_device_config,
)


def args(**kw) -> DeviceShareArgs:
    return DeviceShareArgs.parse(Arguments({f"deviceshare.{k}": v for k, v in kw.items()}, "deviceshare"))


@pytest.mark.parametrize(
    ("switches", "named"),
    [
        ({"GPUSharingEnable": True, "GPUNumberEnable": True}, ("GPUSharingEnable", "GPUNumberEnable")),
        ({"GPUSharingEnable": True, "VGPUEnable": "true"}, ("GPUSharingEnable", "VGPUEnable")),
        ({"GPUNumberEnable": True, "VGPUEnable": True}, ("GPUNumberEnable", "VGPUEnable")),
    ],
)
def test_our_choice_exclusive_switches_reject_the_configuration_upstream_aborts_the_process(
    switches, named
) -> None:
    """Upstream kills the scheduler at plugin construction; we reject the configuration with an
    ArgumentError naming both switches (a reload keeps the last good configuration)."""
    with pytest.raises(ArgumentError) as e:
        DeviceSharePlugin.validate(
            Arguments({f"deviceshare.{k}": v for k, v in switches.items()}, "deviceshare")
        )
    assert all(f"deviceshare.{n}" in str(e.value) for n in named)


def test_defaults_legacy_alias_and_policy_names() -> None:
    a = args()
    assert (a.gpu_sharing, a.vgpu, a.weight, a.policy, a.cm_key) == (
        False,
        False,
        0,
        POLICY_NONE,
        "kube-system/volcano-vgpu-device-config",
    )
    assert DeviceShareArgs.parse(Arguments({"predicate.GPUSharingEnable": True})).gpu_sharing
    assert args(SchedulePolicy="binpack").policy == POLICY_BINPACK
    assert args(SchedulePolicy="tightly").policy == POLICY_NONE  # any other string: no policy (spec 1.1)
    with pytest.raises(ArgumentError, match="ScheduleWeight"):
        args(ScheduleWeight="heavy")


def test_device_config_defaults_without_configmap_have_no_percentage_and_no_geometry() -> None:
    c = parse_device_config(None)
    assert c is DEFAULT_CONFIG
    assert (c.count_name, c.memory_name, c.percentage_name, c.cores_name) == (
        "volcano.sh/vgpu-number",
        "volcano.sh/vgpu-memory",
        "",
        "volcano.sh/vgpu-cores",
    )
    assert c.mig == () and c.vnpus[0].common_word == "Ascend310P"


def test_device_config_reads_names_factor_and_geometries() -> None:
    c = parse_device_config(
        "nvidia:\n  resourceCountName: example.com/gpu\n  gpuMemoryFactor: 4\n"
        "  knownMigGeometries:\n  - models: [A30]\n    allowedGeometries:\n"
        "    - {group: g1, geometries: [{name: 1g.6gb, memory: 5888, count: 4}]}\n"
    )
    assert c.count_name == "example.com/gpu" and c.gpu_memory_factor == 4
    groups = c.geometry_for("NVIDIA-A30")
    assert groups is not None and groups[0].profiles[0].count == 4
    assert c.geometry_for("NVIDIA-T4") is None


@pytest.mark.parametrize(
    "text",
    [
        "nvidia: [1, 2]",
        "nvidia: {gpuMemoryFactor: -1}",
        ": : :",
        "nvidia: {knownMigGeometries: [{models: [A30],"
        " allowedGeometries: [{group: g, geometries: [{name: x, memory: 0, count: 1}]}]}]}",
    ],
)
def test_unusable_device_config_falls_back_to_defaults_with_a_warning(text) -> None:
    c = parse_device_config(text)
    assert c.count_name == "volcano.sh/vgpu-number" and c.mig == ()
    assert c.warnings and "built-in defaults used" in c.warnings[0]


def test_register_roundtrip_and_bad_fields_refused() -> None:
    cards = [
        ann.RegisteredCard("GPU-a", 10, 32768, "NVIDIA-Tesla V100-PCIE-32GB", True, "hami-core"),
        ann.RegisteredCard("GPU-b", 4, 81920, "NVIDIA-A100-SXM4-80GB", False, "mig"),
    ]
    text = ann.encode_vgpu_register(cards)
    assert text == (
        "GPU-a,10,32768,NVIDIA-Tesla V100-PCIE-32GB,true,hami-core:"
        "GPU-b,4,81920,NVIDIA-A100-SXM4-80GB,false,mig:"
    )
    assert ann.decode_vgpu_register(text) == (cards, "")
    # extra fields are ignored, health other than true/1/t is unhealthy
    got, _ = ann.decode_vgpu_register("GPU-a,3,100,NVIDIA-T4,yes,hami-core,extra:")
    assert got == [ann.RegisteredCard("GPU-a", 3, 100, "NVIDIA-T4", False, "hami-core")]
    for bad, says in (
        ("GPU-a,x,100,NVIDIA-T4,true,hami-core:", "count 'x'"),
        ("GPU-a,10,-3,NVIDIA-T4,true,hami-core:", "devmem '-3'"),
        ("GPU-a,10,99999999999999999999999,NVIDIA-T4,true,hami-core:", "devmem"),
        ("GPU-a,10,2147483648,NVIDIA-T4,true,hami-core:", "0..2147483647"),
        (
            "GPU-a,\u0661\u0660,100,NVIDIA-T4,true,hami-core:",
            "count",
        ),  # Arabic-Indic digits: int() would take them
        ("GPU-a,1_0,100,NVIDIA-T4,true,hami-core:", "count"),
        ("GPU-é,10,100,NVIDIA-T4,true,hami-core:", "not printable ASCII"),
        ("GPU-a,10,100,NVIDIA-T4™,true,hami-core:", "not printable ASCII"),
        ("GPU-dup,10,100,NVIDIA-T4,true,hami-core:GPU-dup,10,100,NVIDIA-T4,true,hami-core:", "twice"),
    ):
        cards_, why = ann.decode_vgpu_register(bad)
        assert cards_ is None and says in why, (bad, why)


def test_pod_devices_roundtrip_and_spec_examples() -> None:
    one = [[ann.DeviceEntry("GPU-aaa", 3000, 50)]]
    assert ann.encode_pod_devices(one) == "GPU-aaa,NVIDIA,3000,50:"
    two = [[ann.DeviceEntry("GPU-aaa", 2000, 0)], [ann.DeviceEntry("GPU-aaa", 3000, 0)]]
    assert ann.encode_pod_devices(two) == "GPU-aaa,NVIDIA,2000,0:;GPU-aaa,NVIDIA,3000,0:"
    assert ann.decode_pod_devices(ann.encode_pod_devices(two)) == two
    assert ann.decode_pod_devices("") == []


def test_gpu_index_and_mig_ids() -> None:
    assert ann.decode_gpu_index("0,1,2") == [0, 1, 2]
    assert ann.decode_gpu_index("0,x") is None and ann.decode_gpu_index("-1") is None
    assert ann.encode_mig_id("GPU-0fc3", "group2", 3) == "GPU-0fc3[group2-3]"
    assert ann.decode_mig_id("GPU-0fc3[group2-3]") == ("GPU-0fc3", "group2", 3)
    assert ann.decode_mig_id("GPU-0fc3[group2,3]") is None and ann.decode_mig_id("GPU-0fc3") is None


def test_ascend_codecs_roundtrip_and_refuse_garbage() -> None:
    cards = [ann.AscendCard("npu-0", 4, 21527, 8, "Ascend310P", True, 2)]
    assert ann.decode_ascend_register(ann.encode_ascend_register(cards)) == (cards, "")
    assert ann.decode_ascend_register("{not json")[0] is None
    segs = [[ann.DeviceEntry("npu-0", 3072, 1)]]
    text = ann.encode_generic_devices("Ascend310P", segs)
    assert text == "npu-0,Ascend310P,3072,1:;"
    assert [[(e.uuid, e.mem, e.cores) for e in s] for s in ann.decode_generic_devices(text)] == [
        [("npu-0", 3072, 1)]
    ]


NOW = 1_714_557_600.0  # 2024-05-01T10:00:00Z


def test_lock_value_is_rfc3339() -> None:
    assert ann.lock_value(NOW) == "2024-05-01T10:00:00Z"


@pytest.mark.parametrize(
    ("existing", "decision"),
    [
        (None, "take"),
        ("2024-05-01T09:54:59Z", "takeover"),  # older than five minutes: its holder is gone
        ("2024-05-01T09:56:00Z", "refuse"),
        ("2024-05-01T10:00:00+00:00", "refuse"),
        ("yesterday", "refuse"),
    ],
)
def test_lock_decision_takes_free_and_stale_locks_and_refuses_fresh_or_garbled_ones(
    existing, decision
) -> None:
    assert ann.lock_decision(existing, NOW) == decision
