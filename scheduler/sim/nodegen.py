"""Generated nodes for the sandbox, registered the way the real device plugins register them.

`--nodes SPEC` where SPEC is `N` or `N:key=value,...` with keys `cpu`, `memory`, `pods`,
`prefix`, `gpu` (`<count>x<model>`, e.g. `8xA100-80GB`) and `mode` (`gpushare` for Volcano's
gpu-memory/gpu-number plugin; `hami-core`, `mig` or `mps` for HAMi's vGPU plugin; `nvidia` for
the standard NVIDIA device plugin: whole `nvidia.com/gpu` and GPU feature discovery's
`nvidia.com/gpu.*` labels; default `hami-core`; AMD models register whole `amd.com/gpu` as AMD's
device plugin and node labeller do), `npu` (`<count>x<commonWord>`, e.g. `8xAscend310P`, registered as HAMi's Ascend
device plugin does) and `vnpu-core` (`true`: the node supports `huawei.com/vnpu-mode: hami-core`).
GPU and NPU nodes carry exactly the capacity and annotations those plugins write.
"""

from __future__ import annotations

import hashlib
import ipaddress
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import yaml

from scheduler.plugins.deviceshare import annotations as ann

# model -> (memory MiB as NVML reports it, registered type string, GPU feature discovery's
# nvidia.com/gpu.family: the CUDA architecture, "" for AMD)
GPU_MODELS: dict[str, tuple[int, str, str]] = {
    "A100-80GB": (81920, "NVIDIA-A100-SXM4-80GB", "ampere"),
    "A100-40GB": (40960, "NVIDIA-A100-SXM4-40GB", "ampere"),
    "H100-80GB": (81559, "NVIDIA-H100-80GB-HBM3", "hopper"),
    "A30": (24576, "NVIDIA-A30", "ampere"),
    "V100-32GB": (32768, "NVIDIA-Tesla V100-PCIE-32GB", "volta"),
    "T4": (15360, "NVIDIA-Tesla T4", "turing"),
    "L4": (23034, "NVIDIA-L4", "ada-lovelace"),
    "L40S": (46068, "NVIDIA-L40S", "ada-lovelace"),
    "A10": (23028, "NVIDIA-A10", "ampere"),
    "H200": (143771, "NVIDIA-H200", "hopper"),
    "B200": (183359, "NVIDIA-B200", "blackwell"),
    "MI300X": (196592, "AMD-Instinct-MI300X", ""),
}
AMD_MODELS = frozenset({"MI300X"})
MODES = ("gpushare", "hami-core", "mig", "mps", "nvidia")
WHOLE_GPU = "nvidia.com/gpu"
AMD_GPU = "amd.com/gpu"
SPLIT_COUNT = 10


def _mig_models(models: list[str], *groups: list[tuple[str, int, int]]) -> dict[str, Any]:
    """One knownMigGeometries entry: group N lists the (name, memory MiB, count) instances of
    the N-th way to split these models."""
    return {
        "models": models,
        "allowedGeometries": [
            {
                "group": f"group{i}",
                "geometries": [
                    {"name": name, "memory": memory, "count": count} for name, memory, count in group
                ],
            }
            for i, group in enumerate(groups, 1)
        ],
    }


# The MIG geometries HAMi's volcano-vgpu-device-plugin ships in its device-config ConfigMap.
DEVICE_CONFIG = {
    "nvidia": {
        "resourceCountName": ann.VGPU_NUMBER,
        "resourceMemoryName": ann.VGPU_MEMORY,
        "resourceMemoryPercentageName": ann.VGPU_MEMORY_PERCENTAGE,
        "resourceCoreName": ann.VGPU_CORES,
        "knownMigGeometries": [
            _mig_models(["A30"], [("1g.6gb", 6144, 4)], [("2g.12gb", 12288, 2)], [("4g.24gb", 24576, 1)]),
            _mig_models(
                ["A100-SXM4-40GB", "A100-40GB-PCIe", "A100-PCIE-40GB", "A100-SXM4-40GB"],
                [("1g.5gb", 5120, 7)],
                [("2g.10gb", 10240, 3), ("1g.5gb", 5120, 1)],
                [("3g.20gb", 20480, 2)],
                [("7g.40gb", 40960, 1)],
            ),
            _mig_models(
                ["A100-SXM4-80GB", "A100-80GB-PCIe", "A100-PCIE-80GB"],
                [("1g.10gb", 9728, 7)],
                [("2g.20gb", 19968, 3), ("1g.10gb", 9728, 1)],
                [("3g.40gb", 40192, 2)],
                [("7g.80gb", 80896, 1)],
            ),
        ],
    }
}


