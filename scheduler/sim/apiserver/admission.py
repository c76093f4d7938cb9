"""Per-kind defaulting and admission: what the real API server's registry strategies and admission
plugins do to an object before it is stored.

- Pods: defaults (schedulerName, restartPolicy, dnsPolicy, grace period, imagePullPolicy, the
  DefaultTolerationSeconds tolerations), requests defaulted from limits, `spec.priority` from the
  PriorityClass (Priority admission: unknown class 403; global default class; otherwise 0),
  `status` reset to Pending with its QoS class.
- Namespaces: phase Active, the `kubernetes.io/metadata.name` label.
- PriorityClasses: preemptionPolicy default; one global default at most.
- Secrets: `stringData` folded into `data`, type Opaque by default.
- Queues: Volcano's queue admission webhook (a parent that is the queue itself or does not exist;
  deserved below guarantee or above capability), on create and when the parent or quantities change.
- Kinds with a status subresource drop `status` on create (CRDs, Deployments) except Nodes,
  whose registration sets status on create.
"""

from __future__ import annotations

import base64
import functools
from collections.abc import Callable, Iterable
from decimal import Decimal
from typing import Any

from scheduler.model.resources import QuantityError, parse_quantity
from scheduler.sim.apiserver.defaults import with_defaults
from scheduler.sim.apiserver.errors import bad_request, forbidden, invalid
from scheduler.sim.apiserver.resources import ResourceInfo

Obj = dict[str, Any]
PRIORITY_CLASSES = "priorityclasses.scheduling.k8s.io"
QUEUES = "queues.scheduling.volcano.sh"
# Lookup of stored objects the admission needs: (resource key, namespace, name) -> object or None
Getter = Callable[[str, str | None, str], Obj | None]
Lister = Callable[[str], Iterable[Obj]]

SYSTEM_PRIORITY_CLASSES = (
    (
        "system-cluster-critical",
        2000000000,
        "Used for system critical pods that must run in the cluster, but can be moved to another node if necessary.",
    ),
    (
        "system-node-critical",
        2000001000,
        "Used for system critical pods that must not be moved from their current node.",
    ),
)
DEFAULT_TOLERATIONS = (
    {
        "key": "node.kubernetes.io/not-ready",
        "operator": "Exists",
        "effect": "NoExecute",
        "tolerationSeconds": 300,
    },
    {
        "key": "node.kubernetes.io/unreachable",
        "operator": "Exists",
        "effect": "NoExecute",
        "tolerationSeconds": 300,
    },
)


def prepare_create(res: ResourceInfo, obj: Obj, get: Getter, list_all: Lister) -> Obj:
    """Return the object as it will be stored (before metadata bookkeeping). Never mutates `obj`."""
    if res.key == "pods":
        return _pod_create(obj, get, list_all)
    if res.key == "namespaces":
        md = dict(obj.get("metadata") or {})
        md["labels"] = {**(md.get("labels") or {}), "kubernetes.io/metadata.name": md.get("name", "")}
        spec = obj.get("spec") or {"finalizers": ["kubernetes"]}
        return {**obj, "metadata": md, "spec": spec, "status": {"phase": "Active"}}
    if res.key == PRIORITY_CLASSES:
        return _priority_class_create(obj, list_all)
    if res.key == "secrets":
        return normalize_secret(obj)
    if res.key == "customresourcedefinitions.apiextensions.k8s.io":
        return _crd_create(obj)
    if res.key == QUEUES:
        admit_queue(obj, get)
    obj = with_defaults(res.key, obj)
    if res.has_status and not res.status_on_create:
        return {k: v for k, v in obj.items() if k != "status"}
    return obj


def normalize_secret(obj: Obj) -> Obj:
    """`stringData` is write-only: folded into `data` (base64) as the API server does; type Opaque."""
    out = {**obj, "type": obj.get("type") or "Opaque"}
    string_data = out.pop("stringData", None)
    if isinstance(string_data, dict) and string_data:
        data = dict(out.get("data") or {})
        for k, v in string_data.items():
            data[k] = base64.b64encode(str(v).encode()).decode()
        out["data"] = data
    return out


def _priority_class_create(obj: Obj, list_all: Lister) -> Obj:
    out = dict(obj)
    out.setdefault("preemptionPolicy", "PreemptLowerPriority")
    if out.get("globalDefault"):
        name = (out.get("metadata") or {}).get("name", "")
        for pc in list_all(PRIORITY_CLASSES):
            if pc.get("globalDefault") and pc["metadata"]["name"] != name:
                raise invalid(
                    "PriorityClass",
                    name,
                    [
                        (
                            "globalDefault",
                            f"Invalid value: true: globalDefault {pc['metadata']['name']} already exists",
                        )
                    ],
                    "scheduling.k8s.io",
                )
    return out


