"""Every verb over HTTP with kubernetes_asyncio, the client the daemon uses."""

from __future__ import annotations

import json

import aiohttp
import pytest
from kubernetes_asyncio import client as k8s
from kubernetes_asyncio.client.exceptions import ApiException

from scheduler.sim.apiserver import ApiServer
from tests.sandbox.objects import node, pod

VOLCANO = ("scheduling.volcano.sh", "v1beta1")


def status_of(exc: ApiException) -> dict:
    return json.loads(exc.body)


async def test_crud_and_conflicts(api: k8s.ApiClient) -> None:
    core = k8s.CoreV1Api(api)
    created = await core.create_namespaced_pod("default", pod("a", labels={"app": "x"}))
    assert created.metadata.uid and created.spec.scheduler_name == "default-scheduler"
    assert created.status.phase == "Pending"
    with pytest.raises(ApiException) as exc:
        await core.create_namespaced_pod("default", pod("a"))
    assert exc.value.status == 409 and status_of(exc.value)["reason"] == "AlreadyExists"

    got = await core.read_namespaced_pod("a", "default")
    got.metadata.labels["app"] = "y"
    updated = await core.replace_namespaced_pod("a", "default", got)
    assert updated.metadata.labels == {"app": "y"}
    assert int(updated.metadata.resource_version) > int(got.metadata.resource_version)
    got.metadata.labels["app"] = "z"  # got still carries the old resourceVersion
    with pytest.raises(ApiException) as exc:
        await core.replace_namespaced_pod("a", "default", got)
    assert exc.value.status == 409 and status_of(exc.value)["reason"] == "Conflict"

    with pytest.raises(ApiException) as exc:
        await core.read_namespaced_pod("missing", "default")
    body = status_of(exc.value)
    assert (
        exc.value.status == 404 and body["kind"] == "Status" and body["message"] == 'pods "missing" not found'
    )


async def test_list_resource_version_selectors_and_pagination(api: k8s.ApiClient, server: ApiServer) -> None:
    core = k8s.CoreV1Api(api)
    for i in range(7):
        await core.create_namespaced_pod(
            "default", pod(f"p{i}", labels={"idx": str(i), "even": str(i % 2 == 0).lower()})
        )
    listed = await core.list_namespaced_pod("default")
    assert listed.metadata.resource_version == str(server.store.rv)
    assert [p.metadata.name for p in listed.items] == [f"p{i}" for i in range(7)]
    evens = await core.list_namespaced_pod("default", label_selector="even=true,idx notin (0)")
    assert [p.metadata.name for p in evens.items] == ["p2", "p4", "p6"]
    unassigned = await core.list_pod_for_all_namespaces(field_selector="spec.nodeName=,metadata.name!=p0")
    assert len(unassigned.items) == 6

    names, cont, pages = [], None, 0
    while True:
        page = await core.list_namespaced_pod("default", limit=3, _continue=cont)
        pages += 1
        names += [p.metadata.name for p in page.items]
        assert page.metadata.resource_version == listed.metadata.resource_version
        cont = page.metadata._continue
        if not cont:
            break
        assert page.metadata.remaining_item_count == 7 - len(names)
    assert pages == 3 and names == [f"p{i}" for i in range(7)]
    with pytest.raises(ApiException) as exc:
        await core.list_namespaced_pod("default", _continue="garbage!")
    assert exc.value.status == 400


