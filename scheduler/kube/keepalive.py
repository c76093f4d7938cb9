"""A lean HTTP/1.1 client for the daemon's writes: keep-alive connections, one protocol each.

A burst sends two small POSTs per pod (the Binding and its Scheduled event) plus status writes,
and aiohttp's client spends more CPU on each (request and response objects, header multidicts,
timers, tracing hooks) than deciding the pod does: about a third of the daemon's CPU in a
burst. This writer formats one request head, writes it with the body, and parses only what the
caller needs from the answer (status, body, Retry-After), as its bytes arrive, on an
`asyncio.Protocol` of its own: on streams, the write, drain, head and body reads were a
coroutine step each (measured alone against a trivial server: 52 -> 35 us of client CPU a
request). It knows nothing about Kubernetes:
`KubeClient` still takes the token, adds the credentials and checks the fence before calling it,
and turns the answer into the same `ApiError`.

A connection that the server closed while it sat idle is found when the next request on it gets
no answer at all; that request is sent again at once on a new connection (only then: a fresh
connection that fails, or an answer that breaks off, is an `ApiError` with status 0 for the
caller's retry policy). Go's transport resends only idempotent requests there; every write the
daemon sends is safe to send twice: the API server refuses a second Binding of a pod (409, and
the binder asks the API whose pod it is), an event of the same name (409), a DELETE of a pod that
is gone (404, which the evictor accepts), and status and lock patches write the same content.
"""

from __future__ import annotations

import asyncio
import collections
import ssl
from dataclasses import dataclass
from urllib.parse import urlsplit


class TransportError(Exception):
    """No usable answer: the connection failed, timed out or the answer was not HTTP."""


@dataclass(slots=True)
class Answer:
    status: int
    body: bytes
    retry_after: str | None = None


# the longest answer head accepted (an answer's head line never nears this)
_HEAD_LIMIT = 2**21


