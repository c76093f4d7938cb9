# cython: language_level=3, boundscheck=False, wraparound=False
"""Compiled twin of `scheduler.model.convert.pod_to_task`, for the daemon's pod informer.

An initial sync converts every pod of the cluster (600,000 at 20,000 nodes), and the conversion's
Python function calls, frames and per-field `str()` calls were a fifth of the sync. This module
takes the same steps for a well-formed pod, with the same per-workload memos (consecutive pods of
one gang share containers, label maps, tolerations and conditions), without the calls.

Anything unusual goes to the Python code itself, so the messages and results cannot differ:
a pod whose sections are missing or of the wrong type is converted by `convert.pod_to_task`, and a
new container shape or label map is made by `convert._shape` / `convert._str_map` (which raise on
bad input). `tests/native/test_podconvert_equivalence.py` compares every field of both over many shapes.
"""

from sys import intern
from types import MemberDescriptorType

from cpython.ref cimport PyObject, Py_INCREF, Py_XDECREF

from scheduler.model import convert as C
from scheduler.model.objects import (
    ALLOCATED_STATUSES,
    ON_NODE_STATUSES,
    READY_STATUSES,
    PodInfo,
    TaskInfo,
    TaskStatus,
)
from scheduler.model.resources import PyResource, Resource

cdef object _py_pod_to_task = C.pod_to_task
cdef object _py_shape = C._shape
cdef object _py_shape_key = C._shape_key
cdef object _py_str_map = C._str_map
cdef object _py_dict = C._dict
cdef object _py_list = C._list
cdef object _py_pod_where = C._pod_where
cdef object _py_plain_copy = C._plain_copy
cdef object _py_parse_time = C.parse_time
cdef object _py_parse_rfc3339 = C._parse_rfc3339
cdef object ConvertError = C.ConvertError
cdef object _GO_TRUE = C.GO_TRUE
cdef str GROUP_NAME_ANNOTATION = C.GROUP_NAME_ANNOTATION
cdef str TASK_SPEC_KEY = C.TASK_SPEC_KEY
cdef str TASK_INDEX_KEY = C.TASK_INDEX_KEY
cdef str PREEMPTABLE_KEY = C.PREEMPTABLE_KEY
cdef Py_ssize_t _SHAPES_MAX = C._SHAPES_MAX

cdef object _new_pod = PodInfo.__new__
cdef object _new_task = TaskInfo.__new__


cdef extern from "Python.h":
    ctypedef struct PyMemberDef:
        const char* name
        int type
        Py_ssize_t offset
    ctypedef struct PyMemberDescrObject:
        PyMemberDef* d_member


cdef int _T_OBJECT_EX = 16  # structmember.h: an object slot, AttributeError while unset


cdef Py_ssize_t _slot(type cls, str name) except -1:
    """Where `cls` keeps its `__slots__` field `name` in an instance, as its slot descriptor
    says: the conversion writes the fields of a new PodInfo and TaskInfo there, as the
    descriptor's own `__set__` would, without looking the descriptor up for each of ~40 fields
    (a sixth of the conversion). ImportError when the class no longer keeps it in a plain object
    slot: this module is then not used (see scheduler._native.select)."""
    d = cls.__dict__.get(name)
    if type(d) is not MemberDescriptorType or (<PyMemberDescrObject*>d).d_member.type != _T_OBJECT_EX:
        raise ImportError(f"{cls.__name__}.{name} is not an object slot")
    return (<PyMemberDescrObject*>d).d_member.offset


cdef inline void _put(object obj, Py_ssize_t offset, object value):
    """`obj.<field at offset> = value` (a member descriptor's set: the new reference in, the old out)."""
    cdef PyObject** at = <PyObject**>((<char*><PyObject*>obj) + offset)
    cdef PyObject* old = at[0]
    Py_INCREF(value)
    at[0] = <PyObject*>value
    Py_XDECREF(old)


