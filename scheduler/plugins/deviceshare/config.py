"""The deviceshare plugin's arguments and the device configuration ConfigMap (spec 1.1, 3.2, 4.2, 5.2).

Arguments are validated when the configuration is loaded: the mutually exclusive GPU switches are
an `ArgumentError` naming both switches (upstream aborts the process; we reject the configuration
so a reload keeps the last good one, spec section 8).

The device configuration (`device-config.yaml` in ConfigMap kube-system/volcano-vgpu-device-config)
is parsed into frozen records; a missing or broken ConfigMap gives the built-in defaults plus a
warning. Parsed results are memoised by the text, so reading it every session is free, and a
changed ConfigMap takes effect at the next session (spec section 8: upstream reads it once).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import yaml

from scheduler.framework.arguments import ArgumentError, Arguments
from scheduler.plugins.deviceshare import annotations as ann

GPU_SHARING = "deviceshare.GPUSharingEnable"
GPU_NUMBER = "deviceshare.GPUNumberEnable"
NODE_LOCK = "deviceshare.NodeLockEnable"
VGPU = "deviceshare.VGPUEnable"
ASCEND_MINDCLUSTER = "deviceshare.AscendMindClusterVNPUEnable"
ASCEND_HAMI = "deviceshare.AscendHAMiVNPUEnable"
SCHEDULE_POLICY = "deviceshare.SchedulePolicy"
SCHEDULE_WEIGHT = "deviceshare.ScheduleWeight"
CM_NAME = "deviceshare.KnownGeometriesCMName"
CM_NAMESPACE = "deviceshare.KnownGeometriesCMNamespace"
# Volcano <= 1.8.2 read the switch from the predicates plugin; accepted as an alias
LEGACY_GPU_SHARING = "predicate.GPUSharingEnable"

DEVICE_CONFIG_KEY = "device-config.yaml"

GPU_EXCLUSIVE_RULES = "deviceshare.GPUExclusiveRules"
Rule = tuple[tuple[str, str], ...]

POLICY_NONE = 0
POLICY_BINPACK = 1
POLICY_SPREAD = 2
_POLICIES = {"binpack": POLICY_BINPACK, "spread": POLICY_SPREAD}


@dataclass(frozen=True, slots=True)
class DeviceShareArgs:
    gpu_sharing: bool = False
    gpu_number: bool = False
    node_lock: bool = False
    vgpu: bool = False
    ascend_mindcluster: bool = False
    ascend_hami: bool = False
    policy_name: str = ""
    weight: int = 0
    cm_name: str = "volcano-vgpu-device-config"
    cm_namespace: str = "kube-system"
    # spec 6.7: label sets whose pods never share a GPU with each other (vGPU only)
    exclusive_rules: tuple[Rule, ...] = ()
    warnings: tuple[str, ...] = field(default=(), compare=False)

    @property
    def policy(self) -> int:
        """binpack, spread, or none (any other string, spec 1.1)."""
        return _POLICIES.get(self.policy_name, POLICY_NONE)

    @property
    def cm_key(self) -> str:
        return f"{self.cm_namespace}/{self.cm_name}"

    @classmethod
    def parse(cls, arguments: Arguments) -> DeviceShareArgs:
        sharing = arguments.get_bool(GPU_SHARING, False) or arguments.get_bool(LEGACY_GPU_SHARING, False)
        rules, rule_warnings = parse_rules(arguments.raw(GPU_EXCLUSIVE_RULES))
        a = cls(
            gpu_sharing=sharing,
            gpu_number=arguments.get_bool(GPU_NUMBER, False),
            node_lock=arguments.get_bool(NODE_LOCK, False),
            vgpu=arguments.get_bool(VGPU, False),
            ascend_mindcluster=arguments.get_bool(ASCEND_MINDCLUSTER, False),
            ascend_hami=arguments.get_bool(ASCEND_HAMI, False),
            policy_name=arguments.get_str(SCHEDULE_POLICY, "").strip(),
            weight=arguments.get_int(SCHEDULE_WEIGHT, 0),
            cm_name=arguments.get_str(CM_NAME, "volcano-vgpu-device-config"),
            cm_namespace=arguments.get_str(CM_NAMESPACE, "kube-system"),
            exclusive_rules=rules,
            warnings=rule_warnings,
        )
        a.check_exclusive()
        return a

    def check_exclusive(self) -> None:
        if self.gpu_sharing and self.gpu_number:
            raise ArgumentError(f"{GPU_SHARING} and {GPU_NUMBER} cannot both be true")
        if self.vgpu and self.gpu_sharing:
            raise ArgumentError(f"{GPU_SHARING} and {VGPU} cannot both be true")
        if self.vgpu and self.gpu_number:
            raise ArgumentError(f"{GPU_NUMBER} and {VGPU} cannot both be true")


def parse_rules(raw: Any) -> tuple[tuple[Rule, ...], tuple[str, ...]]:
    """The rules argument (a list of label maps) and warnings about what was dropped.

    Volcano keeps only string labels and drops a rule left with none, or the whole argument when
    it is not a list; we read it the same way, so a configuration Volcano accepts loads here, but
    each dropped piece is a warning naming it, so a typo does not switch exclusivity off unseen.
    """
    if raw is None:
        return (), ()
    if not isinstance(raw, list):
        return (), (f"{GPU_EXCLUSIVE_RULES}: expected a list of label maps, got {raw!r}; no rules apply",)
    rules: list[Rule] = []
    warnings: list[str] = []
    for i, item in enumerate(raw):
        entry = f"{GPU_EXCLUSIVE_RULES}[{i}]"
        labels = []
        for k, v in item.items() if isinstance(item, Mapping) else ():
            if isinstance(k, str) and isinstance(v, str):
                labels.append((k, v))
            else:
                warnings.append(f"{entry}: label {k!r}: {v!r} is not a string to a string; ignored")
        if labels:
            rules.append(tuple(sorted(labels)))
        else:
            warnings.append(f"{entry}: {item!r} has no labels; the rule is ignored")
    return tuple(rules), tuple(warnings)


# --- device-config.yaml -----------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class MigProfile:
    name: str
    memory: int
    count: int


@dataclass(frozen=True, slots=True)
class MigGroup:
    name: str
    profiles: tuple[MigProfile, ...]

    def locate(self, position: int) -> tuple[int, int] | None:
        """(profile index, instance) of a position counted across the group's profiles."""
        base = 0
        for i, p in enumerate(self.profiles):
            if position < base + p.count:
                return i, position - base
            base += p.count
        return None

    def base_of(self, profile_index: int) -> int:
        return sum(p.count for p in self.profiles[:profile_index])