class _Connection(asyncio.Protocol):
    """One keep-alive connection, and the answer to the one request in flight on it.

    A protocol, not a pair of streams: the answer is parsed as its bytes arrive and hands the
    waiting request its `Answer` in one step, where streams took a write, a drain, a read of the
    head and a read of the body, each a coroutine of its own, for every request."""

    __slots__ = (
        "_body_at", "_buf", "_got", "_head", "_queued", "_waiter", "closed", "deadline", "transport", "used",
    )  # fmt: skip

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.used = False  # has answered a request: a failure may just mean the server closed it idle
        self.closed = False  # the peer closed it, or it was lost
        self._buf = bytearray()
        self._waiter: asyncio.Future[tuple[Answer, bool]] | None = None
        self._got = False  # some byte of the current answer arrived
        self._head: tuple[int, int | None, bool, bool, str | None] | None = None
        self._body_at = 0
        self.deadline = 0.0  # loop time by which the request in flight must be answered
        # the waiters of pipelined requests written after the one `_waiter` waits for, in order
        self._queued: collections.deque[asyncio.Future[tuple[Answer, bool]]] = collections.deque()

    # ------------------------------------------------------------------ asyncio.Protocol --
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        if self._waiter is None or self._waiter.done():
            # bytes nobody asked for: the connection can no longer be trusted to frame answers
            self.close()
            return
        self._buf += data
        self._got = True
        try:
            # pipelined answers may come in one read: hand over each that is complete
            handed = self._advance()
            while handed and self._waiter is not None and self._buf:
                handed = self._advance()
        except TransportError as exc:
            self._fail(exc)

    def eof_received(self) -> bool:
        self._ended()
        return False  # let the transport close

    def connection_lost(self, exc: Exception | None) -> None:
        self._ended()

    # ------------------------------------------------------------------ requests --
    def usable(self) -> bool:
        return not self.closed and self.transport is not None and not self.transport.is_closing()

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()

    def send(self, data: bytes) -> asyncio.Future[tuple[Answer, bool]]:
        """Write a request; the future gets (its answer, whether the connection may be kept)."""
        assert self.transport is not None
        self._buf.clear()
        self._head, self._got, self._body_at = None, False, 0
        waiter = self._waiter = asyncio.get_running_loop().create_future()
        self.transport.write(data)
        return waiter

    def send_pipelined(self, requests: list[bytes]) -> list[asyncio.Future[tuple[Answer, bool]]]:
        """Write several requests at once, without waiting for answers in between (HTTP/1.1
        pipelining: the server answers them in order); their futures, in the same order."""
        assert self.transport is not None and requests
        self._buf.clear()
        self._head, self._got, self._body_at = None, False, 0
        loop = asyncio.get_running_loop()
        waiters = [loop.create_future() for _ in requests]
        self._waiter = waiters[0]
        self._queued.extend(waiters[1:])
        self.transport.write(b"".join(requests))
        return waiters

    def _advance(self) -> bool:
        """Hand over the answer once all of it is in the buffer; True when it was handed over."""
        buf = self._buf
        if self._head is None:
            end = buf.find(b"\r\n\r\n")
            if end < 0:
                if len(buf) > _HEAD_LIMIT:
                    raise TransportError("LimitOverrunError: the answer's head is too long")
                return False
            self._head = _parse_head(bytes(buf[: end + 4]))
            self._body_at = end + 4
        status, length, chunked, keep, retry_after = self._head
        at = self._body_at
        if chunked:
            try:
                framed = _chunked_body(buf, at)
            except ValueError as exc:
                raise TransportError(f"the answer's body broke off: {type(exc).__name__}") from None
            if framed is None:
                return False
            body, end_at = framed
        elif length is not None:
            end_at = at + length
            if len(buf) < end_at:
                return False
            body = bytes(buf[at:end_at])
        elif status in (204, 304) or 100 <= status < 200:
            body, end_at = b"", at
        else:
            return False  # no length: the body runs to the end of the connection
        self._done(Answer(status, body, retry_after), keep, end_at)
        return True

    def _ended(self) -> None:
        """The peer closed the connection (or it was lost): what that means for the request."""
        self.closed = True
        waiter = self._waiter
        if waiter is None or waiter.done():
            self._fail_queued(_Unanswered("the connection closed before an answer"))
            return
        head = self._head
        if not self._got:
            waiter.set_exception(_Unanswered("the connection closed before an answer"))
        elif head is None:
            waiter.set_exception(TransportError("the answer ended inside its head"))
        elif not head[2] and head[1] is None and not (head[0] in (204, 304) or 100 <= head[0] < 200):
            self._done(Answer(head[0], bytes(self._buf[self._body_at :]), head[4]), False, len(self._buf))
        else:
            waiter.set_exception(TransportError("the answer's body broke off: IncompleteReadError"))
        self._fail_queued(_Unanswered("the connection closed before an answer"))

    def _done(self, answer: Answer, keep: bool, end: int) -> None:
        """`answer` (the buffer's first `end` bytes) to its waiter; the next pipelined request's
        waiter, if any, then waits for the bytes after it."""
        waiter = self._waiter
        self.used = True
        if self._queued and keep:
            del self._buf[:end]
            self._waiter = self._queued.popleft()
            self._head, self._body_at = None, 0
            self._got = bool(self._buf)
        else:
            self._waiter = None
            self._buf.clear()
            # the server closes after this answer: the requests written after it go unanswered
            self._fail_queued(_Unanswered("the connection closed before an answer"))
        if waiter is not None and not waiter.done():
            waiter.set_result((answer, keep))

    def _fail_queued(self, exc: Exception) -> None:
        queued = self._queued
        while queued:
            waiter = queued.popleft()
            if not waiter.done():
                waiter.set_exception(exc)

    def expire(self) -> None:
        """The request in flight (and any pipelined after it) was not answered in time."""
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_exception(TimeoutError())
        self._fail_queued(TimeoutError())

    def _fail(self, exc: Exception) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_exception(exc)
        self._fail_queued(exc)
        self.close()


def _chunked_body(buf: bytearray, at: int) -> tuple[bytes, int] | None:
    """The body of a chunked answer starting at `at` and where the answer ends, or None while it
    is incomplete."""
    parts: list[bytes] = []
    while True:
        eol = buf.find(b"\r\n", at)
        if eol < 0:
            return None
        size = int(bytes(buf[at:eol]).split(b";", 1)[0].strip(), 16)
        at = eol + 2
        if size == 0:
            while True:  # trailers, then the blank line
                eol = buf.find(b"\r\n", at)
                if eol < 0:
                    return None
                if eol == at:
                    return b"".join(parts), eol + 2
                at = eol + 2
        if len(buf) < at + size + 2:
            return None
        parts.append(bytes(buf[at : at + size]))
        at += size + 2


