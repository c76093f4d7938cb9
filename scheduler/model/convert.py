"""Kubernetes objects (plain dicts, as the API serves them) into the core's slim records.

This is the only module that reads raw manifests. Anything malformed raises `ConvertError` naming
the object and the field, so callers can log it and skip that object without losing the others.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from sys import intern
from typing import Any

from scheduler.model.duration import parse_duration
from scheduler.model.job import JobInfo
from scheduler.model.node import NodeInfo
from scheduler.model.objects import (
    Condition,
    Container,
    PodGroupStatus,
    PodInfo,
    PriorityClassInfo,
    QueueInfo,
    TaskInfo,
    TaskStatus,
)
from scheduler.model.resources import QuantityError, Resource, parse_quantity
from scheduler.model.topology import (
    MEMBER_HYPERNODE,
    MEMBER_NODE,
    HyperNodeSpec,
    MemberSpec,
    NetworkTopologySpec,
    SubGroupPolicy,
)

GROUP_NAME_ANNOTATION = "scheduling.k8s.io/group-name"
QUEUE_NAME_ANNOTATION = "scheduling.volcano.sh/queue-name"
TASK_SPEC_KEY = "volcano.sh/task-spec"
TASK_INDEX_KEY = "volcano.sh/task-index"
PREEMPTABLE_KEY = "volcano.sh/preemptable"
# Volcano reads volcano.sh/preemptable with Go's strconv.ParseBool; a value it cannot parse ("yes",
# "no", " true") means not preemptable, the safe side for a pod its owner meant to protect.
GO_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})


class ConvertError(ValueError):
    """An object the core cannot use; the message names the object and the field."""


def object_name(obj: Any) -> str:
    if not isinstance(obj, dict):
        return "<not an object>"
    kind = obj.get("kind") or "object"
    md = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    ns = md.get("namespace")
    name = md.get("name") or md.get("generateName") or "<unnamed>"
    return f"{kind} {ns}/{name}" if ns else f"{kind} {name}"


@lru_cache(maxsize=4096)
def _parse_rfc3339(text: str) -> float:
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0


def parse_time(value: Any) -> float:
    if isinstance(value, str):
        # pods created together share their timestamp (to the second): parse each string once
        return _parse_rfc3339(value) if value else 0.0
    if not value:
        return 0.0
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, datetime):
        return value.timestamp()
    try:
        return datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0


def _dict(obj: dict[str, Any], key: str, where: str) -> dict[str, Any]:
    v = obj.get(key)
    if v is None:
        return {}
    if not isinstance(v, dict):
        raise ConvertError(f"{where}: field {key!r} must be an object, got {type(v).__name__}")
    return v


def _list(obj: dict[str, Any], key: str, where: str) -> list[Any]:
    v = obj.get(key)
    if v is None:
        return []
    if not isinstance(v, list):
        raise ConvertError(f"{where}: field {key!r} must be a list, got {type(v).__name__}")
    return v


def _kind_name(obj: dict[str, Any], kind: str) -> str:
    """`object_name({**obj, "kind": kind})` without copying the object (every node and PodGroup
    of an initial sync is named so, for the messages of what may be wrong with it)."""
    if type(obj) is not dict:
        return object_name({**obj, "kind": kind})
    md = obj.get("metadata")
    if not isinstance(md, dict):
        md = {}
    ns = md.get("namespace")
    name = md.get("name") or md.get("generateName") or "<unnamed>"
    return f"{kind} {ns}/{name}" if ns else f"{kind} {name}"


def _named(obj: dict[str, Any], kind: str) -> tuple[str, dict[str, Any], dict[str, Any], str]:
    """The object's name for messages, its metadata and spec, and its (required) name."""
    where = _kind_name(obj, kind)
    md = _dict(obj, "metadata", where)
    spec = _dict(obj, "spec", where)
    name = md.get("name")
    if not name:
        raise ConvertError(f"{where}: metadata.name is required")
    return where, md, spec, str(name)


def _shared(text: str) -> str:
    # A decoded object's strings are its own: 600,000 pods would carry 600,000 copies of
    # "volcano.sh/job-name" and of their job's name. Keys and short values are shared instead
    # (a few hundred bytes a pod); long values (last-applied configurations) rarely repeat.
    return intern(text) if len(text) <= 64 else text


