"""Every annotation key and wire encoding of shared devices, in one place (spec sections 2-5).

These strings are exchanged with device plugins we do not own (the volcano-sh device plugin for
gpu-memory/gpu-number, HAMi's volcano-vgpu-device-plugin for vGPU, HAMi's Ascend plugin), so the
encoders here must stay byte-compatible with them. Decoders never raise: garbled input decodes to
"nothing" (None or an empty list) and the caller reports or ignores it, as spec section 6.6 says.

The sandbox's simulated device plugins and node generator use the same functions, so the
scheduler and its simulated counterpart cannot drift apart.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

# --- resource names -------------------------------------------------------------------------
GPU_MEMORY = "volcano.sh/gpu-memory"
GPU_NUMBER = "volcano.sh/gpu-number"
VGPU_NUMBER = "volcano.sh/vgpu-number"
VGPU_MEMORY = "volcano.sh/vgpu-memory"
VGPU_CORES = "volcano.sh/vgpu-cores"
VGPU_MEMORY_PERCENTAGE = "volcano.sh/vgpu-memory-percentage"

# --- gpushare (spec 2) ----------------------------------------------------------------------
GPU_INDEX = "volcano.sh/gpu-index"
PREDICATE_TIME = "volcano.sh/predicate-time"
GPU_UNHEALTHY_IDS = "volcano.sh/gpu-unhealthy-ids"

# --- vGPU (spec 3) --------------------------------------------------------------------------
VGPU_REGISTER = "volcano.sh/node-vgpu-register"
VGPU_NODE = "volcano.sh/vgpu-node"
VGPU_TIME = "volcano.sh/vgpu-time"
VGPU_IDS_NEW = "volcano.sh/vgpu-ids-new"
DEVICES_TO_ALLOCATE = "volcano.sh/devices-to-allocate"
BIND_PHASE = "volcano.sh/bind-phase"
BIND_TIME = "volcano.sh/bind-time"
VGPU_MODE = "volcano.sh/vgpu-mode"
VGPU_USE_UUID = "volcano.sh/vgpu-use-gpuuuid"
VGPU_NOUSE_UUID = "volcano.sh/vgpu-nouse-gpuuuid"
VGPU_PODGROUP_POLICY = "volcano.sh/vgpu-podgroup-policy"
USE_GPUTYPE = "nvidia.com/use-gputype"
NOUSE_GPUTYPE = "nvidia.com/nouse-gputype"
GPU_PRODUCT_LABEL = "nvidia.com/gpu.product"
GROUP_NAME = "scheduling.k8s.io/group-name"
GROUP_NAME_VOLCANO = "scheduling.volcano.sh/group-name"

BIND_PHASE_ALLOCATING = "allocating"
BIND_PHASE_SUCCESS = "success"
BIND_PHASE_FAILED = "failed"
# the type field of every pod device entry: the plugin selects entries whose type is exactly this
VGPU_REQUEST_TYPE = "NVIDIA"
# what the device plugin writes into vgpu-time once it has handled the pod (max uint64)
VGPU_TIME_DONE = "18446744073709551615"

MODE_HAMI_CORE = "hami-core"
MODE_MIG = "mig"
MODE_MPS = "mps"
VGPU_MODES = (MODE_HAMI_CORE, MODE_MIG, MODE_MPS)

# keys the scheduler writes at vGPU allocation and strips again on release (spec 3.7)
VGPU_POD_KEYS = (VGPU_NODE, VGPU_TIME, VGPU_IDS_NEW, DEVICES_TO_ALLOCATE, BIND_PHASE, BIND_TIME)
GPUSHARE_POD_KEYS = (GPU_INDEX, PREDICATE_TIME)

# --- HAMi Ascend (spec 5.2) -------------------------------------------------------------------
HAMI_VNPU_CORE = "hami-vnpu-core"
ASCEND_VNPU_MODE = "huawei.com/vnpu-mode"
ASCEND_MODE_HAMI_CORE = "hami-core"
ASCEND_PREDICATE_TIME = "predicate-time"
# Volcano's HAMi Ascend path writes HAMi's own bind keys (third_party/hami/util), not the
# volcano.sh/ ones of the vGPU path: the HAMi Ascend device plugin reads these.
HAMI_ASSIGNED_NODE = "hami.io/vgpu-node"
HAMI_ASSIGNED_TIME = "hami.io/vgpu-time"
HAMI_BIND_PHASE = "hami.io/bind-phase"
HAMI_BIND_TIME = "hami.io/bind-time"
ASCEND910_PREFIX = "Ascend910"


# Per-chip keys: HAMi builds each from the chip's commonWord (e.g. "Ascend310P").
ascend_register_key: Callable[[str], str] = "hami.io/node-register-{}".format
ascend_handshake_key: Callable[[str], str] = "hami.io/node-handshake-{}".format
ascend_to_allocate_key: Callable[[str], str] = "hami.io/{}-devices-to-allocate".format
ascend_allocated_key: Callable[[str], str] = "hami.io/{}-devices-allocated".format
ascend_use_uuid_key: Callable[[str], str] = "hami.io/use-{}-uuid".format
ascend_nouse_uuid_key: Callable[[str], str] = "hami.io/no-use-{}-uuid".format
ascend_huawei_key: Callable[[str], str] = "huawei.com/{}".format


ASCEND_COMMON_KEYS = (
    HAMI_ASSIGNED_NODE,
    HAMI_ASSIGNED_TIME,
    HAMI_BIND_PHASE,
    HAMI_BIND_TIME,
    ASCEND_PREDICATE_TIME,
)


def ascend_pod_keys(common_word: str) -> tuple[str, ...]:
    """Keys written at allocation of one chip kind, stripped again on release (spec 5.2)."""
    return (
        ascend_to_allocate_key(common_word),
        ascend_allocated_key(common_word),
        ascend_huawei_key(common_word),
        *ASCEND_COMMON_KEYS,
    )


# --- node locks (spec 1.5) ------------------------------------------------------------------
LOCK_GPUSHARE = "gpu"
LOCK_VGPU = "hamivgpu"
LOCK_HAMI = "hami.io/mutex.lock"
LOCK_STALE_SECONDS = 300.0

LockDecision = Literal["take", "takeover", "refuse"]


def lock_value(now: float) -> str:
    """The lock annotation value: the lock time in RFC 3339 (UTC, whole seconds)."""
    return datetime.fromtimestamp(int(now), tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_lock_value(value: str) -> float | None:
    try:
        return datetime.fromisoformat(value.strip().replace("Z", "+00:00")).timestamp()
    except (ValueError, AttributeError):
        return None


def lock_decision(existing: str | None, now: float) -> LockDecision:
    """Whether a scheduler may lock a node whose lock annotation holds `existing`.

    No lock: take it. A lock older than five minutes is stale (its holder died): take it over.
    A fresh lock, or one we cannot read, refuses: another pod is in flight on that node.
    """
    if existing is None:
        return "take"
    when = parse_lock_value(existing)
    if when is None:
        return "refuse"
    return "takeover" if now - when > LOCK_STALE_SECONDS else "refuse"


# --- gpushare codecs ------------------------------------------------------------------------
def encode_gpu_index(indices: list[int]) -> str:
    return ",".join(str(i) for i in indices)


def decode_gpu_index(value: str | None) -> list[int] | None:
    """Card indices of `volcano.sh/gpu-index`; None when absent or any item is not an integer."""
    if value is None:
        return None
    out: list[int] = []
    for item in value.split(","):
        item = item.strip()
        if not item.isdigit():  # also rejects "" and negatives: the pod then counts on no card
            return None
        out.append(int(item))
    return out


def decode_unhealthy_ids(value: str | None) -> tuple[set[int], set[str]]:
    """`volcano.sh/gpu-unhealthy-ids`: card indices, plus (for vGPU nodes) card UUIDs."""
    indices: set[int] = set()
    uuids: set[str] = set()
    for item in (value or "").split(","):
        item = item.strip()
        if item.isdigit():
            indices.add(int(item))
        elif item.upper().startswith("GPU-"):
            uuids.add(item)
    return indices, uuids


def encode_predicate_time(now_ns: int) -> str:
    return str(now_ns)


# --- vGPU node registration -----------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class RegisteredCard:
    """One entry of `volcano.sh/node-vgpu-register`."""

    uuid: str
    count: int
    devmem: int
    type: str
    health: bool
    mode: str = MODE_HAMI_CORE


# HAMi's DeviceInfo holds count and devmem as Go int32: larger numbers are not a registration the
# device plugin can have written, and they must never reach the compiled fit's int64 arrays.
REGISTER_INT_MAX = 2**31 - 1
_DECIMAL = re.compile(r"[0-9]{1,10}")
_PRINTABLE = re.compile(r"[\x20-\x7e]*")
# an empty card id is what Volcano accepts (the card then never passes a UUID filter)
_UUID = re.compile(r"[\x21-\x7e]*")


def _register_int(field: str, text: str, uuid: str) -> int:
    t = text.strip()
    if not _DECIMAL.fullmatch(t) or int(t) > REGISTER_INT_MAX:
        raise ValueError(
            f"card {uuid[:40]!r}: {field} {t[:24]!r} is not a whole number 0..{REGISTER_INT_MAX}"
        )
    return int(t)


def encode_vgpu_register(cards: list[RegisteredCard]) -> str:
    return "".join(
        f"{c.uuid},{c.count},{c.devmem},{c.type},{'true' if c.health else 'false'},{c.mode}:" for c in cards
    )


def decode_vgpu_register(value: str | None) -> tuple[list[RegisteredCard] | None, str]:
    """Cards of the register annotation, or (None, why) when the node has no usable vGPU ledger."""
    if value is None:
        return None, "no vGPU registration"
    if ":" not in value:
        return None, f"garbled vGPU registration {value[:60]!r}: no ':'-terminated entry"
    cards: list[RegisteredCard] = []
    seen: set[str] = set()
    for item in value.split(":"):
        if "," not in item:
            continue
        f = item.split(",")
        if len(f) < 6:
            return None, f"garbled vGPU registration entry {item[:60]!r}: {len(f)} fields, need 6"
        uuid = f[0].strip()
        if not _UUID.fullmatch(uuid):
            return None, f"vGPU registration: card id {uuid[:40]!r} is not printable ASCII"
        if uuid and uuid in seen:
            return None, f"vGPU registration lists card {uuid[:40]!r} twice"
        seen.add(uuid)
        if not _PRINTABLE.fullmatch(f[3]) or not _PRINTABLE.fullmatch(f[5]):
            return (
                None,
                f"vGPU registration: card {uuid[:40]!r} has a type or mode that is not printable ASCII",
            )
        try:
            count = _register_int("count", f[1], uuid)
            devmem = _register_int("devmem", f[2], uuid)
        except ValueError as exc:
            return None, f"vGPU registration: {exc}"
        health = f[4].strip().lower() in ("true", "1", "t")
        cards.append(RegisteredCard(uuid, count, devmem, f[3], health, f[5].strip()))
    if not cards:
        return None, "vGPU registration lists no card"
    return cards, ""


# --- vGPU pod assignment ----------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class DeviceEntry:
    """One device of a container in `volcano.sh/vgpu-ids-new` / `devices-to-allocate`."""

    uuid: str
    mem: int
    cores: int
    type: str = VGPU_REQUEST_TYPE


def encode_pod_devices(containers: list[list[DeviceEntry]]) -> str:
    """Container segments joined by ';' (no trailing ';'), each device terminated by ':'."""
    if len(containers) == 1 and len(containers[0]) == 1:  # one container, one card: the usual pod
        d = containers[0][0]
        return f"{d.uuid},{d.type},{d.mem},{d.cores}:"
    return ";".join("".join(f"{d.uuid},{d.type},{d.mem},{d.cores}:" for d in seg) for seg in containers)


def decode_pod_devices(value: str | None) -> list[list[DeviceEntry]]:
    """Segments in container order; bad entries (< 4 fields, non-numeric) are skipped."""
    if not value:
        return []
    out: list[list[DeviceEntry]] = []
    for seg in value.split(";"):
        entries: list[DeviceEntry] = []
        for item in seg.split(":"):
            if "," not in item:
                continue
            f = item.split(",")
            if len(f) < 4:
                continue
            try:
                mem, cores = int(f[2]), int(f[3])
            except ValueError:
                continue
            if not (0 <= mem <= REGISTER_INT_MAX and 0 <= cores <= REGISTER_INT_MAX):
                continue  # no card has that much: garbage, never charged to a 64-bit ledger
            entries.append(DeviceEntry(f[0], mem, cores, f[1]))
        out.append(entries)
    return out


def encode_mig_id(uuid: str, group: str, position: int) -> str:
    return f"{uuid}[{group}-{position}]"


def decode_mig_id(device_id: str) -> tuple[str, str, int] | None:
    """(card uuid, group, position) of `GPU-x[group-pos]`; None for a plain card id or garbage."""
    start, end = device_id.find("["), device_id.find("]")
    if start < 0 or end < start:
        return None
    group, sep, pos = device_id[start + 1 : end].rpartition("-")
    if not sep or not group or not pos.isdigit():
        return None
    return device_id[:start], group, int(pos)


def pod_group_key(namespace: str, annotations: dict[str, str]) -> str:
    """The pod-group spread key `namespace/group` (spec 3.4 rule 3); "" for pods without a group."""
    name = annotations.get(GROUP_NAME) or annotations.get(GROUP_NAME_VOLCANO) or ""
    return f"{namespace}/{name}" if name else ""


def split_list(value: str | None) -> list[str]:
    """A comma list as the device annotations use it: items trimmed, empties dropped."""
    return [s.strip() for s in (value or "").split(",") if s.strip()]


# --- HAMi Ascend codecs -----------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class AscendCard:
    """One chip of `hami.io/node-register-<commonWord>` (a JSON array of these objects)."""

    id: str
    count: int
    devmem: int
    devcore: int
    type: str
    health: bool
    network_id: int = -1  # custominfo.NetworkID (Ascend910 chips), -1 when absent
    index: int = 0


def encode_ascend_register(cards: list[AscendCard]) -> str:
    """As the HAMi Ascend plugin marshals it (Go `omitempty`: zero fields are left out)."""
    out = []
    for c in cards:
        obj: dict[str, Any] = {"id": c.id}
        for key, v in (("index", c.index), ("count", c.count), ("devmem", c.devmem), ("devcore", c.devcore)):
            if v:
                obj[key] = v
        if c.type:
            obj["type"] = c.type
        if c.health:
            obj["health"] = True
        if c.network_id >= 0:
            obj["custominfo"] = {"NetworkID": c.network_id}
        out.append(obj)
    return json.dumps(out, separators=(",", ":"))


_JSON_INT_FIELDS = ("index", "count", "devmem", "devcore", "numa")


def decode_ascend_register(value: str | None) -> tuple[list[AscendCard] | None, str]:
    """Chips of the register annotation, or (None, why): Go's json.Unmarshal fails the whole
    annotation on a wrongly typed field, and the chip kind is then absent from the node."""
    if value is None:
        return None, "no Ascend registration"
    try:
        raw = json.loads(value)
    except ValueError:
        return None, f"Ascend registration is not valid JSON: {value[:60]!r}"
    if not isinstance(raw, list) or not raw:
        return None, "Ascend registration must be a non-empty JSON array"
    cards: list[AscendCard] = []
    for obj in raw:
        if not isinstance(obj, dict) or not isinstance(obj.get("id"), str) or not obj["id"]:
            return None, f"Ascend registration entry without an id: {str(obj)[:60]!r}"
        for key in _JSON_INT_FIELDS:
            v = obj.get(key, 0)
            if isinstance(v, bool) or not isinstance(v, int | float) or v != int(v):
                return None, f"Ascend registration entry {obj['id']!r}: {key} {v!r} is not an integer"
        health = obj.get("health", False)
        if not isinstance(health, bool):
            return None, f"Ascend registration entry {obj['id']!r}: health {health!r} is not a boolean"
        kind = obj.get("type", "")
        if not isinstance(kind, str):
            return None, f"Ascend registration entry {obj['id']!r}: type {kind!r} is not a string"
        info = obj.get("custominfo")
        nid = info.get("NetworkID", -1) if isinstance(info, dict) else -1
        cards.append(
            AscendCard(
                obj["id"],
                max(0, int(obj.get("count", 0))),
                max(0, int(obj.get("devmem", 0))),
                max(0, int(obj.get("devcore", 0))),
                kind,
                health,
                int(nid) if isinstance(nid, int | float) and not isinstance(nid, bool) and nid >= 0 else -1,
                max(0, int(obj.get("index", 0))),
            )
        )
    return cards, ""


def encode_generic_devices(common_word: str, containers: list[list[DeviceEntry]]) -> str:
    """HAMi's generic encoding: `<id>,<commonWord>,<mem>,<cores>:` per device, ';' after EACH container."""
    return "".join(
        "".join(f"{d.uuid},{common_word},{d.mem},{d.cores}:" for d in seg) + ";" for seg in containers
    )


def decode_generic_devices(value: str | None) -> list[list[DeviceEntry]]:
    segs = decode_pod_devices(value)
    # the trailing ';' leaves one empty segment that is not a container
    if value and value.endswith(";") and segs and not segs[-1]:
        segs.pop()
    return segs