cdef Py_ssize_t P_UID = _slot(PodInfo, "uid")
cdef Py_ssize_t P_NAME = _slot(PodInfo, "name")
cdef Py_ssize_t P_NAMESPACE = _slot(PodInfo, "namespace")
cdef Py_ssize_t P_LABELS = _slot(PodInfo, "labels")
cdef Py_ssize_t P_ANNOTATIONS = _slot(PodInfo, "annotations")
cdef Py_ssize_t P_SCHEDULER_NAME = _slot(PodInfo, "scheduler_name")
cdef Py_ssize_t P_NODE_NAME = _slot(PodInfo, "node_name")
cdef Py_ssize_t P_PHASE = _slot(PodInfo, "phase")
cdef Py_ssize_t P_DELETING = _slot(PodInfo, "deleting")
cdef Py_ssize_t P_PRIORITY = _slot(PodInfo, "priority")
cdef Py_ssize_t P_PRIORITY_CLASS_NAME = _slot(PodInfo, "priority_class_name")
cdef Py_ssize_t P_CREATION = _slot(PodInfo, "creation")
cdef Py_ssize_t P_NODE_SELECTOR = _slot(PodInfo, "node_selector")
cdef Py_ssize_t P_AFFINITY = _slot(PodInfo, "affinity")
cdef Py_ssize_t P_TOLERATIONS = _slot(PodInfo, "tolerations")
cdef Py_ssize_t P_HOST_PORTS = _slot(PodInfo, "host_ports")
cdef Py_ssize_t P_TOPOLOGY_SPREAD = _slot(PodInfo, "topology_spread")
cdef Py_ssize_t P_CONTAINERS = _slot(PodInfo, "containers")
cdef Py_ssize_t P_INIT_CONTAINERS = _slot(PodInfo, "init_containers")
cdef Py_ssize_t P_PREEMPTION_POLICY = _slot(PodInfo, "preemption_policy")
cdef Py_ssize_t P_SCHEDULING_GATES = _slot(PodInfo, "scheduling_gates")
cdef Py_ssize_t P_NOMINATED_NODE = _slot(PodInfo, "nominated_node")
cdef Py_ssize_t P_OWNER_UID = _slot(PodInfo, "owner_uid")
cdef Py_ssize_t P_SCHEDULED_CONDITION = _slot(PodInfo, "scheduled_condition")
cdef Py_ssize_t P_RESOURCE_VERSION = _slot(PodInfo, "resource_version")
cdef Py_ssize_t T_UID = _slot(TaskInfo, "uid")
cdef Py_ssize_t T_NAME = _slot(TaskInfo, "name")
cdef Py_ssize_t T_NAMESPACE = _slot(TaskInfo, "namespace")
cdef Py_ssize_t T_POD = _slot(TaskInfo, "pod")
cdef Py_ssize_t T_JOB = _slot(TaskInfo, "job")
cdef Py_ssize_t T_RESREQ = _slot(TaskInfo, "resreq")
cdef Py_ssize_t T_INIT_RESREQ = _slot(TaskInfo, "init_resreq")
cdef Py_ssize_t T_BEST_EFFORT = _slot(TaskInfo, "best_effort")
cdef Py_ssize_t T_STATUS = _slot(TaskInfo, "status")
cdef Py_ssize_t T_NODE_NAME = _slot(TaskInfo, "node_name")
cdef Py_ssize_t T_ROLE = _slot(TaskInfo, "role")
cdef Py_ssize_t T_PRIORITY = _slot(TaskInfo, "priority")
cdef Py_ssize_t T_PREEMPTABLE = _slot(TaskInfo, "preemptable")
cdef Py_ssize_t T_INDEX = _slot(TaskInfo, "index")
cdef Py_ssize_t T_SCHEDULING_GATED = _slot(TaskInfo, "scheduling_gated")
cdef Py_ssize_t T_LAST_TX = _slot(TaskInfo, "last_tx")
cdef Py_ssize_t T_BIND_ANNOTATIONS = _slot(TaskInfo, "bind_annotations")
cdef object _RUNNING = TaskStatus.RUNNING
cdef object _RELEASING = TaskStatus.RELEASING
cdef object _PENDING = TaskStatus.PENDING
cdef object _BOUND = TaskStatus.BOUND
cdef object _SUCCEEDED = TaskStatus.SUCCEEDED
cdef object _FAILED = TaskStatus.FAILED
cdef object _UNKNOWN = TaskStatus.UNKNOWN

# this module's own memos, the same as convert.py's (see there for why each is exact)
cdef dict _SHAPES = {}
cdef list _LAST_SHAPE = [None, None, None, None]
cdef list _LAST_MAPS = [None, None, None, None]
cdef dict _INTERNED = {}
cdef list _LAST = [None, None, None]
cdef list _LAST_TOLERATIONS = [None, None]
cdef list _LAST_CONDITIONS = [None, None]


cdef inline object _shared(str text):
    return intern(text) if len(text) <= 64 else text


