"""The write fast lane answers as aiohttp does: same bytes, same order, same request log."""

from __future__ import annotations

import asyncio
import json
import re

import pytest

from scheduler.sim.apiserver import ApiServer, fastlane
from tests.sandbox.objects import pod

PODS = "/api/v1/namespaces/default/pods"
_VOLATILE = re.compile(
    rb'("uid":"[^"]+"|"creationTimestamp":"[^"]+"|"lastTransitionTime":"[^"]+"|Date: [^\r]+)'
)


def request(
    method: str, path: str, body: object = None, ctype: str = "application/json", extra: str = ""
) -> bytes:
    data = b"" if body is None else json.dumps(body).encode()
    head = f"{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Type: {ctype}\r\n{extra}"
    if body is not None:
        head += f"Content-Length: {len(data)}\r\n"
    return (head + "\r\n").encode() + data


SCRIPT = [
    request("POST", PODS, pod("a", labels={"app": "x"})),
    request("POST", PODS, pod("a")),  # 409
    request("POST", PODS + "?fieldValidation=Warn", {**pod("w"), "bogus": 1}),
    request("POST", PODS + "?fieldValidation=Strict", {**pod("s"), "bogus": 1}),
    request("POST", PODS + "?dryRun=All", pod("dry")),
    request("POST", "/api/v1/pods", pod("cluster-wide")),  # 405
    request(
        "POST", PODS + "/a/binding", {"kind": "Binding", "metadata": {"name": "a"}, "target": {"name": "n1"}}
    ),
    request(
        "POST", PODS + "/a/binding", {"kind": "Binding", "metadata": {"name": "a"}, "target": {"name": "n2"}}
    ),
    request(
        "PATCH",
        PODS + "/a/status",
        {"status": {"phase": "Running"}},
        "application/strategic-merge-patch+json",
    ),
    request("PATCH", PODS + "/a", {"metadata": {"labels": {"app": "y"}}}, "application/merge-patch+json"),
    request("PATCH", PODS + "/a", {"x": 1}, "text/plain"),  # 415
    request("POST", PODS, None, extra="Content-Length: 0\r\n"),  # 400: empty body
    request("POST", PODS, "not json"[:-1] + "{", extra=""),  # 400: not an object
    request("GET", PODS + "/a"),
    request("DELETE", PODS + "/a", {"gracePeriodSeconds": 0}),
    request("DELETE", PODS + "/missing", {}),  # 404
    request("POST", "/api/v1/namespaces/nope/pods", pod("x")),  # 404 namespace
    request("POST", "/api/v1/namespaces/default/bogus", pod("x")),  # 404 path
]


async def _replay(server: ApiServer, chunks: list[bytes]) -> bytes:
    reader, writer = await asyncio.open_connection(server.host, server.port)
    out = b""
    try:
        for chunk in chunks:
            writer.write(chunk)
            await writer.drain()
            await asyncio.sleep(0.01)
        while True:
            try:
                data = await asyncio.wait_for(reader.read(1 << 20), 0.5)
            except TimeoutError:
                break
            if not data:
                break
            out += data
    finally:
        writer.close()
    return out


async def _both(chunks: list[bytes]) -> tuple[bytes, bytes, list[dict], list[dict], int]:
    answered = 0
    original = fastlane.FastLaneHandler._answer_here

    def counting(
        self: fastlane.FastLaneHandler, req: fastlane.Framed, buf: bytes, answers: list[bytes]
    ) -> bool:
        nonlocal answered
        ok = original(self, req, buf, answers)
        answered += ok
        return ok

    fastlane.FastLaneHandler._answer_here = counting  # type: ignore[method-assign]
    try:
        outs, logs = [], []
        for lane in (True, False):
            async with ApiServer(fast_lane=lane) as srv:
                outs.append(_VOLATILE.sub(b"*", await _replay(srv, chunks)))
                logs.append([{k: v for k, v in e.items() if k != "duration_ms"} for e in srv.request_log])
    finally:
        fastlane.FastLaneHandler._answer_here = original  # type: ignore[method-assign]
    return outs[0], outs[1], logs[0], logs[1], answered


async def test_one_request_at_a_time_same_bytes_and_log() -> None:
    fast, slow, fast_log, slow_log, answered = await _both(SCRIPT)
    assert fast == slow
    assert fast.count(b"HTTP/1.1 ") == len(SCRIPT)
    assert fast_log == slow_log
    assert answered >= len(SCRIPT) - 2  # every write (the GET and perhaps the first request: aiohttp)


async def test_pipelined_and_split_requests_keep_their_order() -> None:
    stream = b"".join(SCRIPT)
    pipelined, slow, fast_log, slow_log, _ = await _both([stream])
    assert pipelined == slow and fast_log == slow_log
    # the same bytes cut at arbitrary points, a request's head and body in separate reads
    pieces = [stream[i : i + 37] for i in range(0, len(stream), 37)]
    split, slow, fast_log, slow_log, answered = await _both(pieces)
    assert split == slow and fast_log == slow_log
    assert answered > 0