def _str_map(obj: dict[str, Any], key: str, where: str) -> dict[str, str]:
    raw = obj.get(key)
    if raw is None:
        return {}
    if type(raw) is dict:
        try:
            # the usual case, labels and annotations as the API serves them (strings only), with
            # no call per entry: at 600,000 pods this map is a tenth of the initial sync
            return {intern(k): intern(v) if len(v) <= 64 else str(v) for k, v in raw.items()}
        except TypeError:  # a value that is not a string (null, a number): the checked path below
            pass
    return {_shared(str(k)): "" if v is None else _shared(str(v)) for k, v in _dict(obj, key, where).items()}


# the previous pod's raw labels / annotations (decoded, all strings) and what `_str_map` made of
# them, by slot: the pods of one gang or ReplicaSet come one after another in a list and carry
# equal maps, and comparing two small dicts is a fraction of interning every entry again
_LAST_MAPS: list[Any] = [None, None, None, None]


def _pod_str_map(md: dict[str, Any], key: str, where: str, slot: int) -> dict[str, str]:
    """`_str_map` of a pod's labels (slot 0), shared between consecutive pods with equal ones
    (nothing writes on a pod's labels; 600,000 pods hold a fraction of the dicts), or of its
    annotations (slot 2), a dict of its own (written on in place when a bind is assumed)."""
    raw = md.get(key)
    last = _LAST_MAPS
    if raw is not None and raw == last[slot]:
        # equal to a map of strings only: only strings compare equal to strings, so this map is
        # of the same strings and converts to the same map
        return last[slot + 1] if slot == 0 else last[slot + 1].copy()  # type: ignore[no-any-return]
    out = _str_map(md, key, where)
    if type(raw) is dict and len(out) == len(raw) and all(type(v) is str for v in raw.values()):
        # a copy of the raw map: a caller may change its pod dict in place and convert it again
        last[slot], last[slot + 1] = raw.copy(), out if slot == 0 else out.copy()
    return out


def ignored_device_resource(name: str) -> bool:
    """Resources Volcano leaves out of all accounting (its IgnoredDevicesList): the per-chip memory
    and cores of HAMi Ascend vNPU, which the device plugin does not advertise on nodes; the
    deviceshare plugin accounts them per chip from the pod's limits instead."""
    return name.startswith("huawei.com/Ascend") and name.endswith(("-memory", "-core"))


# ResourceLists already parsed, by their items (names and quantities as strings, in order): the
# nodes of a pool and the PodGroups of a workload repeat theirs, and parsing the quantities was
# most of a node's conversion (70 us a node, 1.4 s of an initial sync at 20,000 nodes). A hit
# hands out a copy (a Resource is changed in place, a node's idle say); failures are not kept, so
# a bad list raises its own message each time.
_RESOURCES: dict[tuple[tuple[str, str], ...], Resource] = {}


def _resources(raw: dict[str, Any], where: str, field: str) -> Resource:
    key = _resources_key(raw)
    if key is not None:
        got = _RESOURCES.get(key)
        if got is not None:
            return got.clone()
    r = _parse_resources(raw, where, field)
    if key is not None:
        if len(_RESOURCES) >= _SHAPES_MAX:
            _RESOURCES.clear()
        _RESOURCES[key] = r.clone()
    return r


def _resources_key(raw: Any) -> tuple[tuple[str, str], ...] | None:
    """`raw`'s items when it is a dict of strings to strings (else None: not kept). Only strings:
    `1` and `True` are equal keys, and the API refuses the one a quantity may not be."""
    if type(raw) is not dict:
        return None
    key = tuple(raw.items())
    for name, value in key:
        if type(name) is not str or type(value) is not str:
            return None
    return key


def _parse_resources(raw: dict[str, Any], where: str, field: str) -> Resource:
    try:
        r = Resource.from_list(raw)
    except QuantityError as exc:
        raise ConvertError(f"{where}: {field}.{exc}") from None
    for name, v in (*r.items(), ("pods", r.pods)):
        if v < 0:
            raise ConvertError(f"{where}: {field}.{name}: must be greater than or equal to 0")
    for name in [n for n in r.scalars if ignored_device_resource(n)]:
        del r.scalars[name]
    return r


def _container(c: Any, where: str, field: str) -> tuple[Container, Resource]:
    if not isinstance(c, dict):
        raise ConvertError(f"{where}: {field} must be an object")
    res = _dict(c, "resources", f"{where}: {field}")
    limits = dict(_dict(res, "limits", where))
    requests = dict(_dict(res, "requests", where))
    for k, v in limits.items():  # the API server defaults requests to limits
        requests.setdefault(k, v)
    r = _resources(requests, where, f"{field}.resources.requests")
    _resources(limits, where, f"{field}.resources.limits")
    return Container(str(c.get("name", "")), requests, limits), r


