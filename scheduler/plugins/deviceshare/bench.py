"""Micro-benchmark of the vGPU hot path: compiled vs Python fit, and vGPU decisions per second.

A decision is what the scheduler does per vGPU pod: scan every card of every node for fit and
score (one `fit_nodes` call over the whole table), pick the best node, choose the cards on its
live ledger, encode the annotation and charge the ledger. The cluster is synthetic and seeded:
nodes of identical cards, a third of them already partly used, pods asking one card with
1-8 GiB and 0-50 % cores under the binpack policy.

    python -c "from scheduler.plugins.deviceshare.bench import run_device_bench; print(run_device_bench())"
"""

from __future__ import annotations

import random
import time
from types import ModuleType
from typing import Any

from scheduler.plugins.deviceshare import annotations as ann
from scheduler.plugins.deviceshare import fit as python_fit
from scheduler.plugins.deviceshare.config import DEFAULT_CONFIG, POLICY_BINPACK
from scheduler.plugins.deviceshare.hotpath import native_module
from scheduler.plugins.deviceshare.requests import VgpuContainerRequest, VgpuRequest
from scheduler.plugins.deviceshare.vgpu import VgpuLedger, VgpuTable


def _cluster(nodes: int, gpus: int, impl: ModuleType, seed: int) -> VgpuTable:
    rng = random.Random(seed)
    table = VgpuTable()
    table.impl = impl
    for n in range(nodes):
        cards = [ann.RegisteredCard(f"GPU-{n}-{c}", 10, 32768, "NVIDIA-A100-PCIE-40GB", True, "hami-core")
                 for c in range(gpus)]
        led = VgpuLedger(f"node-{n}", cards, DEFAULT_CONFIG, table)
        if n % 3 == 0:
            used = [[ann.DeviceEntry(cards[c].uuid, rng.randrange(1024, 16384), rng.choice((0, 25)))]
                    for c in range(0, gpus, 2)]
            led.add_pod(f"running-{n}", "", used)
    return table


def _pods(count: int, seed: int) -> list[VgpuRequest]:
    rng = random.Random(seed + 1)
    return [
        VgpuRequest((VgpuContainerRequest(0, 1, rng.randrange(1, 9) * 1024, 101, rng.choice((0, 10, 25, 50))),), 1)
        for _ in range(count)
    ]


def _decide(table: VgpuTable, pods: list[VgpuRequest]) -> tuple[int, float]:
    """Place every pod; (pods placed, seconds)."""
    placed = 0
    t0 = time.perf_counter()
    for i, req in enumerate(pods):
        led = table.best_node(req, POLICY_BINPACK)
        if led is None:
            continue
        f = led.fit(req, POLICY_BINPACK)
        segs = led.segments(req, f.picks)
        ann.encode_pod_devices(segs)
        led.add_pod(f"pod-{i}", "", segs)
        placed += 1
    return placed, time.perf_counter() - t0


def _scan_seconds(table: VgpuTable, pods: list[VgpuRequest], repeat: int) -> float:
    """Seconds per full-table fit-and-score scan (no allocation)."""
    t0 = time.perf_counter()
    for k in range(repeat):
        table.fit_all(pods[k % len(pods)], POLICY_BINPACK)
    return (time.perf_counter() - t0) / repeat


def run_device_bench(nodes: int = 1000, gpus_per_node: int = 8, pods: int = 3000, seed: int = 7) -> dict[str, Any]:
    """Figures of the vGPU hot path; `ratio` = fallback scan time / compiled scan time."""
    native = native_module()
    reqs = _pods(pods, seed)
    out: dict[str, Any] = {
        "nodes": nodes,
        "gpus_per_node": gpus_per_node,
        "cards": nodes * gpus_per_node,
        "compiled_available": native is not None,
    }
    py_table = _cluster(nodes, gpus_per_node, python_fit, seed)
    py_scan = _scan_seconds(py_table, reqs, repeat=max(3, min(20, 20_000 // max(nodes, 1))))
    # the fallback is slow by design: decide a bounded number of pods and report the rate
    py_pods = reqs[: max(10, min(pods, 200_000 // max(nodes * gpus_per_node // 8, 1)))]
    py_placed, py_secs = _decide(py_table, py_pods)
    out["fallback_scan_ms"] = round(py_scan * 1000, 3)
    out["fallback_pods_per_s"] = round(py_placed / py_secs, 1) if py_secs > 0 else 0.0
    if native is not None:
        c_table = _cluster(nodes, gpus_per_node, native, seed)
        c_scan = _scan_seconds(c_table, reqs, repeat=200)
        placed, secs = _decide(c_table, reqs)
        out["compiled_scan_ms"] = round(c_scan * 1000, 4)
        out["compiled_pods_per_s"] = round(placed / secs, 1) if secs > 0 else 0.0
        out["pods_placed"] = placed
        out["ratio"] = round(py_scan / c_scan, 1) if c_scan > 0 else 0.0
        out["decisions_per_s"] = out["compiled_pods_per_s"]
    else:
        out["ratio"] = 1.0
        out["decisions_per_s"] = out["fallback_pods_per_s"]
        out["pods_placed"] = py_placed
    out["goal_ratio_5x"] = out["ratio"] >= 5.0
    out["goal_3000_pods_per_s"] = out["decisions_per_s"] >= 3000.0
    return out


if __name__ == "__main__":  # pragma: no cover - manual use
    print(run_device_bench())