def _ascend_chip(
    chip_name: str,
    word: str,
    allocatable: int,
    capacity: int,
    ai_core: int,
    templates: list[tuple[str, int, int, int]],
) -> dict[str, Any]:
    """One chip of the `vnpus` section; templates are (name, memory MiB, aiCore, aiCPU)."""
    return {
        "chipName": chip_name,
        "commonWord": word,
        "resourceName": ann.ascend_huawei_key(word),
        "resourceMemoryName": f"{ann.ascend_huawei_key(word)}-memory",
        "memoryAllocatable": allocatable,
        "memoryCapacity": capacity,
        "aiCore": ai_core,
        "aiCPU": 7,  # the same on every chip HAMi's config lists
        "templates": [{"name": n, "memory": m, "aiCore": c, "aiCPU": p} for n, m, c, p in templates],
    }


# HAMi Ascend chips (the `vnpus` section of HAMi's device-config.yaml for these chips)
VNPU_CHIPS: list[dict[str, Any]] = [
    _ascend_chip(
        "310P3",
        "Ascend310P",
        21527,
        24576,
        8,
        [("vir01", 3072, 1, 1), ("vir02", 6144, 2, 2), ("vir04", 12288, 4, 4)],
    ),
    _ascend_chip(
        "910B3",
        "Ascend910B3",
        65536,
        65536,
        20,
        [("vir05_1c_16g", 16384, 5, 1), ("vir10_3c_32g", 32768, 10, 3)],
    ),
    _ascend_chip(
        "910B4",
        "Ascend910B4",
        32768,
        32768,
        20,
        [("vir05_1c_8g", 8192, 5, 1), ("vir10_3c_16g", 16384, 10, 3)],
    ),
]
NPU_CHIPS = {c["commonWord"]: c for c in VNPU_CHIPS}
DEVICE_CONFIG["vnpus"] = VNPU_CHIPS


class NodeSpecError(ValueError):
    pass


@dataclass(slots=True)
class NodeSpec:
    count: int
    cpu: str = "8"
    memory: str = "32Gi"
    pods: str = "110"
    prefix: str = ""
    gpus: int = 0
    model: str = ""
    mode: str = ""  # "" = the model's default: hami-core for NVIDIA, whole amd.com/gpu for AMD
    npus: int = 0
    npu_chip: str = ""
    vnpu_core: bool = False


