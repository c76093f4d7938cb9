"""`vc-scheduler simulate`: run scheduling sessions on plain manifests, with no cluster.

Between cycles the simulated cluster moves on as a real one would: bound pods start running on
their nodes (with the annotations the scheduler wrote), evicted pods are gone, PodGroup statuses
are what the session wrote. Malformed objects are reported by name and skipped.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from scheduler.conf import SchedulerConfiguration
from scheduler.framework.cycle import SessionResult, run_session_keep
from scheduler.framework.session import Session, SessionOptions
from scheduler.model.cluster import ClusterOptions, ClusterState
from scheduler.model.convert import ConvertError, object_name
from scheduler.model.resources import QuantityError
from scheduler.model.vcjob import expand_job
from scheduler.plugins.deviceshare.annotations import GPU_INDEX, VGPU_IDS_NEW, decode_pod_devices
from scheduler.sim.manifests import Skipped
from scheduler.sim.nodegen import make_nodes, parse_node_spec
from scheduler.sim.topologygen import TopologySpecError, make_hypernodes, parse_topology_spec

KIND_ORDER = {
    "Namespace": 0,
    "PriorityClass": 1,
    "ConfigMap": 2,
    "Queue": 3,
    "ResourceQuota": 3,
    "PodDisruptionBudget": 3,
    "Node": 4,
    "HyperNode": 5,
    "Job": 6,
    "PodGroup": 7,
    "Pod": 8,
}


@dataclass(slots=True)
class SimulationResult:
    bindings: dict[str, str] = field(default_factory=dict)
    evictions: list[str] = field(default_factory=list)
    pipelined: dict[str, str] = field(default_factory=dict)
    pending: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, dict[str, str]] = field(default_factory=dict)
    podgroups: dict[str, dict[str, Any]] = field(default_factory=dict)
    skipped: list[Skipped] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    # bound pod -> the HyperNode its job was placed in (or its node's lowest HyperNode)
    hypernodes: dict[str, str] = field(default_factory=dict)
    cycles: list[SessionResult] = field(default_factory=list)
    # the last session itself (for the web view's `-o html` and `explain`)
    session: Session | None = None
    queues: dict[str, str] = field(default_factory=dict)  # pod -> queue
    nodes: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "bindings": dict(sorted(self.bindings.items())),
            "evictions": sorted(self.evictions),
            "pipelined": dict(sorted(self.pipelined.items())),
            "pending": dict(sorted(self.pending.items())),
            "annotations": {k: dict(sorted(v.items())) for k, v in sorted(self.annotations.items())},
            "podgroups": dict(sorted(self.podgroups.items())),
            "skipped": [{"object": s.where, "reason": s.reason} for s in self.skipped],
            **({"hypernodes": dict(sorted(self.hypernodes.items()))} if self.hypernodes else {}),
        }


class SimulatedCluster:
    """Raw objects plus the scheduler's view of them, advanced by session decisions."""

    def __init__(self, options: ClusterOptions | None = None) -> None:
        self.state = ClusterState(options)
        self.pods: dict[str, dict[str, Any]] = {}
        self.podgroups: dict[str, dict[str, Any]] = {}
        self.skipped: list[Skipped] = []

    def _skip(self, obj: Any, reason: str) -> None:
        where = object_name(obj)
        # conversion errors already start with the object's name
        if reason.startswith(where + ": "):
            reason = reason[len(where) + 2 :]
        self.skipped.append(Skipped(where, reason))

    def load(self, objects: list[dict[str, Any]]) -> None:
        expanded: list[dict[str, Any]] = []
        for obj in objects:
            if obj.get("kind") == "Job" and str(obj.get("apiVersion", "")).startswith("batch.volcano.sh/"):
                try:
                    pg, pods = expand_job(obj)
                except (ConvertError, QuantityError) as exc:
                    self._skip(obj, str(exc))
                    continue
                expanded.append(pg)
                expanded.extend(pods)
            else:
                expanded.append(obj)
        expanded.sort(key=lambda o: KIND_ORDER.get(str(o.get("kind")), 99))
        for i, obj in enumerate(expanded):
            md = obj.get("metadata")
            if isinstance(md, dict) and not md.get("uid"):
                md["uid"] = f"uid-{i:06d}-{md.get('name')}"
            if isinstance(md, dict) and not md.get("creationTimestamp"):
                # manifests carry no times: file order stands in for creation order
                md["creationTimestamp"] = float(i)
            self._apply(obj)
        if "default" not in self.state.queues:
            # a normal Volcano install always has the default queue
            self.state.apply_queue(
                {
                    "kind": "Queue",
                    "metadata": {"name": "default"},
                    "spec": {"weight": 1},
                    "status": {"state": "Open"},
                }
            )

    def _apply(self, obj: dict[str, Any]) -> None:
        kind = obj.get("kind")
        md = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
        try:
            if kind == "Node":
                self.state.apply_node(obj)
            elif kind == "Pod":
                md.setdefault("namespace", "default")
                task = self.state.apply_pod(obj)
                self.pods[task.key] = obj
            elif kind == "PodGroup":
                md.setdefault("namespace", "default")
                job = self.state.apply_podgroup(obj)
                self.podgroups[job.uid] = obj
            elif kind == "HyperNode":
                self.state.apply_hypernode(obj)
            elif kind == "Queue":
                self.state.apply_queue(obj)
            elif kind == "PriorityClass":
                self.state.apply_priority_class(obj)
            elif kind == "ConfigMap":
                self.state.apply_configmap(obj)
            elif kind == "Namespace":
                self.state.apply_namespace(obj)
            elif kind == "ResourceQuota":
                md.setdefault("namespace", "default")
                self.state.apply_resource_quota(obj)
            elif kind == "PodDisruptionBudget":
                md.setdefault("namespace", "default")
                self.state.apply_pdb(obj)
            else:
                self._skip(obj, f"kind {kind!r} is not used by the scheduler")
        except (ConvertError, QuantityError) as exc:
            self._skip(obj, str(exc))

    def advance(self, res: SessionResult, out: SimulationResult) -> None:
        topo = self.state.topology() if self.state.hypernodes else None
        for b in res.binds:
            key = b.task.key
            if topo is not None:
                out.hypernodes[key] = res.job_hypernodes.get(b.task.job) or topo.leaf_of.get(b.node, "")
            pod = self.pods.get(key)
            if pod is None:
                continue
            pod.setdefault("spec", {})["nodeName"] = b.node
            if b.annotations:
                pod.setdefault("metadata", {}).setdefault("annotations", {}).update(b.annotations)
                out.annotations.setdefault(key, {}).update(b.annotations)
            pod.setdefault("status", {})["phase"] = "Running"
            out.bindings[key] = b.node
            self.state.apply_pod(pod)
        for task, _reason in res.evictions:
            key = task.key
            out.evictions.append(key)
            self.pods.pop(key, None)
            self.state.remove_pod(task.namespace, task.name)
        for uid, st in res.podgroup_status.items():
            pg = self.podgroups.get(uid)
            if pg is None:
                continue
            pg["status"] = st.to_manifest()
            self.state.apply_podgroup(pg)


