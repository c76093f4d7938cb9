"""List + watch: pages are delivered, a relist after 410 turns vanished objects into deletions and
skips unchanged ones, bookmarks move the resume point, errors back off and recover."""

from __future__ import annotations

import asyncio
import random
from typing import Any

from scheduler.kube.client import ApiError
from scheduler.kube.informer import Backoff, Informer, Resource
from tests.daemon.fakes import FakeClient


class Recorder:
    def __init__(self) -> None:
        self.upserts: list[str] = []
        self.deletes: list[str] = []

    def upsert(self, obj: dict[str, Any]) -> None:
        if obj["metadata"].get("name") == "explode":
            raise RuntimeError("handler bug")
        self.upserts.append(f"{obj['metadata']['name']}@{obj['metadata']['resourceVersion']}")

    def delete(self, key: str, obj: dict[str, Any] | None) -> None:
        self.deletes.append(key)


def cm(name: str, rv: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns", "resourceVersion": rv}}


def pages(*lists: list[dict[str, Any]], rv: str = "10") -> Any:
    calls = {"n": 0}

    def answer(_body: Any, query: Any) -> dict[str, Any]:
        i = calls["n"] if query.get("continue") else 0
        calls["n"] = i + 1
        cont = str(i + 1) if i + 1 < len(lists) else ""
        return {"metadata": {"resourceVersion": rv, "continue": cont}, "items": lists[i]}

    return answer


async def run_until(inf: Informer, cond: Any, timeout: float = 2.0) -> None:
    task = asyncio.ensure_future(inf.run())
    try:
        for _ in range(int(timeout / 0.005)):
            if cond():
                return
            await asyncio.sleep(0.005)
        raise AssertionError("condition not reached")
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_paginated_list_then_watch_from_the_list_version() -> None:
    client, rec = FakeClient(), Recorder()
    client.on("GET", "/api/v1/configmaps", pages([cm("a", "1"), cm("b", "2")], [cm("c", "3")], rv="10"))
    client.watch_scripts = [
        [
            {"type": "ADDED", "object": cm("d", "11")},
            {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "15"}}},
            {"type": "DELETED", "object": cm("a", "16")},
        ]
    ]
    inf = Informer(client, Resource("ConfigMap", "/api/v1/configmaps"), rec, page_size=2)  # type: ignore[arg-type]
    await run_until(inf, lambda: rec.deletes)
    assert inf.synced.is_set()
    assert rec.upserts == ["a@1", "b@2", "c@3", "d@11"]
    assert rec.deletes == ["ns/a"]
    watch_q = next(c[2] for c in client.calls if c[0] == "WATCH")
    assert watch_q["resourceVersion"] == "10" and watch_q["allowWatchBookmarks"] == "true"
    assert inf.resource_version == "16"


async def test_expired_history_relists_and_reports_what_vanished() -> None:
    client, rec = FakeClient(), Recorder()
    lists = iter([[cm("a", "1"), cm("b", "2")], [cm("b", "2"), cm("c", "5")]])
    client.on(
        "GET",
        "/api/v1/configmaps",
        lambda _b, _q: {"metadata": {"resourceVersion": "9"}, "items": next(lists)},
    )
    client.watch_scripts = [
        [{"type": "ERROR", "object": {"kind": "Status", "code": 410, "reason": "Expired"}}]
    ]
    inf = Informer(client, Resource("ConfigMap", "/api/v1/configmaps"), rec)  # type: ignore[arg-type]
    await run_until(inf, lambda: inf.relists == 2)
    assert rec.upserts == ["a@1", "b@2", "c@5"]  # b unchanged: not delivered again
    assert rec.deletes == ["ns/a"]


async def test_errors_back_off_and_a_handler_bug_does_not_stop_the_stream() -> None:
    client, rec = FakeClient(), Recorder()
    client.on("GET", "/api/v1/configmaps", lambda _b, _q: {"metadata": {"resourceVersion": "1"}, "items": []})
    client.watch_scripts = [
        ApiError(500, "InternalError", "boom"),
        [{"type": "ADDED", "object": cm("explode", "2")}, {"type": "ADDED", "object": cm("ok", "3")}],
    ]
    errors: list[str] = []
    inf = Informer(
        client,
        Resource("ConfigMap", "/api/v1/configmaps"),
        rec,  # type: ignore[arg-type]
        on_error=lambda kind, exc: errors.append(str(exc)),
    )
    inf.backoff = Backoff(initial=0.01, maximum=0.05)
    await run_until(inf, lambda: "ok@3" in rec.upserts)
    assert errors == ["500 InternalError: boom"]


