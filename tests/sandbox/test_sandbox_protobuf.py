"""The protobuf reader against bodies encoded here the way Go's generated code encodes them."""

from __future__ import annotations

import pytest

from scheduler.sim.apiserver import ApiError
from scheduler.sim.apiserver.protobuf import MAGIC, decode


def varint(n: int) -> bytes:
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field(num: int, value: bytes | int | str) -> bytes:
    if isinstance(value, int):
        return varint(num << 3) + varint(value)
    data = value.encode() if isinstance(value, str) else value
    return varint(num << 3 | 2) + varint(len(data)) + data


def entry(num: int, key: str, value: str | bytes) -> bytes:
    return field(num, field(1, key) + field(2, value))


def envelope(api_version: str, kind: str, raw: bytes) -> bytes:
    return (
        MAGIC + field(1, field(1, api_version) + field(2, kind)) + field(2, raw) + field(3, "") + field(4, "")
    )


def test_configmap_with_maps_binary_data_and_go_empty_strings() -> None:
    meta = (
        field(1, "cfg")
        + field(2, "")
        + field(3, "ns")
        + entry(11, "app", "x")
        + field(14, "f1")
        + field(14, "f2")
    )
    raw = (
        field(1, meta)
        + entry(2, "k", "v")
        + entry(2, "empty", "")
        + entry(3, "bin", b"\x00\x01")
        + field(4, 1)
    )
    obj = decode(envelope("v1", "ConfigMap", raw))
    assert obj == {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "cfg", "namespace": "ns", "labels": {"app": "x"}, "finalizers": ["f1", "f2"]},
        "data": {"k": "v", "empty": ""},
        "binaryData": {"bin": "AAE="},
        "immutable": True,
    }


def test_eviction_with_negative_and_nested_delete_options() -> None:
    opts = field(1, -1) + field(2, field(1, "uid-1")) + field(5, "All")
    obj = decode(envelope("policy/v1", "Eviction", field(1, field(1, "p")) + field(2, opts)))
    assert obj["deleteOptions"] == {
        "gracePeriodSeconds": -1,
        "preconditions": {"uid": "uid-1"},
        "dryRun": ["All"],
    }


def test_creation_timestamp_is_rfc3339() -> None:
    meta = field(1, "n") + field(8, field(1, 1_700_000_000))
    assert (
        decode(envelope("v1", "Namespace", field(1, meta)))["metadata"]["creationTimestamp"]
        == "2023-11-14T22:13:20Z"
    )


def test_unknown_kinds_and_garbage_are_refused() -> None:
    with pytest.raises(ApiError) as exc:
        decode(envelope("apps/v1", "DaemonSet", b""))
    assert exc.value.code == 415
    with pytest.raises(ApiError) as exc:
        decode(b"not protobuf")
    assert exc.value.code == 400
    with pytest.raises(ApiError) as exc:
        decode(MAGIC + b"\x0a\xff")  # a length running past the end
    assert exc.value.code == 400


def test_deployment_with_resources_strategy_and_scheduler_name() -> None:
    """Quantities (a message in a map) and IntOrString become the JSON scalars kubectl would send."""
    container = (
        field(1, "app")
        + field(2, "img:1")
        + field(3, "sleep")
        + field(3, "30")
        + field(8, entry(1, "cpu", field(1, "500m")) + entry(2, "memory", field(1, "1Gi")))
    )
    pod_spec = field(2, container) + field(19, "volcano") + entry(7, "zone", "a")
    template = field(1, entry(11, "app", "x") + field(7, 0)) + field(2, pod_spec)
    rolling = field(1, field(1, 1) + field(3, "25%")) + field(2, field(1, 0) + field(2, 2))
    spec = (
        field(1, 3)
        + field(3, template)
        + field(4, field(1, "RollingUpdate") + field(2, rolling))
        + field(7, 0)
    )
    obj = decode(envelope("apps/v1", "Deployment", field(1, field(1, "web")) + field(2, spec)))
    assert obj["spec"] == {
        "replicas": 3,
        "template": {
            "metadata": {"labels": {"app": "x"}},  # generation 0 dropped, as JSON omits it
            "spec": {
                "containers": [
                    {
                        "name": "app",
                        "image": "img:1",
                        "command": ["sleep", "30"],
                        "resources": {"limits": {"cpu": "500m"}, "requests": {"memory": "1Gi"}},
                    }
                ],
                "schedulerName": "volcano",
                "nodeSelector": {"zone": "a"},
            },
        },
        "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": 2}},
    }