async def test_patch_types(api: k8s.ApiClient, http: aiohttp.ClientSession) -> None:
    core = k8s.CoreV1Api(api)
    await core.create_namespaced_pod("default", pod("a"))
    p = await core.patch_namespaced_pod(
        "a", "default", [{"op": "add", "path": "/metadata/labels", "value": {"j": "1"}}]
    )
    assert p.metadata.labels == {"j": "1"}
    p = await core.patch_namespaced_pod("a", "default", {"metadata": {"labels": {"s": "2"}}})  # strategic
    assert p.metadata.labels == {"j": "1", "s": "2"}
    p = await core.patch_namespaced_pod(
        "a", "default", {"metadata": {"labels": {"j": None}}}, _content_type="application/merge-patch+json"
    )
    assert p.metadata.labels == {"s": "2"}
    async with http.patch(
        "/api/v1/namespaces/default/pods/a", data=b"{}", headers={"Content-Type": "text/plain"}
    ) as r:
        assert r.status == 415 and (await r.json())["reason"] == "UnsupportedMediaType"
    async with http.patch(
        "/api/v1/namespaces/default/pods/a",
        data=b"{not json",
        headers={"Content-Type": "application/merge-patch+json"},
    ) as r:
        assert r.status == 400 and (await r.json())["reason"] == "BadRequest"
    custom = k8s.CustomObjectsApi(api)
    await custom.create_cluster_custom_object(
        *VOLCANO,
        "queues",
        {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "Queue",
            "metadata": {"name": "q"},
            "spec": {"weight": 1},
        },
    )
    # kubernetes_asyncio picks json-patch for custom objects unless told: dicts need merge-patch
    q = await custom.patch_cluster_custom_object(
        *VOLCANO, "queues", "q", {"spec": {"weight": 4}}, _content_type="application/merge-patch+json"
    )
    assert q["spec"]["weight"] == 4 and q["metadata"]["generation"] == 2
    async with http.patch(
        f"/apis/{VOLCANO[0]}/{VOLCANO[1]}/queues/q",
        data=b'{"spec":{}}',
        headers={"Content-Type": "application/strategic-merge-patch+json"},
    ) as r:
        assert r.status == 415  # no strategic merge for custom resources, as on a cluster


async def test_status_subresource_isolation_over_http(api: k8s.ApiClient) -> None:
    custom = k8s.CustomObjectsApi(api)
    pg = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": "pg"},
        "spec": {"minMember": 2, "queue": "default"},
    }
    await custom.create_namespaced_custom_object(*VOLCANO, "default", "podgroups", pg)
    out = await custom.patch_namespaced_custom_object_status(
        *VOLCANO,
        "default",
        "podgroups",
        "pg",
        {"status": {"phase": "Inqueue"}, "spec": {"minMember": 9}},
        _content_type="application/merge-patch+json",
    )
    assert out["status"] == {"phase": "Inqueue"} and out["spec"]["minMember"] == 2
    out = await custom.patch_namespaced_custom_object(
        *VOLCANO,
        "default",
        "podgroups",
        "pg",
        {"status": {"phase": "Running"}, "spec": {"minMember": 3}},
        _content_type="application/merge-patch+json",
    )
    assert out["status"] == {"phase": "Inqueue"} and out["spec"]["minMember"] == 3
    core = k8s.CoreV1Api(api)
    await core.create_node(node("n1"))
    n = await core.patch_node_status("n1", {"status": {"allocatable": {"cpu": "4"}}})
    assert n.status.allocatable["cpu"] == "4" and n.status.allocatable["memory"] == "32Gi"


async def test_priority_resolution_over_http(api: k8s.ApiClient) -> None:
    sched = k8s.SchedulingV1Api(api)
    await sched.create_priority_class(
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "high"},
            "value": 100,
        }
    )
    core = k8s.CoreV1Api(api)
    p = await core.create_namespaced_pod("default", pod("a", priorityClassName="high"))
    assert p.spec.priority == 100
    with pytest.raises(ApiException) as exc:
        await core.create_namespaced_pod("default", pod("b", priorityClassName="ghost"))
    assert exc.value.status == 403 and status_of(exc.value)["reason"] == "Forbidden"


