"""The node side of device sharing, simulated: what the real device plugins check at container start.

When the simulated kubelet starts a pod that asks for shared GPUs, it asks this module, which
reads the scheduler's pod annotations the way the real plugins do (Volcano's gpushare plugin for
`volcano.sh/gpu-memory` / `gpu-number`, HAMi's volcano-vgpu-device-plugin for `volcano.sh/vgpu-*`,
HAMi's Ascend device plugin for `huawei.com/<chip>`) and answers either the annotation updates the plugin writes back, or the error it would fail the
container with. That makes the scheduler's wire contract tested end to end in the sandbox.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from scheduler.model.resources import QuantityError, parse_quantity
from scheduler.plugins.deviceshare import annotations as ann


@dataclass(slots=True)
class DeviceCheck:
    error: str = ""
    # annotations the plugin writes on the pod after a successful Allocate
    annotations: dict[str, str] = field(default_factory=dict)


def _limit_sum(pod: dict[str, Any], name: str, init: bool = False) -> int:
    spec = pod.get("spec") or {}
    total = 0
    for c in spec.get("initContainers" if init else "containers") or []:
        v = ((c.get("resources") or {}).get("limits") or {}).get(name)
        if v is None:
            continue
        try:
            n = int(parse_quantity(v))
        except QuantityError:
            continue
        total = max(total, n) if init else total + n
    return total


def _container_vgpu_counts(pod: dict[str, Any]) -> list[int]:
    """Per regular container, how many vGPU devices kubelet asks the plugin for (0 = none)."""
    out: list[int] = []
    for c in (pod.get("spec") or {}).get("containers") or []:
        limits = (c.get("resources") or {}).get("limits") or {}
        if ann.VGPU_NUMBER in limits:
            try:
                out.append(int(parse_quantity(limits[ann.VGPU_NUMBER])))
            except QuantityError:
                out.append(0)
        elif ann.VGPU_MEMORY in limits:
            out.append(1)
        else:
            out.append(0)
    return out


def check_gpushare(pod: dict[str, Any], node: dict[str, Any]) -> DeviceCheck | None:
    mem = max(_limit_sum(pod, ann.GPU_MEMORY), _limit_sum(pod, ann.GPU_MEMORY, init=True))
    num = max(_limit_sum(pod, ann.GPU_NUMBER), _limit_sum(pod, ann.GPU_NUMBER, init=True))
    if mem <= 0 and num <= 0:
        return None
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    idx = ann.decode_gpu_index(annotations.get(ann.GPU_INDEX))
    if not idx:
        return DeviceCheck(
            error=f"device plugin: pod has no valid {ann.GPU_INDEX} annotation (got {annotations.get(ann.GPU_INDEX)!r})"
        )
    if not annotations.get(ann.PREDICATE_TIME, "").isdigit():
        return DeviceCheck(error=f"device plugin: pod has no valid {ann.PREDICATE_TIME} annotation")
    cap = (node.get("status") or {}).get("capacity") or {}
    try:
        cards = int(parse_quantity(cap.get(ann.GPU_NUMBER, 0)))
    except QuantityError:
        cards = 0
    if any(i < 0 or i >= cards for i in idx):
        return DeviceCheck(
            error=f"device plugin: {ann.GPU_INDEX} {idx} names a card the node does not have ({cards} cards)"
        )
    if num > 0 and mem <= 0 and len(set(idx)) != num:
        return DeviceCheck(
            error=f"device plugin: pod asks for {num} GPUs but {ann.GPU_INDEX} lists {len(set(idx))}"
        )
    return DeviceCheck(annotations={"volcano.sh/gpu-assigned": "true"})


def check_vgpu(pod: dict[str, Any], node: dict[str, Any]) -> DeviceCheck | None:
    counts = _container_vgpu_counts(pod)
    if not any(counts):
        return None
    md = pod.get("metadata") or {}
    annotations = md.get("annotations") or {}
    node_name = (node.get("metadata") or {}).get("name")
    if annotations.get(ann.VGPU_NODE) != node_name:
        return DeviceCheck(
            error=f"device plugin: pod is not assigned to this node ({ann.VGPU_NODE}={annotations.get(ann.VGPU_NODE)!r})"
        )
    segments = ann.decode_pod_devices(annotations.get(ann.DEVICES_TO_ALLOCATE))
    cards, why = ann.decode_vgpu_register(
        ((node.get("metadata") or {}).get("annotations") or {}).get(ann.VGPU_REGISTER)
    )
    if cards is None:
        return DeviceCheck(error=f"device plugin: node has no vGPU registration ({why})")
    uuids = {c.uuid for c in cards}
    # The plugin serves container i from the i-th segment; with one segment per container we can
    # check every container's count exactly.
    nonempty = [s for s in segments if s]
    wanted = [n for n in counts if n > 0]
    if len(segments) == len(counts):
        pairs = list(zip(counts, segments, strict=True))
    elif len(nonempty) == len(wanted):
        pairs = list(zip(wanted, nonempty, strict=True))
    else:
        return DeviceCheck(error="device plugin: devices-to-allocate does not match the pod's containers")
    for n, seg in pairs:
        if len(seg) != n:
            return DeviceCheck(
                error=f"device plugin: a container asks for {n} vGPUs but was given {len(seg)}"
            )
        for entry in seg:
            mig = ann.decode_mig_id(entry.uuid)
            base = mig[0] if mig else entry.uuid
            if base not in uuids:
                return DeviceCheck(error=f"device plugin: unknown device {entry.uuid} on node {node_name}")
            if entry.type != ann.VGPU_REQUEST_TYPE:
                return DeviceCheck(
                    error=f"device plugin: device type {entry.type!r} is not {ann.VGPU_REQUEST_TYPE}"
                )
    return DeviceCheck(
        annotations={
            ann.BIND_PHASE: ann.BIND_PHASE_SUCCESS,
            ann.VGPU_TIME: ann.VGPU_TIME_DONE,
            # the plugin consumes each container's segment; what remains is empty segments
            ann.DEVICES_TO_ALLOCATE: ";".join("" for _ in segments) if len(segments) > 1 else "",
        }
    )


def _register_words(node: dict[str, Any]) -> list[str]:
    prefix = ann.ascend_register_key("")
    annotations = (node.get("metadata") or {}).get("annotations") or {}
    return [k[len(prefix) :] for k in annotations if k.startswith(prefix)]


def _container_chip_counts(pod: dict[str, Any], word: str) -> list[int]:
    res, mem = ann.ascend_huawei_key(word), f"{ann.ascend_huawei_key(word)}-memory"
    out: list[int] = []
    for c in (pod.get("spec") or {}).get("containers") or []:
        limits = (c.get("resources") or {}).get("limits") or {}
        if res in limits:
            try:
                out.append(int(parse_quantity(limits[res])))
            except QuantityError:
                out.append(0)
        else:
            out.append(1 if mem in limits else 0)
    return out


def check_ascend(pod: dict[str, Any], node: dict[str, Any]) -> DeviceCheck | None:
    """HAMi's Ascend plugin: the pod's chips per container from `hami.io/<chip>-devices-to-allocate`,
    their templates (or hami-core memory/cores) from `huawei.com/<chip>`, all on this node."""
    node_name = (node.get("metadata") or {}).get("name")
    node_annotations = (node.get("metadata") or {}).get("annotations") or {}
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    done: dict[str, str] = {}
    for word in _register_words(node):
        counts = _container_chip_counts(pod, word)
        if not any(counts):
            continue
        chips, why = ann.decode_ascend_register(node_annotations.get(ann.ascend_register_key(word)))
        if chips is None:
            return DeviceCheck(error=f"ascend device plugin: node has no {word} registration ({why})")
        if annotations.get(ann.HAMI_ASSIGNED_NODE) != node_name:
            return DeviceCheck(
                error=f"ascend device plugin: pod is not assigned to this node ({ann.HAMI_ASSIGNED_NODE}={annotations.get(ann.HAMI_ASSIGNED_NODE)!r})"
            )
        segments = ann.decode_generic_devices(annotations.get(ann.ascend_to_allocate_key(word)))
        wanted = [n for n in counts if n > 0]
        if [len(s) for s in segments] != wanted:
            return DeviceCheck(
                error=f"ascend device plugin: {ann.ascend_to_allocate_key(word)} gives {[len(s) for s in segments]} chips, containers ask {wanted}"
            )
        known = {c.id for c in chips}
        ids = [e.uuid for seg in segments for e in seg]
        for e in (e for seg in segments for e in seg):
            if e.uuid not in known:
                return DeviceCheck(error=f"ascend device plugin: unknown chip {e.uuid} on node {node_name}")
            if e.type != word:
                return DeviceCheck(error=f"ascend device plugin: device type {e.type!r} is not {word}")
        try:
            runtime = json.loads(annotations.get(ann.ascend_huawei_key(word), ""))
        except ValueError:
            runtime = None
        if (
            not isinstance(runtime, list)
            or [r.get("UUID") if isinstance(r, dict) else None for r in runtime] != ids
        ):
            return DeviceCheck(
                error=f"ascend device plugin: {ann.ascend_huawei_key(word)} does not name the allocated chips"
            )
        done[ann.HAMI_BIND_PHASE] = ann.BIND_PHASE_SUCCESS
        # the plugin consumes each container's devices; what remains is the empty segments
        done[ann.ascend_to_allocate_key(word)] = ";" * len(segments)
    return DeviceCheck(annotations=done) if done else None


def check_pod(pod: dict[str, Any], node: dict[str, Any]) -> DeviceCheck:
    """All device plugins in order; the first failure wins, annotations are merged."""
    merged = DeviceCheck()
    for check in (check_gpushare, check_vgpu, check_ascend):
        r = check(pod, node)
        if r is None:
            continue
        if r.error:
            return r
        merged.annotations.update(r.annotations)
    return merged
