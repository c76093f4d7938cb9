"""Events: the same object+reason+message within the window is one Event whose count grows."""

from __future__ import annotations

import asyncio

from scheduler.kube.status import EventCorrelator, EventRecorder, ObjectRef
from tests.daemon.fakes import FakeClient

KEY = ("Pod", "ns", "p", "uid", "Warning", "FailedScheduling", "0/3 nodes are unavailable")


def test_first_occurrence_creates_an_event() -> None:
    c = EventCorrelator(window=600, flush=30)
    action, seen = c.observe(KEY, 0.0, "p")
    assert action == "create" and seen.count == 1 and seen.event_name.startswith("p.")


def test_repeats_bump_the_count_at_most_every_flush_interval() -> None:
    c = EventCorrelator(window=600, flush=30)
    _, first = c.observe(KEY, 0.0, "p")
    assert c.observe(KEY, 1.0, "p")[0] == "hold"
    assert c.observe(KEY, 2.0, "p")[0] == "hold"
    action, seen = c.observe(KEY, 31.0, "p")
    assert action == "patch"
    assert seen.event_name == first.event_name
    assert seen.sent_count == 4  # every occurrence counted, even the held ones


def test_after_the_window_a_new_event_is_created() -> None:
    c = EventCorrelator(window=600, flush=30)
    _, first = c.observe(KEY, 0.0, "p")
    action, seen = c.observe(KEY, 700.0, "p")
    assert action == "create" and seen.event_name != first.event_name and seen.count == 1


def test_a_different_message_is_a_different_event() -> None:
    c = EventCorrelator()
    c.observe(KEY, 0.0, "p")
    assert c.observe((*KEY[:-1], "another message"), 1.0, "p")[0] == "create"


def test_the_key_table_is_bounded() -> None:
    c = EventCorrelator(max_keys=10)
    for i in range(100):
        c.observe((*KEY[:-1], f"m{i}"), float(i), "p")
    assert len(c.seen) == 10


async def test_recorder_posts_once_then_patches_the_count() -> None:
    client = FakeClient()
    now = [0.0]
    rec = EventRecorder(client, component="volcano", clock=lambda: now[0])  # type: ignore[arg-type]
    rec.queue.start()
    ref = ObjectRef("Pod", "ns", "p", "uid-1")
    for t in (0.0, 1.0, 2.0, 40.0):
        now[0] = t
        rec.record(ref, "Warning", "FailedScheduling", "no nodes")
    await rec.queue.join(2)
    await rec.queue.stop()
    posts = [c for c in client.calls if c[0] == "POST"]
    patches = [c for c in client.calls if c[0] == "PATCH"]
    assert len(posts) == 1 and len(patches) == 1
    _, path, body = posts[0]
    assert path == "/api/v1/namespaces/ns/events"
    assert body["involvedObject"] == {
        "kind": "Pod",
        "name": "p",
        "apiVersion": "v1",
        "namespace": "ns",
        "uid": "uid-1",
    }
    assert (body["type"], body["reason"], body["message"], body["count"]) == (
        "Warning",
        "FailedScheduling",
        "no nodes",
        1,
    )
    assert body["source"] == {"component": "volcano"}
    assert patches[0][1] == f"/api/v1/namespaces/ns/events/{body['metadata']['name']}"
    assert patches[0][2]["count"] == 4


async def test_dry_run_records_nothing() -> None:
    client = FakeClient()
    rec = EventRecorder(client, dry_run=True)  # type: ignore[arg-type]
    rec.queue.start()
    rec.record(ObjectRef("Pod", "ns", "p"), "Normal", "Scheduled", "x")
    await asyncio.sleep(0.01)
    await rec.queue.stop()
    assert client.calls == []