def pod_requests(
    containers: list[Resource], init_containers: list[Resource], overhead: Resource
) -> tuple[Resource, Resource]:
    """(Resreq, InitResreq): the sum of containers plus overhead, and that maxed with each init."""
    resreq = Resource()
    for r in containers:
        resreq.add(r)
    init = resreq.clone()
    for r in init_containers:
        init.set_max(r)
    resreq.add(overhead)
    init.add(overhead)
    return resreq, init


# the members themselves: a lookup on the enum class costs ~0.15 us, and this runs for every pod
_RUNNING, _RELEASING, _PENDING, _BOUND = (
    TaskStatus.RUNNING,
    TaskStatus.RELEASING,
    TaskStatus.PENDING,
    TaskStatus.BOUND,
)


def task_status(phase: str, node_name: str, deleting: bool) -> TaskStatus:
    if phase == "Running":
        return _RELEASING if deleting else _RUNNING
    if phase == "Pending":
        if deleting:
            return _RELEASING
        return _BOUND if node_name else _PENDING
    if phase == "Succeeded":
        return TaskStatus.SUCCEEDED
    if phase == "Failed":
        return TaskStatus.FAILED
    return TaskStatus.UNKNOWN


@dataclass(frozen=True, slots=True)
class _Shape:
    """What a pod's containers say about scheduling, shared by every pod with the same specs."""

    containers: list[Container]
    init_containers: list[Container]
    resreq: Resource
    init_resreq: Resource
    host_ports: list[tuple[str, str, int]]


# Pods of one job, Deployment or StatefulSet have identical container resources, so at 150,000
# pods a few hundred shapes cover everything: parsing quantities once per shape instead of once
# per pod is most of the cost of converting a pod. The records are shared between pods, which is
# safe because nothing changes a task's requests or containers in place (sessions already share
# them between a task and its clones). Bounded: cleared when it grows past this many shapes.
_SHAPES: dict[tuple[Any, ...], _Shape] = {}
_SHAPES_MAX = 4096
# the last pod's raw containers, init containers and overhead (copies), and their shape
_LAST_SHAPE: list[Any] = [None, None, None, None]


def _plain_copy(v: Any) -> Any:
    """A copy of the dicts and lists of a decoded value (the rest is immutable): the last shape is
    compared with copies, so a caller that changes a pod dict in place and converts it again does
    not get the requests it had before."""
    t = type(v)
    if t is dict:
        return {k: _plain_copy(x) for k, x in v.items()}
    if t is list:
        return [_plain_copy(x) for x in v]
    return v


def _containers(raw: list[Any], where: str, field: str) -> tuple[list[Container], list[Resource]]:
    """The containers of one list of the pod spec, and each one's requests, in spec order."""
    containers: list[Container] = []
    requests: list[Resource] = []
    for i, c in enumerate(raw):
        cont, r = _container(c, where, f"{field}[{i}]")
        containers.append(cont)
        requests.append(r)
    return containers, requests


def _shape_key(raw_containers: list[Any], raw_inits: list[Any], overhead: Any) -> tuple[Any, ...] | None:
    """A cheap exact key of everything `_shape` reads, or None when something is not a dict."""
    key: list[Any] = []
    for group in (raw_containers, raw_inits):
        for c in group:
            if type(c) is not dict:
                return None
            ports = c.get("ports")
            # repr of JSON-decoded dicts/lists/strings is exact and much cheaper than hashing them
            key.append((c.get("name"), repr(c.get("resources")), repr(ports) if ports else None))
        key.append(None)  # separates containers from init containers
    key.append(repr(overhead) if overhead else None)
    return tuple(key)


def _shape(raw_containers: list[Any], raw_inits: list[Any], spec: dict[str, Any], where: str) -> _Shape:
    containers, creqs = _containers(raw_containers, where, "spec.containers")
    inits, ireqs = _containers(raw_inits, where, "spec.initContainers")
    overhead = _resources(_dict(spec, "overhead", where), where, "spec.overhead")
    resreq, init_resreq = pod_requests(creqs, ireqs, overhead)
    host_ports: list[tuple[str, str, int]] = []
    for c in raw_containers:
        for p in c.get("ports") or []:
            if isinstance(p, dict) and p.get("hostPort"):
                try:
                    host_ports.append(
                        (
                            str(p.get("protocol") or "TCP"),
                            str(p.get("hostIP") or "0.0.0.0"),
                            int(p["hostPort"]),
                        )
                    )
                except (TypeError, ValueError):
                    raise ConvertError(
                        f"{where}: hostPort must be an integer, got {p.get('hostPort')!r}"
                    ) from None
    return _Shape(containers, inits, resreq, init_resreq, host_ports)


