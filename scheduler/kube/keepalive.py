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

    __slots__ = ("_body_at", "_buf", "_got", "_head", "_waiter", "closed", "deadline", "transport", "used")

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
            self._advance()
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

    def _advance(self) -> None:
        """Hand over the answer once all of it is in the buffer."""
        buf = self._buf
        if self._head is None:
            end = buf.find(b"\r\n\r\n")
            if end < 0:
                if len(buf) > _HEAD_LIMIT:
                    raise TransportError("LimitOverrunError: the answer's head is too long")
                return
            self._head = _parse_head(bytes(buf[: end + 4]))
            self._body_at = end + 4
        status, length, chunked, keep, retry_after = self._head
        at = self._body_at
        if chunked:
            try:
                body = _chunked_body(buf, at)
            except ValueError as exc:
                raise TransportError(f"the answer's body broke off: {type(exc).__name__}") from None
            if body is None:
                return
        elif length is not None:
            if len(buf) - at < length:
                return
            body = bytes(buf[at : at + length])
        elif status in (204, 304) or 100 <= status < 200:
            body = b""
        else:
            return  # no length: the body runs to the end of the connection
        self._done(Answer(status, body, retry_after), keep)

    def _ended(self) -> None:
        """The peer closed the connection (or it was lost): what that means for the request."""
        self.closed = True
        waiter = self._waiter
        if waiter is None or waiter.done():
            return
        head = self._head
        if not self._got:
            waiter.set_exception(_Unanswered("the connection closed before an answer"))
        elif head is None:
            waiter.set_exception(TransportError("the answer ended inside its head"))
        elif not head[2] and head[1] is None and not (head[0] in (204, 304) or 100 <= head[0] < 200):
            self._done(Answer(head[0], bytes(self._buf[self._body_at :]), head[4]), False)
        else:
            waiter.set_exception(TransportError("the answer's body broke off: IncompleteReadError"))

    def _done(self, answer: Answer, keep: bool) -> None:
        waiter = self._waiter
        self._waiter = None
        self._buf.clear()
        if waiter is not None and not waiter.done():
            waiter.set_result((answer, keep))

    def expire(self) -> None:
        """The request in flight was not answered in time."""
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_exception(TimeoutError())

    def _fail(self, exc: Exception) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_exception(exc)
        self.close()


def _chunked_body(buf: bytearray, at: int) -> bytes | None:
    """The body of a chunked answer starting at `at`, or None while it is incomplete."""
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
                    return b"".join(parts)
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
        data = (
            f"{method} {self.prefix}{target} HTTP/1.1\r\n{self._host_line}{lines}"
            f"Content-Length: {len(body) if body else 0}\r\n\r\n"
        ).encode("latin-1")
        if body:
            data += body
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