class KeepAliveClient:
    """Requests to one server over at most `max_connections` keep-alive connections."""

    def __init__(
        self,
        base_url: str,
        ssl_context: ssl.SSLContext | None = None,
        server_hostname: str | None = None,
        max_connections: int = 100,
    ) -> None:
        url = urlsplit(base_url)
        if url.scheme not in ("http", "https") or not url.hostname:
            raise ValueError(f"not an http(s) address: {base_url!r}")
        self.tls = url.scheme == "https"
        self.host = url.hostname
        self.port = url.port or (443 if self.tls else 80)
        self.prefix = url.path.rstrip("/")  # a server behind a path (a proxy's /k8s/clusters/x)
        self.ssl_context = (ssl_context or ssl.create_default_context()) if self.tls else None
        self.server_hostname = server_hostname or None
        host_header = f"[{self.host}]" if ":" in self.host else self.host
        if url.port:
            host_header += f":{url.port}"
        self._host_line = f"Host: {host_header}\r\n"
        self._idle: list[_Connection] = []
        self._slots = Slots(max_connections)
        self.opened = 0  # connections opened, for tests and logs
        self._closed = False
        # connections with a request in flight, and the one timer that fails those not answered
        # by their deadline: a timer per request (scheduled, then cancelled with the answer) was
        # a twentieth of a Binding's client CPU
        self._busy: set[_Connection] = set()
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at = 0.0
        # the connection of `request_pipelined`, and its one batch at a time
        self._pipe: _Connection | None = None
        self._pipe_slots = Slots(1)

    async def request(
        self, method: str, target: str, headers: dict[str, str], body: bytes | None, timeout: float
    ) -> Answer:
        """Send one request; the answer whatever its status, or TransportError."""
        return await self.request_lines(method, target, header_lines(headers), body, timeout)

    async def request_lines(
        self, method: str, target: str, lines: str, body: bytes | None, timeout: float
    ) -> Answer:
        """`request` with the headers already rendered by `header_lines` (callers that send the
        same headers again and again render them once)."""
        data = self._render(method, target, lines, body)
        slots = self._slots
        waiting = slots.take()
        if waiting is not None:
            await slots.wait(waiting)
        try:
            deadline = asyncio.get_running_loop().time() + timeout
            return await self._exchange(data, deadline)
        except TimeoutError:
            raise TransportError(f"no answer within {timeout:g}s") from None
        finally:
            slots.give()

    def _render(self, method: str, target: str, lines: str, body: bytes | None) -> bytes:
        data = (
            f"{method} {self.prefix}{target} HTTP/1.1\r\n{self._host_line}{lines}"
            f"Content-Length: {len(body) if body else 0}\r\n\r\n"
        ).encode("latin-1")
        return data + body if body else data

    async def request_pipelined(
        self, requests: list[tuple[str, str, str, bytes | None]], timeout: float
    ) -> list[Answer | TransportError]:
        """Send `(method, target, header lines, body)` requests written back to back on one
        connection of their own (HTTP/1.1 pipelining); each one's answer or TransportError, in order.

        For writes nobody waits on (events): one write system call and one read of the answers
        for a whole batch, where each request alone costs its own write, wakeup and read. Never
        for Bindings: a server answers a connection's requests one after another, so binds
        pipelined would wait for each other instead of running side by side on several
        connections. One batch at a time (a second caller waits); the connection is kept for the
        next batch and takes none of the `max_connections` the other requests share.

        Requests the server left unanswered on a connection that had answered before (closed
        while idle, or closed after an answer it marked `Connection: close`) are sent again once
        on a new connection, as `request` does for a single one."""
        if not requests:
            return []
        datas = [self._render(*r) for r in requests]
        waiting = self._pipe_slots.take()
        if waiting is not None:
            await self._pipe_slots.wait(waiting)
        try:
            deadline = asyncio.get_running_loop().time() + timeout
            out: list[Answer | TransportError] = []
            resent = False
            while len(out) < len(datas):
                conn = self._pipe if self._pipe is not None and self._pipe.usable() else None
                if conn is None:
                    try:
                        conn = self._pipe = await self._connection(deadline)
                    except TransportError as exc:
                        out += [exc] * (len(datas) - len(out))
                        break
                was_used = conn.used
                answers, unanswered = await self._pipelined(conn, datas[len(out) :], deadline, timeout)
                out += answers
                if unanswered is None:
                    continue
                if (was_used or answers) and not resent:
                    resent = True  # the rest never reached the server: once more, on a new connection
                    continue
                out += [TransportError(str(unanswered))] * (len(datas) - len(out))
            return out
        finally:
            self._pipe_slots.give()

    async def _pipelined(
        self, conn: _Connection, datas: list[bytes], deadline: float, timeout: float
    ) -> tuple[list[Answer | TransportError], _Unanswered | None]:
        """The answers `conn` gives to `datas` (TransportError for each it failed), up to the first
        request left without a byte of answer, which is returned with the rest unanswered."""
        waiters = conn.send_pipelined(datas)
        conn.deadline = deadline
        self._busy.add(conn)
        if self._timer is None or deadline < self._timer_at:
            self._arm(deadline)
        outcomes: list[Answer | Exception] = []
        try:
            for waiter in waiters:  # every one is awaited: each gets its answer or its exception
                try:
                    answer, keep = await waiter
                except (_Unanswered, TimeoutError, TransportError) as exc:
                    outcomes.append(exc)
                    continue
                outcomes.append(answer)
                if not keep:
                    conn.close()
        except BaseException:  # a cancellation: the state of the connection is unknown
            conn.close()
            raise
        finally:
            self._busy.discard(conn)
        answers: list[Answer | TransportError] = []
        for outcome in outcomes:
            if isinstance(outcome, _Unanswered):  # and so is every request after it
                conn.close()
                return answers, outcome
            if isinstance(outcome, TimeoutError):
                outcome = TransportError(f"no answer within {timeout:g}s")
            if isinstance(outcome, Exception):
                conn.close()
                answers.append(
                    outcome if isinstance(outcome, TransportError) else TransportError(str(outcome))
                )
            else:
                answers.append(outcome)
        if self._closed:
            conn.close()
        return answers, None

    async def _exchange(self, data: bytes, deadline: float) -> Answer:
        while True:
            conn = self._idle_connection() or await self._connection(deadline)
            try:
                answer, keep = await self._answer(conn, data, deadline)
            except _Unanswered as exc:
                conn.close()
                if conn.used:  # closed by the server while idle: the request never reached it
                    continue
                raise TransportError(str(exc)) from None
            except BaseException:  # a broken exchange, a timeout or a cancellation: state unknown
                conn.close()
                raise
            conn.used = True
            if keep and not self._closed and conn.usable():
                self._idle.append(conn)
            else:
                conn.close()
            return answer

    def _idle_connection(self) -> _Connection | None:
        while self._idle:
            conn = self._idle.pop()  # the most recently used: the least likely to be closed idle
            if conn.usable():
                return conn
            conn.close()
        return None

    async def _connection(self, deadline: float) -> _Connection:
        loop = asyncio.get_running_loop()
        conn = _Connection()
        try:
            async with asyncio.timeout_at(deadline):
                await loop.create_connection(
                    lambda: conn,
                    self.host,
                    self.port,
                    ssl=self.ssl_context,
                    server_hostname=self.server_hostname if self.tls else None,
                )
        except (OSError, ssl.SSLError) as exc:
            raise TransportError(f"connect {self.host}:{self.port}: {type(exc).__name__}: {exc}") from None
        self.opened += 1
        return conn

    async def _answer(self, conn: _Connection, data: bytes, deadline: float) -> tuple[Answer, bool]:
        """Send `data` on `conn` and wait for its answer until `deadline` (TimeoutError after it)."""
        waiter = conn.send(data)
        conn.deadline = deadline
        busy = self._busy
        busy.add(conn)
        if self._timer is None or deadline < self._timer_at:
            self._arm(deadline)
        try:
            return await waiter
        finally:
            busy.discard(conn)

    def _arm(self, at: float) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer = asyncio.get_running_loop().call_at(at, self._sweep)
        self._timer_at = at

    def _sweep(self) -> None:
        """Fail the requests past their deadline; the timer then waits for the next deadline."""
        self._timer = None
        # a timer may fire a little before its time (the loop's clock resolution)
        now = asyncio.get_running_loop().time() + _EARLY_S
        nearest: float | None = None
        for conn in list(self._busy):
            if conn.deadline <= now:
                conn.expire()
            elif nearest is None or conn.deadline < nearest:
                nearest = conn.deadline
        if nearest is not None:
            self._arm(nearest)

    async def close(self) -> None:
        self._closed = True
        idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()
        pipe, self._pipe = self._pipe, None
        if pipe is not None and pipe not in self._busy:
            pipe.close()
        if self._timer is not None and not self._busy:  # requests in flight keep their deadline
            self._timer.cancel()
            self._timer = None


