"""A lean HTTP/1.1 client for the daemon's writes: keep-alive connections on asyncio streams.

A burst sends two small POSTs per pod (the Binding and its Scheduled event) plus status writes,
and aiohttp's client spends more CPU on each (request and response objects, header multidicts,
timers, tracing hooks) than deciding the pod does: about a third of the daemon's CPU in a
burst. This writer formats one request head, writes it with the body, and parses only what the
caller needs from the answer (status, body, Retry-After). It knows nothing about Kubernetes:
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


class _Connection:
    __slots__ = ("reader", "used", "writer")

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.used = False  # has answered a request: a failure may just mean the server closed it idle

    def usable(self) -> bool:
        return not self.reader.at_eof() and not self.writer.is_closing()

    def close(self) -> None:
        self.writer.close()


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
        self._slots = asyncio.Semaphore(max_connections)
        self.opened = 0  # connections opened, for tests and logs
        self._closed = False

    async def request(
        self, method: str, target: str, headers: dict[str, str], body: bytes | None, timeout: float
    ) -> Answer:
        """Send one request; the answer whatever its status, or TransportError."""
        lines = [f"{method} {self.prefix}{target} HTTP/1.1\r\n", self._host_line]
        lines += [f"{k}: {v}\r\n" for k, v in headers.items()]
        lines.append(f"Content-Length: {len(body) if body else 0}\r\n\r\n")
        data = "".join(lines).encode("latin-1")
        if body:
            data += body
        async with self._slots:
            try:
                async with asyncio.timeout(timeout):
                    return await self._exchange(data)
            except TimeoutError:
                raise TransportError(f"no answer within {timeout:g}s") from None

    async def _exchange(self, data: bytes) -> Answer:
        while True:
            conn = await self._connection()
            try:
                answer, keep = await self._send_on(conn, data)
            except _Unanswered as exc:
                conn.close()
                if conn.used:  # closed by the server while idle: the request never reached it
                    continue
                raise TransportError(str(exc)) from None
            except BaseException:  # a broken exchange, a timeout or a cancellation: state unknown
                conn.close()
                raise
            conn.used = True
            if keep and not self._closed:
                self._idle.append(conn)
            else:
                conn.close()
            return answer

    async def _connection(self) -> _Connection:
        while self._idle:
            conn = self._idle.pop()  # the most recently used: the least likely to be closed idle
            if conn.usable():
                return conn
            conn.close()
        try:
            reader, writer = await asyncio.open_connection(
                self.host,
                self.port,
                ssl=self.ssl_context,
                server_hostname=self.server_hostname if self.tls else None,
                limit=2**21,  # an answer's head line never nears this; a Status body may be long
            )
        except (OSError, ssl.SSLError) as exc:
            raise TransportError(f"connect {self.host}:{self.port}: {type(exc).__name__}: {exc}") from None
        self.opened += 1
        return _Connection(reader, writer)

    async def _send_on(self, conn: _Connection, data: bytes) -> tuple[Answer, bool]:
        reader = conn.reader
        try:
            conn.writer.write(data)
            await conn.writer.drain()
            head = await reader.readuntil(b"\r\n\r\n")
        except asyncio.IncompleteReadError as exc:
            if not exc.partial:
                raise _Unanswered("the connection closed before an answer") from None
            raise TransportError("the answer ended inside its head") from None
        except (ConnectionError, BrokenPipeError) as exc:
            raise _Unanswered(f"{type(exc).__name__}: {exc}") from None
        except (OSError, asyncio.LimitOverrunError) as exc:
            raise TransportError(f"{type(exc).__name__}: {exc}") from None
        status, length, chunked, keep, retry_after = _parse_head(head)
        try:
            if chunked:
                body = await _read_chunked(reader)
            elif length is not None:
                body = await reader.readexactly(length) if length else b""
            elif status in (204, 304) or 100 <= status < 200:
                body = b""
            else:  # no length: the body runs to the end of the connection
                body = await reader.read()
                keep = False
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, OSError, ValueError) as exc:
            raise TransportError(f"the answer's body broke off: {type(exc).__name__}") from None
        return Answer(status, body, retry_after), keep

    async def close(self) -> None:
        self._closed = True
        idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()


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
    return status, None if chunked else length, chunked, keep, retry_after


async def _read_chunked(reader: asyncio.StreamReader) -> bytes:
    parts: list[bytes] = []
    while True:
        size_line = await reader.readuntil(b"\r\n")
        size = int(size_line.split(b";", 1)[0].strip(), 16)
        if size == 0:
            while await reader.readuntil(b"\r\n") != b"\r\n":  # trailers, then the blank line
                pass
            return b"".join(parts)
        parts.append((await reader.readexactly(size + 2))[:-2])
