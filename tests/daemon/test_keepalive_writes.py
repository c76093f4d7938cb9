"""Writes go through the lean keep-alive client (scheduler/kube/keepalive.py): against the sandbox
API server (TLS, bearer token, injected 409/429/500) the binder still binds each pod once, and
against a bare socket server a connection the server dropped is replaced, never trusted."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from scheduler.framework.cycle import BindDecision
from scheduler.kube.binder import Binder
from scheduler.kube.cache import SchedulerCache
from scheduler.kube.client import ApiError, ClientOptions, KubeClient
from scheduler.kube.keepalive import KeepAliveClient, TransportError, _parse_head, _read_lines
from scheduler.kube.status import EventRecorder, StatusWriter
from scheduler.metrics import SchedulerMetrics
from scheduler.sim.apiserver import ApiServer
from scheduler.sim.apiserver.kubeconfig import write_kubeconfig
from tests.builders import node, pod, podgroup, queue

NS = "c1"


@pytest.fixture
async def sandbox(tmp_path: Path) -> AsyncIterator[tuple[ApiServer, KubeClient]]:
    srv = ApiServer(tls=True, require_auth=True)
    await srv.start()
    srv.write_kubeconfig(tmp_path / "kubeconfig")
    client = await KubeClient.create(ClientOptions(kubeconfig=str(tmp_path / "kubeconfig")))
    try:
        yield srv, client
    finally:
        await client.close()
        await srv.stop()


def _cluster(srv: ApiServer, pods: list[str]) -> SchedulerCache:
    """The same pods in the server and in a cache (with the uids the server gave them)."""
    cache = SchedulerCache()
    cache.upsert_queue(queue("default"))
    srv.store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
    for n in ("n1", "n9"):
        cache.upsert_node(srv.store.create(node(n)))
    cache.upsert_podgroup(podgroup("g", 1))
    for name in pods:
        cache.upsert_pod(srv.store.create(pod(name, group="g")))
    return cache


def _binder(cache: SchedulerCache, client: KubeClient) -> tuple[Binder, StatusWriter]:
    rec = EventRecorder(client)
    st = StatusWriter(client, cache, rec)
    st.start()
    return Binder(client, cache, st, rec, SchedulerMetrics()), st


def _decide(cache: SchedulerCache, name: str, node_name: str = "n1") -> BindDecision:
    task = cache.state.get_task(f"{NS}/{name}")
    assert task is not None
    return BindDecision(task.clone(), node_name, {"example.com/decided": "yes"})


def _bindings(srv: ApiServer, name: str) -> list[dict[str, Any]]:
    return [
        e
        for e in srv.request_log
        if e["method"] == "POST" and e["path"] == f"/api/v1/namespaces/{NS}/pods/{name}/binding"
    ]


async def test_bindings_over_tls_with_a_token_land_once_on_one_kept_alive_connection(
    sandbox: tuple[ApiServer, KubeClient],
) -> None:
    srv, client = sandbox
    assert client.writer is not None and client.writer.tls
    cache = _cluster(srv, ["p1", "p2", "p3"])
    b, st = _binder(cache, client)
    for name in ("p1", "p2", "p3"):  # one after another: each reuses the connection
        assert b.submit([_decide(cache, name)]) == 1
        await b.drain(5)
    await st.drain(5)
    await st.stop()
    assert b.bound == 3 and b.failed == 0
    for name in ("p1", "p2", "p3"):
        placed = srv.store.get("pods", NS, name)
        assert placed is not None and placed["spec"]["nodeName"] == "n1"
        assert placed["metadata"]["annotations"]["example.com/decided"] == "yes"
        assert [e["code"] for e in _bindings(srv, name)] == [201]
    events = srv.store.list("events", NS)
    assert sorted(e["involvedObject"]["name"] for e in events if e["reason"] == "Scheduled") == [
        "p1",
        "p2",
        "p3",
    ]
    # the Bindings and events shared kept-alive connections instead of one each
    assert client.writer.opened <= 2


async def test_a_pod_someone_else_bound_is_a_409_resynced_and_never_retried(
    sandbox: tuple[ApiServer, KubeClient],
) -> None:
    srv, client = sandbox
    cache = _cluster(srv, ["p1"])
    srv.store.bind(NS, "p1", {"metadata": {"name": "p1"}, "target": {"kind": "Node", "name": "n9"}})
    b, st = _binder(cache, client)
    b.submit([_decide(cache, "p1")])
    await b.drain(5)
    await st.stop()
    assert [e["code"] for e in _bindings(srv, "p1")] == [409]
    assert b.conflicts == 1 and b.bound == 0
    task = cache.state.get_task(f"{NS}/p1")
    assert task is not None and task.node_name == "n9" and f"{NS}/p1" not in cache.assumed


async def test_429_carries_its_retry_after_and_the_binder_waits_that_long(
    sandbox: tuple[ApiServer, KubeClient],
) -> None:
    srv, client = sandbox
    cache = _cluster(srv, ["p1"])
    srv.set_faults(error_rate=1.0, error_codes=[429], retry_after=1)
    with pytest.raises(ApiError) as err:
        await client.request("POST", f"/api/v1/namespaces/{NS}/pods/p1/binding", body={})
    assert err.value.status == 429 and err.value.retryable and err.value.retry_after == 1.0
    assert err.value.reason == "TooManyRequests"
    b, st = _binder(cache, client)
    t0 = time.monotonic()
    b.submit([_decide(cache, "p1")])
    await asyncio.sleep(0.3)  # the first attempt was refused; the retry waits for Retry-After
    srv.set_faults(error_rate=0.0)
    await b.drain(5)
    await st.stop()
    assert time.monotonic() - t0 >= 0.95  # the backoff alone would retry after 0.1-0.2 s
    assert [e["code"] for e in _bindings(srv, "p1")] == [429, 429, 201]
    assert b.bound == 1


async def test_500_is_retried_and_a_final_422_is_not(sandbox: tuple[ApiServer, KubeClient]) -> None:
    srv, client = sandbox
    cache = _cluster(srv, ["p1", "p2"])
    srv.set_faults(error_rate=1.0, error_codes=[500])
    b, st = _binder(cache, client)
    b.submit([_decide(cache, "p1")])
    await asyncio.sleep(0.05)
    srv.set_faults(error_rate=0.0)
    await b.drain(5)
    assert [e["code"] for e in _bindings(srv, "p1")] == [500, 201] and b.bound == 1
    b.submit([_decide(cache, "p2", node_name="")])  # refused as Invalid: no retry, back to Pending
    await b.drain(5)
    await st.stop()
    assert [e["code"] for e in _bindings(srv, "p2")] == [422] and b.failed == 1
    task = cache.state.get_task(f"{NS}/p2")
    assert task is not None and not task.node_name


async def test_bindings_over_mutual_tls_present_the_kubeconfigs_client_certificate(tmp_path: Path) -> None:
    """kubeadm-style kubeconfigs authenticate with a client certificate, not a token: the lean
    writer must present it on its own connections, or every Binding is a 401."""
    async with ApiServer(tls=True, require_auth=True, client_certs=True) as srv:
        srv.write_kubeconfig(tmp_path / "kubeconfig")
        client = await KubeClient.create(ClientOptions(kubeconfig=str(tmp_path / "kubeconfig")))
        try:
            assert client.writer is not None and client.writer.tls
            cache = _cluster(srv, ["p1"])
            b, st = _binder(cache, client)
            assert b.submit([_decide(cache, "p1")]) == 1
            await b.drain(5)
            await st.drain(5)
            await st.stop()
            assert b.bound == 1 and [e["code"] for e in _bindings(srv, "p1")] == [201]
            assert client.writer.opened >= 1  # the Binding went through the lean writer
        finally:
            await client.close()
        # the same server refuses a writer that has the CA but no certificate nor token
        bare = tmp_path / "bare"
        write_kubeconfig(bare, srv.url, None, srv.ca_file)
        anonymous = await KubeClient.create(ClientOptions(kubeconfig=str(bare)))
        try:
            with pytest.raises(ApiError) as err:
                await anonymous.request("POST", f"/api/v1/namespaces/{NS}/events", body={})
            assert err.value.status == 401 and not err.value.retryable
        finally:
            await anonymous.close()


async def test_a_wrong_token_is_a_401_that_is_not_retried(sandbox: tuple[ApiServer, KubeClient]) -> None:
    srv, client = sandbox
    srv.token = "another"
    with pytest.raises(ApiError) as err:
        await client.request("POST", f"/api/v1/namespaces/{NS}/events", body={})
    assert err.value.status == 401 and not err.value.retryable


# ------------------------------------------------------------- connections the server drops --
Handler = Callable[[int, int, asyncio.StreamReader, asyncio.StreamWriter], Awaitable[bool]]


class BareServer:
    """A socket server that reads whole requests and lets `answer(conn, n, ...)` reply to the
    n-th request of the conn-th connection; it returns False to drop the connection."""

    def __init__(self, answer: Handler) -> None:
        self.answer = answer
        self.requests: list[tuple[int, bytes]] = []  # (connection, request line)
        self.connections = 0

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conn = self.connections
        self.connections += 1
        n = 0
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next(
                    (
                        int(x.split(b":")[1])
                        for x in head.split(b"\r\n")
                        if x.lower().startswith(b"content-length")
                    ),
                    0,
                )
                await reader.readexactly(length)
                self.requests.append((conn, head.split(b"\r\n", 1)[0]))
                if not await self.answer(conn, n, reader, writer):
                    break
                n += 1
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    async def __aenter__(self) -> str:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        port = self._server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}"

    async def __aexit__(self, *exc: object) -> None:
        self._server.close()


OK = b"HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"


async def _client(url: str) -> KubeClient:
    return await KubeClient.create(ClientOptions(master=url))


async def test_a_kept_connection_the_server_dropped_is_replaced_and_the_write_sent_once_more() -> None:
    async def answer(conn: int, n: int, _r: asyncio.StreamReader, w: asyncio.StreamWriter) -> bool:
        if conn == 0 and n == 1:
            return False  # the idle connection was closed as the second request arrived
        w.write(OK)
        return True

    srv = BareServer(answer)
    async with srv as url:
        client = await _client(url)
        try:
            await client.bind(NS, "p1", {"target": {"name": "n1"}})
            await client.bind(NS, "p2", {"target": {"name": "n1"}})
        finally:
            await client.close()
    assert [c for c, _line in srv.requests] == [0, 0, 1]
    assert srv.requests[-1][1] == b"POST /api/v1/namespaces/c1/pods/p2/binding HTTP/1.1"


async def test_an_answer_that_breaks_off_is_a_retryable_error_and_not_resent() -> None:
    async def answer(_c: int, _n: int, _r: asyncio.StreamReader, w: asyncio.StreamWriter) -> bool:
        w.write(b"HTTP/1.1 201 Created\r\nContent-Length: 100\r\n\r\n{")
        await w.drain()
        return False

    srv = BareServer(answer)
    async with srv as url:
        client = await _client(url)
        try:
            with pytest.raises(ApiError) as err:
                await client.bind(NS, "p1", {"target": {"name": "n1"}})
        finally:
            await client.close()
    assert err.value.status == 0 and err.value.retryable
    assert len(srv.requests) == 1  # the server may have bound it: the binder's 409 path decides


async def test_a_fresh_connection_closed_without_an_answer_is_not_resent() -> None:
    async def answer(_c: int, _n: int, _r: asyncio.StreamReader, _w: asyncio.StreamWriter) -> bool:
        return False

    srv = BareServer(answer)
    async with srv as url:
        client = await _client(url)
        try:
            with pytest.raises(ApiError) as err:
                await client.bind(NS, "p1", {"target": {"name": "n1"}})
        finally:
            await client.close()
    assert err.value.status == 0 and len(srv.requests) == 1


async def test_chunked_answers_connection_close_and_a_silent_server() -> None:
    async def answer(conn: int, n: int, _r: asyncio.StreamReader, w: asyncio.StreamWriter) -> bool:
        if conn == 0 and n == 0:  # chunked, with a chunk extension and a trailer
            w.write(
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                b'5;x=y\r\n{"a":\r\n2\r\n1}\r\n0\r\nX-Trailer: 1\r\n\r\n'
            )
            return True
        if conn == 0:  # the server says it closes after this answer
            w.write(b'HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 8\r\n\r\n{"a": 2}')
            await w.drain()
            return True
        await asyncio.sleep(5)  # never answers
        return False

    srv = BareServer(answer)
    async with srv as url:
        client = await _client(url)
        try:
            assert await client.request("PATCH", "/api/v1/nodes/n1", body={}) == {"a": 1}
            assert await client.request("PATCH", "/api/v1/nodes/n1", body={}) == {"a": 2}
            t0 = time.monotonic()
            with pytest.raises(ApiError) as err:
                await client.request("PATCH", "/api/v1/nodes/n1", body={}, timeout=0.3)
            assert time.monotonic() - t0 < 2 and err.value.status == 0 and err.value.retryable
        finally:
            await client.close()
    assert [c for c, _line in srv.requests] == [0, 0, 1]  # the closed connection was not reused


async def test_answers_that_arrive_a_few_bytes_at_a_time_are_put_together() -> None:
    """The protocol parses as bytes arrive: heads, lengths and chunks split anywhere still make
    the same answers, and the connection stays in use for the next request."""
    answers = [
        b'HTTP/1.1 200 OK\r\nContent-Length: 8\r\n\r\n{"a": 1}',
        b'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\n{"a\r\n5\r\n": 2}\r\n0\r\n\r\n',
        b"HTTP/1.1 429 Too Many Requests\r\nRetry-After: 3\r\nContent-Length: 2\r\n\r\n{}",
    ]

    async def answer(_c: int, n: int, _r: asyncio.StreamReader, w: asyncio.StreamWriter) -> bool:
        data = answers[n]
        for i in range(0, len(data), 3):
            w.write(data[i : i + 3])
            await w.drain()
            await asyncio.sleep(0.001)
        return True

    srv = BareServer(answer)
    async with srv as url:
        client = await _client(url)
        try:
            assert await client.request("PATCH", "/api/v1/nodes/n1", body={}) == {"a": 1}
            assert await client.request("PATCH", "/api/v1/nodes/n1", body={}) == {"a": 2}
            with pytest.raises(ApiError) as err:
                await client.request("PATCH", "/api/v1/nodes/n1", body={})
            assert err.value.status == 429 and err.value.retry_after == 3
        finally:
            await client.close()
    assert [c for c, _line in srv.requests] == [0, 0, 0]


async def test_a_connection_whose_answer_timed_out_is_not_used_again() -> None:
    async def answer(conn: int, n: int, _r: asyncio.StreamReader, w: asyncio.StreamWriter) -> bool:
        if conn == 0:
            await asyncio.sleep(0.5)  # too late: the client gave up on this connection
        w.write(OK)
        return True

    srv = BareServer(answer)
    async with srv as url:
        client = await _client(url)
        try:
            with pytest.raises(ApiError) as err:
                await client.request("POST", "/api/v1/namespaces/c1/events", body={}, timeout=0.2)
            assert err.value.status == 0 and err.value.retryable
            await asyncio.sleep(0.5)  # the late answer arrives for nobody
            assert await client.request("POST", "/api/v1/namespaces/c1/events", body={}) == {}
        finally:
            await client.close()
    assert [c for c, _line in srv.requests] == [0, 1]


# ------------------------------------------------------------- answer heads, deadlines, slots --
_HEADER_LINES = [
    b"Content-Type: application/json",
    b"Content-Length: 57",
    b"content-length: 8",
    b"Content-Length : 9",
    b" Content-Length: 10",
    b"Content-Length: x1",
    b"X-Content-Length: 3",
    b"Audit-Id: content-length",
    b"Date: Fri, 27 Nov 2026 09:00:00 GMT",
    b"Transfer-Encoding: chunked",
    b"Connection: close",
    b"Connection: keep-alive",
    b"Retry-After: 3",
    b"Cache-Control: no-cache, private",
    b"no colon here",
]


@given(
    status=st.sampled_from([b"HTTP/1.1 201 Created", b"HTTP/1.0 200 OK", b"HTTP/1.1 429 Too Many"]),
    lines=st.lists(st.sampled_from(_HEADER_LINES), max_size=6),
)
@example(status=b"HTTP/1.1 201 Created", lines=[b"Content-Length: 57", b"Connection: close"])
@example(status=b"HTTP/1.0 200 OK", lines=[b"Connection: keep-alive", b"Content-Length: 57"])
@example(status=b"HTTP/1.1 201 Created", lines=[b"Content-Length: 57", b"Retry-After: 3"])
@example(status=b"HTTP/1.1 201 Created", lines=[b"Content-Length: 57", b"Transfer-Encoding: chunked"])
@example(status=b"HTTP/1.1 201 Created", lines=[b"X-Content-Length: 3", b"Content-Length: 57"])
@example(status=b"HTTP/1.1 201 Created", lines=[b"Content-Length: 57", b"Content-Length: 8"])
def test_an_answer_head_reads_the_same_with_or_without_the_quick_path(
    status: bytes, lines: list[bytes]
) -> None:
    """The quick reading of a plain head (`_plain_head`) gives what reading it line by line gives,
    and a head it cannot read quickly is read line by line."""
    head = b"\r\n".join([status, *lines]) + b"\r\n\r\n"
    rest = head.partition(b"\r\n")[2]
    keep = not status.startswith(b"HTTP/1.0")
    try:
        slow: tuple[Any, ...] = (int(status.split()[1]), *_read_lines(rest, keep))
    except TransportError as exc:
        with pytest.raises(TransportError) as err:
            _parse_head(head)
        assert str(err.value) == str(exc)
        return
    assert _parse_head(head) == slow


async def test_each_request_keeps_its_own_deadline_with_one_timer_for_all() -> None:
    """A short timeout fails its request on time while a longer one beside it, on another
    connection, is still answered; the client's timer serves both."""

    async def answer(conn: int, _n: int, _r: asyncio.StreamReader, w: asyncio.StreamWriter) -> bool:
        await asyncio.sleep(0.4 if conn == 0 else 0.6)
        w.write(OK)
        return True

    srv = BareServer(answer)
    async with srv as url:
        client = await _client(url)
        try:
            t0 = time.monotonic()
            slow = asyncio.ensure_future(client.request("POST", "/api/v1/namespaces/c1/events", body={}))
            await asyncio.sleep(0.05)  # the second request takes the second connection
            with pytest.raises(ApiError) as err:
                await client.request("POST", "/api/v1/namespaces/c1/events", body={}, timeout=0.2)
            assert 0.2 <= time.monotonic() - t0 < 0.4 and err.value.status == 0
            assert await slow == {}
        finally:
            await client.close()