_INTERNED: dict[str, Any] = {}
_LAST: list[Any] = [None, None, None]  # the previous pod's node selector, affinity, tolerations


def _interned(value: Any, slot: int) -> Any:
    """One shared copy of equal selectors, affinities and toleration lists (read-only in the core).

    Every pod of a workload carries the same ones (admission adds the same two tolerations to
    every pod), and kept per pod they would be a large part of the daemon's memory at 150,000 pods.
    Consecutive pods are usually of one workload: comparing with the previous pod's value (`slot`
    says which field) is cheaper than the repr lookup. Python equality is the core's own test for
    these raw values, so an equal value is the same value to it.
    """
    if not value:
        return value
    last = _LAST[slot]
    if last is not None and last == value:
        return last
    key = repr(value)
    got = _INTERNED.get(key)
    if got is None:
        if len(_INTERNED) >= _SHAPES_MAX:
            _INTERNED.clear()
        _INTERNED[key] = got = value
    _LAST[slot] = got
    return got


# the previous pod's raw tolerations (a copy) and the shared list made of them
_LAST_TOLERATIONS: list[Any] = [None, None]


def _tolerations(spec: dict[str, Any], where: str) -> list[dict[str, Any]]:
    """The pod's tolerations (the objects among them), one shared list per distinct value."""
    raw = spec.get("tolerations")
    last = _LAST_TOLERATIONS
    if raw and raw == last[0]:
        # equal raw lists filter to equal lists, and `_interned` hands out one of them
        return last[1]  # type: ignore[no-any-return]
    out = _interned([t for t in _list(spec, "tolerations", where) if isinstance(t, dict)], 2)
    if type(raw) is list and all(type(t) is dict for t in raw):
        # a deep enough copy (toleration fields are scalars): a caller may change its pod in place
        last[0], last[1] = [t.copy() for t in raw], out
    return out  # type: ignore[no-any-return]


def _pod_where(pod: Any) -> str:
    """`Pod ns/name` for messages, without copying the pod (this runs for every pod)."""
    if not isinstance(pod, dict):
        return "Pod"
    md = pod.get("metadata")
    if not isinstance(md, dict):
        return "Pod <unnamed>"
    ns = md.get("namespace")
    name = md.get("name") or md.get("generateName") or "<unnamed>"
    return f"Pod {ns}/{name}" if ns else f"Pod {name}"


# the previous pod's raw conditions and their PodScheduled condition: running pods of one
# workload usually report equal ones (the same timestamps when they started together)
_LAST_CONDITIONS: list[Any] = [None, None]


def scheduled_condition(status: dict[str, Any]) -> tuple[str, str, str] | None:
    """(status, reason, message) of a pod status's last PodScheduled condition."""
    raw = status.get("conditions")
    last = _LAST_CONDITIONS
    if raw and raw == last[0]:
        # equal to a list whose PodScheduled entries had string fields only (or none): the same
        # strings, as nothing else compares equal to a string
        return last[1]  # type: ignore[no-any-return]
    cond = None
    plain = type(raw) is list
    for c in raw or []:
        if type(c) is not dict:
            plain = False
        if isinstance(c, dict) and c.get("type") == "PodScheduled":
            fields = (c.get("status", ""), c.get("reason", ""), c.get("message", ""))
            plain = plain and all(type(v) is str for v in fields)
            cond = (str(fields[0]), str(fields[1]), str(fields[2]))
    if plain:
        # a copy: a caller may change its pod dict in place and convert it again
        last[0], last[1] = [c.copy() for c in raw], cond  # type: ignore[union-attr]
    return cond


