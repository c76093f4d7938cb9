"""End to end through the plugin and a real session: seeds' exact annotations, state rebuilt across
cycles, device-aware preemption, node locks, bad input as a pod condition, cheap session open."""

from __future__ import annotations

import copy
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from dshelpers import share_node, vgpu_node

from scheduler import registry
from scheduler.framework.session import Session, SessionOptions
from scheduler.model.node import NodeInfo
from scheduler.model.resources import Resource
from scheduler.model.snapshot import Snapshot
from scheduler.plugins.deviceshare import DeviceSharePlugin
from scheduler.plugins.deviceshare import annotations as ann
from scheduler.plugins.deviceshare.vgpu import VgpuLedger
from scheduler.registry import parse
from scheduler.sim.simulate import SimulationResult, simulate
from tests import builders as b

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"
VGPU_REG = "GPU-a,{n},16384,NVIDIA-Tesla T4,true,hami-core:"


@pytest.fixture(autouse=True)
def _registered(monkeypatch: pytest.MonkeyPatch) -> None:
    # the registry is another module's; make sure the plugin is reachable by name in these tests
    monkeypatch.setitem(registry.PLUGINS, "deviceshare", DeviceSharePlugin)


def run(conf: str, objects: list[dict[str, Any]], cycles: int = 1) -> SimulationResult:
    # simulate advances the objects it is given (binds, annotations): give it its own copy
    return simulate(
        copy.deepcopy(objects), parse(conf), cycles=cycles, seed=0, options=SessionOptions(deterministic=True)
    )


def conf(args: dict[str, Any], actions: str = "enqueue, allocate, backfill") -> str:
    arg_lines = "".join(f"      {k}: {v}\n" for k, v in args.items())
    return (
        f'actions: "{actions}"\ntiers:\n- plugins:\n  - name: priority\n  - name: gang\n  - name: conformance\n'
        f"- plugins:\n  - name: predicates\n  - name: deviceshare\n    arguments:\n{arg_lines}"
    )


def k8s_node(name: str, extra: dict[str, str], annotations: dict[str, str] | None = None) -> dict[str, Any]:
    alloc = {"cpu": "16", "memory": "64Gi", "pods": "110", **extra}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "annotations": annotations or {}},
        "status": {
            "capacity": dict(alloc),
            "allocatable": alloc,
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def k8s_pod(
    name: str,
    limits: dict[str, str],
    annotations: dict[str, str] | None = None,
    node: str = "",
    phase: str = "Pending",
    priority: int | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "schedulerName": "volcano",
        "containers": [{"name": "c", "resources": {"limits": limits}}],
    }
    if node:
        spec["nodeName"] = node
    if priority is not None:
        spec["priority"] = priority
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "annotations": annotations or {}},
        "spec": spec,
        "status": {"phase": phase},
    }


QUEUE = {
    "apiVersion": "scheduling.volcano.sh/v1beta1",
    "kind": "Queue",
    "metadata": {"name": "default"},
    "spec": {"weight": 1},
    "status": {"state": "Open"},
}


def vgpu_cluster_node(split: int = 10) -> dict[str, Any]:
    return k8s_node(
        "v",
        {ann.VGPU_NUMBER: str(split), ann.VGPU_MEMORY: "16384", ann.VGPU_CORES: "100"},
        {ann.VGPU_REGISTER: VGPU_REG.format(n=split)},
    )


@pytest.mark.parametrize("seed", ["gpu-share-seed000", "vgpu-binpack-seed004"])
def test_seed_scenarios_write_the_expected_annotations(seed: str) -> None:
    folder = SCENARIOS / seed
    objects = [o for o in yaml.safe_load_all((folder / "cluster.yaml").read_text()) if o]
    expected = yaml.safe_load((folder / "expected.yaml").read_text())
    out = run((folder / "scheduler.conf").read_text(), objects)
    assert out.bindings == expected["bind"]
    for key, want in expected["annotations"].items():
        got = out.annotations[key]
        for k, v in want.items():
            assert k in got and (v == "*" or got[k] == v), (k, got)
    if seed == "gpu-share-seed000":
        # the device plugin serves the smallest predicate-time first: two pods never tie
        times = {a[ann.PREDICATE_TIME] for a in out.annotations.values()}
        assert len(times) == 2 and all(t.isdigit() and len(t) >= 19 for t in times)


def test_device_state_is_rebuilt_from_pod_annotations_in_the_next_cycle() -> None:
    objects = [
        QUEUE,
        k8s_node("g", {ann.GPU_MEMORY: "20000", ann.GPU_NUMBER: "2"}),
        k8s_pod("a", {ann.GPU_MEMORY: "9000"}),
    ]
    first = run(conf({"deviceshare.GPUSharingEnable": "true"}), objects)
    assert first.annotations["default/a"][ann.GPU_INDEX] == "0"
    objects += [k8s_pod("b", {ann.GPU_MEMORY: "9000"}), k8s_pod("c", {ann.GPU_MEMORY: "2000"})]
    out = run(conf({"deviceshare.GPUSharingEnable": "true"}), objects, cycles=2)
    idx = {k: v[ann.GPU_INDEX] for k, v in out.annotations.items()}
    # 10000 MiB cards: two 9000 MiB pods need both cards; the 2000 MiB pod fits on neither
    assert sorted([idx["default/a"], idx["default/b"]]) == ["0", "1"]
    assert (
        "default/c" in out.pending and "GpuShare no enough gpu memory on node g" in out.pending["default/c"]
    )