# how early the deadline timer may fire and still fail a request (clock resolution)
_EARLY_S = 0.002


def header_lines(headers: dict[str, str]) -> str:
    """Headers as the lines of a request head (each ending in CRLF)."""
    return "".join([f"{k}: {v}\r\n" for k, v in headers.items()])


class Slots:
    """At most `n` requests at once, later ones served in arrival order: `asyncio.Semaphore`,
    without a coroutine to enter and one to leave for every request that need not wait."""

    __slots__ = ("free", "waiters")

    def __init__(self, n: int) -> None:
        self.free = n
        self.waiters: collections.deque[asyncio.Future[None]] = collections.deque()

    def take(self) -> asyncio.Future[None] | None:
        """A slot now (None), or the future that gets one (pass it to `wait`)."""
        if self.free > 0 and not self.waiters:
            self.free -= 1
            return None
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.waiters.append(fut)
        return fut

    async def wait(self, fut: asyncio.Future[None]) -> None:
        try:
            await fut
        except asyncio.CancelledError:
            if fut.done() and not fut.cancelled():  # handed a slot, then cancelled: pass it on
                self.give()
            raise

    def give(self) -> None:
        """Return a slot: to the first waiter still waiting, else to the pool."""
        while self.waiters:
            fut = self.waiters.popleft()
            if not fut.done():
                fut.set_result(None)
                return
        self.free += 1