def pod_to_task(
    pod: dict[str, Any], priority_classes: dict[str, PriorityClassInfo] | None = None
) -> TaskInfo:
    """Build the TaskInfo of a pod; the job id is `<namespace>/<group name>` (empty without one)."""
    if not isinstance(pod, dict):
        raise ConvertError("Pod: not an object")
    # the sections are read unchecked first: the checked helpers, with their calls per section,
    # are a measurable part of an initial sync of 600,000 pods, so they run only when a section
    # is missing or of the wrong type
    md, spec, status = pod.get("metadata"), pod.get("spec"), pod.get("status")
    raw_containers = spec.get("containers") if type(spec) is dict else None
    raw_inits = spec.get("initContainers") if type(spec) is dict else None
    where = ""
    if (
        type(md) is not dict
        or type(status) is not dict
        or type(raw_containers) is not list
        or not (raw_inits is None or type(raw_inits) is list)
    ):
        where = _pod_where(pod)
        md = _dict(pod, "metadata", where)
        spec = _dict(pod, "spec", where)
        status = _dict(pod, "status", where)
        raw_containers = _list(spec, "containers", where)
        raw_inits = _list(spec, "initContainers", where)
    name = md.get("name")
    if not name or not isinstance(name, str):
        raise ConvertError(f"{where or _pod_where(pod)}: metadata.name is required")
    if not raw_containers:
        raise ConvertError(
            f"{where or _pod_where(pod)}: spec.containers: Required value: a pod needs at least one container"
        )
    if raw_inits is None:
        raw_inits = []
    if not where:
        where = _pod_where(pod)
    namespace = _shared(str(md.get("namespace") or "default"))
    uid = str(md.get("uid") or f"{namespace}/{name}")
    overhead = spec.get("overhead")
    last = _LAST_SHAPE
    if raw_containers == last[0] and raw_inits == last[1] and overhead == last[2]:
        # the previous pod's containers, equal in everything (pods of one workload come one
        # after another in a list): comparing the raw values is cheaper than building the key
        shape = last[3]
    else:
        key = _shape_key(raw_containers, raw_inits, overhead)
        shape = _SHAPES.get(key) if key is not None else None
        if shape is None:
            shape = _shape(raw_containers, raw_inits, spec, where)  # raises on bad input: never cached
            if key is not None:
                if len(_SHAPES) >= _SHAPES_MAX:
                    _SHAPES.clear()
                _SHAPES[key] = shape
        if key is not None:
            _LAST_SHAPE[:] = [
                _plain_copy(raw_containers),
                _plain_copy(raw_inits),
                _plain_copy(overhead),
                shape,
            ]
    resreq, init_resreq, host_ports = shape.resreq, shape.init_resreq, shape.host_ports

    labels = _pod_str_map(md, "labels", where, 0)
    annotations = _pod_str_map(md, "annotations", where, 2)
    pcn = str(spec.get("priorityClassName") or "")
    prio_raw = spec.get("priority")
    priority: int | None
    if prio_raw is None:
        pc = (priority_classes or {}).get(pcn) if pcn else None
        if pc is None and priority_classes:
            pc = next((p for p in priority_classes.values() if p.global_default), None)
        priority = pc.value if pc is not None else None
    else:
        try:
            priority = int(prio_raw)
        except (TypeError, ValueError):
            raise ConvertError(f"{where}: spec.priority must be an integer, got {prio_raw!r}") from None

    node_name = _shared(str(spec.get("nodeName") or ""))
    phase = _shared(str(status.get("phase") or "Pending"))
    deleting = bool(md.get("deletionTimestamp"))
    cond = scheduled_condition(status)
    owner_uid = ""
    for ref in md.get("ownerReferences") or []:
        if isinstance(ref, dict) and ref.get("controller"):
            owner_uid = str(ref.get("uid") or "")
    # positional, in PodInfo's field order (each named in a comment): 26 keywords cost twice
    # as much as the positions, and this runs for every pod of the initial list
    info = PodInfo(
        uid,  # uid
        name,  # name
        namespace,  # namespace
        labels,  # labels
        annotations,  # annotations
        _shared(str(spec.get("schedulerName") or "default-scheduler")),  # scheduler_name
        node_name,  # node_name
        phase,  # phase
        deleting,  # deleting
        priority,  # priority
        pcn,  # priority_class_name
        parse_time(md.get("creationTimestamp")),  # creation
        _interned(_str_map(spec, "nodeSelector", where), 0),  # node_selector
        _interned(_dict(spec, "affinity", where), 1),  # affinity
        _tolerations(spec, where),  # tolerations
        host_ports,  # host_ports
        [
            t for t in _list(spec, "topologySpreadConstraints", where) if isinstance(t, dict)
        ],  # topology_spread
        shape.containers,  # containers
        shape.init_containers,  # init_containers
        str(spec.get("preemptionPolicy") or ""),  # preemption_policy
        [str(g.get("name")) for g in _list(spec, "schedulingGates", where) if isinstance(g, dict)],  # gates
        str(status.get("nominatedNodeName") or ""),  # nominated_node
        owner_uid,  # owner_uid
        cond,  # scheduled_condition
        str(md.get("resourceVersion") or ""),  # resource_version
    )
    group = annotations.get(GROUP_NAME_ANNOTATION, "")
    job = _shared(f"{namespace}/{group}") if group else ""
    role = annotations.get(TASK_SPEC_KEY) or labels.get(TASK_SPEC_KEY, "")
    index: int | None = None
    idx_raw = annotations.get(TASK_INDEX_KEY) or labels.get(TASK_INDEX_KEY)
    if idx_raw is not None:
        try:
            index = int(idx_raw)
        except ValueError:
            index = None
    pre_raw = annotations.get(PREEMPTABLE_KEY, labels.get(PREEMPTABLE_KEY))
    preemptable = True if pre_raw is None else pre_raw in GO_TRUE
    return TaskInfo(
        info,
        job,
        resreq,
        init_resreq,
        task_status(phase, node_name, deleting),
        role=role,
        priority=priority if priority is not None else 1,
        preemptable=preemptable,
        index=index,
        scheduling_gated=bool(info.scheduling_gates),
    )


