"""The JSON the web view and the CLI read, built from what the last session saw.

`SessionView` is what the daemon (or `simulate`) publishes after a session: references to the
session's jobs, nodes, queues and result, no copies, so publishing costs nothing measurable.
`Summary` turns the latest view into endpoint answers lazily, at most once per session for the
whole-cluster aggregates, and pages lists (`offset`, `limit`) so a 5,000-node, 150,000-pod
cluster never ships more than a page to the browser.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from scheduler.framework.cycle import SessionResult
from scheduler.model.job import JobInfo
from scheduler.model.node import NodeInfo
from scheduler.model.objects import QueueInfo, TaskStatus
from scheduler.model.resources import Resource
from scheduler.web.devices import node_cards

MAX_LIMIT = 500
HISTORY = 60
# the order jobs are listed in: what needs attention first
_PHASE_ORDER = {"Pending": 0, "Inqueue": 1, "Unknown": 2, "Running": 3, "Completed": 4}


@dataclass(slots=True)
class SessionView:
    number: int
    result: SessionResult
    nodes: list[NodeInfo]
    queues: dict[str, QueueInfo]
    queue_attrs: dict[str, Any] | None
    at: float = field(default_factory=time.time)
    # answers derived from this session on demand (explain's indexes), dropped with the view
    derived: dict[str, Any] = field(default_factory=dict)


def resource_json(r: Resource | None) -> dict[str, float] | None:
    """cpu in cores, memory in bytes, scalars in their own units (the core keeps milli-units)."""
    if r is None:
        return None
    out = {"cpu": r.milli_cpu / 1000, "memory": r.memory}
    for k, v in r.scalars.items():
        out[k] = v / 1000
    return {k: (v if v != float("inf") else None) for k, v in out.items()}


class Everything(dict):
    """A query without a page-size cap (only for `simulate -o html`, whose clusters are small)."""


def page_args(query: Any) -> tuple[int, int]:
    def num(name: str, default: int) -> int:
        try:
            return max(0, int(query.get(name, default)))
        except (TypeError, ValueError):
            return default

    if isinstance(query, Everything):
        return 0, 1 << 62
    return num("offset", 0), min(num("limit", 50) or 50, MAX_LIMIT)


def _paged(items: list[Any], query: Any, render: Any) -> dict[str, Any]:
    offset, limit = page_args(query)
    return {
        "total": len(items),
        "offset": offset,
        "limit": limit,
        "items": [render(x) for x in items[offset : offset + limit]],
    }


def timestamp(value: object) -> float | None:
    """Seconds since the epoch from a number or an RFC 3339 time; None when neither."""
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str) and value:
        try:
            return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
        except ValueError:
            return None
    return None


def _since(job: JobInfo) -> float:
    """When the job started waiting: its Unschedulable condition's transition, else its creation."""
    for c in job.pod_group_status.conditions:
        if c.type == "Unschedulable" and c.status == "True":
            t = timestamp(c.last_transition_time)
            if t is not None:
                return t
    return job.creation


def group_key(message: str, pod_key: str) -> str:
    """Messages that differ only by the pod's own name are one reason."""
    return message.replace(pod_key, "<pod>") if pod_key in message else message


