"""Validation the real API server does before anything is stored, with its field names and wording.

Only what a client can trip over in practice: names (DNS-1123 subdomain, or label for
namespaces), required fields of the kinds the project writes, and pod spec immutability. The
point is that a malformed object sent by the daemon fails in the sandbox the way it would in a
cluster, with a 422 that names the field.
"""

from __future__ import annotations

import re
from typing import Any

from scheduler.model.convert import ConvertError, hypernode_to_spec
from scheduler.sim.apiserver.admission import quantity_problems
from scheduler.sim.apiserver.errors import ApiError, bad_request, invalid
from scheduler.sim.apiserver.resources import ResourceInfo

_LABEL_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_SUBDOMAIN_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_QUALIFIED_RE = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_LABEL_VALUE_RE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")

SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character (e.g. 'example.com', regex used for "
    "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must "
    "start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for "
    "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)

# kinds whose names are DNS-1123 labels (63 characters) rather than subdomains
LABEL_NAMED = frozenset({"namespaces", "services"})
# kinds whose names are "path segments" (anything but / and %) in the real server
PATH_NAMED = frozenset({"clusterroles", "clusterrolebindings", "roles", "rolebindings"})
# pod spec fields an update may change (everything else is immutable once created)
POD_MUTABLE_SPEC = frozenset(
    {"activeDeadlineSeconds", "tolerations", "schedulingGates", "terminationGracePeriodSeconds"}
)


def name_problem(res: ResourceInfo, name: str) -> str | None:
    if res.plural in PATH_NAMED:
        if name in (".", "..") or "/" in name or "%" in name:
            return f"Invalid value: \"{name}\": may not contain '/' or '%'"
        return None
    if res.plural in LABEL_NAMED:
        if len(name) > 63:
            return f'Invalid value: "{name}": must be no more than 63 characters'
        if not _LABEL_RE.match(name):
            return f'Invalid value: "{name}": {LABEL_MSG}'
        return None
    if len(name) > 253:
        return f'Invalid value: "{name}": must be no more than 253 characters'
    if not _SUBDOMAIN_RE.match(name):
        return f'Invalid value: "{name}": {SUBDOMAIN_MSG}'
    return None


# label (key, value) pairs found valid: a job's pods share most of theirs (emptied when full)
_VALID_LABELS: set[tuple[str, str]] = set()
_VALID_LABELS_SIZE = 65_536


def _labels_problems(md: dict[str, Any]) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    labels = md.get("labels") or {}
    if not isinstance(labels, dict):
        return [("metadata.labels", "Invalid value: must be a map of strings")]
    for k, v in labels.items():
        if isinstance(v, str) and (k, v) in _VALID_LABELS:
            continue
        before = len(out)
        prefix, _, base = k.rpartition("/")
        if (
            not base
            or len(base) > 63
            or not _QUALIFIED_RE.match(base)
            or (prefix and not _SUBDOMAIN_RE.match(prefix))
        ):
            out.append(
                (
                    "metadata.labels",
                    f"Invalid value: \"{k}\": name part must consist of alphanumeric characters, '-', '_' or '.'",
                )
            )
        if not isinstance(v, str) or len(v) > 63 or not _LABEL_VALUE_RE.match(v):
            out.append(
                (
                    "metadata.labels",
                    f"Invalid value: \"{v}\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.'",
                )
            )
        if len(out) == before:
            if len(_VALID_LABELS) >= _VALID_LABELS_SIZE:
                _VALID_LABELS.clear()
            _VALID_LABELS.add((k, v))
    ann = md.get("annotations") or {}
    if not isinstance(ann, dict) or any(not isinstance(v, str) for v in ann.values()):
        out.append(("metadata.annotations", "Invalid value: annotation values must be strings"))
    return out


def validate(res: ResourceInfo, obj: dict[str, Any], spec_known: bool = False) -> None:
    """Raise 422 Invalid naming every offending field of `obj` (already defaulted). `spec_known`:
    the kind's own checks passed on this very (defaulted) content before, only the metadata is asked."""
    md = obj.get("metadata") or {}
    name = str(md.get("name") or "")
    causes: list[tuple[str, str]] = []
    if not name:
        causes.append(("metadata.name", "Required value: name or generateName is required"))
    elif (why := name_problem(res, name)) is not None:
        causes.append(("metadata.name", why))
    causes += _labels_problems(md)
    check = None if spec_known else _KIND_CHECKS.get(res.key)
    if check is not None:
        causes += check(obj)
    if causes:
        raise invalid(res.kind, name, causes, res.group)


def _pod(obj: dict[str, Any]) -> list[tuple[str, str]]:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return [("spec", "Required value")]
    containers = spec.get("containers")
    if not containers or not isinstance(containers, list):
        return [("spec.containers", "Required value")]
    out: list[tuple[str, str]] = quantity_problems(spec)
    seen: set[str] = set()
    for i, c in enumerate(containers):
        if not isinstance(c, dict):
            out.append((f"spec.containers[{i}]", "Invalid value: must be an object"))
            continue
        cname = c.get("name")
        if not cname:
            out.append((f"spec.containers[{i}].name", "Required value"))
        elif not _LABEL_RE.match(str(cname)):
            out.append((f"spec.containers[{i}].name", f'Invalid value: "{cname}": {LABEL_MSG}'))
        elif cname in seen:
            out.append((f"spec.containers[{i}].name", f'Duplicate value: "{cname}"'))
        seen.add(str(cname))
        if not c.get("image"):
            out.append((f"spec.containers[{i}].image", "Required value"))
        res = c.get("resources") or {}
        for kind in ("limits", "requests"):
            if not isinstance(res.get(kind) or {}, dict):
                out.append((f"spec.containers[{i}].resources.{kind}", "Invalid value: must be a map"))
    return out


def _priority_class(obj: dict[str, Any]) -> list[tuple[str, str]]:
    if not isinstance(obj.get("value"), int) or isinstance(obj.get("value"), bool):
        return [("value", "Required value: value must be an integer")]
    return []


def _node(obj: dict[str, Any]) -> list[tuple[str, str]]:
    taints = (obj.get("spec") or {}).get("taints") or []
    out = []
    for i, t in enumerate(taints):
        if not isinstance(t, dict) or not t.get("key"):
            out.append((f"spec.taints[{i}].key", "Required value"))
        elif t.get("effect") not in ("NoSchedule", "PreferNoSchedule", "NoExecute"):
            out.append(
                (
                    f"spec.taints[{i}].effect",
                    f'Unsupported value: "{t.get("effect")}": supported values: "NoSchedule", "PreferNoSchedule", "NoExecute"',
                )
            )
    return out


def _hypernode(obj: dict[str, Any]) -> list[tuple[str, str]]:
    """The HyperNode CRD's schema rules (tier >= 0, member types, one selector each)."""
    try:
        hypernode_to_spec(obj)
    except ConvertError as exc:
        where, _, why = str(exc).partition(": ")
        return [("spec", f"Invalid value: {why or where}")]
    return []


_KIND_CHECKS = {
    "hypernodes.topology.volcano.sh": _hypernode,
    "pods": _pod,
    "priorityclasses.scheduling.k8s.io": _priority_class,
    "nodes": _node,
}


def check_pod_update(old: dict[str, Any], new: dict[str, Any]) -> None:
    """The real server forbids changing a pod's spec except images and a few fields."""
    old_spec = dict(old.get("spec") or {})
    new_spec = dict(new.get("spec") or {})
    for key in POD_MUTABLE_SPEC:
        old_spec.pop(key, None)
        new_spec.pop(key, None)
    for key in ("containers", "initContainers"):
        old_spec[key] = [{k: v for k, v in c.items() if k != "image"} for c in old_spec.get(key) or []]
        new_spec[key] = [{k: v for k, v in c.items() if k != "image"} for c in new_spec.get(key) or []]
    if old_spec != new_spec:
        name = (new.get("metadata") or {}).get("name", "")
        changed = sorted(k for k in set(old_spec) | set(new_spec) if old_spec.get(k) != new_spec.get(k))
        raise invalid(
            "Pod",
            name,
            [
                (
                    "spec",
                    "Forbidden: pod updates may not change fields other than "
                    "`spec.containers[*].image`,`spec.initContainers[*].image`,"
                    "`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions "
                    "to existing tolerations),`spec.terminationGracePeriodSeconds` "
                    f"(allow it to be set to 1 if it was previously negative) (changed: {', '.join(changed)})",
                )
            ],
        )


def check_immutable_name(res: ResourceInfo, url_name: str, body: dict[str, Any]) -> ApiError | None:
    body_name = (body.get("metadata") or {}).get("name")
    if body_name and body_name != url_name:
        return bad_request(
            f"the name of the object ({body_name}) does not match the name on the URL ({url_name})"
        )
    return None


# Top-level fields the real server decodes into Go structs or maps: a body where one of them has the
# wrong JSON type never reaches validation, it fails to decode (400 BadRequest).
_STRUCT_FIELDS = ("spec", "status")
_STRING_MAP_FIELDS = {"configmaps": ("data", "binaryData"), "secrets": ("data", "stringData")}
_GO_TYPES = {bool: "bool", int: "number", float: "number", str: "string", list: "array", dict: "object"}


def _unmarshal_error(kind: str, field: str, value: Any, want: str) -> ApiError:
    got = _GO_TYPES.get(type(value), "value")
    return bad_request(f"json: cannot unmarshal {got} into Go struct field {kind}.{field} of type {want}")


def check_decodable(res: ResourceInfo, obj: dict[str, Any], spec_known: bool = False) -> None:
    """Raise 400 when `obj` could not be decoded into its kind's Go type (wrong JSON type of a field).
    `spec_known`: a pod spec with this very content was found decodable before."""
    md = obj.get("metadata")
    if md is not None and not isinstance(md, dict):
        raise _unmarshal_error(res.kind, "metadata", md, "v1.ObjectMeta")
    for key in ("name", "namespace", "generateName", "resourceVersion", "uid"):
        value = (md or {}).get(key)
        if value is not None and not isinstance(value, str):
            raise _unmarshal_error(res.kind, f"metadata.{key}", value, "string")
    for key in ("labels", "annotations"):
        value = (md or {}).get(key)
        if value is not None and (
            not isinstance(value, dict) or any(not isinstance(v, str) for v in value.values())
        ):
            raise _unmarshal_error(res.kind, f"metadata.{key}", value, "map[string]string")
    fin = (md or {}).get("finalizers")
    if fin is not None and (not isinstance(fin, list) or any(not isinstance(f, str) for f in fin)):
        raise _unmarshal_error(res.kind, "metadata.finalizers", fin, "[]string")
    string_maps = _STRING_MAP_FIELDS.get(res.key, ())
    for key in string_maps:
        value = obj.get(key)
        if value is not None and (
            not isinstance(value, dict) or any(not isinstance(v, str) for v in value.values())
        ):
            raise _unmarshal_error(res.kind, key, value, "map[string]string")
    if not string_maps:
        for key in _STRUCT_FIELDS:
            value = obj.get(key)
            if value is not None and not isinstance(value, dict):
                raise _unmarshal_error(res.kind, key, value, f"v1.{res.kind}{key.capitalize()}")
    if res.key == "pods" and not spec_known and isinstance(obj.get("spec"), dict):
        _check_pod_spec_decodable(obj["spec"])


_POD_LIST_FIELDS = {
    "containers": "v1.Container",
    "initContainers": "v1.Container",
    "tolerations": "v1.Toleration",
    "volumes": "v1.Volume",
    "topologySpreadConstraints": "v1.TopologySpreadConstraint",
    "schedulingGates": "v1.PodSchedulingGate",
}
_POD_STRING_FIELDS = (
    "nodeName",
    "schedulerName",
    "priorityClassName",
    "serviceAccountName",
    "serviceAccount",
    "restartPolicy",
    "dnsPolicy",
    "preemptionPolicy",
)


def _check_pod_spec_decodable(spec: dict[str, Any]) -> None:
    for key, elem in _POD_LIST_FIELDS.items():
        value = spec.get(key)
        if value is None:
            continue
        if not isinstance(value, list):
            raise _unmarshal_error("Pod", f"spec.{key}", value, f"[]{elem}")
        for item in value:
            if not isinstance(item, dict):
                raise _unmarshal_error("Pod", f"spec.{key}", item, elem)
    for key in _POD_STRING_FIELDS:
        value = spec.get(key)
        if value is not None and not isinstance(value, str):
            raise _unmarshal_error("Pod", f"spec.{key}", value, "string")
    sel = spec.get("nodeSelector")
    if sel is not None and (not isinstance(sel, dict) or any(not isinstance(v, str) for v in sel.values())):
        raise _unmarshal_error("Pod", "spec.nodeSelector", sel, "map[string]string")
    for key in ("affinity", "securityContext", "overhead"):
        value = spec.get(key)
        if value is not None and not isinstance(value, dict):
            raise _unmarshal_error("Pod", f"spec.{key}", value, "object")
    for key in ("priority", "terminationGracePeriodSeconds", "activeDeadlineSeconds"):
        value = spec.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise _unmarshal_error("Pod", f"spec.{key}", value, "int64")
    for c in (spec.get("containers") or []) + (spec.get("initContainers") or []):
        resources = c.get("resources")
        if resources is None:
            continue
        if not isinstance(resources, dict):
            raise _unmarshal_error("Pod", "spec.containers.resources", resources, "v1.ResourceRequirements")
        for kind in ("limits", "requests"):
            value = resources.get(kind)
            if value is not None and (
                not isinstance(value, dict)
                or any(isinstance(q, bool) or not isinstance(q, (str, int, float)) for q in value.values())
            ):
                raise _unmarshal_error("Pod", f"spec.containers.resources.{kind}", value, "v1.ResourceList")