def node_to_info(node: dict[str, Any]) -> NodeInfo:
    where, md, spec, name = _named(node, "Node")
    status = _dict(node, "status", where)
    capacity_raw = _dict(status, "capacity", where)
    alloc_raw = _dict(status, "allocatable", where) or capacity_raw
    allocatable = _resources(alloc_raw, where, "status.allocatable")
    capability = _resources(capacity_raw, where, "status.capacity") if capacity_raw else allocatable.clone()
    n = NodeInfo(
        str(name),
        allocatable,
        capability,
        labels=_str_map(md, "labels", where),
        annotations=_str_map(md, "annotations", where),
        taints=[t for t in _list(spec, "taints", where) if isinstance(t, dict)],
        unschedulable=bool(spec.get("unschedulable")),
    )
    n.raw_capacity = dict(capacity_raw or alloc_raw)
    return n


def _int(v: Any, where: str, field: str, default: int) -> int:
    if v is None:
        return default
    if isinstance(v, bool):
        raise ConvertError(f"{where}: {field} must be an integer, got {v!r}")
    try:
        return int(v)
    except (TypeError, ValueError):
        raise ConvertError(f"{where}: {field} must be an integer, got {v!r}") from None


def podgroup_to_job(pg: dict[str, Any], default_queue: str = "default") -> JobInfo:
    where, md, spec, name = _named(pg, "PodGroup")
    status = _dict(pg, "status", where)
    ns = str(md.get("namespace") or "default")
    min_member = _int(spec.get("minMember"), where, "spec.minMember", 0)
    if min_member < 0:
        raise ConvertError(f"{where}: spec.minMember must be greater than or equal to 0")
    task_min: dict[str, int] = {}
    for role, v in _dict(spec, "minTaskMember", where).items():
        task_min[str(role)] = _int(v, where, f"spec.minTaskMember.{role}", 0)
    min_res_raw = spec.get("minResources")
    min_res = _resources(min_res_raw, where, "spec.minResources") if min_res_raw else None
    st = podgroup_status(status, where)
    job = JobInfo(
        uid=f"{ns}/{name}",
        name=str(name),
        namespace=ns,
        queue=str(spec.get("queue") or default_queue),
        min_available=min_member,
        task_min_available=task_min,
        min_resources=min_res,
        priority_class_name=str(spec.get("priorityClassName") or ""),
        creation=parse_time(md.get("creationTimestamp")),
        status=st,
        waiting_time=sla_waiting_time(annotations := _str_map(md, "annotations", where)),
    )
    job.network_topology = network_topology(spec.get("networkTopology"), where, "spec.networkTopology")
    labels = _str_map(md, "labels", where)
    pre_raw = annotations.get(PREEMPTABLE_KEY, labels.get(PREEMPTABLE_KEY))
    job.preemptable = None if pre_raw is None else pre_raw in GO_TRUE
    job.subgroup_policies = tuple(
        _subgroup_policy(p, where, f"spec.subGroupPolicy[{i}]")
        for i, p in enumerate(_list(spec, "subGroupPolicy", where))
    )
    return job


