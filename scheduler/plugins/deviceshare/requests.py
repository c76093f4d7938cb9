"""What a pod asks of each device kind, parsed once and validated (spec 2.3, 3.3, 5.2).

Every parser answers `(request, error)`: `(None, "")` when the pod does not use the kind,
`(request, "")` when it does, `(None, reason)` for an impossible request (negative or fractional
amounts, vgpu-cores above 100, a percentage above 100, an unknown vgpu-mode). The plugin turns a
reason into an unresolvable Unfit, so bad input allocates nothing and never raises.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from scheduler.model.objects import Container, PodInfo
from scheduler.model.resources import QuantityError, parse_quantity
from scheduler.plugins.deviceshare import annotations as ann
from scheduler.plugins.deviceshare.config import DeviceConfig, VnpuChip

PCT_UNSET = 101


# quantity text -> its value, for the texts that are valid amounts: every pod's request is parsed
# once, and most pods ask one of a few amounts ("1", "4096"), each a Decimal parse
_AMOUNTS: dict[str, int] = {}
_AMOUNTS_LIMIT = 4096


def device_amount(container: str, name: str, raw: Any) -> tuple[int, str]:
    """A device quantity as a non-negative integer, or (0, why not)."""
    if type(raw) is str:
        got = _AMOUNTS.get(raw)
        if got is not None:
            return got, ""
        v, err = _device_amount(container, name, raw)
        if not err:
            if len(_AMOUNTS) >= _AMOUNTS_LIMIT:
                _AMOUNTS.clear()
            _AMOUNTS[raw] = v
        return v, err
    return _device_amount(container, name, raw)


def _device_amount(container: str, name: str, raw: Any) -> tuple[int, str]:
    try:
        q = parse_quantity(raw)
    except QuantityError:
        return 0, f"container {container}: {name} {raw!r} is not a quantity"
    if q < 0:
        return 0, f"container {container}: {name} {raw!r} is negative"
    if q != q.to_integral_value():
        return 0, f"container {container}: {name} {raw!r} must be a whole number"
    if q > Decimal(2**53):
        return 0, f"container {container}: {name} {raw!r} is out of range"
    return int(q), ""


def _limit(c: Container, name: str) -> tuple[int | None, str]:
    if name not in c.limits:
        return None, ""
    v, err = device_amount(c.name, name, c.limits[name])
    return (None, err) if err else (v, "")


def _limit_or_request(c: Container, name: str) -> tuple[int | None, str]:
    src = c.limits if name in c.limits else c.requests
    if name not in src:
        return None, ""
    v, err = device_amount(c.name, name, src[name])
    return (None, err) if err else (v, "")


# --- gpushare -----------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class GpuShareRequest:
    memory: int
    number: int
    # cards the pod allows, from a gpu-index the user set on the pending pod (spec 8); None = any
    allowed: frozenset[int] | None = None


def pod_gpu_amount(pod: PodInfo, name: str) -> tuple[int, str]:
    """max(sum over regular containers, max over init containers) of the *limit* `name`."""
    total = 0
    for c in pod.containers:
        v, err = _limit(c, name)
        if err:
            return 0, err
        total += v or 0
    init = 0
    for c in pod.init_containers:
        v, err = _limit(c, name)
        if err:
            return 0, err
        init = max(init, v or 0)
    return max(total, init), ""


def gpushare_request(pod: PodInfo, sharing: bool, number: bool) -> tuple[GpuShareRequest | None, str]:
    mem, err = pod_gpu_amount(pod, ann.GPU_MEMORY) if sharing else (0, "")
    if err:
        return None, err
    num, err = pod_gpu_amount(pod, ann.GPU_NUMBER) if number else (0, "")
    if err:
        return None, err
    if mem <= 0 and num <= 0:
        return None, ""
    allowed: frozenset[int] | None = None
    preset = pod.annotations.get(ann.GPU_INDEX)
    if preset is not None and not pod.node_name:
        idx = ann.decode_gpu_index(preset)
        if idx is None:
            return None, f"annotation {ann.GPU_INDEX}={preset!r} is not a list of card indices"
        allowed = frozenset(idx)
    return GpuShareRequest(mem, num, allowed), ""


# --- vGPU ---------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class VgpuContainerRequest:
    index: int  # position in spec.containers (segment position in the annotation)
    nums: int
    mem: int
    pct: int  # PCT_UNSET when no percentage was asked
    cores: int

    def demand(self, devmem: int) -> int:
        """Memory this container takes on a card of `devmem` MiB."""
        return devmem * self.pct // 100 if self.pct != PCT_UNSET else self.mem


@dataclass(frozen=True, slots=True)
class VgpuRequest:
    containers: tuple[VgpuContainerRequest, ...]  # only containers asking for at least one card
    n_containers: int  # regular containers of the pod
    mode: str = ""  # required node mode, "" = any
    use_uuids: tuple[str, ...] = ()
    nouse_uuids: tuple[str, ...] = ()
    use_types: tuple[str, ...] = ()
    nouse_types: tuple[str, ...] = ()
    spread_group: str = ""  # pod-group key when the pod asks for pod-group spread
    group_key: str = ""

    @property
    def total_cards(self) -> int:
        return sum(c.nums for c in self.containers)

    @property
    def has_card_filters(self) -> bool:
        return bool(
            self.use_uuids or self.nouse_uuids or self.use_types or self.nouse_types or self.spread_group
        )


def vgpu_request(pod: PodInfo, cfg: DeviceConfig) -> tuple[VgpuRequest | None, str]:
    """The pod's vGPU request; `(None, "")` unless a regular container limits count or memory."""
    if not any(cfg.count_name in c.limits or cfg.memory_name in c.limits for c in pod.containers):
        return None, ""
    out: list[VgpuContainerRequest] = []
    for i, c in enumerate(pod.containers):
        nums, err = _limit(c, cfg.count_name)
        if err:
            return None, err
        if nums is None:
            if cfg.memory_name not in c.limits:
                continue  # this container asks no vGPU
            nums = 1
        mem, err = _limit_or_request(c, cfg.memory_name)
        if err:
            return None, err
        pct: int | None = None
        if cfg.percentage_name:
            pct, err = _limit_or_request(c, cfg.percentage_name)
            if err:
                return None, err
            if pct is not None and pct > 100:
                return (
                    None,
                    f"container {c.name}: {cfg.percentage_name} {pct} is more than 100 percent of a card",
                )
        cores, err = _limit_or_request(c, cfg.cores_name)
        if err:
            return None, err
        if cores is not None and cores > 100:
            return None, f"container {c.name}: {cfg.cores_name} {cores} is more than 100 percent of a card"
        mem = mem or 0
        if pct is None:
            pct = 100 if mem == 0 else PCT_UNSET
        if nums > 0:
            out.append(VgpuContainerRequest(i, nums, mem, pct, cores or 0))
    a = pod.annotations
    mode = a.get(ann.VGPU_MODE, "")
    if ann.VGPU_MODE in a and mode not in ann.VGPU_MODES:
        return None, f"unknown {ann.VGPU_MODE} {mode!r}: expected one of {', '.join(ann.VGPU_MODES)}"
    group = ann.pod_group_key(pod.namespace, a)
    spread = group if a.get(ann.VGPU_PODGROUP_POLICY) == "spread" else ""
    return (
        VgpuRequest(
            tuple(out),
            len(pod.containers),
            mode,
            tuple(ann.split_list(a.get(ann.VGPU_USE_UUID))),
            tuple(ann.split_list(a.get(ann.VGPU_NOUSE_UUID))),
            tuple(s.upper() for s in ann.split_list(a.get(ann.USE_GPUTYPE))),
            tuple(s.upper() for s in ann.split_list(a.get(ann.NOUSE_GPUTYPE))),
            spread,
            group,
        ),
        "",
    )


