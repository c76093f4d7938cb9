"""Why does a pod wait? Everything one session knows about it, with numbers.

Used by `vc-scheduler explain` (one session in memory on a cluster's objects or on manifests)
and by the web view's `/api/explain/NS/POD` (the daemon's last session). The answer: the pod's
message, its gang and enqueue state, its queue against deserved and capability, the per-node
reasons with counts, the closest nodes and what they lack, and cards that nearly fit.
"""

from __future__ import annotations

import heapq
from typing import Any

from scheduler.framework.fiterrors import FitErrors
from scheduler.framework.shortfall import NEVER, WAIT, human
from scheduler.model.job import JobInfo
from scheduler.model.node import NodeInfo
from scheduler.model.objects import TaskInfo, TaskStatus
from scheduler.plugins.deviceshare import annotations as ann
from scheduler.plugins.deviceshare.vgpu import KIND as VGPU_KIND
from scheduler.web.summary import SessionView, resource_json

CLOSEST = 5


class _Index:
    """What `explain` looks up in one session, built on the first question that needs it and kept
    with the session's view: a click on a pod then costs a dictionary lookup, not a scan of
    150,000 pods and 5,000 nodes' resources."""

    def __init__(self, view: SessionView) -> None:
        self.view = view
        self._pods: dict[str, dict[str, tuple[JobInfo, TaskInfo]]] = {}
        self._outcome: tuple[dict[str, str], dict[str, str]] | None = None
        self._columns: dict[str, tuple[list[float], list[float]]] = {}

    @staticmethod
    def of(view: SessionView) -> _Index:
        idx = view.derived.get("explain")
        if idx is None:
            idx = view.derived["explain"] = _Index(view)
        return idx

    def find(self, namespace: str, name: str) -> tuple[JobInfo, TaskInfo] | None:
        # a pod's job is always of its namespace (a PodGroup or the pod's own gang), so one
        # namespace's pods are indexed at a time
        pods = self._pods.get(namespace)
        if pods is None:
            pods = self._pods[namespace] = {}
            for job in self.view.result.jobs.values():
                if job.namespace == namespace:
                    for t in job.tasks.values():
                        pods[t.name] = (job, t)
        return pods.get(name)

    def outcome(self, task: TaskInfo) -> tuple[str, str]:
        """(node this session binds the pod to, the message of its condition), "" for none."""
        if self._outcome is None:
            res = self.view.result
            self._outcome = (
                {b.task.uid: b.node for b in res.binds},
                {c.task.uid: c.message for c in res.pod_conditions},
            )
        bound, messages = self._outcome
        return bound.get(task.uid, ""), messages.get(task.uid, "")

    def column(self, name: str) -> tuple[list[float], list[float]]:
        """(future idle, allocatable) of one resource for every node, in the view's node order."""
        col = self._columns.get(name)
        if col is None:
            nodes = self.view.nodes
            col = self._columns[name] = (
                [n.idle.get(name) + n.releasing.get(name) - n.pipelined.get(name) for n in nodes],
                [n.allocatable.get(name) for n in nodes],
            )
        return col

    def closest(self, task: TaskInfo) -> tuple[list[NodeInfo], bool]:
        """The nodes nearest to fitting the pod (least missing, as a share of each node's
        allocatable; by name on ties) and whether its request exceeds every node's allocatable."""
        nodes = self.view.nodes
        score = [0.0] * len(nodes)
        never = [False] * len(nodes)
        for name, want in task.resreq.items():
            if want <= 0:
                continue
            free, alloc = self.column(name)
            for i, have in enumerate(free):
                if want > have + 0.1:
                    score[i] += (want - have) / (alloc[i] or want)
                    if want > alloc[i] + 0.1:
                        never[i] = True
        near = heapq.nsmallest(CLOSEST, range(len(nodes)), key=lambda i: (score[i], nodes[i].name))
        return [nodes[i] for i in near], bool(nodes) and all(never)


def _lack(task: TaskInfo, node: NodeInfo) -> dict[str, str]:
    """What the node is missing for the pod, per resource, in words."""
    free = node.future_idle()
    missing = {}
    for name, want in task.resreq.items():
        if want <= 0:
            continue
        have = free.get(name)
        if want > have + 0.1:
            alloc = node.allocatable.get(name)
            missing[name] = f"needs {human(name, want)}, free {human(name, max(have, 0))}"
            if want > alloc + 0.1:
                missing[name] += f" (allocatable {human(name, alloc)})"
    return missing