def parse_node_spec(text: str) -> NodeSpec:
    count_text, _, rest = text.partition(":")
    try:
        spec = NodeSpec(count=int(count_text))
    except ValueError:
        raise NodeSpecError(
            f"--nodes {text!r}: expected N or N:key=value,..., got {count_text!r} as the count"
        ) from None
    if spec.count < 0:
        raise NodeSpecError(f"--nodes {text!r}: the count must not be negative")
    for item in filter(None, (p.strip() for p in rest.split(","))):
        key, eq, value = item.partition("=")
        if not eq:
            raise NodeSpecError(f"--nodes {text!r}: {item!r} is not key=value")
        if key == "gpu":
            n, x, model = value.partition("x")
            if not x or not n.isdigit():
                raise NodeSpecError(f"--nodes {text!r}: gpu must be <count>x<model>, e.g. 8xA100-80GB")
            if model not in GPU_MODELS:
                raise NodeSpecError(
                    f"--nodes {text!r}: unknown GPU model {model!r}; known models: {', '.join(GPU_MODELS)}"
                )
            spec.gpus, spec.model = int(n), model
        elif key == "npu":
            n, x, word = value.partition("x")
            if not x or not n.isdigit() or word not in NPU_CHIPS:
                raise NodeSpecError(
                    f"--nodes {text!r}: npu must be <count>x<chip> with chip one of {', '.join(NPU_CHIPS)}"
                )
            spec.npus, spec.npu_chip = int(n), word
        elif key == "vnpu-core":
            if value not in ("true", "false"):
                raise NodeSpecError(f"--nodes {text!r}: vnpu-core must be true or false")
            spec.vnpu_core = value == "true"
        elif key == "mode":
            if value not in MODES:
                raise NodeSpecError(f"--nodes {text!r}: mode must be one of {', '.join(MODES)}")
            spec.mode = value
        elif key in ("cpu", "memory", "pods", "prefix"):
            setattr(spec, key, value)
        else:
            raise NodeSpecError(
                f"--nodes {text!r}: unknown key {key!r} (cpu, memory, pods, gpu, mode, npu, vnpu-core, prefix)"
            )
    if spec.gpus and spec.npus:
        raise NodeSpecError(f"--nodes {text!r}: a generated node has either gpu or npu devices, not both")
    if spec.model in AMD_MODELS and spec.mode:
        raise NodeSpecError(
            f"--nodes {text!r}: {spec.model} is an AMD GPU, registered whole as {AMD_GPU}; it takes no mode"
        )
    if not spec.mode and spec.model not in AMD_MODELS:
        spec.mode = "hami-core"
    return spec


def _uuid(node: str, i: int) -> str:
    h = hashlib.sha1(f"{node}/{i}".encode()).hexdigest()
    return f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


def _npu_id(node: str, i: int) -> str:
    h = hashlib.sha1(f"{node}/npu/{i}".encode()).hexdigest().upper()
    return "-".join(h[k : k + 8] for k in range(0, 40, 8))


def register_npus(name: str, spec: NodeSpec, alloc: dict[str, str], annotations: dict[str, str]) -> None:
    """What HAMi's Ascend device plugin registers: the chips as a JSON array (count = how many of
    the smallest template fit in the allocatable memory; Ascend910 chips 0-3 on network 0, the
    rest on network 1), a handshake, `hami-vnpu-core`, and count x chips kubelet devices."""
    chip = NPU_CHIPS[spec.npu_chip]
    word = chip["commonWord"]
    templates = sorted(chip["templates"], key=lambda t: t["memory"])
    count = chip["memoryAllocatable"] // templates[0]["memory"] if templates else 1
    devmem = chip["memoryAllocatable"]
    cards = [
        ann.AscendCard(
            _npu_id(name, i),
            count,
            devmem,
            100 if spec.vnpu_core else chip["aiCore"],
            word,
            True,
            (1 if i > 3 else 0) if word.startswith(ann.ASCEND910_PREFIX) else -1,
            i,
        )
        for i in range(spec.npus)
    ]
    annotations[ann.ascend_register_key(word)] = ann.encode_ascend_register(cards)
    annotations[ann.ascend_handshake_key(word)] = "Reported_" + datetime.now(UTC).strftime(
        "%Y.%m.%d %H:%M:%S"
    )
    annotations[ann.HAMI_VNPU_CORE] = "true" if spec.vnpu_core else "false"
    # only the chip resource is a kubelet device; memory and cores are accounted per chip by the
    # scheduler (Volcano's ignored device resources)
    alloc[chip["resourceName"]] = str(count * spec.npus)


