"""Malformed requests never crash the server: every answer is a 4xx Status, never a 500."""

from __future__ import annotations

import asyncio
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from scheduler.sim.apiserver import ApiError, Store

KINDS = [
    ("v1", "Pod"),
    ("v1", "Node"),
    ("v1", "Namespace"),
    ("v1", "ConfigMap"),
    ("v1", "Secret"),
    ("scheduling.k8s.io/v1", "PriorityClass"),
    ("scheduling.volcano.sh/v1beta1", "PodGroup"),
    ("scheduling.volcano.sh/v1beta1", "Queue"),
    ("batch.volcano.sh/v1alpha1", "Job"),
]

scalars = (
    st.none()
    | st.booleans()
    | st.integers(-5, 5)
    | st.text(max_size=4)
    | st.sampled_from(["a", "1", "-", "x.y"])
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(
                [
                    "name",
                    "labels",
                    "spec",
                    "status",
                    "containers",
                    "image",
                    "resources",
                    "limits",
                    "a",
                    "",
                    "priorityClassName",
                    "finalizers",
                    "data",
                    "stringData",
                    "metadata",
                    "generateName",
                    "namespace",
                ]
            ),
            inner,
            max_size=4,
        )
    ),
    max_leaves=12,
)
metadata = st.fixed_dictionaries(
    {"name": st.sampled_from(["a", "b-1", "", "Bad", "x" * 300])},
    optional={
        "labels": values,
        "annotations": values,
        "generateName": values,
        "finalizers": values,
        "namespace": values,
    },
)


@st.composite
def objects(draw: st.DrawFn) -> dict[str, Any]:
    api_version, kind = draw(st.sampled_from(KINDS))
    obj: dict[str, Any] = {"apiVersion": api_version, "kind": kind, "metadata": draw(metadata | values)}
    for key in draw(
        st.lists(st.sampled_from(["spec", "status", "data", "value", "stringData", "target"]), max_size=3)
    ):
        obj[key] = draw(values)
    return obj


# derandomized so CI answers the same every run; explore with a larger max_examples and without it
@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow], deadline=None, derandomize=True)
@given(objects(), values, st.sampled_from(["merge", "strategic", "json"]))
@example({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a"}, "spec": True}, None, "merge")
@example(
    {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a"}},
    {"containers": [{"name": []}]},
    "strategic",
)
def test_store_answers_malformed_objects_with_api_errors(obj: dict[str, Any], patch: Any, ptype: str) -> None:
    store = Store(history_size=10, create_defaults=False)
    store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}})
    store.create(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "a", "namespace": "default"},
            "spec": {"containers": [{"name": "c", "image": "i"}]},
        }
    )
    for op in (
        lambda: store.create(obj),
        lambda: store.update(obj),
        lambda: store.patch("pods", "default", "a", patch, ptype),
        lambda: store.patch("pods", "default", "a", patch, ptype, subresource="status"),
        lambda: store.bind("default", "a", obj),
    ):
        try:
            op()
        except ApiError as err:
            assert 400 <= err.code < 500, err.status()


async def test_http_never_answers_500_to_garbage(server: Any, http: Any) -> None:
    bodies = [
        b"",
        b"null",
        b"[]",
        b"{}",
        b'{"metadata": []}',
        b'{"kind": "Pod", "metadata": {"name": 5}}',
        b'{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a"}, "spec": []}',
        b'{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a"}, "spec": {"containers": [1]}}',
        b"\xff\xfe",
        b'{"a":' * 50,
    ]
    paths = [
        "/api/v1/namespaces/default/pods",
        "/api/v1/namespaces/default/pods/a",
        "/api/v1/nodes/n",
        "/api/v1/namespaces/default/pods/a/binding",
        "/api/v1/namespaces/default/pods/a/eviction",
        "/apis/scheduling.volcano.sh/v1beta1/namespaces/default/podgroups/a/status",
        "/api/v1/namespaces/default/pods/a/status",
        "/api/v1/namespaces/ghost/pods",
    ]
    headers = [
        {"Content-Type": "application/json"},
        {"Content-Type": "application/merge-patch+json"},
        {"Content-Type": "application/json-patch+json"},
        {"Content-Type": "application/apply-patch+yaml"},
        {"Content-Type": "application/vnd.kubernetes.protobuf"},
    ]
    server.store.create(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "a", "namespace": "default"},
            "spec": {"containers": [{"name": "c", "image": "i"}]},
        }
    )
    for method in ("POST", "PUT", "PATCH", "DELETE"):
        for path in paths:
            for body in bodies:
                for h in headers:
                    async with http.request(
                        method, path, data=body, headers=h, params={"fieldManager": "fuzz"}
                    ) as r:
                        doc = await r.json(content_type=None)
                        assert r.status < 500, (method, path, body, h, doc)
    async with http.get("/api/v1/pods") as r:
        assert r.status == 200
    await asyncio.sleep(0)