async def test_binding_and_eviction(api: k8s.ApiClient, server: ApiServer) -> None:
    core = k8s.CoreV1Api(api)
    await core.create_namespaced_pod("default", pod("a"))
    body = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": "a", "annotations": {"k": "v"}},
        "target": {"apiVersion": "v1", "kind": "Node", "name": "n1"},
    }
    resp = await core.create_namespaced_pod_binding("a", "default", body, _preload_content=False)
    assert resp.status == 201 and (await resp.json())["status"] == "Success"
    p = await core.read_namespaced_pod("a", "default")
    assert p.spec.node_name == "n1" and p.metadata.annotations == {"k": "v"}
    assert [(c.type, c.status) for c in p.status.conditions] == [("PodScheduled", "True")]
    # with _preload_content=False the client hands back error answers instead of raising
    resp = await core.create_namespaced_pod_binding("a", "default", body, _preload_content=False)
    assert resp.status == 409 and 'pod a is already assigned to node "n1"' in (await resp.json())["message"]
    resp = await core.create_namespaced_pod_binding(
        "ghost", "default", {**body, "metadata": {"name": "ghost"}}, _preload_content=False
    )
    assert resp.status == 404 and (await resp.json())["reason"] == "NotFound"

    eviction = {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": "a", "namespace": "default"},
        "deleteOptions": {"gracePeriodSeconds": 0},
    }
    resp = await core.create_namespaced_pod_eviction("a", "default", eviction, _preload_content=False)
    assert resp.status == 201
    assert server.store.get("pods", "default", "a") is None


async def test_graceful_pod_delete_over_http(api: k8s.ApiClient) -> None:
    core = k8s.CoreV1Api(api)
    await core.create_namespaced_pod("default", pod("a"))
    await core.create_namespaced_pod_binding(
        "a", "default", {"metadata": {"name": "a"}, "target": {"name": "n1"}}, _preload_content=False
    )
    await core.delete_namespaced_pod("a", "default", grace_period_seconds=10)
    p = await core.read_namespaced_pod("a", "default")
    assert p.metadata.deletion_timestamp is not None and p.metadata.deletion_grace_period_seconds == 10
    with pytest.raises(ApiException) as exc:
        await core.delete_namespaced_pod(
            "a", "default", body={"preconditions": {"uid": "nope"}}, grace_period_seconds=0
        )
    assert exc.value.status == 409
    await core.delete_namespaced_pod("a", "default", grace_period_seconds=0)
    with pytest.raises(ApiException):
        await core.read_namespaced_pod("a", "default")


async def test_generic_kinds_and_crds_are_stored(api: k8s.ApiClient) -> None:
    apps = k8s.AppsV1Api(api)
    dep = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d"},
        "spec": {
            "selector": {"matchLabels": {"a": "b"}},
            "template": {
                "metadata": {"labels": {"a": "b"}},
                "spec": {"containers": [{"name": "c", "image": "i"}]},
            },
        },
    }
    await apps.create_namespaced_deployment("default", dep)
    assert (await apps.read_namespaced_deployment("d", "default")).spec.selector.match_labels == {"a": "b"}
    ext = k8s.ApiextensionsV1Api(api)
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": {"type": "object"}},
                }
            ],
        },
    }
    out = await ext.create_custom_resource_definition(crd)
    assert [c.type for c in out.status.conditions] == ["NamesAccepted", "Established"]
    rbac = k8s.RbacAuthorizationV1Api(api)
    await rbac.create_cluster_role(
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": "system:vc"},
            "rules": [],
        }
    )
    coord = k8s.CoordinationV1Api(api)
    await coord.create_namespaced_lease(
        "kube-system",
        {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": "vc-scheduler"},
            "spec": {"holderIdentity": "me"},
        },
    )
    lease = await coord.read_namespaced_lease("vc-scheduler", "kube-system")
    assert lease.spec.holder_identity == "me"