async def test_requests_beyond_the_connection_limit_wait_their_turn() -> None:
    busy = [0, 0]  # requests being answered now, the most at once

    async def answer(_c: int, _n: int, _r: asyncio.StreamReader, w: asyncio.StreamWriter) -> bool:
        busy[0] += 1
        busy[1] = max(busy)
        await asyncio.sleep(0.02)
        busy[0] -= 1
        w.write(OK)
        return True

    srv = BareServer(answer)
    async with srv as url:
        writer = KeepAliveClient(url, max_connections=2)
        try:
            sends = [
                asyncio.ensure_future(
                    writer.request("POST", f"/api/v1/namespaces/c1/events?n={i}", {}, b"{}", 5.0)
                )
                for i in range(6)
            ]
            await asyncio.sleep(0)  # the first two have their slots, the others wait
            waiting = asyncio.ensure_future(writer.request("POST", "/x", {}, b"{}", 5.0))
            await asyncio.sleep(0)
            waiting.cancel()  # a request cancelled while it waits for a slot takes none away
            answers = await asyncio.gather(*sends)
        finally:
            await writer.close()
    assert [a.status for a in answers] == [201] * 6
    assert writer.opened == 2 and busy[1] == 2
    numbers = sorted(int(line.split(b"=")[1].split()[0]) for _c, line in srv.requests)
    assert numbers == list(range(6))  # the cancelled one was never sent