# the previous pod's namespace, scheduler name and phase as shared (the pods of one workload come
# one after another in a list): comparing with it is cheaper than interning a fresh string, which
# hashes it and looks it up in the interpreter's table
cdef list _LAST_SHARED = [None, None, None]
# the previous pod's namespace and group name and their job key; its creation time, raw and parsed
cdef list _LAST_GROUP = [None, None, None]
cdef list _LAST_CREATION = [None, None]


# node name -> the shared (interned) node name: one probe of this table, a few entries per node,
# instead of the interpreter's table of every interned string (its misses were a tenth of the
# conversion at 600,000 pods). It keeps each interned string alive, so `intern` would give the
# very object it holds.
cdef dict _NODE_NAMES = {}


cdef inline str _node_name(str text):
    got = _NODE_NAMES.get(text)
    if got is not None:
        return <str>got
    out = _shared(text)
    if len(_NODE_NAMES) >= 1 << 17:
        _NODE_NAMES.clear()
    _NODE_NAMES[out] = out
    return out


cdef inline str _shared_as_last(str text, int slot):
    """`_shared(text)`, or the previous pod's shared string for this slot when equal to it."""
    last = _LAST_SHARED[slot]
    if last is not None and (<str>last == text):
        return <str>last
    out = _shared(text)
    _LAST_SHARED[slot] = out
    return out


cdef inline str _text(object v):
    """`str(v)` without the call for what is already a str (nearly every field)."""
    return <str>v if type(v) is str else str(v)


cdef object _task_status(str phase, str node_name, bint deleting):
    if phase == "Running":
        return _RELEASING if deleting else _RUNNING
    if phase == "Pending":
        if deleting:
            return _RELEASING
        return _BOUND if node_name else _PENDING
    if phase == "Succeeded":
        return _SUCCEEDED
    if phase == "Failed":
        return _FAILED
    return _UNKNOWN


cdef object _pod_str_map(dict md, str key, object pod, int slot):
    raw = md.get(key)
    cdef list last = _LAST_MAPS
    if raw is not None and raw == last[slot]:
        return last[slot + 1] if slot == 0 else (<dict>last[slot + 1]).copy()
    out = _py_str_map(md, key, _py_pod_where(pod))
    if type(raw) is dict and len(out) == len(<dict>raw) and all(type(v) is str for v in (<dict>raw).values()):
        last[slot] = (<dict>raw).copy()
        last[slot + 1] = out if slot == 0 else out.copy()
    return out


cdef object _interned(object value, int slot):
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


cdef object _tolerations(dict spec, object pod):
    raw = spec.get("tolerations")
    cdef list last = _LAST_TOLERATIONS
    if raw and raw == last[0]:
        return last[1]
    if raw is None:
        items = []
    elif type(raw) is list:
        items = raw
    else:
        items = _py_list(spec, "tolerations", _py_pod_where(pod))  # raises
    out = _interned([t for t in items if isinstance(t, dict)], 2)
    if type(raw) is list and all(type(t) is dict for t in <list>raw):
        last[0] = [(<dict>t).copy() for t in <list>raw]
        last[1] = out
    return out


cdef object _scheduled_condition(dict status):
    raw = status.get("conditions")
    cdef list last = _LAST_CONDITIONS
    if raw and raw == last[0]:
        return last[1]
    cond = None
    cdef bint plain = type(raw) is list
    for c in raw or []:
        if type(c) is not dict:
            plain = False
        if isinstance(c, dict) and c.get("type") == "PodScheduled":
            fields = (c.get("status", ""), c.get("reason", ""), c.get("message", ""))
            plain = plain and all(type(v) is str for v in fields)
            cond = (str(fields[0]), str(fields[1]), str(fields[2]))
    if plain:
        last[0] = [(<dict>c).copy() for c in <list>raw]
        last[1] = cond
    return cond


cdef object _pod_shape(dict spec, list raw_containers, list raw_inits, object pod):
    overhead = spec.get("overhead")
    cdef list last = _LAST_SHAPE
    if raw_containers == last[0] and raw_inits == last[1] and overhead == last[2]:
        return last[3]
    key = _py_shape_key(raw_containers, raw_inits, overhead)
    shape = _SHAPES.get(key) if key is not None else None
    if shape is None:
        shape = _py_shape(raw_containers, raw_inits, spec, _py_pod_where(pod))  # raises: never kept
        if key is not None:
            if len(_SHAPES) >= _SHAPES_MAX:
                _SHAPES.clear()
            _SHAPES[key] = shape
    if key is not None:
        last[0] = _py_plain_copy(raw_containers)
        last[1] = _py_plain_copy(raw_inits)
        last[2] = _py_plain_copy(overhead)
        last[3] = shape
    return shape