@dataclass(frozen=True, slots=True)
class MigGeometry:
    models: tuple[str, ...]
    groups: tuple[MigGroup, ...]


@dataclass(frozen=True, slots=True)
class VnpuTemplate:
    name: str
    memory: int
    ai_core: int
    ai_cpu: int


@dataclass(frozen=True, slots=True)
class VnpuChip:
    common_word: str
    chip_name: str
    resource_name: str
    resource_memory_name: str
    memory_allocatable: int
    memory_capacity: int
    ai_core: int
    ai_cpu: int
    templates: tuple[VnpuTemplate, ...]


DEFAULT_VNPU = VnpuChip(
    "Ascend310P",
    "310P3",
    "huawei.com/Ascend310P",
    "huawei.com/Ascend310P-memory",
    21527,
    24576,
    8,
    7,
    (
        VnpuTemplate("vir01", 3072, 1, 1),
        VnpuTemplate("vir02", 6144, 2, 2),
        VnpuTemplate("vir04", 12288, 4, 4),
    ),
)


@dataclass(frozen=True, slots=True)
class DeviceConfig:
    count_name: str = ann.VGPU_NUMBER
    memory_name: str = ann.VGPU_MEMORY
    # empty: percentage requests disabled (the built-in default, spec 3.2)
    percentage_name: str = ""
    cores_name: str = ann.VGPU_CORES
    gpu_memory_factor: int = 1
    mig: tuple[MigGeometry, ...] = ()
    hami_vnpu_core: bool = False
    vnpus: tuple[VnpuChip, ...] = (DEFAULT_VNPU,)
    warnings: tuple[str, ...] = field(default=(), compare=False)

    def geometry_for(self, card_type: str) -> tuple[MigGroup, ...] | None:
        for g in self.mig:
            if any(m in card_type for m in g.models):
                return g.groups
        return None


DEFAULT_CONFIG = DeviceConfig()


class _Bad(ValueError):
    pass


def _str(obj: dict[str, Any], key: str, default: str) -> str:
    v = obj.get(key, default)
    if v is None:
        return default
    if not isinstance(v, str):
        raise _Bad(f"{key} must be a string, got {v!r}")
    return v


def _nonneg_int(obj: dict[str, Any], key: str, default: int) -> int:
    v = obj.get(key, default)
    if v is None:
        return default
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise _Bad(f"{key} must be a non-negative integer, got {v!r}")
    return v