async def test_writes_send_the_headers_credentials_gives() -> None:
    """The header lines of a write, rendered once and kept, are `credentials()`'s headers (a
    body's type JSON unless said) in the same order, with a token when the config has one."""
    seen: list[bytes] = []

    async def answer(_c: int, _n: int, r: asyncio.StreamReader, w: asyncio.StreamWriter) -> bool:
        w.write(OK)
        return True

    srv = BareServer(answer)
    async with srv as url:
        client = await _client(url)
        real = client.writer
        assert real is not None
        send = real.request_lines

        async def spy(method: str, target: str, lines: str, body: bytes | None, timeout: float) -> Any:
            seen.append(lines.encode())
            return await send(method, target, lines, body, timeout)

        real.request_lines = spy  # type: ignore[method-assign]
        try:
            client.api.configuration.api_key["BearerToken"] = "t0k"
            client.api.configuration.api_key_prefix["BearerToken"] = "Bearer"
            for ctype in (None, "application/merge-patch+json"):
                for body in (None, {"a": 1}):
                    await client.request("PATCH", "/api/v1/nodes/n1", body=body, content_type=ctype)
                    expected = await client.credentials(ctype)
                    if body is not None:
                        expected.setdefault("Content-Type", "application/json")
                    assert seen[-1] == "".join(f"{k}: {v}\r\n" for k, v in expected.items()).encode()
            client.api.configuration.api_key["BearerToken"] = "n3w"  # a refreshed token is sent
            await client.request("PATCH", "/api/v1/nodes/n1", body={})
            assert b"authorization: Bearer n3w\r\n" in seen[-1]
        finally:
            await client.close()


