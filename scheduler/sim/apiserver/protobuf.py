"""Reading the Kubernetes protobuf encoding for the few bodies kubectl sends that way.

kubectl 1.35's typed clients send `application/vnd.kubernetes.protobuf` bodies for built-in kinds
(`kubectl create namespace|configmap|secret|serviceaccount|priorityclass|role|clusterrole|
rolebinding|clusterrolebinding|deployment|job`, `kubectl run`, the Eviction of `kubectl drain`,
helm's release Secrets) and do not fall back to JSON. The encoding is the magic `k8s\\0` and a `runtime.Unknown` {typeMeta, raw} whose raw bytes are the
object's message. Messages are described here by field number (from the upstream
`generated.proto` files) and decoded into the same dicts a JSON body gives. Kinds not described
here answer 415, which names the media types the sandbox reads.
"""

from __future__ import annotations

import base64
from datetime import UTC, datetime
from typing import Any

from scheduler.sim.apiserver.errors import ApiError, bad_request

MAGIC = b"k8s\x00"
MEDIA_TYPE = "application/vnd.kubernetes.protobuf"

# A schema maps field number -> (json name, type). Types: "string", "bytes", "bool", "int",
# "int0"/"bool0" (an int or bool JSON omits when zero or false), "time", "raw" (bytes kept as bytes), a nested schema (dict), ("repeated", type) or ("map", value type).
Schema = dict[int, tuple[str, Any]]

TIME: Schema = {1: ("seconds", "int"), 2: ("nanos", "int")}
OWNER_REFERENCE: Schema = {
    5: ("apiVersion", "string"),
    1: ("kind", "string"),
    3: ("name", "string"),
    4: ("uid", "string"),
    6: ("controller", "bool"),
    7: ("blockOwnerDeletion", "bool"),
}
OBJECT_META: Schema = {
    1: ("name", "string"),
    2: ("generateName", "string"),
    3: ("namespace", "string"),
    4: ("selfLink", "string"),
    5: ("uid", "string"),
    6: ("resourceVersion", "string"),
    7: ("generation", "int0"),
    8: ("creationTimestamp", "time"),
    9: ("deletionTimestamp", "time"),
    10: ("deletionGracePeriodSeconds", "int"),
    11: ("labels", ("map", "string")),
    12: ("annotations", ("map", "string")),
    13: ("ownerReferences", ("repeated", OWNER_REFERENCE)),
    14: ("finalizers", ("repeated", "string")),
}
OBJECT_REFERENCE: Schema = {
    1: ("kind", "string"),
    2: ("namespace", "string"),
    3: ("name", "string"),
    4: ("uid", "string"),
    5: ("apiVersion", "string"),
    6: ("resourceVersion", "string"),
    7: ("fieldPath", "string"),
}
DELETE_OPTIONS: Schema = {
    1: ("gracePeriodSeconds", "int"),
    2: ("preconditions", {1: ("uid", "string"), 2: ("resourceVersion", "string")}),
    3: ("orphanDependents", "bool"),
    4: ("propagationPolicy", "string"),
    5: ("dryRun", ("repeated", "string")),
}
LABEL_SELECTOR: Schema = {
    1: ("matchLabels", ("map", "string")),
    2: (
        "matchExpressions",
        (
            "repeated",
            {1: ("key", "string"), 2: ("operator", "string"), 3: ("values", ("repeated", "string"))},
        ),
    ),
}
POLICY_RULE: Schema = {
    1: ("verbs", ("repeated", "string")),
    2: ("apiGroups", ("repeated", "string")),
    3: ("resources", ("repeated", "string")),
    4: ("resourceNames", ("repeated", "string")),
    5: ("nonResourceURLs", ("repeated", "string")),
}
SUBJECT: Schema = {
    1: ("kind", "string"),
    2: ("apiGroup", "string"),
    3: ("name", "string"),
    4: ("namespace", "string"),
}
ROLE_REF: Schema = {1: ("apiGroup", "string"), 2: ("kind", "string"), 3: ("name", "string")}
BINDINGS: Schema = {
    1: ("metadata", OBJECT_META),
    2: ("subjects", ("repeated", SUBJECT)),
    3: ("roleRef", ROLE_REF),
}

