"""Events sent pipelined: several writes on one connection without waiting for answers in between.

The client must match each answer to its request in order however the bytes arrive, send again
what a closing server left unanswered, and report each write's own outcome; the sandbox server
must answer pipelined requests in order whichever of its paths (the write fast lane, aiohttp)
takes each one."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest

from scheduler.kube.client import ApiError, ClientOptions, KubeClient
from scheduler.kube.status import EventRecorder, ObjectRef
from scheduler.sim.apiserver import ApiServer
from tests.daemon.test_keepalive_writes import BareServer

NS = "default"


def _answer(n: int, status: str = "201 Created", extra: str = "") -> bytes:
    body = json.dumps({"n": n}).encode()
    return f"HTTP/1.1 {status}\r\n{extra}Content-Length: {len(body)}\r\n\r\n".encode() + body


def _event(name: str) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": name, "namespace": NS},
        "involvedObject": {"kind": "Pod", "name": "p", "namespace": NS, "apiVersion": "v1"},
        "reason": "Scheduled",
        "message": "m",
        "type": "Normal",
        "count": 1,
    }


async def _client(url: str) -> KubeClient:
    return await KubeClient.create(ClientOptions(master=url))


async def _pipelined(client: KubeClient, n: int, start: int = 0) -> list[object]:
    assert client.writer is not None
    lines = "Content-Type: application/json\r\n"
    requests = [
        ("POST", f"/api/v1/namespaces/{NS}/events", lines, b'{"i": %d}' % i) for i in range(start, start + n)
    ]
    answers = await client.writer.request_pipelined(requests, 2.0)
    return [json.loads(a.body) if hasattr(a, "body") else a for a in answers]


async def test_answers_are_matched_in_order_however_their_bytes_arrive() -> None:
    """Answers of a pipeline split anywhere, several in one read, chunked or not: each request
    gets its own, and the next batch goes on the same connection."""
    chunked = b'HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n4\r\n{"n"\r\n4\r\n: 2}\r\n0\r\n\r\n'

    async def answer(_c: int, n: int, _r: asyncio.StreamReader, w: asyncio.StreamWriter) -> bool:
        if n == 2:
            data = chunked
        else:
            data = _answer(n)
        if n % 2:  # a few bytes at a time
            for i in range(0, len(data), 5):
                w.write(data[i : i + 5])
                await w.drain()
                await asyncio.sleep(0.001)
        else:
            w.write(data)
        return True

    srv = BareServer(answer)
    async with srv as url:
        client = await _client(url)
        try:
            assert await _pipelined(client, 5) == [{"n": i} for i in range(5)]
            assert await _pipelined(client, 3, 5) == [{"n": i} for i in range(5, 8)]
        finally:
            await client.close()
    assert [c for c, _line in srv.requests] == [0] * 8


async def test_requests_a_closing_server_left_unanswered_are_sent_again_once() -> None:
    async def answer(conn: int, n: int, _r: asyncio.StreamReader, w: asyncio.StreamWriter) -> bool:
        if conn == 0 and n == 1:  # answers, then closes: the pipelined requests after it are lost
            w.write(_answer(n, extra="Connection: close\r\n"))
            await w.drain()
            return False
        w.write(_answer(n if conn == 0 else 10 + n))
        return True

    srv = BareServer(answer)
    async with srv as url:
        client = await _client(url)
        try:
            assert await _pipelined(client, 4) == [{"n": 0}, {"n": 1}, {"n": 10}, {"n": 11}]
        finally:
            await client.close()
    assert [c for c, _line in srv.requests][:2] == [0, 0] and srv.requests[-2:][0][0] == 1
    assert len([r for r in srv.requests if r[0] == 1]) == 2  # sent again: only the unanswered two


async def test_each_write_keeps_its_own_outcome() -> None:
    async def answer(_c: int, n: int, _r: asyncio.StreamReader, w: asyncio.StreamWriter) -> bool:
        w.write(_answer(n, "409 Conflict") if n == 1 else _answer(n))
        return True

    srv = BareServer(answer)
    async with srv as url:
        client = await _client(url)
        try:
            path = f"/api/v1/namespaces/{NS}/events"
            out = await client.write_pipelined([("POST", path, _event(f"e{i}"), None) for i in range(3)])
        finally:
            await client.close()
    assert out[0] is None and out[2] is None
    assert isinstance(out[1], ApiError) and out[1].status == 409


async def test_a_silent_server_fails_every_write_of_the_batch_in_time() -> None:
    async def answer(_c: int, _n: int, _r: asyncio.StreamReader, _w: asyncio.StreamWriter) -> bool:
        await asyncio.sleep(5)
        return False

    srv = BareServer(answer)
    async with srv as url:
        client = await KubeClient.create(ClientOptions(master=url, request_timeout=0.3))
        try:
            t0 = time.monotonic()
            path = f"/api/v1/namespaces/{NS}/events"
            out = await client.write_pipelined([("POST", path, _event(f"e{i}"), None) for i in range(3)])
            assert time.monotonic() - t0 < 2
        finally:
            await client.close()
    assert all(isinstance(e, ApiError) and e.status == 0 and e.retryable for e in out)


async def test_a_fenced_batch_is_not_sent() -> None:
    srv = BareServer(lambda *_a: asyncio.sleep(0, True))
    async with srv as url:
        client = await _client(url)
        client.write_guard = lambda _term: False
        try:
            out = await client.write_pipelined(
                [("POST", f"/api/v1/namespaces/{NS}/events", _event("e"), None)]
            )
        finally:
            await client.close()
    assert isinstance(out[0], ApiError) and out[0].reason == "Fenced" and srv.requests == []


# ------------------------------------------------------------------ the sandbox server --
async def _read_answers(reader: asyncio.StreamReader, n: int) -> list[tuple[int, dict[str, object]]]:
    out = []
    for _ in range(n):
        head = await reader.readuntil(b"\r\n\r\n")
        status = int(head.split(b" ", 2)[1])
        length = next(
            int(x.split(b":")[1]) for x in head.split(b"\r\n") if x.lower().startswith(b"content-length")
        )
        out.append((status, json.loads(await reader.readexactly(length))))
    return out


def _raw_post(name: str) -> bytes:
    body = json.dumps(_event(name)).encode()
    return (
        f"POST /api/v1/namespaces/{NS}/events HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode() + body


async def test_the_sandbox_answers_pipelined_requests_in_order_on_either_path() -> None:
    """Writes the fast lane answers, a read aiohttp answers and the writes after it (aiohttp's
    too, while it has a request of the connection): one write of all, answers in order."""
    srv = ApiServer()
    await srv.start()
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", srv.port)
        get = f"GET /api/v1/namespaces/{NS}/events/e0 HTTP/1.1\r\nHost: x\r\n\r\n".encode()
        writer.write(_raw_post("e0") + _raw_post("e1") + get + _raw_post("e2") + _raw_post("e0"))
        answers = await asyncio.wait_for(_read_answers(reader, 5), 10)
        writer.close()
    finally:
        await srv.stop()
    assert [s for s, _ in answers] == [201, 201, 200, 201, 409]
    assert [a.get("metadata", {}).get("name") for _, a in answers[:4]] == ["e0", "e1", "e0", "e2"]  # type: ignore[union-attr]


async def test_recorded_events_reach_the_sandbox_pipelined_in_few_batches(tmp_path: Path) -> None:
    srv = ApiServer(tls=True, require_auth=True)
    await srv.start()
    srv.write_kubeconfig(tmp_path / "kubeconfig")
    client = await KubeClient.create(ClientOptions(kubeconfig=str(tmp_path / "kubeconfig")))
    rec = EventRecorder(client)
    rec.queue.start()
    try:
        for i in range(600):
            rec.record(ObjectRef("Pod", NS, f"p{i}", f"uid-{i}"), "Normal", "Scheduled", f"to n{i % 7}")
        assert await rec.queue.join(10)
    finally:
        await rec.queue.stop()
        await client.close()
        await srv.stop()
    assert rec.created == 600
    names = sorted(e["involvedObject"]["name"] for e in srv.store.list("events", NS))
    assert names == sorted(f"p{i}" for i in range(600))
    posts = [e for e in srv.request_log if e["method"] == "POST" and e["path"].endswith("/events")]
    assert len(posts) == 600 and client.writer is not None and client.writer.opened == 1


@pytest.mark.parametrize("batch", [1, 7])
async def test_writes_go_in_the_order_recorded(batch: int) -> None:
    """A count bump never overtakes the create of its event, whatever the batch size."""
    from tests.daemon.fakes import FakeClient

    client = FakeClient()
    now = [0.0]
    rec = EventRecorder(client, clock=lambda: now[0])  # type: ignore[arg-type]
    rec.queue.batch = batch
    rec.queue.start()
    for i in range(20):
        now[0] = 40.0 * (i % 2)  # each object's second record comes a flush later: a PATCH
        rec.record(ObjectRef("Pod", NS, f"p{i // 2}"), "Warning", "FailedScheduling", "no")
    assert await rec.queue.join(5)
    await rec.queue.stop()
    assert [(m, p.rsplit("/", 1)[-1].split(".")[0]) for m, p, _b in client.calls] == [
        (m, p) for i in range(10) for m, p in (("POST", "events"), ("PATCH", f"p{i}"))
    ]


async def test_events_wait_for_the_bindings_in_flight_but_not_for_ever(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from scheduler.kube import status
    from tests.daemon.fakes import FakeClient

    client = FakeClient()
    rec = EventRecorder(client)  # type: ignore[arg-type]
    gate = asyncio.Event()  # the binder's `settled`: clear while Bindings are in flight
    rec.queue.gate = gate
    rec.queue.start()
    try:
        rec.record(ObjectRef("Pod", NS, "p1"), "Normal", "Scheduled", "to n1")
        await asyncio.sleep(0.1)
        assert client.calls == []
        gate.set()
        assert await rec.queue.join(1) and len(client.calls) == 1
        monkeypatch.setattr(status, "GATE_WAIT_S", 0.05)
        gate.clear()  # binds that never settle hold the events only so long
        rec.record(ObjectRef("Pod", NS, "p2"), "Normal", "Scheduled", "to n1")
        assert await rec.queue.join(1) and len(client.calls) == 2
    finally:
        await rec.queue.stop()