async def test_writes_read_the_token_as_the_configuration_gives_it() -> None:
    """A write's token read without a coroutine (no refresh hook) is the configuration's own
    `get_api_key_with_prefix`; with a hook, the hook runs first, as for every request."""
    srv = BareServer(lambda *_: asyncio.sleep(0, True))
    async with srv as url:
        client = await _client(url)
        cfg = client.api.configuration
        try:
            for key, prefix in (("t0k", "Bearer"), ("t0k", None), ("", "Bearer"), (None, None)):
                cfg.api_key.pop("BearerToken", None)
                cfg.api_key_prefix.pop("BearerToken", None)
                if key is not None:
                    cfg.api_key["BearerToken"] = key
                if prefix is not None:
                    cfg.api_key_prefix["BearerToken"] = prefix
                assert client._bearer_now() == await client._bearer()
            cfg.api_key["BearerToken"] = "old"
            refreshed: list[str] = []

            def hook(c: Any) -> None:
                c.api_key["BearerToken"] = "n3w"
                refreshed.append("n3w")

            cfg.refresh_api_key_hook = hook
            assert client._bearer_now() is None  # the hook is due: `_bearer` runs it
            assert await client._bearer() == (True, "n3w") and refreshed
        finally:
            cfg.refresh_api_key_hook = None
            await client.close()