def generated_objects(node_specs: list[str], topology: str | None) -> list[dict[str, Any]]:
    """`--nodes` and `--topology` as objects; ValueError (NodeSpecError, TopologySpecError) when bad."""
    nodes = make_nodes([parse_node_spec(s) for s in node_specs])
    if not topology:
        return nodes
    if not nodes:
        raise TopologySpecError("--topology needs generated nodes (--nodes)")
    return nodes + make_hypernodes(parse_topology_spec(topology), [n["metadata"]["name"] for n in nodes])


def simulate(
    objects: list[dict[str, Any]],
    conf: SchedulerConfiguration,
    cycles: int = 1,
    seed: int = 0,
    skipped: list[Skipped] | None = None,
    options: SessionOptions | None = None,
) -> SimulationResult:
    cluster = SimulatedCluster()
    if skipped:
        cluster.skipped.extend(skipped)
    cluster.load(objects)
    out = SimulationResult(warnings=list(conf.warnings))
    rng = random.Random(seed)
    last: SessionResult | None = None
    for _ in range(max(cycles, 1)):
        snap = cluster.state.snapshot()
        last, out.session = run_session_keep(snap, conf, options or SessionOptions(), rng=rng)
        out.cycles.append(last)
        out.warnings.extend(last.warnings)
        cluster.advance(last, out)
    assert last is not None
    out.pipelined = dict(last.pipelined)
    conditions = {c.task.key: c.message for c in last.pod_conditions}
    for key, pod in cluster.pods.items():
        task = cluster.state.get_task(key)
        if task is None or task.pod.scheduler_name not in cluster.state.options.scheduler_names:
            continue
        if not (pod.get("spec") or {}).get("nodeName") and key not in out.bindings:
            out.pending[key] = conditions.get(key) or _why_not_considered(cluster.state, task)
    for uid, st in last.podgroup_status.items():
        if uid in cluster.podgroups:
            out.podgroups[uid] = {
                "phase": st.phase,
                "conditions": [
                    {"type": c.type, "status": c.status, "reason": c.reason, "message": c.message}
                    for c in st.conditions
                ],
            }
    out.skipped = cluster.skipped
    out.nodes = len(cluster.state.nodes)
    for job in cluster.state.jobs.values():
        for t in job.tasks.values():
            out.queues[t.key] = job.queue
    if not cluster.state.nodes:
        out.warnings.append("no nodes in the input: every pod stays pending (was a List of nodes lost?)")
    return out