def job_with_status(job: JobInfo, status: PodGroupStatus) -> JobInfo:
    """The job `podgroup_to_job` gives a new version of `job`'s PodGroup that changed only its
    status: every field it reads outside the status copied from `job`. Keep the two together:
    a field `podgroup_to_job` gains must be copied here (`tests/unit/test_cluster_move.py`
    compares every slot of both)."""
    new = JobInfo(
        uid=job.uid,
        name=job.name,
        namespace=job.namespace,
        queue=job.queue,
        min_available=job.min_available,
        task_min_available=job.task_min_available,
        min_resources=None if job.min_resources is None else job.min_resources.clone(),
        priority_class_name=job.priority_class_name,
        creation=job.creation,
        status=status,
        waiting_time=job.waiting_time,
    )
    new.network_topology = job.network_topology
    new.preemptable = job.preemptable
    new.subgroup_policies = job.subgroup_policies
    return new


def podgroup_status(status: dict[str, Any], where: str) -> PodGroupStatus:
    """A PodGroup's `status` (an object: `where` names the PodGroup in what is wrong with it)."""
    conds: list[Condition] = []
    for c in status.get("conditions") or []:
        if isinstance(c, dict):
            conds.append(
                Condition(
                    str(c.get("type", "")),
                    str(c.get("status", "")),
                    str(c.get("reason", "")),
                    str(c.get("message", "")),
                    str(c.get("transitionID", "")),
                    str(c.get("lastTransitionTime", "")),
                )
            )
    return PodGroupStatus(
        phase=str(status.get("phase") or "Pending"),
        conditions=conds,
        running=_int(status.get("running"), where, "status.running", 0),
        succeeded=_int(status.get("succeeded"), where, "status.succeeded", 0),
        failed=_int(status.get("failed"), where, "status.failed", 0),
    )