async def test_discovery_documents(http: aiohttp.ClientSession) -> None:
    async with http.get("/api/v1") as r:
        doc = await r.json()
    pods = next(x for x in doc["resources"] if x["name"] == "pods")
    assert pods["shortNames"] == ["po"] and pods["namespaced"] is True
    assert {"pods/binding", "pods/eviction", "pods/status", "nodes/status"} <= {
        x["name"] for x in doc["resources"]
    }
    async with http.get("/apis/scheduling.volcano.sh/v1beta1") as r:
        doc = await r.json()
    by_name = {x["name"]: x for x in doc["resources"]}
    assert by_name["podgroups"]["shortNames"] == ["pg", "podgroup-v1beta1"]
    assert by_name["queues"]["namespaced"] is False and "queues/status" in by_name
    async with http.get(
        "/apis",
        headers={
            "Accept": "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json"
        },
    ) as r:
        assert r.headers["Content-Type"].startswith("application/json;g=apidiscovery.k8s.io;v=v2")
        agg = await r.json()
    groups = [g["metadata"]["name"] for g in agg["items"]]
    assert "batch.volcano.sh" in groups and agg["kind"] == "APIGroupDiscoveryList"
    async with http.get("/version") as r:
        assert (await r.json())["major"] == "1"
    async with http.get("/apis/nope/v1/things") as r:
        assert r.status == 404 and (await r.json())["kind"] == "Status"
    async with http.get(
        "/api/v1/pods", headers={"Accept": "application/vnd.kubernetes.protobuf,application/json"}
    ) as r:
        assert r.status == 200 and r.headers["Content-Type"] == "application/json"


async def test_table_output(http: aiohttp.ClientSession, server: ApiServer) -> None:
    server.store.create(pod("a"))
    accept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
    async with http.get("/api/v1/namespaces/default/pods", headers={"Accept": accept}) as r:
        table = await r.json()
    assert table["kind"] == "Table"
    assert [c["name"] for c in table["columnDefinitions"]][:5] == [
        "Name",
        "Ready",
        "Status",
        "Restarts",
        "Age",
    ]
    assert table["rows"][0]["cells"][:3] == ["a", "0/1", "Pending"]
    assert table["rows"][0]["object"]["kind"] == "PartialObjectMetadata"


async def test_pagination_scoped_to_a_namespace_and_with_selectors(
    http: aiohttp.ClientSession, server: ApiServer
) -> None:
    s = server.store
    for ns in ("a-team", "b-team"):
        s.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        for i in range(5):
            s.create(pod(f"p{i}", ns=ns, labels={"odd": str(i % 2)}))

    async def pages(path: str, **params: str) -> list[dict]:
        out, cont = [], ""
        while True:
            async with http.get(
                path, params={**params, "limit": "2", **({"continue": cont} if cont else {})}
            ) as r:
                doc = await r.json()
            out.append(doc)
            cont = doc["metadata"].get("continue", "")
            if not cont:
                return out
            # writes between pages show up in later pages (no snapshot), never break the walk
            s.create(pod(f"z{s.rv}", ns="b-team"))

    got = await pages("/api/v1/namespaces/a-team/pods")
    assert [i["metadata"]["name"] for d in got for i in d["items"]] == [f"p{i}" for i in range(5)]
    assert [d["metadata"].get("remainingItemCount") for d in got] == [3, 1, None]
    got = await pages("/api/v1/pods", labelSelector="odd=1")
    names = [(i["metadata"]["namespace"], i["metadata"]["name"]) for d in got for i in d["items"]]
    assert names == [("a-team", "p1"), ("a-team", "p3"), ("b-team", "p1"), ("b-team", "p3")]
    assert all("remainingItemCount" not in d["metadata"] for d in got)


async def test_delete_collection_and_dry_run(http: aiohttp.ClientSession, server: ApiServer) -> None:
    for i in range(3):
        server.store.create(pod(f"p{i}", labels={"batch": "1" if i < 2 else "2"}))
    async with http.post("/api/v1/namespaces/default/pods", params={"dryRun": "All"}, json=pod("dry")) as r:
        assert r.status == 201 and (await r.json())["metadata"]["name"] == "dry"
    assert server.store.get("pods", "default", "dry") is None
    async with http.delete("/api/v1/namespaces/default/pods", params={"labelSelector": "batch=1"}) as r:
        assert r.status == 200 and [i["metadata"]["name"] for i in (await r.json())["items"]] == ["p0", "p1"]
    assert [p["metadata"]["name"] for p in server.store.list("pods")] == ["p2"]