class _Unanswered(Exception):
    """The request got no byte of an answer (the server may have closed the connection idle)."""


def _parse_head(head: bytes) -> tuple[int, int | None, bool, bool, str | None]:
    """(status, Content-Length, chunked, keep-alive, Retry-After) of an HTTP/1.x answer head."""
    status_line, _, rest = head.partition(b"\r\n")
    parts = status_line.split(None, 2)
    if len(parts) < 2 or not parts[0].startswith(b"HTTP/1.") or not parts[1].isdigit():
        raise TransportError(f"not an HTTP/1.x answer: {status_line[:80]!r}")
    status = int(parts[1])
    keep = parts[0] != b"HTTP/1.0"
    quick = _plain_head(rest)
    if quick is not None:
        return status, quick, False, keep, None
    return (status, *_read_lines(rest, keep))


def _read_lines(rest: bytes, keep: bool) -> tuple[int | None, bool, bool, str | None]:
    """(Content-Length, chunked, keep-alive, Retry-After) from the header lines `rest`, one line
    at a time (`keep`: what the status line says)."""
    length: int | None = None
    chunked = False
    retry_after: str | None = None
    for line in rest.split(b"\r\n"):
        name, sep, value = line.partition(b":")
        if not sep:
            continue
        name = name.strip().lower()
        if name == b"content-length":
            try:
                length = int(value)
            except ValueError:
                raise TransportError(f"bad Content-Length: {value[:40]!r}") from None
        elif name == b"transfer-encoding":
            chunked = b"chunked" in value.lower()
        elif name == b"connection":
            v = value.strip().lower()
            keep = v != b"close" if keep else v == b"keep-alive"
        elif name == b"retry-after":
            retry_after = value.strip().decode("latin-1")
    return None if chunked else length, chunked, keep, retry_after


def _plain_head(rest: bytes) -> int | None:
    """The Content-Length of the header lines `rest` when they say nothing else `_parse_head`
    reads (no Transfer-Encoding, Connection or Retry-After anywhere, one Content-Length line):
    the head of nearly every answer, found by a few searches instead of a split of each line.
    None when the lines must be read one by one."""
    low = rest.lower()
    if b"transfer-encoding" in low or b"connection" in low or b"retry-after" in low:
        return None
    at = low.find(b"content-length:")
    if at < 0 or (at and low[at - 2 : at] != b"\r\n") or low.find(b"content-length", at + 15) >= 0:
        return None
    end = rest.find(b"\r\n", at)
    value = rest[at + 15 : end if end >= 0 else len(rest)]
    try:
        return int(value)
    except ValueError:
        return None  # the line by line reading refuses it with its own message