cdef object _priority(dict spec, str pcn, object priority_classes, object pod):
    prio_raw = spec.get("priority")
    if prio_raw is None:
        pc = (priority_classes or {}).get(pcn) if pcn else None
        if pc is None and priority_classes:
            pc = next((p for p in priority_classes.values() if p.global_default), None)
        return pc.value if pc is not None else None
    try:
        return int(prio_raw)
    except (TypeError, ValueError):
        raise ConvertError(
            f"{_py_pod_where(pod)}: spec.priority must be an integer, got {prio_raw!r}"
        ) from None


cdef object _creation(object value):
    if type(value) is str and value:
        last = _LAST_CREATION
        if last[0] is not None and <str>last[0] == <str>value:
            return last[1]
        out = _py_parse_rfc3339(value)
        last[0] = value
        last[1] = out
        return out
    return _py_parse_time(value)


cdef str _job_key(str namespace, str group):
    """`_shared(f"{namespace}/{group}")`, the previous pod's when both halves are equal to its."""
    last = _LAST_GROUP
    if last[0] is namespace and <str>last[1] == group:
        return <str>last[2]
    out = _shared(f"{namespace}/{group}")
    last[0] = namespace
    last[1] = group
    last[2] = out
    return out


cdef object _node_selector(dict spec, object pod):
    raw = spec.get("nodeSelector")
    if raw is None:
        return {}
    return _interned(_py_str_map(spec, "nodeSelector", _py_pod_where(pod)), 0)


cdef object _affinity(dict spec, object pod):
    raw = spec.get("affinity")
    if raw is None:
        return {}
    if type(raw) is not dict:
        _py_dict(spec, "affinity", _py_pod_where(pod))  # raises
    return _interned(raw, 1)


cdef list _objects(dict spec, str key, object pod):
    """The dicts among a list field of the spec (`[]` when absent; raises when not a list)."""
    raw = spec.get(key)
    if raw is None:
        return []
    if type(raw) is not list:
        raw = _py_list(spec, key, _py_pod_where(pod))  # raises unless a list subclass
    return [t for t in raw if isinstance(t, dict)]


def pod_to_task(pod, priority_classes=None):
    """`convert.pod_to_task`, the same TaskInfo field for field."""
    if type(pod) is not dict:
        return _py_pod_to_task(pod, priority_classes)
    md = (<dict>pod).get("metadata")
    spec = (<dict>pod).get("spec")
    status = (<dict>pod).get("status")
    if type(md) is not dict or type(spec) is not dict or type(status) is not dict:
        return _py_pod_to_task(pod, priority_classes)
    raw_containers = (<dict>spec).get("containers")
    raw_inits = (<dict>spec).get("initContainers")
    name = (<dict>md).get("name")
    if (
        type(raw_containers) is not list
        or not raw_containers
        or not (raw_inits is None or type(raw_inits) is list)
        or type(name) is not str
        or not name
    ):
        # missing or malformed sections, no name, no container: the Python code says which
        return _py_pod_to_task(pod, priority_classes)
    if raw_inits is None:
        raw_inits = []
    return _convert(<dict>pod, <dict>md, <dict>spec, <dict>status, <list>raw_containers, <list>raw_inits,
                    <str>name, priority_classes)