def test_preemption_frees_the_victims_card_for_the_preemptor() -> None:
    running = {ann.VGPU_NODE: "v", ann.VGPU_IDS_NEW: "GPU-a,NVIDIA,16000,0:", ann.BIND_PHASE: "success"}
    limits = {ann.VGPU_NUMBER: "1", ann.VGPU_MEMORY: "16000"}
    v = vgpu_cluster_node()
    objects = [
        b.priority_class("low", 10),
        b.priority_class("high", 100),
        b.queue("q1"),
        b.node(
            "v",
            cpu="16",
            extra=v["status"]["allocatable"] | {"cpu": "16"},
            annotations=v["metadata"]["annotations"],
        ),
        b.podgroup("pg1", 1, queue="q1", priority_class="low", phase="Running"),
        b.podgroup("pg2", 1, queue="q1", priority_class="high"),
        b.pod("low", group="pg1", node_name="v", phase="Running", limits=limits, annotations=running),
        # gang keeps pg1 at its minMember: a second member that may not be evicted makes "low" a victim
        b.pod(
            "keeper",
            group="pg1",
            node_name="v",
            phase="Running",
            annotations={"volcano.sh/preemptable": "false"},
        ),
        b.pod("high", group="pg2", limits=limits),
    ]
    args = {"deviceshare.VGPUEnable": True, "deviceshare.NodeLockEnable": True}
    out = run(
        b.tiers("preempt", ["conformance", "gang", "priority", "deviceshare"], args={"deviceshare": args}),
        objects,
    )
    assert out.evictions == ["c1/low"]
    assert out.pipelined.get("c1/high") == "v"
    # a pipelined task is not bound now: it must not leave a node lock nobody would release
    assert out.cycles[0].node_locks == []


def test_impossible_vgpu_request_stays_pending_with_its_reason() -> None:
    objects = [QUEUE, vgpu_cluster_node(), k8s_pod("p", {ann.VGPU_NUMBER: "1", ann.VGPU_CORES: "150"})]
    out = run(conf({"deviceshare.VGPUEnable": "true"}), objects)
    assert out.bindings == {}
    assert "vgpu-cores 150 is more than 100 percent of a card" in out.pending["default/p"]


def test_node_lock_allows_one_pod_in_flight_per_node_and_records_the_lock() -> None:
    limits = {ann.VGPU_NUMBER: "1", ann.VGPU_MEMORY: "100"}
    objects = [QUEUE, vgpu_cluster_node(), k8s_pod("a", limits), k8s_pod("b", limits)]
    out = run(conf({"deviceshare.VGPUEnable": "true", "deviceshare.NodeLockEnable": "true"}), objects)
    assert len(out.bindings) == 1
    locks = out.cycles[0].node_locks
    assert [(n, k) for n, k, _ in locks] == [("v", "hamivgpu")]
    assert ann.parse_lock_value(locks[0][2]) is not None
    # a fresh lock already on the node refuses; one older than five minutes is taken over
    fresh = vgpu_cluster_node()
    fresh["metadata"]["annotations"]["hamivgpu"] = ann.lock_value(time.time())
    out = run(
        conf({"deviceshare.VGPUEnable": "true", "deviceshare.NodeLockEnable": "true"}),
        [QUEUE, fresh, k8s_pod("a", limits)],
    )
    assert out.bindings == {} and "locked within 5 minutes" in out.pending["default/a"]
    fresh["metadata"]["annotations"]["hamivgpu"] = ann.lock_value(time.time() - 600)
    out = run(
        conf({"deviceshare.VGPUEnable": "true", "deviceshare.NodeLockEnable": "true"}),
        [QUEUE, fresh, k8s_pod("a", limits)],
    )
    assert out.bindings == {"default/a": "v"}


def test_binpack_weight_orders_nodes_by_device_score() -> None:
    busy = vgpu_cluster_node()
    busy["metadata"]["name"] = "busy"
    limits = {ann.VGPU_NUMBER: "1", ann.VGPU_MEMORY: "4000"}
    running = {ann.VGPU_NODE: "busy", ann.VGPU_IDS_NEW: "GPU-a,NVIDIA,8000,0:", ann.BIND_PHASE: "success"}
    objects = [
        QUEUE,
        vgpu_cluster_node(),
        busy,
        k8s_pod("r", {ann.VGPU_NUMBER: "1", ann.VGPU_MEMORY: "8000"}, running, node="busy", phase="Running"),
        k8s_pod("p", limits),
    ]
    args = {"deviceshare.VGPUEnable": "true", "deviceshare.ScheduleWeight": 10}
    assert (
        run(conf({**args, "deviceshare.SchedulePolicy": "binpack"}), objects).bindings["default/p"] == "busy"
    )
    assert run(conf({**args, "deviceshare.SchedulePolicy": "spread"}), objects).bindings["default/p"] == "v"