def _why_not_considered(state: ClusterState, task: Any) -> str:
    job = state.jobs.get(task.job)
    if job is None:
        return f"PodGroup {task.job} does not exist"
    if job.queue not in state.queues:
        return f"queue {job.queue} of PodGroup {job.uid} does not exist"
    return "not considered by the scheduler"


def devices_of(annotations: dict[str, str]) -> str:
    """The cards a binding chose, short: `GPU-921f31fb 3000MiB 50%` per vGPU slice, `gpu 0` for gpu-share."""
    parts: list[str] = []
    for seg in decode_pod_devices(annotations.get(VGPU_IDS_NEW)):
        for e in seg:
            parts.append(f"{e.uuid[:12]} {e.mem}MiB {e.cores}%")
    if annotations.get(GPU_INDEX):
        parts.append(f"gpu {annotations[GPU_INDEX]}")
    for key, value in annotations.items():
        if key.startswith("huawei.com/Ascend") and value:
            parts.append(f"{key.rsplit('/', 1)[1]} {value.split(',')[0][:24]}")
    return ", ".join(parts) or "-"


def format_table(result: SimulationResult) -> str:
    rows: list[tuple[str, str, str, str, str]] = []

    def row(key: str, node: str, what: str) -> None:
        devices = devices_of(result.annotations.get(key, {})) if node != "-" else "-"
        rows.append((key, node, result.queues.get(key, "-"), devices, what))

    for key, node in result.bindings.items():
        hn = result.hypernodes.get(key)
        row(key, node, f"bound (HyperNode {hn})" if hn else "bound")
    for key, node in result.pipelined.items():
        row(key, node, "pipelined (waits for resources being released)")
    for key in result.evictions:
        row(key, "-", "evicted")
    for key, why in result.pending.items():
        if key not in result.pipelined:
            row(key, "-", f"pending: {why}")
    rows.sort()
    header = ("POD", "NODE", "QUEUE", "DEVICES")
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(header)]
    lines = ["  ".join(f"{h:<{w}}" for h, w in zip(header, widths, strict=True)) + "  RESULT"]
    lines += ["  ".join(f"{c:<{w}}" for c, w in zip(r[:4], widths, strict=True)) + f"  {r[4]}" for r in rows]
    pending = sum(1 for k in result.pending if k not in result.pipelined)
    lines.append(
        f"{len(rows)} pods on {result.nodes} nodes: {len(result.bindings)} bound, {len(result.pipelined)} "
        f"pipelined, {pending} pending, {len(result.evictions)} evicted; "
        f"{len(result.cycles)} session{'s' if len(result.cycles) != 1 else ''}"
    )
    for s in result.skipped:
        lines.append(f"skipped {s.where}: {s.reason}")
    for w in result.warnings:
        lines.append(f"warning: {w}")
    return "\n".join(lines)