cdef object _convert(dict pod, dict md, dict spec, dict status, list raw_containers, list raw_inits,
                     str name, object priority_classes):
    cdef str namespace = _shared_as_last(_text(md.get("namespace") or "default"), 0)
    cdef str uid = _text(md.get("uid") or f"{namespace}/{name}")
    shape = _pod_shape(spec, raw_containers, raw_inits, pod)
    labels = _pod_str_map(md, "labels", pod, 0)
    annotations = _pod_str_map(md, "annotations", pod, 2)
    cdef str pcn = _text(spec.get("priorityClassName") or "")
    priority = _priority(spec, pcn, priority_classes, pod)
    cdef str node_name = _node_name(_text(spec.get("nodeName") or ""))
    cdef str phase = _shared_as_last(_text(status.get("phase") or "Pending"), 2)
    cdef bint deleting = bool(md.get("deletionTimestamp"))
    cond = _scheduled_condition(status)
    cdef str owner_uid = ""
    for ref in md.get("ownerReferences") or []:
        if isinstance(ref, dict) and ref.get("controller"):
            owner_uid = _text(ref.get("uid") or "")
    # the fields in PodInfo's order, as the Python code evaluates them (the first bad one raises)
    node_selector = _node_selector(spec, pod)
    affinity = _affinity(spec, pod)
    tolerations = _tolerations(spec, pod)
    spread = _objects(spec, "topologySpreadConstraints", pod)
    gates = [str(g.get("name")) for g in _objects(spec, "schedulingGates", pod)]
    # PodInfo's and TaskInfo's __init__ assign their arguments and nothing else: setting the slots
    # here saves two Python frames per pod, and writing them where the slot descriptors say
    # (`_put`) their lookups (the equality test compares every slot of both)
    info = _new_pod(PodInfo)
    _put(info, P_UID, uid)
    _put(info, P_NAME, name)
    _put(info, P_NAMESPACE, namespace)
    _put(info, P_LABELS, labels)
    _put(info, P_ANNOTATIONS, annotations)
    _put(info, P_SCHEDULER_NAME, _shared_as_last(_text(spec.get("schedulerName") or "default-scheduler"), 1))
    _put(info, P_NODE_NAME, node_name)
    _put(info, P_PHASE, phase)
    _put(info, P_DELETING, deleting)
    _put(info, P_PRIORITY, priority)
    _put(info, P_PRIORITY_CLASS_NAME, pcn)
    _put(info, P_CREATION, _creation(md.get("creationTimestamp")))
    _put(info, P_NODE_SELECTOR, node_selector)
    _put(info, P_AFFINITY, affinity)
    _put(info, P_TOLERATIONS, tolerations)
    _put(info, P_HOST_PORTS, shape.host_ports)
    _put(info, P_TOPOLOGY_SPREAD, spread)
    _put(info, P_CONTAINERS, shape.containers)
    _put(info, P_INIT_CONTAINERS, shape.init_containers)
    _put(info, P_PREEMPTION_POLICY, _text(spec.get("preemptionPolicy") or ""))
    _put(info, P_SCHEDULING_GATES, gates)
    _put(info, P_NOMINATED_NODE, _text(status.get("nominatedNodeName") or ""))
    _put(info, P_OWNER_UID, owner_uid)
    _put(info, P_SCHEDULED_CONDITION, cond)
    _put(info, P_RESOURCE_VERSION, _text(md.get("resourceVersion") or ""))
    group = annotations.get(GROUP_NAME_ANNOTATION, "")
    job = _job_key(namespace, group) if group else ""
    role = annotations.get(TASK_SPEC_KEY) or labels.get(TASK_SPEC_KEY, "")
    index = None
    idx_raw = annotations.get(TASK_INDEX_KEY) or labels.get(TASK_INDEX_KEY)
    if idx_raw is not None:
        try:
            index = int(idx_raw)
        except ValueError:
            index = None
    pre_raw = annotations.get(PREEMPTABLE_KEY, labels.get(PREEMPTABLE_KEY))
    preemptable = True if pre_raw is None else pre_raw in _GO_TRUE
    init_resreq = shape.init_resreq
    task = _new_task(TaskInfo)
    _put(task, T_UID, uid)
    _put(task, T_NAME, name)
    _put(task, T_NAMESPACE, namespace)
    _put(task, T_POD, info)
    _put(task, T_JOB, job)
    _put(task, T_RESREQ, shape.resreq)
    _put(task, T_INIT_RESREQ, init_resreq)
    _put(task, T_BEST_EFFORT, init_resreq.is_empty())
    _put(task, T_STATUS, _task_status(phase, node_name, deleting))
    _put(task, T_NODE_NAME, node_name)
    _put(task, T_ROLE, role)
    _put(task, T_PRIORITY, priority if priority is not None else 1)
    _put(task, T_PREEMPTABLE, preemptable)
    _put(task, T_INDEX, index)
    _put(task, T_SCHEDULING_GATED, bool(gates))
    _put(task, T_LAST_TX, None)
    _put(task, T_BIND_ANNOTATIONS, {})
    return task


# ---------------------------------------------------------------------- the pod's attach --
# A listed pod's request is added to five Resources (its node's idle and used, its job's total
# and allocated or pending): three fields each, read and written where Resource's slot
# descriptors say instead of through attribute lookups (a fifth of the attach). The compiled
# Resource (native/resourcevec.pyx) keeps them as C doubles behind attributes of its own: with it
# the fields are read and written as attributes, the same float operations.
cdef bint _SLOTS = Resource is PyResource
cdef Py_ssize_t R_CPU = _slot(PyResource, "milli_cpu")
cdef Py_ssize_t R_MEMORY = _slot(PyResource, "memory")
cdef Py_ssize_t R_PODS = _slot(PyResource, "pods")