def _mig(raw: Any) -> tuple[MigGeometry, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise _Bad("knownMigGeometries must be a list")
    out: list[MigGeometry] = []
    for entry in raw:
        if not isinstance(entry, dict):
            raise _Bad(f"knownMigGeometries entry must be a mapping, got {entry!r}")
        models = entry.get("models") or []
        if not isinstance(models, list) or not all(isinstance(m, str) and m for m in models):
            raise _Bad(f"models must be a list of strings, got {models!r}")
        groups: list[MigGroup] = []
        for g in entry.get("allowedGeometries") or []:
            if not isinstance(g, dict) or not isinstance(g.get("group"), str):
                raise _Bad(f"allowedGeometries entry needs a group name, got {g!r}")
            profiles = []
            for p in g.get("geometries") or []:
                if not isinstance(p, dict) or not isinstance(p.get("name"), str):
                    raise _Bad(f"geometry needs a name, got {p!r}")
                mem, count = _nonneg_int(p, "memory", 0), _nonneg_int(p, "count", 0)
                if mem == 0 or count == 0:
                    raise _Bad(f"geometry {p['name']!r} needs memory and count > 0")
                profiles.append(MigProfile(p["name"], mem, count))
            groups.append(MigGroup(g["group"], tuple(profiles)))
        out.append(MigGeometry(tuple(models), tuple(groups)))
    return tuple(out)


def _vnpus(raw: Any) -> tuple[bool, tuple[VnpuChip, ...]]:
    if raw is None:
        return False, (DEFAULT_VNPU,)
    core = False
    if isinstance(raw, dict):
        core = raw.get("hamiVnpuCore") is True
        raw = raw.get("configs")
    if not isinstance(raw, list):
        raise _Bad("vnpus must be a list of chip configurations or {hamiVnpuCore, configs}")
    chips: list[VnpuChip] = []
    for c in raw:
        if not isinstance(c, dict):
            raise _Bad(f"vnpus entry must be a mapping, got {c!r}")
        word = _str(c, "commonWord", "")
        res = _str(c, "resourceName", "")
        if not word or not res:
            raise _Bad(f"vnpus entry needs commonWord and resourceName, got {c!r}")
        templates = tuple(
            VnpuTemplate(
                _str(t, "name", ""),
                _nonneg_int(t, "memory", 0),
                _nonneg_int(t, "aiCore", 0),
                _nonneg_int(t, "aiCPU", 0),
            )
            for t in (c.get("templates") or [])
            if isinstance(t, dict)
        )
        chips.append(
            VnpuChip(
                word,
                _str(c, "chipName", ""),
                res,
                _str(c, "resourceMemoryName", f"{res}-memory"),
                _nonneg_int(c, "memoryAllocatable", 0),
                _nonneg_int(c, "memoryCapacity", 0),
                _nonneg_int(c, "aiCore", 0),
                _nonneg_int(c, "aiCPU", 0),
                tuple(sorted(templates, key=lambda t: t.memory)),
            )
        )
    return core, tuple(chips)


@lru_cache(maxsize=8)
def parse_device_config(text: str | None) -> DeviceConfig:
    """The device configuration from `device-config.yaml`; defaults (with a warning) when unusable."""
    if text is None:
        return DEFAULT_CONFIG
    try:
        doc = yaml.safe_load(text)
        if doc is None:
            doc = {}
        if not isinstance(doc, dict):
            raise _Bad("top level must be a mapping with keys nvidia and vnpus")
        nv = doc.get("nvidia") or {}
        if not isinstance(nv, dict):
            raise _Bad("nvidia must be a mapping")
        factor = _nonneg_int(nv, "gpuMemoryFactor", 0)
        core, chips = _vnpus(doc.get("vnpus"))
        return DeviceConfig(
            count_name=_str(nv, "resourceCountName", ann.VGPU_NUMBER) or ann.VGPU_NUMBER,
            memory_name=_str(nv, "resourceMemoryName", ann.VGPU_MEMORY) or ann.VGPU_MEMORY,
            percentage_name=_str(nv, "resourceMemoryPercentageName", ""),
            cores_name=_str(nv, "resourceCoreName", ann.VGPU_CORES) or ann.VGPU_CORES,
            gpu_memory_factor=max(factor, 1),
            mig=_mig(nv.get("knownMigGeometries")),
            hami_vnpu_core=core,
            vnpus=chips,
        )
    except (yaml.YAMLError, _Bad) as exc:
        return DeviceConfig(warnings=(f"{DEVICE_CONFIG_KEY} unusable, built-in defaults used: {exc}",))


def device_config_from(configmaps: dict[str, dict[str, str]], args: DeviceShareArgs) -> DeviceConfig:
    data = configmaps.get(args.cm_key)
    return parse_device_config(None if data is None else data.get(DEVICE_CONFIG_KEY))