# --- HAMi Ascend vNPU ---------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class AscendContainerRequest:
    index: int  # position in spec.containers
    nums: int  # chips
    mem: int  # MiB per chip as asked; 0 = the whole chip
    cores: int  # `<resourceName>-core`: AI cores, or percent of a chip in hami-core mode


@dataclass(frozen=True, slots=True)
class AscendRequest:
    containers: tuple[AscendContainerRequest, ...]
    hami_core: bool  # pod annotation huawei.com/vnpu-mode: hami-core (no template rounding)
    use_uuids: tuple[str, ...] = ()
    nouse_uuids: tuple[str, ...] = ()

    @property
    def total_chips(self) -> int:
        return sum(c.nums for c in self.containers)


def trim_to_template(chip: VnpuChip, mem: int) -> tuple[int, str] | None:
    """Memory rounded up to the smallest template that holds it (spec 5.2): (MiB, template name).

    Above every template but within the chip's capacity the pod gets the whole chip
    (memoryAllocatable, no template name). Above the capacity: None (upstream rounds to 0 and the
    request then fits anywhere; we refuse it).
    """
    for t in chip.templates:
        if mem <= t.memory:
            return t.memory, t.name
    if mem <= chip.memory_capacity:
        return chip.memory_allocatable, ""
    return None