cdef inline bint _plain_resource(object r):
    """A Resource with its three counted fields set (so `_get` finds no empty slot)."""
    if type(r) is not Resource:
        return False
    if not _SLOTS:
        return True
    cdef char* at = <char*><PyObject*>r
    return ((<PyObject**>(at + R_CPU))[0] is not NULL
            and (<PyObject**>(at + R_MEMORY))[0] is not NULL
            and (<PyObject**>(at + R_PODS))[0] is not NULL)


cdef inline object _get(object obj, Py_ssize_t offset):
    """`obj.<field at offset>` of a `_plain_resource` of the pure class."""
    return <object>(<PyObject**>((<char*><PyObject*>obj) + offset))[0]


cdef inline tuple _fields(object r):
    """(r.milli_cpu, r.memory, r.pods) of a `_plain_resource`."""
    if _SLOTS:
        return _get(r, R_CPU), _get(r, R_MEMORY), _get(r, R_PODS)
    return r.milli_cpu, r.memory, r.pods


cdef inline void _add_to(object r, object cpu, object mem, object pods, bint minus) except *:
    """`r.milli_cpu += cpu` (or `-=`), and the same for memory and pods: the same Python number
    operations, in the order the twin takes them."""
    if not _SLOTS:
        if minus:
            r.milli_cpu = r.milli_cpu - cpu
            r.memory = r.memory - mem
            r.pods = r.pods - pods
        else:
            r.milli_cpu = r.milli_cpu + cpu
            r.memory = r.memory + mem
            r.pods = r.pods + pods
    elif minus:
        _put(r, R_CPU, _get(r, R_CPU) - cpu)
        _put(r, R_MEMORY, _get(r, R_MEMORY) - mem)
        _put(r, R_PODS, _get(r, R_PODS) - pods)
    else:
        _put(r, R_CPU, _get(r, R_CPU) + cpu)
        _put(r, R_MEMORY, _get(r, R_MEMORY) + mem)
        _put(r, R_PODS, _get(r, R_PODS) + pods)


cdef object _ON_NODE = ON_NODE_STATUSES
cdef object _ALLOCATED = ALLOCATED_STATUSES
cdef object _READY = frozenset(READY_STATUSES)
cdef object _PIPELINED = TaskStatus.PIPELINED


cdef inline bint _counted_plainly(object status):
    """A status whose task a node counts in `idle` and `used` alone (`NodeInfo.add_task`'s last
    branch), not a releasing or pipelined one."""
    return status in _ON_NODE and status is not _RELEASING and status is not _PIPELINED


cdef inline void _job_unindex(object job, object task, object uid, object status):
    """`JobInfo._index_remove(task, status)`."""
    index = <dict?>job.task_status_index
    bucket = index.get(status)
    if bucket is None:
        return
    was = (<dict?>bucket).pop(uid, None)
    if not bucket:
        del index[status]
    if was is not None:
        if status in _READY:
            ready = job._ready
            ready[0] = ready[0] - 1
        elif status is _PENDING and was.best_effort:
            ready = job._ready
            ready[1] = ready[1] - 1


cdef inline void _job_index(object job, object task, object uid, object status):
    """`JobInfo._index_add(task, status)`."""
    index = <dict?>job.task_status_index
    bucket = index.get(status)
    if bucket is None:
        bucket = index[status] = {}
    if uid not in bucket:
        if status in _READY:
            ready = job._ready
            ready[0] = ready[0] + 1
        elif status is _PENDING and task.best_effort:
            ready = job._ready
            ready[1] = ready[1] + 1
    bucket[uid] = task


cdef inline void _note_pending(object state, object job, object juid):
    """`ClusterState._note_pending(job)`."""
    if (<dict?>job.task_status_index).get(_PENDING) and (<dict?>state.jobs).get(juid) is job:
        state._pending_jobs.add(juid)
    else:
        state._pending_jobs.discard(juid)


cdef inline object _job_bucket(object job, object status):
    """The Resource `JobInfo.add_task` adds a task of `status` to besides `total_request`."""
    if status in _ALLOCATED:
        return job.allocated
    if status is _PENDING:
        return job.pending_request
    return None