def _crd_create(obj: Obj) -> Obj:
    # accepted and established at once: there is no CRD controller to wait for
    names = (obj.get("spec") or {}).get("names") or {}
    conds = [
        {"type": t, "status": "True", "reason": r, "message": m}
        for t, r, m in (
            ("NamesAccepted", "NoConflicts", "no conflicts found"),
            ("Established", "InitialNamesAccepted", "the initial names have been accepted"),
        )
    ]
    versions = [v.get("name") for v in (obj.get("spec") or {}).get("versions") or [] if isinstance(v, dict)]
    return {
        **obj,
        "status": {
            "acceptedNames": names,
            "conditions": conds,
            "storedVersions": [v for v in versions if v][:1],
        },
    }


def global_default_class(list_all: Lister) -> Obj | None:
    for pc in list_all(PRIORITY_CLASSES):
        if pc.get("globalDefault"):
            return pc
    return None


def _pod_create(pod: Obj, get: Getter, list_all: Lister) -> Obj:
    md = pod.get("metadata") or {}
    name = md.get("name") or md.get("generateName") or ""
    spec = dict(pod.get("spec") or {})
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("securityContext", {})
    spec.setdefault("enableServiceLinks", True)
    spec.setdefault("serviceAccountName", spec.get("serviceAccount") or "default")
    spec.setdefault("serviceAccount", spec["serviceAccountName"])
    tolerations = list(spec.get("tolerations") or [])
    for t in DEFAULT_TOLERATIONS:
        if not any(
            x.get("key") == t["key"] and x.get("effect") in (None, "", "NoExecute")
            for x in tolerations
            if isinstance(x, dict)
        ):
            tolerations.append(dict(t))
    spec["tolerations"] = tolerations
    for key in ("containers", "initContainers"):
        if isinstance(spec.get(key), list):
            spec[key] = [_container_defaults(c) if isinstance(c, dict) else c for c in spec[key]]
    _resolve_priority(name, spec, get, list_all)
    out = {**pod, "spec": spec, "status": {"phase": "Pending", "qosClass": qos_class(spec)}}
    return out


def _container_defaults(c: Obj) -> Obj:
    c = dict(c)
    image = str(c.get("image") or "")
    tag = image.rsplit("/", 1)[-1]
    latest = "@" not in image and (":" not in tag or tag.endswith(":latest"))
    c.setdefault("imagePullPolicy", "Always" if latest else "IfNotPresent")
    c.setdefault("terminationMessagePath", "/dev/termination-log")
    c.setdefault("terminationMessagePolicy", "File")
    resources = dict(c.get("resources") or {})
    limits = resources.get("limits")
    if isinstance(limits, dict) and limits:
        requests = dict(resources.get("requests") or {})
        # the API server copies a limit into the request when only the limit is given
        for k, v in limits.items():
            requests.setdefault(k, v)
        resources["requests"] = requests
    c["resources"] = resources
    return c


def _resolve_priority(pod_name: str, spec: Obj, get: Getter, list_all: Lister) -> None:
    class_name = spec.get("priorityClassName")
    if class_name:
        pc = get(PRIORITY_CLASSES, None, class_name)
        if pc is None:
            raise forbidden("pods", pod_name, f"no PriorityClass with name {class_name} was found")
    else:
        pc = global_default_class(list_all)
        if pc is not None:
            spec["priorityClassName"] = pc["metadata"]["name"]
    value = int(pc.get("value", 0)) if pc is not None else 0
    if "priority" in spec and spec["priority"] is not None and spec["priority"] != value:
        raise forbidden(
            "pods",
            pod_name,
            "the integer value of priority "
            f"({spec['priority']}) must not be provided in pod spec; priority admission controller "
            f"computed {value} from the given PriorityClass name",
        )
    spec["priority"] = value
    if pc is not None and "preemptionPolicy" not in spec:
        spec["preemptionPolicy"] = pc.get("preemptionPolicy", "PreemptLowerPriority")


