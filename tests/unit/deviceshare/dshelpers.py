"""Builders of nodes, pods and tasks with devices, for the deviceshare tests (no session needed)."""

from __future__ import annotations

from typing import Any

from scheduler.model.node import NodeInfo
from scheduler.model.objects import Container, PodInfo, TaskInfo, TaskStatus
from scheduler.model.resources import Resource
from scheduler.plugins.deviceshare import annotations as ann

T4 = "NVIDIA-Tesla T4"
V100 = "NVIDIA-Tesla V100-PCIE-32GB"
A100 = "NVIDIA-A100-SXM4-80GB"

A100_GEOMETRY = """
nvidia:
  resourceMemoryPercentageName: volcano.sh/vgpu-memory-percentage
  knownMigGeometries:
  - models: ["A100-SXM4-80GB", "A100-80GB-PCIe", "A100-PCIE-80GB"]
    allowedGeometries:
    - group: group1
      geometries: [{name: 1g.10gb, memory: 9728, count: 7}]
    - group: group2
      geometries: [{name: 2g.20gb, memory: 19968, count: 3}, {name: 1g.10gb, memory: 9728, count: 1}]
    - group: group3
      geometries: [{name: 3g.40gb, memory: 40192, count: 2}]
    - group: group4
      geometries: [{name: 7g.80gb, memory: 80896, count: 1}]
"""

# the Ascend910A chip of Volcano's device-config tests, as one entry of the legacy `vnpus:` list
ASCEND910A_VNPU = """
- chipName: 910A
  commonWord: Ascend910A
  resourceName: huawei.com/Ascend910A
  resourceMemoryName: huawei.com/Ascend910A-memory
  memoryAllocatable: 32768
  memoryCapacity: 32768
  aiCore: 30
  templates:
  - {name: vir02, memory: 2184, aiCore: 2}
"""


def cards(
    n: int,
    devmem: int = 16384,
    count: int = 10,
    type_: str = T4,
    mode: str = "hami-core",
    prefix: str = "GPU-",
    health: list[bool] | None = None,
) -> list[ann.RegisteredCard]:
    return [
        ann.RegisteredCard(f"{prefix}{i}", count, devmem, type_, True if health is None else health[i], mode)
        for i in range(n)
    ]


def vgpu_node(
    name: str,
    registered: list[ann.RegisteredCard] | str,
    annotations: dict[str, str] | None = None,
    labels: dict[str, str] | None = None,
) -> NodeInfo:
    reg = registered if isinstance(registered, str) else ann.encode_vgpu_register(registered)
    n = len(registered) if not isinstance(registered, str) else 2
    alloc = {
        "cpu": "64",
        "memory": "256Gi",
        "pods": "110",
        ann.VGPU_NUMBER: str(10 * n),
        ann.VGPU_MEMORY: "65536",
        ann.VGPU_CORES: str(100 * n),
    }
    node = NodeInfo(
        name,
        Resource.from_list(alloc),
        labels=labels or {},
        annotations={ann.VGPU_REGISTER: reg, **(annotations or {})},
    )
    node.raw_capacity = dict(alloc)
    return node


def share_node(
    name: str, memory: str = "89424", number: str = "8", annotations: dict[str, str] | None = None
) -> NodeInfo:
    alloc = {"cpu": "4", "memory": "8Gi", "pods": "110", ann.GPU_MEMORY: memory, ann.GPU_NUMBER: number}
    node = NodeInfo(name, Resource.from_list(alloc), annotations=dict(annotations or {}))
    node.raw_capacity = dict(alloc)
    return node


def pod(
    name: str,
    *limits: dict[str, Any],
    annotations: dict[str, str] | None = None,
    ns: str = "default",
    init: list[dict[str, Any]] | None = None,
    phase: str = "Pending",
    node_name: str = "",
    uid: str | None = None,
    labels: dict[str, str] | None = None,
) -> PodInfo:
    return PodInfo(
        uid=uid or f"uid-{ns}-{name}",
        name=name,
        namespace=ns,
        labels=dict(labels or {}),
        annotations=dict(annotations or {}),
        phase=phase,
        node_name=node_name,
        containers=[Container(f"c{i}", dict(lim), dict(lim)) for i, lim in enumerate(limits)],
        init_containers=[Container(f"init{i}", dict(lim), dict(lim)) for i, lim in enumerate(init or [])],
    )


def task(p: PodInfo, status: TaskStatus = TaskStatus.PENDING, job: str = "job") -> TaskInfo:
    return TaskInfo(p, job, Resource(), Resource(), status)


def vgpu_limits(
    number: int | None = 1, memory: int | None = None, cores: int | None = None, pct: int | None = None
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if number is not None:
        out[ann.VGPU_NUMBER] = str(number)
    if memory is not None:
        out[ann.VGPU_MEMORY] = str(memory)
    if cores is not None:
        out[ann.VGPU_CORES] = str(cores)
    if pct is not None:
        out[ann.VGPU_MEMORY_PERCENTAGE] = str(pct)
    return out