class Summary:
    """Answers for the endpoints, computed from the latest published view."""

    def __init__(self) -> None:
        self.view: SessionView | None = None
        self.history: deque[dict[str, Any]] = deque(maxlen=HISTORY)
        self._cache: dict[str, Any] = {}

    # -- publishing (called by the daemon after each session: O(1)) --------------------------
    def publish(self, view: SessionView) -> None:
        res = view.result
        self.view = view
        self._cache = {}
        self.history.append(
            {
                "session": view.number,
                "at": view.at,
                "total_ms": round(res.total_ms, 2),
                "open_ms": round(res.open_ms, 2),
                "action_ms": {k: round(v, 2) for k, v in res.action_ms.items()},
                "binds": len(res.binds),
                "evictions": len(res.evictions),
                "unplaced": len(res.pod_conditions),
            }
        )

    def forget(self) -> None:
        """Drop the last view (the daemon never does; loadcheck times sessions without one held)."""
        self.view = None
        self._cache = {}

    def _cached(self, key: str, build: Any) -> Any:
        v = self._cache.get(key)
        if v is None:
            v = self._cache[key] = build()
        return v

    def _phase(self, job: JobInfo) -> str:
        assert self.view is not None
        st = self.view.result.podgroup_status.get(job.uid)
        return st.phase if st is not None else job.pod_group_status.phase

    # -- overview -----------------------------------------------------------------------------
    def overview(self) -> dict[str, Any]:
        if self.view is None:
            return {"session": 0, "message": "no session has run yet"}
        return self._cached("overview", self._overview)

    def _overview(self) -> dict[str, Any]:
        v = self.view
        assert v is not None
        alloc, used = Resource(), Resource()
        cards = busy = 0
        mem_used = mem_total = 0.0
        unschedulable = 0
        for n in v.nodes:
            alloc.add(n.allocatable)
            used.add(n.used)
            unschedulable += n.unschedulable
            if n.devices or "nvidia.com/gpu" in n.allocatable.scalars:
                for c in node_cards(n):
                    cards += 1
                    busy += bool(c.get("pods"))
                    mem_used += c.get("memory_used", 0)
                    mem_total += c.get("memory_total", 0)
        pods: dict[str, int] = {}
        phases: dict[str, int] = {}
        for job in v.result.jobs.values():
            phases[self._phase(job)] = phases.get(self._phase(job), 0) + 1
            for st, tasks in job.task_status_index.items():
                if tasks:
                    pods[st.label] = pods.get(st.label, 0) + len(tasks)
        last = self.history[-1] if self.history else {}
        return {
            "session": v.number,
            "at": v.at,
            "last": last,
            "nodes": len(v.nodes),
            "unschedulable_nodes": unschedulable,
            "allocatable": resource_json(alloc),
            "used": resource_json(used),
            "cards": {"total": cards, "in_use": busy, "memory_used": mem_used, "memory_total": mem_total},
            "queues": len(v.queues),
            "jobs": dict(sorted(phases.items())),
            "pods": dict(sorted(pods.items())),
            "unplaced": len(v.result.pod_conditions),
            "warnings": v.result.warnings[:20],
        }

    # -- queues --------------------------------------------------------------------------------
    def queues(self) -> dict[str, Any]:
        if self.view is None:
            return {"items": []}
        return self._cached("queues", self._queues)

    def _queues(self) -> dict[str, Any]:
        v = self.view
        assert v is not None
        by_queue: dict[str, dict[str, int]] = {}
        allocated: dict[str, Resource] = {}
        for job in v.result.jobs.values():
            ph = by_queue.setdefault(job.queue, {})
            p = self._phase(job)
            ph[p] = ph.get(p, 0) + 1
            allocated.setdefault(job.queue, Resource()).add(job.allocated)
        items = []
        for name in sorted(v.queues):
            q = v.queues[name]
            a = (v.queue_attrs or {}).get(name)
            items.append(
                {
                    "name": name,
                    "state": q.state,
                    "weight": q.weight,
                    "priority": q.priority,
                    "parent": q.parent,
                    "capability": resource_json(q.capability),
                    "guarantee": resource_json(q.guarantee),
                    "deserved": resource_json(a.deserved if a else q.deserved),
                    "allocated": resource_json(a.allocated if a else allocated.get(name, Resource())),
                    "request": resource_json(a.request) if a else None,
                    "share": round(a.share, 4) if a else None,
                    "jobs": dict(sorted(by_queue.get(name, {}).items())),
                }
            )
        return {"items": items}

    # -- jobs ----------------------------------------------------------------------------------
    def _job_rows(self) -> list[JobInfo]:
        assert self.view is not None
        return sorted(
            self.view.result.jobs.values(),
            key=lambda j: (_PHASE_ORDER.get(self._phase(j), 9), j.namespace, j.name),
        )

    def job_json(self, job: JobInfo) -> dict[str, Any]:
        st = self.view.result.podgroup_status.get(job.uid) if self.view else None
        phase = self._phase(job)
        reason = ""
        if phase in ("Pending", "Inqueue", "Unknown"):  # a running job's old condition is history
            for c in (st or job.pod_group_status).conditions:
                if c.type == "Unschedulable" and c.status == "True":
                    reason = c.message
            reason = reason or job.fit_error
        return {
            "namespace": job.namespace,
            "name": job.name,
            "queue": job.queue,
            "phase": phase,
            "min_member": job.min_available,
            "pods": len(job.tasks),
            "running": job.count(TaskStatus.RUNNING),
            "pending": job.count(TaskStatus.PENDING),
            "priority": job.priority,
            "reason": reason,
            "since": _since(job),
        }

    def jobs(self, query: Any) -> dict[str, Any]:
        if self.view is None:
            return {"total": 0, "items": []}
        rows: list[JobInfo] = self._cached("jobs", self._job_rows)
        queue, phase, text = query.get("queue"), query.get("phase"), query.get("q")
        if queue or phase or text:
            rows = [
                j
                for j in rows
                if (not queue or j.queue == queue)
                and (not phase or self._phase(j) == phase)
                and (not text or text in f"{j.namespace}/{j.name}")
            ]
        return _paged(rows, query, self.job_json)

    # -- nodes ---------------------------------------------------------------------------------
    def node_json(self, n: NodeInfo) -> dict[str, Any]:
        return {
            "name": n.name,
            "unschedulable": n.unschedulable,
            "allocatable": resource_json(n.allocatable),
            "used": resource_json(n.used),
            "pods": len(n.tasks),
            "cards": node_cards(n),
        }

    def nodes(self, query: Any) -> dict[str, Any]:
        if self.view is None:
            return {"total": 0, "items": []}
        rows = self._cached("nodes", lambda: sorted(self.view.nodes, key=lambda n: n.name))  # type: ignore[union-attr]
        text, sort = query.get("q"), query.get("sort", "name")
        if query.get("devices") in ("1", "true"):
            rows = [n for n in rows if n.devices or "nvidia.com/gpu" in n.allocatable.scalars]
        if text:
            rows = [n for n in rows if text in n.name]
        if sort == "cpu":
            rows = sorted(rows, key=lambda n: -(n.used.milli_cpu / (n.allocatable.milli_cpu or 1)))
        elif sort == "memory":
            rows = sorted(rows, key=lambda n: -(n.used.memory / (n.allocatable.memory or 1)))
        return _paged(rows, query, self.node_json)

    # -- pending pods by reason ----------------------------------------------------------------
    def pending(self, query: Any) -> dict[str, Any]:
        if self.view is None:
            return {"total": 0, "items": []}
        groups: list[dict[str, Any]] = self._cached("pending", self._pending_groups)
        queue = query.get("queue")
        if queue:
            groups = [g for g in groups if queue in g["queues"]]
        out = _paged(groups, query, lambda g: g)
        out["pods"] = sum(g["count"] for g in groups)
        return out

    def _pending_groups(self) -> list[dict[str, Any]]:
        assert self.view is not None
        jobs = self.view.result.jobs
        groups: dict[str, dict[str, Any]] = {}
        for c in self.view.result.pod_conditions:
            task = c.task
            key = group_key(c.message, task.key)
            g = groups.get(key)
            if g is None:
                g = groups[key] = {"reason": key, "condition": c.reason, "count": 0, "queues": {}, "pods": []}
            g["count"] += 1
            job = jobs.get(task.job)
            q = job.queue if job is not None else ""
            g["queues"][q] = g["queues"].get(q, 0) + 1
            if len(g["pods"]) < 10:
                g["pods"].append(task.key)
        return sorted(groups.values(), key=lambda g: (-g["count"], g["reason"]))

    # -- sessions ------------------------------------------------------------------------------
    def sessions(self) -> dict[str, Any]:
        return {"items": list(self.history)}

    def everything(self) -> dict[str, Any]:
        """All answers unpaged (for `simulate -o html`, whose clusters are small)."""
        big = Everything()
        return {
            "overview": self.overview(),
            "queues": self.queues(),
            "jobs": self.jobs(big),
            "nodes": self.nodes(big),
            "pending": self.pending(big),
            "sessions": self.sessions(),
        }


def summary_of(cycles: list[SessionResult], session: Any) -> Summary:
    """The web view of a run of sessions (`simulate`): each one's figures, the last one's state."""
    s = Summary()
    if session is None:
        return s
    attrs = getattr(session.plugins.get("proportion"), "attrs", None)
    for i, res in enumerate(cycles):
        s.publish(SessionView(i + 1, res, session.node_list, session.queues, attrs))
    return s