def _near_cards(task: TaskInfo, nodes: list[NodeInfo]) -> list[dict[str, Any]]:
    want_num = task.resreq.scalars.get(ann.VGPU_NUMBER, 0.0) / 1000
    if want_num <= 0:
        return []
    mem = task.resreq.scalars.get(ann.VGPU_MEMORY, 0.0) / 1000
    cores = task.resreq.scalars.get(ann.VGPU_CORES, 0.0) / 1000
    per_mem, per_cores = mem / want_num, cores / want_num
    cards = []
    for n in nodes:
        led = n.devices.get(VGPU_KIND)
        if led is None:
            continue
        t, b = led.table, led.base
        for c in range(led.n):
            g = b + c
            free_mem = t.devmem[g] - t.used_mem[g]
            free_cores = 100 - t.used_cores[g]
            free_shares = t.count[g] - t.used_num[g]
            short = (
                max(0.0, per_mem - free_mem) / max(t.devmem[g], 1) + max(0.0, per_cores - free_cores) / 100
            )
            short += 1.0 if free_shares <= 0 else 0.0
            cards.append(
                {
                    "node": n.name,
                    "index": c,
                    "uuid": led.uuids[c],
                    "type": led.types[c],
                    "free_memory": free_mem,
                    "memory": t.devmem[g],
                    "free_cores": free_cores,
                    "free_shares": free_shares,
                    "needs_memory": per_mem,
                    "needs_cores": per_cores,
                    "fits": short == 0.0,
                    "_short": short,
                }
            )
    cards.sort(key=lambda c: (c["_short"], c["node"], c["index"]))
    for c in cards:
        del c["_short"]
    return cards[:CLOSEST]


def _card_never(task: TaskInfo, nodes: list[NodeInfo]) -> str:
    """Why no vGPU card could ever hold the pod, even empty ("" when some card could)."""
    want_num = task.resreq.scalars.get(ann.VGPU_NUMBER, 0.0) / 1000
    if want_num <= 0:
        return ""
    per_mem = task.resreq.scalars.get(ann.VGPU_MEMORY, 0.0) / 1000 / want_num
    per_cores = task.resreq.scalars.get(ann.VGPU_CORES, 0.0) / 1000 / want_num
    biggest, cards = 0, 0
    for n in nodes:
        led = n.devices.get(VGPU_KIND)
        if led is None:
            continue
        cards = max(cards, led.n)
        for c in range(led.n):
            biggest = max(biggest, led.table.devmem[led.base + c])
    if not cards:
        return "no node has vGPU cards"
    if want_num > cards:
        return f"asks for {want_num:g} cards, the largest node has {cards}"
    if per_mem > biggest:
        return f"asks for {per_mem:g} MiB on a card, the largest card has {biggest} MiB"
    if per_cores > 100:
        return f"asks for {per_cores:g}% of a card's cores"
    return ""