def test_backoff_grows_with_jitter_up_to_the_cap() -> None:
    b = Backoff(initial=0.5, maximum=30)
    rng = random.Random(1)
    delays = [b.next_delay(rng) for _ in range(10)]
    assert 0.25 <= delays[0] <= 0.5
    assert all(15 <= d <= 30 for d in delays[7:])
    b.reset()
    assert b.next_delay(rng) <= 0.5


async def test_optional_resource_the_cluster_does_not_serve_counts_as_synced_and_empty() -> None:
    """A cluster without the HyperNode CRD (404), or a ClusterRole without its rule (403), must not
    keep the daemon from becoming ready: the list counts as empty and is retried later."""
    for status in (404, 403):
        client, rec = FakeClient(), Recorder()

        def missing(_body: Any, _query: Any, status: int = status) -> Any:
            raise ApiError(status, "NotFound" if status == 404 else "Forbidden", "hypernodes")

        client.on("GET", "/apis/topology.volcano.sh/v1alpha1/hypernodes", missing)
        path = "/apis/topology.volcano.sh/v1alpha1/hypernodes"
        inf = Informer(client, Resource("HyperNode", path, optional=True), rec)  # type: ignore[arg-type]
        await run_until(inf, inf.synced.is_set)
        assert rec.upserts == [] and rec.deletes == []
        required = Informer(client, Resource("HyperNode", path), rec)  # type: ignore[arg-type]
        required.backoff = Backoff(initial=0.001, maximum=0.001)
        task = asyncio.ensure_future(required.run())
        await asyncio.sleep(0.05)
        assert not required.synced.is_set()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_the_first_list_survives_a_failing_handler_and_items_that_are_not_objects() -> None:
    client, rec = FakeClient(), Recorder()
    odd: list[Any] = ["not an object", {"kind": "no metadata"}]
    client.on("GET", "/api/v1/configmaps", pages([cm("a", "1"), cm("explode", "2"), *odd], [cm("c", "3")]))
    client.watch_scripts = [[]]
    inf = Informer(client, Resource("ConfigMap", "/api/v1/configmaps"), rec, page_size=4)  # type: ignore[arg-type]
    with_metadata = Recorder.upsert

    def upsert(self: Recorder, obj: dict[str, Any]) -> None:
        if "metadata" not in obj:
            self.upserts.append("<no metadata>")
            return
        with_metadata(self, obj)

    rec.upsert = upsert.__get__(rec)  # type: ignore[method-assign]
    await run_until(inf, lambda: inf.synced.is_set())
    assert rec.upserts == ["a@1", "<no metadata>", "c@3"]
    # every object delivered is known by its key and version (a relist diffs against these)
    assert inf.known == {"ns/a": "1", "ns/explode": "2", "None": "", "ns/c": "3"}


class KeepAll:
    def __init__(self) -> None:
        self.upserts: list[dict[str, Any]] = []

    def upsert(self, obj: dict[str, Any]) -> None:
        self.upserts.append(obj)

    def delete(self, key: str, obj: dict[str, Any] | None) -> None:
        pass


async def test_watch_events_are_known_by_the_key_and_version_a_list_gives() -> None:
    """The watch works out each event's key and version itself: the same strings as a list's
    delivery, for namespaced and cluster-wide objects, versions that are not strings, and
    objects without usable metadata."""
    events: list[dict[str, Any]] = [
        {"metadata": {"name": "a", "namespace": "ns", "resourceVersion": "11"}},
        {"metadata": {"name": "node-1", "resourceVersion": 12}},
        {"metadata": {"name": "b", "namespace": "", "resourceVersion": None}},
        {"metadata": None},
    ]
    client = FakeClient()
    client.on("GET", "/api/v1/things", lambda _b, _q: {"metadata": {"resourceVersion": "10"}, "items": []})
    client.watch_scripts = [[{"type": "ADDED", "object": dict(obj)} for obj in events]]
    handler = KeepAll()
    inf = Informer(client, Resource("Thing", "/api/v1/things"), handler)  # type: ignore[arg-type]
    await run_until(inf, lambda: len(handler.upserts) == len(events))
    assert inf.known == {"ns/a": "11", "node-1": "12", "b": "", "None": ""}
    assert inf.resource_version == "12"
    assert inf.events == len(events)

    # a list of the same objects is known by the same keys and versions
    listed = FakeClient()
    listed.on(
        "GET", "/api/v1/things", lambda _b, _q: {"metadata": {"resourceVersion": "10"}, "items": events}
    )
    by_list = Informer(listed, Resource("Thing", "/api/v1/things"), KeepAll())  # type: ignore[arg-type]
    await by_list.list()
    assert by_list.known == inf.known