# The pod template as `kubectl create deployment|job|statefulset` fills it, plus the fields a user
# sets most (resources, env, ports, nodeSelector, tolerations, priority); others are dropped.
QUANTITY: Schema = {1: ("string", "string")}
KEY_VALUE: Schema = {1: ("name", "string"), 2: ("value", "string")}
CONTAINER: Schema = {
    1: ("name", "string"),
    2: ("image", "string"),
    3: ("command", ("repeated", "string")),
    4: ("args", ("repeated", "string")),
    5: ("workingDir", "string"),
    6: (
        "ports",
        (
            "repeated",
            {
                1: ("name", "string"),
                2: ("hostPort", "int0"),
                3: ("containerPort", "int"),
                4: ("protocol", "string"),
            },
        ),
    ),
    7: ("env", ("repeated", KEY_VALUE)),
    8: ("resources", {1: ("limits", ("map", QUANTITY)), 2: ("requests", ("map", QUANTITY))}),
    13: ("terminationMessagePath", "string"),
    14: ("imagePullPolicy", "string"),
    20: ("terminationMessagePolicy", "string"),
}
TOLERATION: Schema = {
    1: ("key", "string"),
    2: ("operator", "string"),
    3: ("value", "string"),
    4: ("effect", "string"),
    5: ("tolerationSeconds", "int"),
}
POD_SPEC: Schema = {
    2: ("containers", ("repeated", CONTAINER)),
    3: ("restartPolicy", "string"),
    4: ("terminationGracePeriodSeconds", "int"),
    5: ("activeDeadlineSeconds", "int"),
    6: ("dnsPolicy", "string"),
    7: ("nodeSelector", ("map", "string")),
    8: ("serviceAccountName", "string"),
    10: ("nodeName", "string"),
    19: ("schedulerName", "string"),
    20: ("initContainers", ("repeated", CONTAINER)),
    22: ("tolerations", ("repeated", TOLERATION)),
    24: ("priorityClassName", "string"),
    25: ("priority", "int"),
}
POD_TEMPLATE: Schema = {1: ("metadata", OBJECT_META), 2: ("spec", POD_SPEC)}
INT_OR_STRING: Schema = {1: ("type", "int"), 2: ("intVal", "int"), 3: ("strVal", "string")}


def _workload(spec: Schema) -> Schema:
    return {1: ("metadata", OBJECT_META), 2: ("spec", spec)}


# (apiVersion, kind) -> schema of the object
KINDS: dict[tuple[str, str], Schema] = {
    ("v1", "Namespace"): {
        1: ("metadata", OBJECT_META),
        2: ("spec", {1: ("finalizers", ("repeated", "string"))}),
        3: ("status", {1: ("phase", "string")}),
    },
    ("v1", "ConfigMap"): {
        1: ("metadata", OBJECT_META),
        2: ("data", ("map", "string")),
        3: ("binaryData", ("map", "bytes")),
        4: ("immutable", "bool"),
    },
    ("v1", "Secret"): {
        1: ("metadata", OBJECT_META),
        2: ("data", ("map", "bytes")),
        3: ("type", "string"),
        4: ("stringData", ("map", "string")),
        5: ("immutable", "bool"),
    },
    ("v1", "ServiceAccount"): {
        1: ("metadata", OBJECT_META),
        2: ("secrets", ("repeated", OBJECT_REFERENCE)),
        3: ("imagePullSecrets", ("repeated", {1: ("name", "string")})),
        4: ("automountServiceAccountToken", "bool"),
    },
    ("v1", "Binding"): {1: ("metadata", OBJECT_META), 2: ("target", OBJECT_REFERENCE)},
    ("v1", "DeleteOptions"): DELETE_OPTIONS,
    ("policy/v1", "Eviction"): {1: ("metadata", OBJECT_META), 2: ("deleteOptions", DELETE_OPTIONS)},
    ("scheduling.k8s.io/v1", "PriorityClass"): {
        1: ("metadata", OBJECT_META),
        2: ("value", "int"),
        3: ("globalDefault", "bool"),
        4: ("description", "string"),
        5: ("preemptionPolicy", "string"),
    },
    ("rbac.authorization.k8s.io/v1", "Role"): {
        1: ("metadata", OBJECT_META),
        2: ("rules", ("repeated", POLICY_RULE)),
    },
    ("rbac.authorization.k8s.io/v1", "ClusterRole"): {
        1: ("metadata", OBJECT_META),
        2: ("rules", ("repeated", POLICY_RULE)),
        3: ("aggregationRule", {1: ("clusterRoleSelectors", ("repeated", LABEL_SELECTOR))}),
    },
    ("v1", "Pod"): {1: ("metadata", OBJECT_META), 2: ("spec", POD_SPEC)},
    ("apps/v1", "Deployment"): _workload(
        {
            1: ("replicas", "int"),
            2: ("selector", LABEL_SELECTOR),
            3: ("template", POD_TEMPLATE),
            4: (
                "strategy",
                {
                    1: ("type", "string"),
                    2: (
                        "rollingUpdate",
                        {1: ("maxUnavailable", INT_OR_STRING), 2: ("maxSurge", INT_OR_STRING)},
                    ),
                },
            ),
            5: ("minReadySeconds", "int0"),
            6: ("revisionHistoryLimit", "int"),
            7: ("paused", "bool0"),
            9: ("progressDeadlineSeconds", "int"),
        }
    ),
    ("apps/v1", "StatefulSet"): _workload(
        {
            1: ("replicas", "int"),
            2: ("selector", LABEL_SELECTOR),
            3: ("template", POD_TEMPLATE),
            5: ("serviceName", "string"),
            6: ("podManagementPolicy", "string"),
        }
    ),
    ("batch/v1", "Job"): _workload(
        {
            1: ("parallelism", "int"),
            2: ("completions", "int"),
            3: ("activeDeadlineSeconds", "int"),
            4: ("selector", LABEL_SELECTOR),
            5: ("manualSelector", "bool"),
            6: ("template", POD_TEMPLATE),
            7: ("backoffLimit", "int"),
            8: ("ttlSecondsAfterFinished", "int"),
            9: ("completionMode", "string"),
            10: ("suspend", "bool"),
        }
    ),
    ("rbac.authorization.k8s.io/v1", "RoleBinding"): BINDINGS,
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"): BINDINGS,
}
UNKNOWN: Schema = {
    1: ("typeMeta", {1: ("apiVersion", "string"), 2: ("kind", "string")}),
    2: ("raw", "raw"),
    3: ("contentEncoding", "string"),
    4: ("contentType", "string"),
}


