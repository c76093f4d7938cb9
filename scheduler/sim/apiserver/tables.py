"""Server-side printing: `meta.k8s.io/v1 Table` answers for `kubectl get`.

kubectl asks for a Table first; with one, `kubectl get pods` shows READY/STATUS/RESTARTS/AGE as
it does against a cluster, `-o wide` the NODE column, and `get pg`/`get vcjob` the columns of
Volcano's CRDs. Kinds without their own columns get NAME and AGE like a CRD without printer
columns. Rows carry the object's metadata (`PartialObjectMetadata`) unless `includeObject=Object`
or `None` is asked for.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from scheduler.sim.apiserver import codec
from scheduler.sim.apiserver.resources import ResourceInfo

Obj = dict[str, Any]
Column = tuple[str, str, int, Callable[[Obj], Any]]  # name, type, priority (1 = -o wide), cell


def wants_table(accept: str) -> bool:
    return "as=Table" in accept.replace(" ", "")


def human_age(timestamp: str | None, now: datetime | None = None) -> str:
    """kubectl's short durations: 45s, 5m12s, 3h4m, 2d5h, 400d."""
    if not timestamp:
        return "<unknown>"
    try:
        then = datetime.strptime(timestamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    except ValueError:
        return "<invalid>"
    secs = int(((now or datetime.now(UTC)) - then).total_seconds())
    if secs < 0:
        return "0s"
    if secs < 120:
        return f"{secs}s"
    mins = secs // 60
    if mins < 10:
        return f"{mins}m{secs % 60}s" if secs % 60 else f"{mins}m"
    if mins < 180:
        return f"{mins}m"
    hours = mins // 60
    if hours < 8:
        return f"{hours}h{mins % 60}m" if mins % 60 else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    days = hours // 24
    if days < 8:
        return f"{days}d{hours % 24}h" if hours % 24 else f"{days}d"
    return f"{days}d"


def _get(obj: Obj, *path: str) -> Any:
    cur: Any = obj
    for p in path:
        if not isinstance(cur, dict):
            return None
        cur = cur.get(p)
    return cur


def _name(o: Obj) -> Any:
    return _get(o, "metadata", "name")


def _age(o: Obj) -> str:
    return human_age(_get(o, "metadata", "creationTimestamp"))


def _pod_ready(o: Obj) -> str:
    statuses = _get(o, "status", "containerStatuses") or []
    total = len(_get(o, "spec", "containers") or [])
    return f"{sum(1 for c in statuses if c.get('ready'))}/{total}"


def _pod_status(o: Obj) -> str:
    if _get(o, "metadata", "deletionTimestamp"):
        return "Terminating"
    reason = _get(o, "status", "reason")
    if reason:
        return str(reason)
    for c in _get(o, "status", "containerStatuses") or []:
        waiting = _get(c, "state", "waiting", "reason")
        if waiting:
            return str(waiting)
    phase = _get(o, "status", "phase") or "Pending"
    if phase == "Succeeded":
        return "Completed"
    if phase == "Failed":
        return "Error"
    return str(phase)


def _pod_restarts(o: Obj) -> int:
    return sum(int(c.get("restartCount") or 0) for c in _get(o, "status", "containerStatuses") or [])


def _node_status(o: Obj) -> str:
    ready = next((c for c in _get(o, "status", "conditions") or [] if c.get("type") == "Ready"), None)
    text = "Ready" if ready and ready.get("status") == "True" else ("NotReady" if ready else "Unknown")
    if _get(o, "spec", "unschedulable"):
        text += ",SchedulingDisabled"
    return text


def _node_roles(o: Obj) -> str:
    prefix = "node-role.kubernetes.io/"
    roles = sorted(k[len(prefix) :] for k in (_get(o, "metadata", "labels") or {}) if k.startswith(prefix))
    return ",".join(roles) or "<none>"


def _node_ip(o: Obj) -> str:
    return next(
        (a.get("address") for a in _get(o, "status", "addresses") or [] if a.get("type") == "InternalIP"),
        "<none>",
    )


def _field(*path: str) -> Callable[[Obj], Any]:
    return lambda o: _get(o, *path)


NAME: Column = ("Name", "string", 0, _name)
AGE: Column = ("Age", "string", 0, _age)


def _count(o: Obj, key: str) -> int:
    return int(_get(o, "status", key) or 0)


def _replicas(o: Obj) -> int:
    value = _get(o, "spec", "replicas")
    return 1 if value is None else int(value)


def _containers(o: Obj) -> list[Obj]:
    return _get(o, "spec", "template", "spec", "containers") or []


def _selector(o: Obj) -> str:
    sel = _get(o, "spec", "selector") or {}
    labels = ",".join(f"{k}={v}" for k, v in sorted((sel.get("matchLabels") or {}).items()))
    return labels or "<none>"


WORKLOAD_WIDE: list[Column] = [
    ("Containers", "string", 1, lambda o: ",".join(str(c.get("name")) for c in _containers(o))),
    ("Images", "string", 1, lambda o: ",".join(str(c.get("image")) for c in _containers(o))),
    ("Selector", "string", 1, _selector),
]


def _job_condition(o: Obj) -> str | None:
    for c in _get(o, "status", "conditions") or []:
        if c.get("status") == "True" and c.get("type") in (
            "Complete",
            "Failed",
            "Suspended",
            "FailureTarget",
        ):
            return str(c["type"])
    return None


def _job_status(o: Obj) -> str:
    cond = _job_condition(o)
    if cond == "FailureTarget":
        return "FailureTarget"
    return cond or "Running"


def _job_completions(o: Obj) -> str:
    completions = _get(o, "spec", "completions")
    succeeded = _count(o, "succeeded")
    if completions is None and _get(o, "spec", "parallelism") is not None:
        return f"{succeeded}/1 of {_get(o, 'spec', 'parallelism')}"
    return f"{succeeded}/{1 if completions is None else completions}"


def _seconds(a: str | None, b: str | None) -> int | None:
    try:
        start = datetime.strptime(str(a), "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
        end = datetime.strptime(str(b), "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC) if b else datetime.now(UTC)
    except ValueError:
        return None
    return int((end - start).total_seconds())


def _job_duration(o: Obj) -> str:
    secs = _seconds(_get(o, "status", "startTime"), _get(o, "status", "completionTime"))
    if secs is None:
        return ""
    return human_age((datetime.now(UTC) - timedelta(seconds=secs)).strftime("%Y-%m-%dT%H:%M:%SZ"))


def _event_last_seen(o: Obj) -> str:
    last = o.get("lastTimestamp") or o.get("eventTime") or o.get("firstTimestamp")
    if isinstance(last, str) and "." in last:  # eventTime is a MicroTime
        last = last.split(".")[0] + "Z"
    text = human_age(last) if last else "<unknown>"
    count = int(o.get("count") or 0)
    first = o.get("firstTimestamp")
    if count > 1 and first:
        return f"{text} (x{count} over {human_age(first)})"
    return text


def _event_object(o: Obj) -> str:
    ref = o.get("involvedObject") or {}
    return f"{str(ref.get('kind') or '').lower()}/{ref.get('name') or ''}"


EVENT_COLUMNS: list[Column] = [
    ("Last Seen", "string", 0, _event_last_seen),
    ("Type", "string", 0, _field("type")),
    ("Reason", "string", 0, _field("reason")),
    ("Object", "string", 0, _event_object),
    ("Subobject", "string", 1, lambda o: _get(o, "involvedObject", "fieldPath") or ""),
    ("Source", "string", 1, lambda o: _get(o, "source", "component") or o.get("reportingComponent") or ""),
    ("Message", "string", 0, _field("message")),
    (
        "First Seen",
        "string",
        1,
        lambda o: human_age(o.get("firstTimestamp")) if o.get("firstTimestamp") else "",
    ),
    ("Count", "string", 1, lambda o: str(o.get("count") or "")),
    ("Name", "string", 1, _name),
]

COLUMNS: dict[str, list[Column]] = {
    "pods": [
        NAME,
        ("Ready", "string", 0, _pod_ready),
        ("Status", "string", 0, _pod_status),
        ("Restarts", "integer", 0, _pod_restarts),
        AGE,
        ("IP", "string", 1, lambda o: _get(o, "status", "podIP") or "<none>"),
        ("Node", "string", 1, lambda o: _get(o, "spec", "nodeName") or "<none>"),
        ("Nominated Node", "string", 1, lambda o: _get(o, "status", "nominatedNodeName") or "<none>"),
    ],
    "nodes": [
        NAME,
        ("Status", "string", 0, _node_status),
        ("Roles", "string", 0, _node_roles),
        AGE,
        ("Version", "string", 0, lambda o: _get(o, "status", "nodeInfo", "kubeletVersion") or ""),
        ("Internal-IP", "string", 1, _node_ip),
    ],
    "namespaces": [NAME, ("Status", "string", 0, _field("status", "phase")), AGE],
    "priorityclasses.scheduling.k8s.io": [
        NAME,
        ("Value", "integer", 0, _field("value")),
        ("Global-Default", "boolean", 0, lambda o: bool(o.get("globalDefault"))),
        AGE,
        ("PreemptionPolicy", "string", 0, _field("preemptionPolicy")),
    ],
    "podgroups.scheduling.volcano.sh": [
        NAME,
        ("STATUS", "string", 0, _field("status", "phase")),
        ("minMember", "integer", 0, _field("spec", "minMember")),
        ("RUNNINGS", "integer", 0, _field("status", "running")),
        AGE,
        ("QUEUE", "string", 1, _field("spec", "queue")),
    ],
    "queues.scheduling.volcano.sh": [NAME, ("PARENT", "string", 0, _field("spec", "parent"))],
    "jobs.batch.volcano.sh": [
        NAME,
        ("STATUS", "string", 0, _field("status", "state", "phase")),
        ("minAvailable", "integer", 0, _field("status", "minAvailable")),
        ("RUNNINGS", "integer", 0, _field("status", "running")),
        AGE,
        ("QUEUE", "string", 1, _field("spec", "queue")),
    ],
    "hypernodes.topology.volcano.sh": [
        NAME,
        ("Tier", "string", 0, _field("spec", "tier")),
        ("TierName", "string", 0, _field("spec", "tierName")),
        ("NodeCount", "integer", 0, _field("status", "nodeCount")),
        AGE,
    ],
    "events": EVENT_COLUMNS,
    "leases.coordination.k8s.io": [NAME, ("Holder", "string", 0, _field("spec", "holderIdentity")), AGE],
    "deployments.apps": [
        NAME,
        ("Ready", "string", 0, lambda o: f"{_count(o, 'readyReplicas')}/{_replicas(o)}"),
        ("Up-to-date", "string", 0, lambda o: _count(o, "updatedReplicas")),
        ("Available", "string", 0, lambda o: _count(o, "availableReplicas")),
        AGE,
        *WORKLOAD_WIDE,
    ],
    "replicasets.apps": [
        NAME,
        ("Desired", "integer", 0, _replicas),
        ("Current", "integer", 0, lambda o: _count(o, "replicas")),
        ("Ready", "integer", 0, lambda o: _count(o, "readyReplicas")),
        AGE,
        *WORKLOAD_WIDE,
    ],
    "statefulsets.apps": [
        NAME,
        ("Ready", "string", 0, lambda o: f"{_count(o, 'readyReplicas')}/{_replicas(o)}"),
        AGE,
        *WORKLOAD_WIDE[:2],
    ],
    "jobs.batch": [
        NAME,
        ("Status", "string", 0, _job_status),
        ("Completions", "string", 0, _job_completions),
        ("Duration", "string", 0, _job_duration),
        AGE,
        *WORKLOAD_WIDE,
    ],
}


def _columns(res: ResourceInfo) -> list[Column]:
    return COLUMNS.get(res.key, [NAME, AGE])


def _row_object(res: ResourceInfo, obj: Obj, include: str | None) -> Any:
    if include == "None":
        return None
    if include == "Object":
        return obj
    return {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": obj.get("metadata") or {},
    }


def to_table(
    res: ResourceInfo, objs: list[Obj], list_meta: dict[str, Any], include: str | None = None
) -> dict[str, Any]:
    cols = _columns(res)
    defs = [
        {"name": n, "type": t, "format": "name" if n == "Name" else "", "description": "", "priority": p}
        for n, t, p, _ in cols
    ]
    rows = [
        {"cells": [cell(o) for (_, _, _, cell) in cols], "object": _row_object(res, o, include)} for o in objs
    ]
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": list_meta,
        "columnDefinitions": defs,
        "rows": rows,
    }


def table_watch_chunk(res: ResourceInfo, chunk: bytes) -> bytes:
    """Rewrite a chunk of watch lines so each object is a one-row Table (what `kubectl get -w` reads)."""
    out: list[bytes] = []
    for line in chunk.splitlines():
        if not line.strip():
            continue
        ev = codec.loads(line)
        obj = ev.get("object") or {}
        if ev.get("type") in ("ADDED", "MODIFIED", "DELETED"):
            ev["object"] = to_table(res, [obj], {"resourceVersion": _get(obj, "metadata", "resourceVersion")})
        out.append(codec.dumps(ev) + b"\n")
    return b"".join(out)