def ascend_request(pod: PodInfo, chip: VnpuChip) -> tuple[AscendRequest | None, str]:
    """The pod's request for one HAMi Ascend chip kind; `(None, "")` unless a regular container
    limits the chip's resource or its memory resource (spec 1.3, 5.2)."""
    res, mem_name, core_name = chip.resource_name, chip.resource_memory_name, f"{chip.resource_name}-core"
    if not any(res in c.limits or mem_name in c.limits for c in pod.containers):
        return None, ""
    mode = pod.annotations.get(ann.ASCEND_VNPU_MODE)
    if mode is not None and mode != ann.ASCEND_MODE_HAMI_CORE:
        # upstream silently treats any other value as template mode
        return (
            None,
            f"unknown {ann.ASCEND_VNPU_MODE} {mode!r}: expected {ann.ASCEND_MODE_HAMI_CORE} or no annotation",
        )
    hami_core = mode == ann.ASCEND_MODE_HAMI_CORE
    out: list[AscendContainerRequest] = []
    for i, c in enumerate(pod.containers):
        nums, err = _limit(c, res)
        if err:
            return None, err
        if nums is None:
            if mem_name not in c.limits:
                continue
            nums = 1
        mem, err = _limit_or_request(c, mem_name)
        if err:
            return None, err
        cores, err = _limit_or_request(c, core_name)
        if err:
            return None, err
        mem, cores = mem or 0, cores or 0
        if hami_core and cores > 100:
            return None, f"container {c.name}: {core_name} {cores} is more than 100 percent of a chip"
        if not hami_core and chip.ai_core and cores > chip.ai_core:
            return (
                None,
                f"container {c.name}: {core_name} {cores} is more than the {chip.ai_core} AI cores of a {chip.common_word}",
            )
        if mem and not hami_core:
            trimmed = trim_to_template(chip, mem)
            if trimmed is None:
                return (
                    None,
                    f"container {c.name}: {mem_name} {mem} is more than a {chip.common_word} holds ({chip.memory_capacity})",
                )
            if nums > 1 and trimmed[0] != chip.memory_allocatable:
                return (
                    None,
                    f"container {c.name}: vNPU does not support partial memory allocation when requesting multiple devices",
                )
        if nums > 0:
            out.append(AscendContainerRequest(i, nums, mem, cores))
    a = pod.annotations
    return (
        AscendRequest(
            tuple(out),
            hami_core,
            tuple(ann.split_list(a.get(ann.ascend_use_uuid_key(chip.common_word)))),
            tuple(ann.split_list(a.get(ann.ascend_nouse_uuid_key(chip.common_word)))),
        ),
        "",
    )
