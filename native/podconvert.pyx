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

from scheduler.model import convert as C
from scheduler.model.objects import PodInfo, TaskInfo, TaskStatus

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
        return _py_parse_rfc3339(value)
    return _py_parse_time(value)


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
    cdef str namespace = _shared(_text(md.get("namespace") or "default"))
    cdef str uid = _text(md.get("uid") or f"{namespace}/{name}")
    shape = _pod_shape(spec, raw_containers, raw_inits, pod)
    labels = _pod_str_map(md, "labels", pod, 0)
    annotations = _pod_str_map(md, "annotations", pod, 2)
    cdef str pcn = _text(spec.get("priorityClassName") or "")
    priority = _priority(spec, pcn, priority_classes, pod)
    cdef str node_name = _shared(_text(spec.get("nodeName") or ""))
    cdef str phase = _shared(_text(status.get("phase") or "Pending"))
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
    # here saves two Python frames per pod (the equality test compares every slot of both)
    info = _new_pod(PodInfo)
    info.uid = uid
    info.name = name
    info.namespace = namespace
    info.labels = labels
    info.annotations = annotations
    info.scheduler_name = _shared(_text(spec.get("schedulerName") or "default-scheduler"))
    info.node_name = node_name
    info.phase = phase
    info.deleting = deleting
    info.priority = priority
    info.priority_class_name = pcn
    info.creation = _creation(md.get("creationTimestamp"))
    info.node_selector = node_selector
    info.affinity = affinity
    info.tolerations = tolerations
    info.host_ports = shape.host_ports
    info.topology_spread = spread
    info.containers = shape.containers
    info.init_containers = shape.init_containers
    info.preemption_policy = _text(spec.get("preemptionPolicy") or "")
    info.scheduling_gates = gates
    info.nominated_node = _text(status.get("nominatedNodeName") or "")
    info.owner_uid = owner_uid
    info.scheduled_condition = cond
    info.resource_version = _text(md.get("resourceVersion") or "")
    group = annotations.get(GROUP_NAME_ANNOTATION, "")
    job = _shared(f"{namespace}/{group}") if group else ""
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
    task.uid = uid
    task.name = name
    task.namespace = namespace
    task.pod = info
    task.job = job
    task.resreq = shape.resreq
    task.init_resreq = init_resreq
    task.best_effort = init_resreq.is_empty()
    task.status = _task_status(phase, node_name, deleting)
    task.node_name = node_name
    task.role = role
    task.priority = priority if priority is not None else 1
    task.preemptable = preemptable
    task.index = index
    task.scheduling_gated = bool(gates)
    task.last_tx = None
    task.bind_annotations = {}
    return task