def explain(view: SessionView, namespace: str, name: str) -> dict[str, Any] | None:
    index = _Index.of(view)
    found = index.find(namespace, name)
    if found is None:
        return None
    job, task = found
    key = task.key
    st = view.result.podgroup_status.get(job.uid) or job.pod_group_status
    bound, message = index.outcome(task)
    out: dict[str, Any] = {
        "pod": key,
        "status": task.status.label,
        "node": bound or task.node_name,
        "message": message,
        "request": resource_json(task.resreq),
        "job": {
            "name": f"{job.namespace}/{job.name}",
            "phase": st.phase,
            "min_member": job.min_available,
            "pods": {s.label: len(ts) for s, ts in job.task_status_index.items() if ts},
            "admitted": st.phase != "Pending",
            "enqueue": job.fit_error if job.fit_error.startswith("job is not admitted") else "",
            "conditions": [
                {"type": c.type, "status": c.status, "reason": c.reason, "message": c.message}
                for c in st.conditions
            ],
        },
    }
    q = view.queues.get(job.queue)
    a = (view.queue_attrs or {}).get(job.queue)
    out["queue"] = {
        "name": job.queue,
        "exists": q is not None,
        "state": q.state if q else "",
        "weight": q.weight if q else 0,
        "capability": resource_json(q.capability) if q else None,
        "deserved": resource_json(a.deserved) if a else None,
        "allocated": resource_json(a.allocated) if a else None,
        "inqueue": resource_json(a.inqueue) if a else None,
        "share": round(a.share, 4) if a else None,
    }
    fe = job.nodes_fit_errors.get(task.uid)
    per_node: dict[str, list[str]] = fe.nodes if isinstance(fe, FitErrors) else {}
    out["node_reasons"] = dict(sorted(fe.histogram().items(), key=lambda kv: -kv[1])) if per_node else {}
    if isinstance(fe, FitErrors) and fe.err:
        out["error"] = fe.err
    closest, never_everywhere = index.closest(task)
    out["closest_nodes"] = [
        {"node": n.name, "lacks": _lack(task, n), "reasons": per_node.get(n.name, [])} for n in closest
    ]
    out["cards"] = _near_cards(task, view.nodes)
    card_never = _card_never(task, view.nodes)
    placed = task.status not in (TaskStatus.PENDING,) or bool(bound)
    if bound:
        out["verdict"] = f"fits: this session places it on {bound}"
    elif placed:
        where = f" on {task.node_name}" if task.node_name else ""
        out["verdict"] = f"not waiting: {task.status.label}{where}"
    elif never_everywhere:
        out["verdict"] = f"{NEVER}: the pod's request exceeds every node's allocatable"
    elif card_never:
        out["verdict"] = f"{NEVER}: {card_never}"
    elif NEVER in message or NEVER in out["job"]["enqueue"]:
        out["verdict"] = f"{NEVER}: the request is larger than a hard limit (the numbers are in the message)"
    else:
        out["verdict"] = f"{WAIT}: it fits once resources are released"
    return out


def _res(r: dict[str, Any] | None) -> str:
    if not r:
        return "-"
    parts = []
    for k, v in r.items():
        if v is None:
            continue
        parts.append(f"{k} {human(k, v * 1000 if k not in ('memory',) else v)}")
    return ", ".join(parts) or "-"


def format_text(e: dict[str, Any]) -> str:
    j, q = e["job"], e["queue"]
    lines = [f"pod {e['pod']}: {e['status']}" + (f" on {e['node']}" if e["node"] else "")]
    lines.append(f"  verdict:  {e['verdict']}")
    if e["message"]:
        lines.append(f"  message:  {e['message']}")
    lines.append(f"  request:  {_res(e['request'])}")
    pods = ", ".join(f"{n} {s}" for s, n in sorted(j["pods"].items()))
    lines.append(f"  job {j['name']}: phase {j['phase']}, minMember {j['min_member']}, pods: {pods}")
    if j["enqueue"] and j["enqueue"] != e["message"]:
        lines.append(f"    {j['enqueue']}")
    for c in j["conditions"]:
        if c["status"] == "True" and c["message"]:
            lines.append(f"    {c['type']}: {c['message']}")
    if not q["exists"]:
        lines.append(f"  queue {q['name']}: does not exist (the job is not scheduled)")
    else:
        lines.append(f"  queue {q['name']}: {q['state']}, weight {q['weight']}, share {q['share']}")
        for label in ("deserved", "capability", "allocated", "inqueue"):
            if q[label] is not None:
                lines.append(f"    {label:<10} {_res(q[label])}")
    if e["node_reasons"]:
        lines.append("  node reasons:")
        lines += [f"    {n:>5}  {r}" for r, n in e["node_reasons"].items()]
    if e.get("error"):
        lines.append(f"  reason: {e['error']}")
    if e["closest_nodes"]:
        lines.append("  closest nodes:")
        for c in e["closest_nodes"]:
            lacks = "; ".join(f"{k} {v}" for k, v in c["lacks"].items()) or "node totals have room"
            why = f" [{', '.join(c['reasons'])}]" if c["reasons"] else ""
            lines.append(f"    {c['node']}: {lacks}{why}")
    if e["cards"]:
        lines.append("  nearest cards (per card: needs memory MiB / cores %):")
        for c in e["cards"]:
            lines.append(
                f"    {c['node']} #{c['index']} {c['type']}: free {c['free_memory']}/{c['memory']} MiB, "
                f"{c['free_cores']}% cores, {c['free_shares']} shares; needs {c['needs_memory']:g} MiB, "
                f"{c['needs_cores']:g}%" + (" (fits)" if c["fits"] else "")
            )
    return "\n".join(lines)
