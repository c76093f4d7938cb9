"""Error answers (every one a v1 Status), fault injection and the request log."""

from __future__ import annotations

import asyncio
from pathlib import Path

import aiohttp
import pytest
from kubernetes_asyncio import client as k8s
from kubernetes_asyncio import config as k8s_config
from kubernetes_asyncio.client.exceptions import ApiException

from scheduler.sim.apiserver import ApiServer
from tests.sandbox.objects import pod

PODS = "/api/v1/namespaces/default/pods"


async def test_body_over_3_mib_is_413(http: aiohttp.ClientSession) -> None:
    big = pod("big")
    big["metadata"]["annotations"] = {"x": "a" * (3 * 1024 * 1024)}
    async with http.post(PODS, json=big) as r:
        assert r.status == 413 and (await r.json())["reason"] == "RequestEntityTooLarge"

    async def chunks():  # no Content-Length: the limit still holds
        for _ in range(4):
            yield b" " * (1024 * 1024)

    async with http.post(PODS, data=chunks(), headers={"Content-Type": "application/json"}) as r:
        assert r.status == 413


async def test_malformed_json_wrong_kind_and_bad_method(http: aiohttp.ClientSession) -> None:
    async with http.post(PODS, data=b'{"kind": "Pod", ', headers={"Content-Type": "application/json"}) as r:
        body = await r.json()
        assert r.status == 400 and body["kind"] == "Status" and body["reason"] == "BadRequest"
    async with http.post(PODS, json={"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}}) as r:
        assert r.status == 400
    async with http.post(PODS + "/a", json=pod("a")) as r:
        assert r.status == 405 and (await r.json())["reason"] == "MethodNotAllowed"
    async with http.post(PODS, json={**pod("a"), "metadata": {"name": "a", "namespace": "other"}}) as r:
        assert r.status == 400 and "does not match the namespace" in (await r.json())["message"]


async def test_invalid_names_the_field_over_http(http: aiohttp.ClientSession) -> None:
    async with http.post(PODS, json=pod("UPPER")) as r:
        body = await r.json()
    assert r.status == 422 and body["reason"] == "Invalid"
    assert body["details"]["causes"][0]["field"] == "metadata.name"


async def test_unexpected_exception_is_a_500_status_and_the_server_lives_on(
    http: aiohttp.ClientSession, server: ApiServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("bug in the store")

    monkeypatch.setattr(server.store, "create", broken)
    async with http.post(PODS, json=pod("a")) as r:
        body = await r.json()
    assert r.status == 500 and body["reason"] == "InternalError" and "bug in the store" in body["message"]
    async with http.get(PODS) as r:
        assert r.status == 200


async def test_injected_429_carries_retry_after(http: aiohttp.ClientSession, server: ApiServer) -> None:
    async with http.post(
        "/sandbox/faults", json={"error_rate": 1.0, "error_codes": [429], "retry_after": 2}
    ) as r:
        assert (await r.json())["error_rate"] == 1.0
    async with http.get(PODS) as r:
        assert r.status == 429 and r.headers["Retry-After"] == "2"
        body = await r.json()
        assert body["reason"] == "TooManyRequests" and body["details"]["retryAfterSeconds"] == 2
    async with http.get("/version") as r:  # discovery and the admin API are never faulted
        assert r.status == 200
    async with http.delete("/sandbox/faults") as r:
        assert (await r.json())["error_rate"] == 0.0
    async with http.get(PODS) as r:
        assert r.status == 200


async def test_injected_500s_at_a_rate(server: ApiServer, http: aiohttp.ClientSession) -> None:
    server.faults.error_rate = 0.5
    server.faults.error_codes = [500]
    server.faults.rng.seed(7)
    codes = []
    for _ in range(40):
        async with http.get(PODS) as r:
            codes.append(r.status)
    assert set(codes) == {200, 500} and 8 < codes.count(500) < 32
    assert server.faults.injected == codes.count(500)


async def test_latency_fault(server: ApiServer, http: aiohttp.ClientSession) -> None:
    server.set_faults(latency_ms=150)
    loop = asyncio.get_running_loop()
    t = loop.time()
    async with http.get(PODS) as r:
        assert r.status == 200
    assert loop.time() - t >= 0.14


async def test_bad_fault_knobs_are_400(http: aiohttp.ClientSession) -> None:
    async with http.post("/sandbox/faults", json={"explode": True}) as r:
        assert r.status == 400 and "unknown fault knobs" in (await r.json())["message"]
    async with http.post("/sandbox/faults", json={"error_rate": 3}) as r:
        assert r.status == 400


async def test_request_log_speaks_rbac(
    api: k8s.ApiClient, server: ApiServer, http: aiohttp.ClientSession
) -> None:
    core = k8s.CoreV1Api(api)
    await core.create_namespaced_pod("default", pod("a"))
    await core.list_pod_for_all_namespaces()
    await core.patch_namespaced_pod_status("a", "default", {"status": {"phase": "Running"}})
    await core.create_namespaced_pod_binding(
        "a", "default", {"metadata": {"name": "a"}, "target": {"name": "n"}}, _preload_content=False
    )
    await core.delete_namespaced_pod("a", "default")
    async with http.get("/api/v1/pods", params={"watch": "true", "timeoutSeconds": "0"}) as r:
        await r.read()
    async with http.get("/sandbox/requests") as r:
        items = (await r.json())["items"]
    seen = [
        (i["verb"], i["group"], i["resource"], i["subresource"], i["code"]) for i in items if i["resource"]
    ]
    assert seen == [
        ("create", "", "pods", "", 201),
        ("list", "", "pods", "", 200),
        ("patch", "", "pods", "status", 200),
        ("create", "", "pods", "binding", 201),
        ("delete", "", "pods", "", 202),
        ("watch", "", "pods", "", 200),
    ]
    assert items[0]["user_agent"] and items[0]["namespace"] == "default"
    async with http.delete("/sandbox/requests") as r:
        assert r.status == 200
    assert len(server.request_log) == 0


async def test_auth_when_required(tmp_path: Path) -> None:
    async with ApiServer(require_auth=True) as srv:
        async with aiohttp.ClientSession() as s, s.get(srv.url + PODS) as r:
            assert r.status == 401 and (await r.json())["reason"] == "Unauthorized"
        srv.write_kubeconfig(tmp_path / "kc")
        cfg = k8s.Configuration()
        await k8s_config.load_kube_config(config_file=str(tmp_path / "kc"), client_configuration=cfg)
        async with k8s.ApiClient(configuration=cfg) as c:
            assert (await k8s.CoreV1Api(c).list_namespace()).items


async def test_kubernetes_asyncio_sees_status_errors(api: k8s.ApiClient) -> None:
    with pytest.raises(ApiException) as exc:
        await k8s.CoreV1Api(api).delete_namespaced_pod("ghost", "default")
    assert exc.value.status == 404