@pytest.mark.parametrize(
    "extra",
    ["Transfer-Encoding: chunked\r\n", "Connection: close\r\n", "Expect: 100-continue\r\n"],
)
async def test_framing_it_does_not_follow_goes_to_aiohttp(extra: str) -> None:
    body = json.dumps(pod("c")).encode()
    if "chunked" in extra:
        raw = f"POST {PODS} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n{extra}\r\n".encode()
        raw += f"{len(body):x}\r\n".encode() + body + b"\r\n0\r\n\r\n"
    else:
        raw = request("POST", PODS, pod("c"), extra=extra)
    fast, slow, fast_log, slow_log, answered = await _both([raw, request("POST", PODS, pod("d"))])
    assert fast == slow and fast_log == slow_log
    assert answered == 0


async def test_a_large_body_streams_through_aiohttp_and_the_lane_resumes() -> None:
    big = pod("big")
    big["metadata"]["annotations"] = {"x": "a" * (fastlane.MAX_LANE_BODY + 10)}
    too_big = pod("too-big")
    too_big["metadata"]["annotations"] = {"x": "a" * (3 * 1024 * 1024)}
    chunks = [request("POST", PODS, big), request("POST", PODS, too_big), request("POST", PODS, pod("after"))]
    fast, slow, fast_log, slow_log, answered = await _both(chunks)
    assert fast == slow and fast_log == slow_log
    assert b"413 Request Entity Too Large" in fast
    assert answered == 1  # the last one


def test_render_matches_aiohttp_header_order() -> None:
    from scheduler.sim.apiserver.handlers import Answer

    out = fastlane.render(Answer(201, b"{}", (("Content-Type", "application/json"), ("Warning", "299 - x"))))
    head = out.split(b"\r\n\r\n")[0].split(b"\r\n")
    assert head[0] == b"HTTP/1.1 201 Created"
    assert [h.split(b":")[0] for h in head[1:]] == [
        b"Content-Type",
        b"Warning",
        b"Content-Length",
        b"Date",
        b"Server",
    ]
    with pytest.raises(ValueError):
        fastlane.render(Answer(200, b"", (("Warning", "a\r\nb"),)))


async def test_an_injected_latency_delays_writes_too() -> None:
    async with ApiServer() as srv:
        reader, writer = await asyncio.open_connection(srv.host, srv.port)
        loop = asyncio.get_running_loop()
        try:
            for name, latency in (("quick", 0), ("slow", 150)):
                srv.set_faults(latency_ms=latency)
                t = loop.time()
                writer.write(request("POST", PODS, pod(name)))
                assert (await reader.readline()).startswith(b"HTTP/1.1 201")
                took = loop.time() - t
                assert took >= 0.14 if latency else took < 0.14
                head = await reader.readuntil(b"\r\n\r\n")
                length = re.search(rb"Content-Length: (\d+)", head)
                assert length is not None
                await reader.readexactly(int(length.group(1)))
        finally:
            writer.close()


async def test_an_aiohttp_without_the_parts_the_lane_uses_gets_aiohttps_path(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # another aiohttp release whose connection handler lacks a private part the lane touches
    monkeypatch.setattr(fastlane, "_HANDLER_PARTS", (*fastlane._HANDLER_PARTS, "_gone_in_this_release"))
    monkeypatch.setattr(fastlane, "_supported", None)
    fast, slow, fast_log, slow_log, answered = await _both(SCRIPT)
    assert answered == 0  # nothing answered by the lane: every request went through aiohttp
    assert fast == slow and fast_log == slow_log
    assert fast.count(b"HTTP/1.1 ") == len(SCRIPT)
    assert "_gone_in_this_release" in caplog.text


def test_a_header_block_seen_before_frames_as_the_first_time() -> None:
    """frame() keeps the parse of a header block: a repeated block (a client's next request)
    gives the same headers and body length, and one it hands over is handed over every time."""
    first = fastlane.frame(request("POST", PODS, {"a": 1}, extra="X-Seen: once\r\n"))
    again = fastlane.frame(request("PATCH", PODS + "/a", {"b": 2}, extra="X-Seen: once\r\n") + b"next")
    assert first is not None and again is not None
    assert (again.method, again.target) == ("PATCH", PODS + "/a")
    assert again.headers == first.headers and again.headers.get("x-seen") == "once"
    assert again.size - again.body_start == len(b'{"b": 2}')
    chunked = b"POST /api/v1/pods HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
    for _ in range(2):
        with pytest.raises(fastlane.HandOver):
            fastlane.frame(chunked)
    assert fastlane.frame(b"POST /api/v1/pods HTTP/1.1\r\n\r\n") is not None  # no headers at all