def network_topology(raw: Any, where: str, field: str) -> NetworkTopologySpec | None:
    """A `networkTopology` block (PodGroup, Job or partition), validated as Volcano's webhook does."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise ConvertError(f"{where}: {field} must be an object")
    mode = str(raw.get("mode") or "hard")
    if mode not in ("hard", "soft"):
        raise ConvertError(f"{where}: {field}.mode must be hard or soft, got {mode!r}")
    tier_raw = raw.get("highestTierAllowed")
    tier = None if tier_raw is None else _int(tier_raw, where, f"{field}.highestTierAllowed", 0)
    if tier is not None and tier < 0:
        raise ConvertError(f"{where}: {field}.highestTierAllowed must be >= 0, got {tier}")
    tier_name = str(raw.get("highestTierName") or "")
    if tier is not None and tier_name:
        raise ConvertError(f"{where}: {field}: highestTierAllowed and highestTierName cannot both be set")
    return NetworkTopologySpec(mode, tier, tier_name)


def _subgroup_policy(raw: Any, where: str, field: str) -> SubGroupPolicy:
    if not isinstance(raw, dict):
        raise ConvertError(f"{where}: {field} must be an object")
    size = _int(raw.get("subGroupSize"), where, f"{field}.subGroupSize", 1)
    if size < 1:
        raise ConvertError(f"{where}: {field}.subGroupSize must be >= 1, got {size}")
    sel = _dict(raw, "labelSelector", where)
    keys = raw.get("matchLabelKeys") or []
    if not isinstance(keys, list):
        raise ConvertError(f"{where}: {field}.matchLabelKeys must be a list")
    return SubGroupPolicy(
        name=str(raw.get("name") or ""),
        size=size,
        min_subgroups=_int(raw.get("minSubGroups"), where, f"{field}.minSubGroups", 0),
        match_labels=tuple(sorted(_str_map(sel, "matchLabels", where).items())),
        match_label_keys=tuple(str(k) for k in keys),
        network_topology=network_topology(raw.get("networkTopology"), where, f"{field}.networkTopology"),
    )


def hypernode_to_spec(obj: dict[str, Any]) -> HyperNodeSpec:
    """A `topology.volcano.sh/v1alpha1` HyperNode. Structural errors refuse the object; a bad regex
    is kept and reported when the topology is built (it names the HyperNode there)."""
    if not isinstance(obj, dict):
        raise ConvertError("HyperNode: not an object")
    where, _, spec, name = _named(obj, "HyperNode")
    tier = _int(spec.get("tier"), where, "spec.tier", 0)
    if tier < 0:
        raise ConvertError(f"{where}: spec.tier must be >= 0, got {tier}")
    members = []
    for i, m in enumerate(_list(spec, "members", where)):
        f = f"spec.members[{i}]"
        if not isinstance(m, dict):
            raise ConvertError(f"{where}: {f} must be an object")
        kind = m.get("type")
        if kind not in (MEMBER_NODE, MEMBER_HYPERNODE):
            raise ConvertError(f"{where}: {f}.type must be Node or HyperNode, got {kind!r}")
        sel = _dict(m, "selector", where)
        given = [k for k in ("exactMatch", "regexMatch", "labelMatch") if sel.get(k) is not None]
        if len(given) != 1:
            raise ConvertError(
                f"{where}: {f}.selector needs exactly one of exactMatch, regexMatch, labelMatch"
            )
        if kind == MEMBER_HYPERNODE and given[0] != "exactMatch":
            raise ConvertError(f"{where}: {f}: a HyperNode member is selected by exactMatch only")
        exact = str(_dict(sel, "exactMatch", where).get("name") or "")
        regex = str(_dict(sel, "regexMatch", where).get("pattern") or "")
        lab = _dict(sel, "labelMatch", where)
        exprs = []
        for e in _list(lab, "matchExpressions", where):
            if not isinstance(e, dict) or e.get("operator") not in ("In", "NotIn", "Exists", "DoesNotExist"):
                raise ConvertError(f"{where}: {f}.selector.labelMatch.matchExpressions: bad expression {e!r}")
            exprs.append(
                (str(e.get("key", "")), str(e["operator"]), tuple(str(v) for v in e.get("values") or []))
            )
        if given[0] == "exactMatch" and not exact:
            raise ConvertError(f"{where}: {f}.selector.exactMatch.name is required")
        if given[0] == "regexMatch" and not regex:
            raise ConvertError(f"{where}: {f}.selector.regexMatch.pattern is required")
        members.append(
            MemberSpec(
                kind,
                exact=exact,
                regex=regex,
                labels=tuple(sorted(_str_map(lab, "matchLabels", where).items())),
                expressions=tuple(exprs),
                has_label_selector=given[0] == "labelMatch",
            )
        )
    return HyperNodeSpec(str(name), tier, str(spec.get("tierName") or ""), tuple(members))


# Volcano reads the first of these PodGroup annotations that parses as a positive Go duration.
SLA_WAITING_TIME_KEYS = ("volcano.sh/sla-waiting-time", "sla-waiting-time")


def sla_waiting_time(annotations: dict[str, str]) -> float | None:
    for key in SLA_WAITING_TIME_KEYS:
        raw = annotations.get(key)
        if raw is None:
            continue
        try:
            seconds = parse_duration(raw)
        except ValueError:
            continue
        if seconds > 0:
            return seconds
    return None


def queue_to_info(q: dict[str, Any]) -> QueueInfo:
    where, md, spec, name = _named(q, "Queue")
    status = _dict(q, "status", where)
    weight = _int(spec.get("weight"), where, "spec.weight", 1)
    if weight < 0:
        raise ConvertError(f"{where}: spec.weight must be greater than or equal to 0")
    cap_raw = spec.get("capability")
    guarantee_raw = _dict(_dict(spec, "guarantee", where), "resource", where)
    deserved_raw = spec.get("deserved")
    reclaimable = spec.get("reclaimable")
    return QueueInfo(
        str(name),
        weight=weight,
        capability=_resources(cap_raw, where, "spec.capability") if cap_raw else None,
        guarantee=_resources(guarantee_raw, where, "spec.guarantee.resource"),
        deserved=_resources(deserved_raw, where, "spec.deserved") if deserved_raw else None,
        reclaimable=True if reclaimable is None else bool(reclaimable),
        state=str(status.get("state") or "Open"),
        parent=str(spec.get("parent") or ""),
        priority=_int(spec.get("priority"), where, "spec.priority", 0),
        creation=parse_time(md.get("creationTimestamp")),
        annotations=_str_map(md, "annotations", where),
    )


def priority_class_to_info(pc: dict[str, Any]) -> PriorityClassInfo:
    where = object_name({**pc, "kind": "PriorityClass"})
    md = _dict(pc, "metadata", where)
    name = md.get("name")
    if not name:
        raise ConvertError(f"{where}: metadata.name is required")
    return PriorityClassInfo(
        str(name),
        _int(pc.get("value"), where, "value", 0),
        bool(pc.get("globalDefault")),
        str(pc.get("preemptionPolicy") or "PreemptLowerPriority"),
    )


def validate_quantity(value: Any) -> None:
    parse_quantity(value)