def add_listed_pod(state, task, key=None):
    """Compiled twin of `ClusterState.add_listed_pod` (`add_listed_pod_py` there) for the usual
    pod of a list: ours, on a node the state has or on none, in a job it has, with no scalar resources, host
    ports or affinity, a key and uid that are new. The same operations in the same order as the
    twin (the same floats); any other pod goes to the twin before anything is changed.
    `tests/unit/test_cluster_bulk.py` compares the state both leave with `apply_pod`'s."""
    pod = task.pod
    job_uid = task.job
    node_name = task.node_name
    status = task.status
    req = task.resreq
    # a pod on no node (a new pending one, as a burst's come through the watch) is accounted in
    # its job alone, as the twin does
    cdef bint on_node = bool(node_name) and status in _ON_NODE
    if (
        not job_uid
        or status is _RELEASING
        or status is _PIPELINED
        or (node_name and not on_node)
        or req.scalars
        or pod.affinity
        or pod.host_ports
        or pod.scheduler_name not in state.options.scheduler_names
    ):
        return state.add_listed_pod_py(task, key)
    if key is None:
        key = f"{task.namespace}/{task.name}"
    pod_keys = state.pod_keys
    node = (<dict?>state.nodes).get(node_name) if on_node else None
    job = (<dict?>state.jobs).get(job_uid)
    uid = task.uid
    if key in pod_keys or job is None or job._shared:
        return state.add_listed_pod_py(task, key)
    if on_node and (node is None or node._shared or uid in node.tasks):
        return state.add_listed_pod_py(task, key)
    total = job.total_request
    out = _job_bucket(job, status)
    if not (
        _plain_resource(req)
        and (node is None or (_plain_resource(node.idle) and _plain_resource(node.used)))
        and _plain_resource(total)
        and (out is None or _plain_resource(out))
    ):
        return state.add_listed_pod_py(task, key)
    tasks = <dict?>state.tasks
    cdef Py_ssize_t known = len(tasks)
    tasks[uid] = task
    pod_keys[key] = uid
    cpu, mem, pods = _fields(req)
    # NodeInfo.add_task
    if node is not None:
        node.version = node.version + 1
        _add_to(node.idle, cpu, mem, pods, True)
        _add_to(node.used, cpu, mem, pods, False)
        node.tasks[uid] = task
        state._dirty_nodes.add(node.name)
    # JobInfo.add_task
    job.tasks[uid] = task
    _job_index(job, task, uid, status)
    _add_to(total, cpu, mem, pods, False)
    if out is not None:
        _add_to(out, cpu, mem, pods, False)
    juid = job.uid
    state._dirty_jobs.add(juid)
    _note_pending(state, job, juid)
    state.generation = state.generation + 1
    return len(tasks) > known


