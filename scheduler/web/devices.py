"""Every accelerator card of a node as the web view shows it: vGPU, MIG, gpu-share, Ascend, whole GPUs.

Reads the ledgers deviceshare built for the session (`node.devices`), so what the page shows is
exactly what the scheduler decided on; a node without deviceshare ledgers still shows its whole
`nvidia.com/gpu` cards from allocatable and the pods' requests.
"""

from __future__ import annotations

from typing import Any

from scheduler.model.node import NodeInfo
from scheduler.plugins.deviceshare import annotations as ann
from scheduler.plugins.deviceshare.gpushare import KIND as GPUSHARE_KIND
from scheduler.plugins.deviceshare.vgpu import KIND as VGPU_KIND

WHOLE_GPU = "nvidia.com/gpu"


def _pod_name(node: NodeInfo, uid: str) -> str:
    t = node.tasks.get(uid)
    return t.key if t is not None else uid


def _vgpu_cards(node: NodeInfo, led: Any) -> list[dict[str, Any]]:
    t, b = led.table, led.base
    holders: dict[int, list[str]] = {}
    for uid, (_group, charges) in led.pods.items():
        for ch in charges:
            holders.setdefault(ch.card, []).append(_pod_name(node, uid))
    cards = []
    for c in range(led.n):
        g = b + c
        card: dict[str, Any] = {
            "kind": "vgpu",
            "mode": led.mode,
            "index": c,
            "uuid": led.uuids[c],
            "type": led.types[c],
            "memory_used": t.used_mem[g],
            "memory_total": t.devmem[g],
            "cores_used": t.used_cores[g],
            "cores_total": 100,
            "shares_used": t.used_num[g],
            "shares_total": t.count[g],
            "healthy": bool(t.static_ok[g]) or "NVIDIA" not in led.types[c].upper(),
            "pods": sorted(holders.get(c, [])),
        }
        mig = led.mig[c] if led.mig is not None else None
        if mig is not None and mig.group_index >= 0:
            group = mig.groups[mig.group_index]
            card["mig"] = {
                "geometry": group.name,
                "slices": [
                    {"profile": p.name, "used": len(mig.used.get(i, ())), "total": p.count}
                    for i, p in enumerate(group.profiles)
                ],
            }
        cards.append(card)
    return cards


def _share_cards(node: NodeInfo, led: Any) -> list[dict[str, Any]]:
    out = []
    for i in range(led.total_cards):
        card = led.cards.get(i)
        if card is None:  # unhealthy cards are left out of the ledger
            out.append({"kind": "gpushare", "index": i, "healthy": False, "pods": []})
            continue
        out.append(
            {
                "kind": "gpushare",
                "index": i,
                "memory_used": card.used,
                "memory_total": card.memory,
                "healthy": True,
                "pods": sorted(_pod_name(node, uid) for uid in card.pods),
            }
        )
    return out


def _ascend_chips(node: NodeInfo, led: Any) -> list[dict[str, Any]]:
    holders: dict[int, list[str]] = {}
    for uid, charges in led.pods.items():
        for chip, _mem, _cores in charges:
            holders.setdefault(chip, []).append(_pod_name(node, uid))
    return [
        {
            "kind": "ascend",
            "type": led.kind,
            "index": c.index,
            "uuid": c.id,
            "memory_used": c.used_mem,
            "memory_total": c.devmem,
            "cores_used": c.used_cores,
            "cores_total": c.devcore,
            "shares_used": c.used,
            "shares_total": c.count,
            "healthy": c.health,
            "pods": sorted(holders.get(c.index, [])),
        }
        for c in led.chips
    ]


def _whole_gpus(node: NodeInfo) -> list[dict[str, Any]]:
    total = int(node.allocatable.scalars.get(WHOLE_GPU, 0.0) / 1000)
    if total <= 0:
        return []
    pods = []
    for t in node.tasks.values():
        n = int(t.resreq.scalars.get(WHOLE_GPU, 0.0) / 1000)
        pods.extend([t.key] * n)
    pods.sort()
    return [
        {"kind": "gpu", "index": i, "healthy": True, "in_use": i < len(pods), "pods": pods[i : i + 1]}
        for i in range(total)
    ]


def node_cards(node: NodeInfo) -> list[dict[str, Any]]:
    cards: list[dict[str, Any]] = []
    devs = node.devices
    vled = devs.get(VGPU_KIND)
    if vled is not None:
        cards += _vgpu_cards(node, vled)
    sled = devs.get(GPUSHARE_KIND)
    if sled is not None:
        cards += _share_cards(node, sled)
    for kind, led in devs.items():
        if kind not in (VGPU_KIND, GPUSHARE_KIND) and hasattr(led, "chips"):
            cards += _ascend_chips(node, led)
    if vled is None and ann.VGPU_REGISTER not in node.annotations:
        cards += _whole_gpus(node)
    return cards


def card_totals(node: NodeInfo) -> tuple[int, int, float, float]:
    """(cards, cards in use, memory used, memory total) without building the card dicts."""
    n = busy = 0
    used = total = 0.0
    for card in node_cards(node) if node.devices or WHOLE_GPU in node.allocatable.scalars else ():
        n += 1
        if card.get("pods"):
            busy += 1
        used += card.get("memory_used", 0)
        total += card.get("memory_total", 0)
    return n, busy, used, total