def register_gpus(
    name: str, spec: NodeSpec, alloc: dict[str, str], annotations: dict[str, str], labels: dict[str, str]
) -> None:
    """Capacity, annotations and labels of the device plugin the spec's mode stands for."""
    mem, gtype, family = GPU_MODELS[spec.model]
    if spec.model in AMD_MODELS:
        # AMD's device plugin: whole GPUs; its node labeller: the product and VRAM
        alloc[AMD_GPU] = str(spec.gpus)
        labels.update(
            {
                "amd.com/gpu.product-name": gtype.replace("-", "_"),
                "amd.com/gpu.vram": f"{mem // 1024}G",
                "amd.com/gpu.count": str(spec.gpus),
            }
        )
        return
    if spec.mode == "nvidia":
        # NVIDIA's device plugin: whole GPUs; GPU feature discovery: the NVML product name,
        # memory in MiB, count and architecture family
        alloc[WHOLE_GPU] = str(spec.gpus)
        labels.update(
            {
                # NVML calls the Tesla cards "Tesla <model>" and the others "NVIDIA <model>"
                ann.GPU_PRODUCT_LABEL: (
                    gtype.removeprefix("NVIDIA-") if gtype.startswith("NVIDIA-Tesla ") else gtype
                ).replace(" ", "-"),
                "nvidia.com/gpu.memory": str(mem),
                "nvidia.com/gpu.count": str(spec.gpus),
                "nvidia.com/gpu.family": family,
                "nvidia.com/gpu.present": "true",
            }
        )
        return
    labels[ann.GPU_PRODUCT_LABEL] = gtype.removeprefix("NVIDIA-").replace(" ", "-")
    if spec.mode == "gpushare":
        alloc[ann.GPU_MEMORY] = str(mem * spec.gpus)
        alloc[ann.GPU_NUMBER] = str(spec.gpus)
        return
    cards = [
        ann.RegisteredCard(_uuid(name, i), SPLIT_COUNT, mem, gtype, True, spec.mode) for i in range(spec.gpus)
    ]
    annotations[ann.VGPU_REGISTER] = ann.encode_vgpu_register(cards)
    alloc[ann.VGPU_NUMBER] = str(SPLIT_COUNT * spec.gpus)
    alloc[ann.VGPU_MEMORY] = str(mem * spec.gpus)
    alloc[ann.VGPU_CORES] = str(100 * spec.gpus)


def node_addresses(seq: int) -> tuple[str, str]:
    """(InternalIP, podCIDR) of the seq-th generated node: 10.0.0.0/16 hosts, 10.128.0.0/9 /24s."""
    ip = ipaddress.IPv4Address("10.0.0.1") + seq
    cidr = ipaddress.IPv4Network((int(ipaddress.IPv4Address("10.128.0.0")) + (seq << 8), 24))
    return str(ip), str(cidr)


def make_nodes(specs: list[NodeSpec]) -> list[dict[str, Any]]:
    nodes: list[dict[str, Any]] = []
    seq = 0
    for spec in specs:
        for _ in range(spec.count):
            prefix = spec.prefix or ("gpu-node" if spec.gpus else "npu-node" if spec.npus else "node")
            name = f"{prefix}-{seq}"
            ip, cidr = node_addresses(seq)
            seq += 1
            alloc: dict[str, str] = {"cpu": spec.cpu, "memory": spec.memory, "pods": spec.pods}
            annotations: dict[str, str] = {}
            labels = {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "sandbox.vc-scheduler.io/generated": "true",
            }
            if spec.gpus:
                register_gpus(name, spec, alloc, annotations, labels)
            if spec.npus:
                labels["accelerator"] = f"huawei-{spec.npu_chip}"
                register_npus(name, spec, alloc, annotations)
            nodes.append(
                {
                    "apiVersion": "v1",
                    "kind": "Node",
                    "metadata": {"name": name, "labels": labels, "annotations": annotations},
                    "spec": {"podCIDR": cidr, "podCIDRs": [cidr]},
                    "status": {
                        "addresses": [
                            {"type": "InternalIP", "address": ip},
                            {"type": "Hostname", "address": name},
                        ],
                        "capacity": dict(alloc),
                        "allocatable": dict(alloc),
                        "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
                        "nodeInfo": {
                            "kubeletVersion": "v1.35.0-sandbox",
                            "architecture": "amd64",
                            "operatingSystem": "linux",
                        },
                    },
                }
            )
    return nodes


def device_configmap() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "volcano-vgpu-device-config", "namespace": "kube-system"},
        "data": {"device-config.yaml": yaml.safe_dump(DEVICE_CONFIG, sort_keys=False)},
    }