def _varint(data: bytes, i: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        if i >= len(data):
            raise ValueError("truncated varint")
        b = data[i]
        i += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, i
        shift += 7
        if shift > 63:
            raise ValueError("varint too long")


def _fields(data: bytes) -> list[tuple[int, int, Any]]:
    """(field number, wire type, value) for each field of one message."""
    out: list[tuple[int, int, Any]] = []
    i = 0
    while i < len(data):
        key, i = _varint(data, i)
        num, wire = key >> 3, key & 7
        if wire == 0:
            value, i = _varint(data, i)
        elif wire == 2:
            length, i = _varint(data, i)
            if i + length > len(data):
                raise ValueError("truncated field")
            value, i = data[i : i + length], i + length
        elif wire == 1:
            value, i = data[i : i + 8], i + 8
        elif wire == 5:
            value, i = data[i : i + 4], i + 4
        else:
            raise ValueError(f"unsupported wire type {wire}")
        out.append((num, wire, value))
    return out


def _scalar(kind: str, value: Any) -> Any:
    if kind == "string":
        return bytes(value).decode()
    if kind == "bytes":
        return base64.b64encode(bytes(value)).decode()  # as JSON carries []byte
    if kind == "raw":
        return bytes(value)
    if kind in ("bool", "bool0"):
        return bool(value)
    if kind in ("int", "int0"):
        return value - (1 << 64) if value >= 1 << 63 else value  # two's complement int64/int32
    raise ValueError(f"unknown scalar kind {kind}")


def decode_message(data: bytes, schema: Schema) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for num, _, value in _fields(data):
        spec = schema.get(num)
        if spec is None:
            continue  # fields this reader does not know are dropped, as an older server would
        name, kind = spec
        if isinstance(kind, tuple) and kind[0] == "repeated":
            out.setdefault(name, []).append(_value(kind[1], value))
        elif isinstance(kind, tuple) and kind[0] == "map":
            entry = {n: v for n, _, v in _fields(value)}
            key = bytes(entry.get(1, b"")).decode()
            out.setdefault(name, {})[key] = _map_value(kind[1], entry.get(2, b""))
        elif (
            (kind == "string" and not value)
            or (kind in ("int0", "bool0") and not value)
            or (kind == "time" and not decode_message(value, TIME))
        ):
            # Go writes empty strings, zero non-pointer ints and zero times; JSON (omitempty) leaves them out
            continue
        else:
            out[name] = _value(kind, value)
    return out


def _map_value(kind: Any, value: Any) -> Any:
    if kind is QUANTITY:  # a resource.Quantity is its string in JSON
        return decode_message(value, QUANTITY).get("string", "0")
    return _value(kind, value)


def _value(kind: Any, value: Any) -> Any:
    if kind is INT_OR_STRING:  # JSON carries the int or the string itself
        v = decode_message(value, INT_OR_STRING)
        return v.get("strVal", "") if v.get("type") == 1 else v.get("intVal", 0)
    if isinstance(kind, dict):
        return decode_message(value, kind)
    if kind == "time":
        t = decode_message(value, TIME)
        return datetime.fromtimestamp(t.get("seconds", 0), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return _scalar(kind, value)


def decode(body: bytes) -> dict[str, Any]:
    """A protobuf-encoded object as the dict its JSON encoding would give."""
    if not body.startswith(MAGIC):
        raise bad_request("the protobuf body does not start with the Kubernetes magic number")
    try:
        envelope = decode_message(body[len(MAGIC) :], UNKNOWN)
        type_meta = envelope.get("typeMeta") or {}
        api_version, kind = type_meta.get("apiVersion", ""), type_meta.get("kind", "")
        schema = KINDS.get((api_version, kind))
        if schema is None:
            raise ApiError(
                415,
                "UnsupportedMediaType",
                f"the sandbox reads protobuf bodies only for {sorted(k for _, k in KINDS)}, not {api_version} {kind}; "
                "send JSON (e.g. kubectl apply -f / kubectl create -f)",
            )
        obj = decode_message(envelope.get("raw", b""), schema)
    except (ValueError, UnicodeDecodeError) as exc:
        raise bad_request(f"the protobuf body cannot be decoded: {exc}") from None
    return {"apiVersion": api_version, "kind": kind, **obj}