def move_task(state, task, status, node_name):
    """Compiled twin of `ClusterState.move_task` (`move_task_py` there) for the usual task: ours,
    in a job the state has (not an implicit one) and, where it is or goes on a node, on a node
    the state has, with no scalar resources, host ports or affinity, neither releasing nor
    pipelined. The same operations in the same order as the twin (the same floats); any other
    task goes to the twin before anything is changed. `tests/unit/test_cluster_move.py`
    compares the state both leave."""
    pod = task.pod
    uid = task.uid
    req = task.resreq
    job_uid = task.job
    old_status = task.status
    old_node_name = task.node_name
    if (
        not job_uid
        or req.scalars
        or pod.affinity
        or pod.host_ports
        or old_status is _RELEASING
        or old_status is _PIPELINED
        or status is _RELEASING
        or status is _PIPELINED
        or pod.scheduler_name not in state.options.scheduler_names
        or job_uid in state.implicit_jobs
        or job_uid in state._orphans
    ):
        return state.move_task_py(task, status, node_name)
    job = (<dict?>state.jobs).get(job_uid)
    # (a session-private copy in its place is the twin's to account: it reads the copy's fields)
    if job is None or job._shared or (<dict?>job.tasks).get(uid) is not task:
        return state.move_task_py(task, status, node_name)
    old_node = None
    if old_node_name:
        old_node = (<dict?>state.nodes).get(old_node_name)
        if (
            old_node is None
            or old_node._shared
            or (<dict?>old_node.tasks).get(uid) is not task
            or old_node_name in state._off_node
            or not _counted_plainly(old_status)
        ):
            return state.move_task_py(task, status, node_name)
    new_node = None
    if node_name and status in _ON_NODE:
        new_node = (<dict?>state.nodes).get(node_name)
        if new_node is None or new_node._shared:
            return state.move_task_py(task, status, node_name)
        if new_node is not old_node and uid in new_node.tasks:
            return state.move_task_py(task, status, node_name)
    old_out = _job_bucket(job, old_status)
    new_out = _job_bucket(job, status)
    total = job.total_request
    if not (
        _plain_resource(req)
        and _plain_resource(total)
        and (old_out is None or _plain_resource(old_out))
        and (new_out is None or _plain_resource(new_out))
        and (old_node is None or (_plain_resource(old_node.idle) and _plain_resource(old_node.used)))
        and (new_node is None or (_plain_resource(new_node.idle) and _plain_resource(new_node.used)))
    ):
        return state.move_task_py(task, status, node_name)
    cpu, mem, pods = _fields(req)
    dirty_nodes, dirty_jobs = state._dirty_nodes, state._dirty_jobs
    juid = job.uid
    # _detach: NodeInfo.remove_task (no affinity, no host ports: nothing else to undo)
    if old_node is not None:
        del old_node.tasks[uid]
        old_node.version = old_node.version + 1
        _add_to(old_node.idle, cpu, mem, pods, False)
        _add_to(old_node.used, cpu, mem, pods, True)
        dirty_nodes.add(old_node.name)
    # JobInfo.delete_task
    del job.tasks[uid]
    _job_unindex(job, task, uid, old_status)
    _add_to(total, cpu, mem, pods, True)
    if old_out is not None:
        _add_to(old_out, cpu, mem, pods, True)
    dirty_jobs.add(juid)
    _note_pending(state, job, juid)
    task.status = status
    task.node_name = node_name
    # _attach: NodeInfo.add_task
    if new_node is not None:
        new_node.version = new_node.version + 1
        _add_to(new_node.idle, cpu, mem, pods, True)
        _add_to(new_node.used, cpu, mem, pods, False)
        new_node.tasks[uid] = task
        dirty_nodes.add(new_node.name)
    # JobInfo.add_task
    job.tasks[uid] = task
    _job_index(job, task, uid, status)
    _add_to(total, cpu, mem, pods, False)
    if new_out is not None:
        _add_to(new_out, cpu, mem, pods, False)
    dirty_jobs.add(juid)
    _note_pending(state, job, juid)


cdef object _StatusUpdate = None
cdef object _NO_VALUE = object()


cdef bint _same_but_node(dict spec, dict seen_spec):
    """`dict(spec)` without its nodeName equals `seen_spec` (the same comparisons, no copy)."""
    cdef Py_ssize_t n = len(spec)
    if "nodeName" in spec:
        n -= 1
    if n != len(seen_spec):
        return False
    for k, v in spec.items():
        if k == "nodeName":
            continue
        was = seen_spec.get(k, _NO_VALUE)
        if was is _NO_VALUE or not (v is was or v == was):
            return False
    return True


def status_only(pod, seen, node_name):
    """Compiled twin of `scheduler.model.podstatus.status_only` (each watch event of a pod of
    ours after its Binding: the echo, the kubelet's reports), the same comparisons without the
    copy of the spec and the tuple of metadata fields. `tests/native/test_podstatus_equivalence.py`
    compares both."""
    global _StatusUpdate
    md, spec, status = pod.get("metadata"), pod.get("spec"), pod.get("status")
    if type(md) is not dict or type(spec) is not dict or type(status) is not dict:
        return None
    if (<dict>md).get("deletionTimestamp") or ((<dict>spec).get("nodeName") or "") != node_name:
        return None
    meta = seen.meta
    if type(meta) is not tuple or len(<tuple>meta) != 5:
        return None
    cdef int i = 0
    for field in ("uid", "labels", "annotations", "ownerReferences", "creationTimestamp"):
        now = (<dict>md).get(field)
        was = (<tuple>meta)[i]
        if not (now is was or now == was):
            return None
        i += 1
    seen_spec = seen.spec
    if type(seen_spec) is not dict:
        rest = dict(spec)
        rest.pop("nodeName", None)
        if rest != seen_spec:
            return None
    elif not _same_but_node(<dict>spec, <dict>seen_spec):
        return None
    if type((<dict>status).get("conditions") or []) is not list:
        return None
    if _StatusUpdate is None:
        from scheduler.model.podstatus import StatusUpdate

        _StatusUpdate = StatusUpdate
    return _StatusUpdate(
        str((<dict>status).get("phase") or "Pending"),
        str((<dict>status).get("nominatedNodeName") or ""),
        _scheduled_condition(<dict>status),
        str((<dict>md).get("resourceVersion") or ""),
    )