def qos_class(spec: Obj) -> str:
    containers = [
        c for c in (spec.get("containers") or []) + (spec.get("initContainers") or []) if isinstance(c, dict)
    ]
    any_set = False
    guaranteed = True
    for c in containers:
        r = c.get("resources") or {}
        req, lim = r.get("requests") or {}, r.get("limits") or {}
        relevant = [k for k in set(req) | set(lim) if k in ("cpu", "memory")]
        if relevant:
            any_set = True
        for k in ("cpu", "memory"):
            if k not in lim or k not in req or _q(req[k]) != _q(lim[k]):
                guaranteed = False
    if not any_set:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


def _q(value: Any) -> Decimal | None:
    if isinstance(value, str):
        return _q_text(value)
    try:
        return parse_quantity(value)
    except QuantityError:
        return None


@functools.lru_cache(maxsize=4096)
def _q_text(value: str) -> Decimal | None:
    # every pod repeats the same few quantity strings ("1", "2Gi"): parse each once
    try:
        return parse_quantity(value)
    except QuantityError:
        return None


def quantity_problems(spec: Obj) -> list[tuple[str, str]]:
    """Unparsable quantities and requests above limits, named as the real validation names them."""
    out: list[tuple[str, str]] = []
    for key in ("containers", "initContainers"):
        for i, c in enumerate(spec.get(key) or []):
            if not isinstance(c, dict):
                continue
            r = c.get("resources") or {}
            parsed: dict[str, dict[str, Decimal]] = {}
            for kind in ("limits", "requests"):
                for rname, v in (r.get(kind) or {}).items() if isinstance(r.get(kind), dict) else ():
                    q = _q(v)
                    if q is None:
                        out.append(
                            (
                                f"spec.{key}[{i}].resources.{kind}[{rname}]",
                                f"Invalid value: \"{v}\": quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
                            )
                        )
                    elif q < 0:
                        out.append(
                            (
                                f"spec.{key}[{i}].resources.{kind}[{rname}]",
                                f'Invalid value: "{v}": must be greater than or equal to 0',
                            )
                        )
                    else:
                        parsed.setdefault(kind, {})[rname] = q
            for rname, req in parsed.get("requests", {}).items():
                lim = parsed.get("limits", {}).get(rname)
                if lim is not None and req > lim:
                    out.append(
                        (
                            f"spec.{key}[{i}].resources.requests",
                            f'Invalid value: "{r["requests"][rname]}": must be less than or equal to {rname} limit of {r["limits"][rname]}',
                        )
                    )
    return out


def admit_queue(queue: Obj, get: Getter, old: Obj | None = None) -> None:
    """What Volcano's `validatequeue.volcano.sh` webhook refuses, with its messages."""
    name = str((queue.get("metadata") or {}).get("name") or "")
    spec = _mapping(queue.get("spec"))
    parent = str(spec.get("parent") or "")
    old_parent = str(_mapping((old or {}).get("spec")).get("parent") or "")
    problems: list[str] = []
    if parent not in ("", "root") and (old is None or parent != old_parent):
        if parent == name:
            problems.append(f"queue {name} cannot use itself as parent")
        elif get(QUEUES, None, parent) is None:
            problems.append(
                f'failed to get parent queue of queue {name}: queue.scheduling.volcano.sh "{parent}" not found'
            )
    # a malformed field is the schema's to refuse, not the webhook's
    deserved = _mapping(spec.get("deserved"))
    capability = _mapping(spec.get("capability"))
    guarantee = _mapping(_mapping(spec.get("guarantee")).get("resource"))
    for rname, g in guarantee.items():
        gq, dq = _q(g), _q(deserved.get(rname)) if rname in deserved else None
        if dq is None:
            problems.append(
                f'spec.deserved.{rname}: Invalid value: "<nil>": deserved[{rname}] must be >= guarantee[{rname}]={g}'
            )
        elif gq is not None and dq < gq:
            problems.append(
                f'spec.deserved.{rname}: Invalid value: "{deserved[rname]}": deserved[{rname}]={deserved[rname]} must be >= guarantee[{rname}]={g}'
            )
    for rname, d in deserved.items():
        if rname not in capability:
            continue  # no capability: not restricted
        dq, cq = _q(d), _q(capability[rname])
        if dq is not None and cq is not None and dq > cq:
            problems.append(
                f'spec.deserved.{rname}: Invalid value: "{d}": deserved[{rname}]={d} must be <= capability[{rname}]={capability[rname]}'
            )
    if problems:
        raise bad_request(
            f'admission webhook "validatequeue.volcano.sh" denied the request: {"; ".join(problems)}'
        )


def _mapping(value: Any) -> Obj:
    return value if isinstance(value, dict) else {}
