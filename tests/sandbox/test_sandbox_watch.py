"""Watch streams: events, resume, 410 Expired, selectors, bookmarks, timeouts, faults."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import aiohttp
from kubernetes_asyncio import client as k8s
from kubernetes_asyncio import watch as k8s_watch

from scheduler.sim.apiserver import ApiServer
from tests.sandbox.objects import pod


async def read_events(
    http: aiohttp.ClientSession, path: str, n: int | None = None, timeout: float = 5.0, **params: str
) -> list[dict[str, Any]]:
    """Up to `n` watch events (all until the server ends the stream when n is None)."""
    events: list[dict[str, Any]] = []
    async with http.get(
        path, params={"watch": "true", **params}, timeout=aiohttp.ClientTimeout(total=timeout)
    ) as r:
        assert r.status == 200, await r.text()
        async for line in r.content:
            if line.strip():
                events.append(json.loads(line))
                if n is not None and len(events) >= n:
                    break
    return events


def brief(events: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(e["type"], e["object"]["metadata"].get("name", "")) for e in events]


async def test_watch_with_kubernetes_asyncio_sees_changes(api: k8s.ApiClient, server: ApiServer) -> None:
    core = k8s.CoreV1Api(api)
    listed = await core.list_namespaced_pod("default")
    w = k8s_watch.Watch()
    seen: list[tuple[str, str]] = []

    async def consume() -> None:
        async for ev in w.stream(
            core.list_namespaced_pod,
            "default",
            resource_version=listed.metadata.resource_version,
            timeout_seconds=5,
        ):
            seen.append((ev["type"], ev["object"].metadata.name))
            if len(seen) == 3:
                w.stop()

    task = asyncio.ensure_future(consume())
    await asyncio.sleep(0.1)
    server.store.create(pod("a"))
    server.store.patch("pods", "default", "a", {"metadata": {"labels": {"x": "1"}}})
    server.store.delete("pods", "default", "a")
    await asyncio.wait_for(task, 5)
    assert seen == [("ADDED", "a"), ("MODIFIED", "a"), ("DELETED", "a")]


async def test_resume_replays_history_and_watch_prefix(
    http: aiohttp.ClientSession, server: ApiServer
) -> None:
    server.store.create(pod("a"))
    rv = server.store.rv
    server.store.create(pod("b"))
    server.store.create(pod("c"))
    events = await read_events(http, "/api/v1/watch/namespaces/default/pods", n=2, resourceVersion=str(rv))
    assert brief(events) == [("ADDED", "b"), ("ADDED", "c")]
    assert events[1]["object"]["metadata"]["resourceVersion"] == str(server.store.rv)


async def test_watch_without_resource_version_starts_with_current_objects(
    http: aiohttp.ClientSession, server: ApiServer
) -> None:
    server.store.create(pod("a"))
    events = await read_events(http, "/api/v1/pods", n=1)
    assert brief(events) == [("ADDED", "a")]


async def test_too_old_resource_version_gets_410_expired(
    http: aiohttp.ClientSession, server: ApiServer
) -> None:
    rv = server.store.rv
    server.set_faults(history_size=3)
    for i in range(5):
        server.store.create(pod(f"p{i}"))
    events = await read_events(http, "/api/v1/pods", resourceVersion=str(rv))
    assert [e["type"] for e in events] == ["ERROR"]
    status = events[0]["object"]
    assert (status["kind"], status["code"], status["reason"]) == ("Status", 410, "Expired")
    recent = await read_events(http, "/api/v1/pods", n=2, resourceVersion=str(server.store.rv - 2))
    assert brief(recent) == [("ADDED", "p3"), ("ADDED", "p4")]


async def test_expire_history_fault_forces_relist_with_kubernetes_asyncio(
    api: k8s.ApiClient, server: ApiServer, http: aiohttp.ClientSession
) -> None:
    core = k8s.CoreV1Api(api)
    server.store.create(pod("a"))
    rv = (await core.list_namespaced_pod("default")).metadata.resource_version
    server.store.create(pod("b"))
    async with http.post("/sandbox/faults", json={"expire_history": True}) as r:
        assert r.status == 200
    events = await read_events(http, "/api/v1/namespaces/default/pods", resourceVersion=rv)
    assert events[0]["object"]["code"] == 410


async def test_selector_watch_turns_transitions_into_added_and_deleted(
    http: aiohttp.ClientSession, server: ApiServer
) -> None:
    rv = str(server.store.rv)
    s = server.store
    s.create(pod("a", labels={"team": "x"}))
    s.create(pod("b"))
    s.patch("pods", "default", "b", {"metadata": {"labels": {"team": "x"}}})  # starts matching
    s.patch("pods", "default", "a", {"metadata": {"labels": {"team": "y"}}})  # stops matching
    s.patch("pods", "default", "a", {"metadata": {"labels": {"other": "1"}}})  # still not matching
    s.delete("pods", "default", "b")
    events = await read_events(http, "/api/v1/pods", n=4, resourceVersion=rv, labelSelector="team=x")
    assert brief(events) == [("ADDED", "a"), ("ADDED", "b"), ("DELETED", "a"), ("DELETED", "b")]
    assert events[2]["object"]["metadata"]["labels"]["team"] == "y"  # the object as it stopped matching


async def test_field_selector_watch_for_unassigned_pods(
    http: aiohttp.ClientSession, server: ApiServer
) -> None:
    rv = str(server.store.rv)
    server.store.create(pod("a"))
    server.store.bind("default", "a", {"target": {"name": "n1"}})
    events = await read_events(http, "/api/v1/pods", n=2, resourceVersion=rv, fieldSelector="spec.nodeName=")
    assert brief(events) == [("ADDED", "a"), ("DELETED", "a")]


async def test_bookmarks_and_timeout_end_the_stream_cleanly(
    http: aiohttp.ClientSession, server: ApiServer
) -> None:
    events = await read_events(
        http,
        "/api/v1/pods",
        resourceVersion=str(server.store.rv),
        allowWatchBookmarks="true",
        timeoutSeconds="1",
    )
    assert events and {e["type"] for e in events} == {"BOOKMARK"}
    assert events[-1]["object"]["metadata"]["resourceVersion"] == str(server.store.rv)
    assert events[-1]["object"]["kind"] == "Pod"


async def test_send_initial_events_ends_with_marked_bookmark(
    http: aiohttp.ClientSession, server: ApiServer
) -> None:
    server.store.create(pod("a"))
    events = await read_events(
        http,
        "/api/v1/pods",
        n=2,
        sendInitialEvents="true",
        allowWatchBookmarks="true",
        resourceVersionMatch="NotOlderThan",
    )
    assert events[0]["type"] == "ADDED"
    assert events[1]["type"] == "BOOKMARK"
    assert events[1]["object"]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}


async def test_close_watches_fault_ends_streams(http: aiohttp.ClientSession, server: ApiServer) -> None:
    server.faults.close_watches_every = 0.3
    loop = asyncio.get_running_loop()
    started = loop.time()
    events = await read_events(http, "/api/v1/pods", resourceVersion=str(server.store.rv), timeout=5)
    assert events == [] and loop.time() - started < 2


async def test_many_watchers_get_every_event(http: aiohttp.ClientSession, server: ApiServer) -> None:
    rv = str(server.store.rv)
    readers = [
        asyncio.ensure_future(read_events(http, "/api/v1/pods", n=20, resourceVersion=rv)) for _ in range(20)
    ]
    await asyncio.sleep(0.1)
    for i in range(20):
        server.store.create(pod(f"p{i:02d}"))
    results = await asyncio.gather(*readers)
    assert all(brief(r) == [("ADDED", f"p{i:02d}") for i in range(20)] for r in results)
    assert server.active_watches == 0 or server.active_watches <= 20


async def test_watch_bad_resource_version_is_400(http: aiohttp.ClientSession) -> None:
    async with http.get("/api/v1/pods", params={"watch": "true", "resourceVersion": "abc"}) as r:
        assert r.status == 400


async def test_watchers_woken_together_each_get_their_own_events(
    server: ApiServer, http: aiohttp.ClientSession
) -> None:
    """Watchers at the same position share the chunk of their selector, never another's."""
    for ns in ("team-a", "team-b"):
        server.store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    rv = str(server.store.rv)
    paths = {
        "all": "/api/v1/pods",
        "all-2": "/api/v1/pods",
        "a": "/api/v1/namespaces/team-a/pods",
        "b": "/api/v1/namespaces/team-b/pods",
        "b-labelled": "/api/v1/namespaces/team-b/pods",
    }
    counts = {"all": 6, "all-2": 6, "a": 3, "b": 3, "b-labelled": 2}
    extra = {"b-labelled": {"labelSelector": "keep=yes"}}
    watches = {
        k: asyncio.ensure_future(read_events(http, p, counts[k], resourceVersion=rv, **extra.get(k, {})))
        for k, p in paths.items()
    }
    await asyncio.sleep(0.2)
    for i in range(3):
        for ns in ("team-a", "team-b"):
            server.store.create(pod(f"{ns}-{i}", ns=ns, labels={"keep": "yes" if i < 2 else "no"}))
        await asyncio.sleep(0.01 * i)  # some writes in one coalescing window, some apart
    got = {k: brief(await asyncio.wait_for(w, 5)) for k, w in watches.items()}
    assert (
        got["all"]
        == got["all-2"]
        == [("ADDED", f"{ns}-{i}") for i in range(3) for ns in ("team-a", "team-b")]
    )
    assert got["a"] == [("ADDED", f"team-a-{i}") for i in range(3)]
    assert got["b"] == [("ADDED", f"team-b-{i}") for i in range(3)]
    assert got["b-labelled"] == [("ADDED", "team-b-0"), ("ADDED", "team-b-1")]
