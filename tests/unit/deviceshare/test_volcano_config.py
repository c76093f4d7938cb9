"""Volcano's pkg/scheduler/api/devices/config/config_test.go, case by case: the device ConfigMap's
`device-config.yaml` as Volcano's tests write it, and what must be read from it (the fields the
scheduler uses; the device plugins' own settings such as deviceSplitCount are not scheduler state).
"""

from __future__ import annotations

import textwrap

import pytest
from dshelpers import ASCEND910A_VNPU

from scheduler.plugins.deviceshare.config import parse_device_config

NVIDIA = """nvidia:
  resourceCountName: volcano.sh/vgpu-number
  resourceMemoryName: volcano.sh/vgpu-memory
  resourceMemoryPercentageName: volcano.sh/vgpu-memory-percentage
  resourceCoreName: volcano.sh/vgpu-cores
  overwriteEnv: false
  defaultMemory: 0
  defaultCores: 0
  defaultGPUNum: 1
  deviceSplitCount: 10
  deviceMemoryScaling: 1
  deviceCoreScaling: 1
  gpuMemoryFactor: 1
  knownMigGeometries:
  - models: [ "A30" ]
    allowedGeometries:
      - {group: group1, geometries: [{name: 1g.6gb, memory: 6144, count: 4}]}
      - {group: group2, geometries: [{name: 2g.12gb, memory: 12288, count: 2}]}
      - {group: group3, geometries: [{name: 4g.24gb, memory: 24576, count: 1}]}
  - models: [ "A100-SXM4-40GB", "A100-40GB-PCIe", "A100-PCIE-40GB", "A100-SXM4-40GB" ]
    allowedGeometries:
      - {group: "group1", geometries: [{name: 1g.5gb, memory: 5120, count: 7}]}
      - group: "group2"
        geometries:
        - {name: 2g.10gb, memory: 10240, count: 3}
        - {name: 1g.5gb, memory: 5120, count: 1}
      - {group: "group3", geometries: [{name: 3g.20gb, memory: 20480, count: 2}]}
      - {group: "group4", geometries: [{name: 7g.40gb, memory: 40960, count: 1}]}
  - models: [ "A100-SXM4-80GB", "A100-80GB-PCIe", "A100-PCIE-80GB"]
    allowedGeometries:
      - {group: "group1", geometries: [{name: 1g.10gb, memory: 10240, count: 7}]}
      - group: "group2"
        geometries:
        - {name: 2g.20gb, memory: 20480, count: 3}
        - {name: 1g.10gb, memory: 10240, count: 1}
      - {group: "group3", geometries: [{name: 3g.40gb, memory: 40960, count: 2}]}
      - {group: "group4", geometries: [{name: 7g.79gb, memory: 80896, count: 1}]}
"""

WANT_MIG = [
    (
        ["A30"],
        [
            ("group1", [("1g.6gb", 6144, 4)]),
            ("group2", [("2g.12gb", 12288, 2)]),
            ("group3", [("4g.24gb", 24576, 1)]),
        ],
    ),
    (
        ["A100-SXM4-40GB", "A100-40GB-PCIe", "A100-PCIE-40GB", "A100-SXM4-40GB"],
        [
            ("group1", [("1g.5gb", 5120, 7)]),
            ("group2", [("2g.10gb", 10240, 3), ("1g.5gb", 5120, 1)]),
            ("group3", [("3g.20gb", 20480, 2)]),
            ("group4", [("7g.40gb", 40960, 1)]),
        ],
    ),
    (
        ["A100-SXM4-80GB", "A100-80GB-PCIe", "A100-PCIE-80GB"],
        [
            ("group1", [("1g.10gb", 10240, 7)]),
            ("group2", [("2g.20gb", 20480, 3), ("1g.10gb", 10240, 1)]),
            ("group3", [("3g.40gb", 40960, 2)]),
            ("group4", [("7g.79gb", 80896, 1)]),
        ],
    ),
]


@pytest.mark.parametrize("text", [pytest.param(NVIDIA, id="construct config from file string")])
def test_parse_device_config(text: str) -> None:
    c = parse_device_config(text)
    assert c.warnings == ()
    assert (c.count_name, c.memory_name, c.percentage_name, c.cores_name, c.gpu_memory_factor) == (
        "volcano.sh/vgpu-number",
        "volcano.sh/vgpu-memory",
        "volcano.sh/vgpu-memory-percentage",
        "volcano.sh/vgpu-cores",
        1,
    )
    got = [
        (
            list(g.models),
            [(grp.name, [(p.name, p.memory, p.count) for p in grp.profiles]) for grp in g.groups],
        )
        for g in c.mig
    ]
    assert got == WANT_MIG


def test_parse_vnpus_new_wrapper_format() -> None:
    c = parse_device_config(
        "vnpus:\n  hamiVnpuCore: false\n  configs:" + textwrap.indent(ASCEND910A_VNPU, "  ")
    )
    assert c.warnings == () and c.hami_vnpu_core is False
    (chip,) = c.vnpus
    assert (chip.chip_name, chip.common_word, chip.memory_allocatable) == ("910A", "Ascend910A", 32768)
    assert [t.name for t in chip.templates] == ["vir02"]


def test_parse_vnpus_legacy_array_format() -> None:
    c = parse_device_config(
        "vnpus:"
        + ASCEND910A_VNPU
        + """- chipName: 310P3
  commonWord: Ascend310P
  resourceName: huawei.com/Ascend310P
  resourceMemoryName: huawei.com/Ascend310P-memory
  memoryAllocatable: 21527
  memoryCapacity: 24576
  aiCore: 8
  aiCPU: 7
  templates:
    - {name: vir01, memory: 3072, aiCore: 1, aiCPU: 1}
"""
    )
    assert c.warnings == () and c.hami_vnpu_core is False
    assert [(v.chip_name, v.common_word) for v in c.vnpus] == [
        ("910A", "Ascend910A"),
        ("310P3", "Ascend310P"),
    ]
    assert c.vnpus[1].memory_allocatable == 21527


def test_parse_vnpus_wrapper_with_empty_configs() -> None:
    c = parse_device_config("vnpus:\n  hamiVnpuCore: true\n  configs: []\n")
    assert c.warnings == ()
    assert c.hami_vnpu_core is True
    assert c.vnpus == ()