def test_session_open_is_cheap_on_5000_nodes_mostly_without_gpus() -> None:
    nodes: dict[str, NodeInfo] = {}
    for i in range(5000):
        name = f"n{i}"
        if i % 100 == 0:
            nodes[name] = vgpu_node(
                name, "".join(f"GPU-{i}-{c},10,16384,NVIDIA-Tesla T4,true,hami-core:" for c in range(8))
            )
        elif i % 100 == 1:
            nodes[name] = share_node(name)
        else:
            nodes[name] = NodeInfo(name, Resource.from_list({"cpu": "8", "memory": "32Gi", "pods": "110"}))
    ssn = Session(Snapshot(nodes=nodes), parse(conf({"deviceshare.VGPUEnable": "true"})))
    plugin = DeviceSharePlugin(ssn.conf.tiers[1].plugins[1].arguments)
    t0 = time.perf_counter()
    plugin.on_session_open(ssn)
    elapsed = time.perf_counter() - t0
    assert sum(1 for n in nodes.values() if n.devices) == 50
    assert isinstance(nodes["n0"].devices["hamivgpu"], VgpuLedger)
    assert elapsed < 0.25, f"session open took {elapsed * 1000:.0f} ms"


def _open(
    args: dict[str, Any], nodes: dict[str, NodeInfo], configmaps: dict | None = None
) -> tuple[Session, Any]:
    snap = Snapshot(nodes=nodes, configmaps=configmaps or {})
    ssn = Session(snap, parse(conf(args)))
    plugin = DeviceSharePlugin(ssn.conf.tiers[1].plugins[1].arguments)
    plugin.on_session_open(ssn)
    return ssn, plugin


def test_our_choice_whole_gpu_pods_honour_use_gputype_upstream_does_not_evaluate_it() -> None:
    """Seed 002 documents nvidia.com/use-gputype for pods asking whole nvidia.com/gpu cards, but
    upstream never evaluates it; we match the GPU Feature Discovery product label."""
    from dshelpers import pod, task

    a100 = NodeInfo("a100", Resource(), labels={ann.GPU_PRODUCT_LABEL: "NVIDIA-A100-SXM4-80GB"})
    t4 = NodeInfo("t4", Resource(), labels={ann.GPU_PRODUCT_LABEL: "Tesla-T4"})
    bare = NodeInfo("bare", Resource())
    _, plugin = _open({}, {n.name: n for n in (a100, t4, bare)})
    want = task(pod("p", {"nvidia.com/gpu": "1"}, annotations={ann.USE_GPUTYPE: "a100,h100"}))
    assert plugin.predicate(want, a100) is None
    assert "is not in nvidia.com/use-gputype" in plugin.predicate(want, t4).reason
    assert f"no label {ann.GPU_PRODUCT_LABEL}" in plugin.predicate(want, bare).reason
    avoid = task(pod("q", {"nvidia.com/gpu": "1"}, annotations={ann.NOUSE_GPUTYPE: "t4"}))
    assert plugin.predicate(avoid, t4) is not None and plugin.predicate(avoid, a100) is None
    assert plugin.predicate(avoid, bare) is None
    no_gpu = task(pod("r", {"cpu": "1"}, annotations={ann.USE_GPUTYPE: "a100"}))
    assert plugin.predicate(no_gpu, t4) is None


def test_our_choice_geometry_configmap_change_applies_next_session_upstream_reads_it_once() -> None:
    """Upstream loads device-config.yaml once per process; we read it every session (memoised by
    content), so a changed ConfigMap takes effect at the next session."""
    from dshelpers import A100, A100_GEOMETRY, cards

    def mig_node() -> NodeInfo:
        return vgpu_node("m", cards(1, devmem=81920, type_=A100, mode="mig"))

    args = {"deviceshare.VGPUEnable": "true"}
    n1 = mig_node()
    _open(args, {"m": n1})
    assert n1.devices["hamivgpu"].mode == "hami-core"  # no geometry known yet
    n2 = mig_node()
    cms = {"kube-system/volcano-vgpu-device-config": {"device-config.yaml": A100_GEOMETRY}}
    _open(args, {"m": n2}, cms)
    assert n2.devices["hamivgpu"].mode == "mig"


def test_broken_device_config_warns_and_uses_defaults() -> None:
    cms = {"kube-system/volcano-vgpu-device-config": {"device-config.yaml": "nvidia: [oops]"}}
    ssn, plugin = _open({"deviceshare.VGPUEnable": "true"}, {}, cms)
    assert any("built-in defaults used" in w for w in ssn.warnings)
    assert plugin.config.count_name == ann.VGPU_NUMBER
