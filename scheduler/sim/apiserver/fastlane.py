"""The write fast lane: complete write requests answered inside the connection's `data_received`.

aiohttp spends more on a small write than the write itself costs: a task, a payload stream, a
request and a response object and a header serialisation per request, ~60 % of the server's
CPU for a Binding. A job controller's burst is thousands of such writes (creates, Bindings,
status patches, events). Here the connection frames each request itself, and one that is a
plain write to a resource path (POST/PUT/PATCH/DELETE, HTTP/1.1, a Content-Length body) is
answered at once through `App.answer_write`, the same code the asynchronous path runs, with
the same response bytes aiohttp would send.

Everything else (reads, watches, discovery, the admin API, anything unusual in the framing)
goes to aiohttp unchanged, one whole request at a time and in order: a request is answered here
only when aiohttp has nothing queued or running on the connection, so answers keep the order
of requests. A connection whose framing this module does not follow (chunked bodies,
`Expect: 100-continue`, upgrades, `Connection: close`, HTTP/1.0, oversized heads) is handed to
aiohttp for good from that byte on.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aiohttp import web
from aiohttp.helpers import rfc822_formatted_time
from aiohttp.http import SERVER_SOFTWARE, HttpVersion11
from aiohttp.web_protocol import RequestHandler
from multidict import MultiDict, MultiDictProxy
from yarl import URL

from scheduler.sim.apiserver.errors import internal
from scheduler.sim.apiserver.faults import FaultInjector
from scheduler.sim.apiserver.handlers import Answer, error_answer

# heads larger than this go to aiohttp, which answers them with its own limits' errors
MAX_HEAD = 32 * 1024
# larger bodies go to aiohttp as they arrive instead of being gathered here
MAX_LANE_BODY = 256 * 1024
_WRITES = frozenset({"POST", "PUT", "PATCH", "DELETE"})
# headers whose presence means framing or connection semantics this module does not handle
_HAND_OVER = frozenset({"transfer-encoding", "expect", "upgrade"})
_FRAMING = _HAND_OVER | {"content-length"}
_EMPTY_QUERY: MultiDictProxy[str] = MultiDictProxy(MultiDict())
_SERVER_LINE = f"Server: {SERVER_SOFTWARE}\r\n\r\n".encode()


def _reason(status: int) -> str:
    from http import HTTPStatus

    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return ""


_STATUS_LINES: dict[int, bytes] = {}


def _status_line(status: int) -> bytes:
    line = _STATUS_LINES.get(status)
    if line is None:
        line = _STATUS_LINES[status] = f"HTTP/1.1 {status} {_reason(status)}\r\n".encode()
    return line


class Headers(dict[str, str]):
    """Request headers by lower-case name; `get` is case-insensitive as aiohttp's are."""

    def get(self, key: str, default: Any = None) -> Any:  # type: ignore[override]
        return dict.get(self, key.lower(), default)

    def __getitem__(self, key: str) -> str:
        return dict.__getitem__(self, key.lower())

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and dict.__contains__(self, key.lower())


class FastRequest:
    """What the guard and the write handlers read of a `web.BaseRequest`."""

    __slots__ = ("_query", "_state", "headers", "method", "path", "query_string", "transport")

    version = HttpVersion11

    def __init__(self, method: str, path: str, query_string: str, headers: Headers, transport: Any) -> None:
        self.method = method
        self.path = path
        self.query_string = query_string
        self.headers = headers
        self.transport = transport
        self._query: MultiDictProxy[str] | None = None
        self._state: dict[Any, Any] = {}

    @property
    def query(self) -> MultiDictProxy[str]:
        if self._query is None:
            # as aiohttp parses it (yarl), for the rare write with parameters
            qs = self.query_string
            self._query = URL.build(query_string=qs, encoded=True).query if qs else _EMPTY_QUERY
        return self._query

    def __getitem__(self, key: Any) -> Any:
        return self._state[key]

    def __setitem__(self, key: Any, value: Any) -> None:
        self._state[key] = value


class Framed:
    """One request's head split from the connection's bytes: `size` bytes with its body."""

    __slots__ = ("body_start", "headers", "method", "size", "target")

    def __init__(self, body_start: int, size: int, method: str, target: str, headers: Headers) -> None:
        self.body_start = body_start
        self.size = size
        self.method = method
        self.target = target
        self.headers = headers


class HandOver(Exception):
    """The bytes are not a request this module frames: aiohttp takes the connection from here."""


# header block (everything after the request line) -> its headers and body length: a client's
# requests repeat a few blocks (its token, host and content type; a body length of a few sizes),
# parsed once each here instead of line by line per request. Emptied when full.
_BLOCKS: dict[bytes, tuple[Headers, int]] = {}
_BLOCKS_SIZE = 4096


def _parse_block(block: bytes) -> tuple[Headers, int]:
    """The headers of a head's lines after the request line and its Content-Length (-1: none).

    Raises `HandOver` for anything but plain `Name: value` lines with at most one decimal
    Content-Length and no framing or connection semantics this module does not handle.
    """
    headers = Headers()
    length = -1
    if not block:
        return headers, length
    for line in block.decode("ascii").split("\r\n"):
        name, sep, value = line.partition(":")
        if not sep or not name or name[-1] in " \t" or name[0] in " \t":
            raise HandOver
        lname = name.lower()
        value = value.strip(" \t")
        if lname in _FRAMING:
            if lname in _HAND_OVER or length >= 0 or not value.isdigit():
                raise HandOver
            length = int(value)
        elif lname == "connection" and value.lower() != "keep-alive":
            raise HandOver
        headers.setdefault(lname, value)  # the first of repeated headers, as aiohttp's `get` answers
    return headers, length


def frame(buf: bytes) -> Framed | None:
    """The head of the first request in `buf`, None when the head is not all there yet.

    Raises `HandOver` for anything but a plain HTTP/1.1 request with at most a Content-Length body.
    The `headers` of the answer may be shared with other requests: read them, never change them.
    """
    end = buf.find(b"\r\n\r\n")
    if end < 0:
        if len(buf) > MAX_HEAD:
            raise HandOver
        return None
    raw = buf[:end]
    # a non-ASCII head (aiohttp decodes it its own way) or an oversized one: aiohttp's
    if end > MAX_HEAD or not raw.isascii():
        raise HandOver
    line_end = raw.find(b"\r\n")
    if line_end < 0:
        line_end = end
    request_line = raw[:line_end].decode("ascii").split(" ")
    if len(request_line) != 3 or request_line[2] != "HTTP/1.1":
        raise HandOver
    block = raw[line_end + 2 :]
    known = _BLOCKS.get(block)
    if known is None:
        known = _parse_block(block)
        if len(_BLOCKS) >= _BLOCKS_SIZE:
            _BLOCKS.clear()
        _BLOCKS[block] = known
    headers, length = known
    return Framed(end + 4, end + 4 + max(length, 0), request_line[0], request_line[1], headers)


def _fast_target(target: str) -> tuple[str, str] | None:
    """(path, query) of a resource-path target aiohttp would read the same way, else None."""
    if not (target.startswith("/api/") or target.startswith("/apis/")):
        return None
    path, _, query = target.partition("?")
    # percent-escapes, dot segments and fragments: aiohttp's URL handling decides those
    if "%" in target or "/." in path or "#" in target or "+" in query:
        return None
    return path, query


def render(answer: Answer) -> bytes:
    """The response bytes aiohttp sends for `answer` on a keep-alive HTTP/1.1 connection."""
    head = [_status_line(answer.status)]
    for name, value in answer.headers:
        if "\r" in value or "\n" in value:
            raise ValueError("newline in a response header")
        head.append(f"{name}: {value}\r\n".encode())
    head.append(f"Content-Length: {len(answer.body)}\r\nDate: {rfc822_formatted_time()}\r\n".encode())
    head.append(_SERVER_LINE)
    head.append(answer.body)
    return b"".join(head)


# What the lane reads and updates of aiohttp's connection handler (private to aiohttp, checked
# with every aiohttp release this package was tested with): another aiohttp version without one
# of them gets aiohttp's own path for every request instead of a broken connection.
_HANDLER_PARTS = (
    "_waiter", "_messages", "_paused", "_payload_parser", "_upgraded", "_force_close", "_close",
    "_manager", "_request_count", "_keepalive", "_keepalive_timeout", "_next_keepalive_close_time",
    "_keepalive_handle", "_process_keepalive", "_loop", "transport",
)  # fmt: skip
_supported: bool | None = None


def lane_supported(handler: RequestHandler) -> bool:
    """Whether this aiohttp's connection handler has every part the lane uses (asked once)."""
    global _supported
    if _supported is None:
        missing = [name for name in _HANDLER_PARTS if not hasattr(handler, name)]
        _supported = not missing
        if missing:
            import logging

            logging.getLogger(__name__).warning(
                "sandbox API server: the write fast lane is off with this aiohttp (its connection "
                "handler has no %s); every request takes aiohttp's path",
                ", ".join(missing),
            )
    return _supported


class FastLaneHandler(RequestHandler):
    """aiohttp's connection handler, with complete write requests answered on arrival."""

    def __init__(
        self,
        manager: web.Server,
        *,
        answer: Callable[[FastRequest, bytes], Answer],
        faults: FaultInjector,
        **kwargs: Any,
    ) -> None:
        super().__init__(manager, **kwargs)
        self._answer_write = answer
        self._faults = faults
        self._pending = b""  # the start of a request not complete yet
        # False once aiohttp has taken the connection for good; from the start with an aiohttp
        # whose connection handler lacks what the lane reads and updates (see lane_supported)
        self._lane = lane_supported(self)
        self._passing = 0  # bytes of a large request's body still to pass to aiohttp

    def _aiohttp_idle(self) -> bool:
        waiter = self._waiter
        return (
            waiter is not None
            and not waiter.done()
            and not self._messages
            and not self._paused
            and self._payload_parser is None
            and not self._upgraded
        )

    def data_received(self, data: bytes) -> None:
        if not self._lane:
            super().data_received(data)
            return
        # the answers to the requests of this read, sent in one write (one system call for a
        # client's pipelined batch instead of one per answer) before anything else goes out
        answers: list[bytes] = []
        try:
            self._take(data, answers)
        finally:
            if answers and self.transport is not None:
                self.transport.write(answers[0] if len(answers) == 1 else b"".join(answers))

    def _take(self, data: bytes, answers: list[bytes]) -> None:
        """Frame and answer what `data` completes; what the lane does not answer goes to aiohttp,
        after the answers before it (`answers` is flushed first, so the order holds)."""
        if self._passing:
            passed, data = data[: self._passing], data[self._passing :]
            self._passing -= len(passed)
            self._to_aiohttp(passed, answers)
        buf = self._pending + data if self._pending else data
        self._pending = b""
        while buf and not (self._force_close or self._close):
            try:
                req = frame(buf)
            except HandOver:
                self._lane = False
                self._to_aiohttp(buf, answers)
                return
            if req is None:
                self._pending = buf
                return
            if req.size - req.body_start > MAX_LANE_BODY:
                # aiohttp streams a large body (and applies the size limit) as it arrives
                self._passing = max(0, req.size - len(buf))
                self._to_aiohttp(buf[: req.size], answers)
            elif len(buf) < req.size:
                self._pending = buf
                return
            elif not (
                req.method in _WRITES and self._aiohttp_idle() and self._answer_here(req, buf, answers)
            ):
                self._to_aiohttp(buf[: req.size], answers)
            buf = buf[req.size :]

    def _to_aiohttp(self, data: bytes, answers: list[bytes]) -> None:
        if answers and self.transport is not None:
            self.transport.write(b"".join(answers))
        answers.clear()
        super().data_received(data)

    def _answer_here(self, req: Framed, buf: bytes, answers: list[bytes]) -> bool:
        target = _fast_target(req.target)
        transport = self.transport
        manager = self._manager
        if target is None or transport is None or manager is None or self._faults.latency_ms:
            return False  # (an injected latency is the asynchronous path's to wait)
        path, query = target
        request = FastRequest(req.method, path, query, req.headers, transport)
        answer = self._answer_write(request, buf[req.body_start : req.size])
        try:
            out = render(answer)
        except ValueError as exc:  # aiohttp refuses such a header too; the write has happened
            out = render(error_answer(internal(str(exc))))
        answers.append(out)
        # the bookkeeping aiohttp's start() does after each keep-alive request
        self._request_count += 1
        manager.requests_count += 1
        self._keepalive = True
        close_time = self._loop.time() + self._keepalive_timeout
        self._next_keepalive_close_time = close_time
        if self._keepalive_handle is None:
            self._keepalive_handle = self._loop.call_at(close_time, self._process_keepalive)
        return True


class FastLaneServer(web.Server):
    """`web.Server` whose connections answer plain writes through `answer`."""

    def __init__(
        self,
        handler: Any,
        *,
        answer: Callable[[FastRequest, bytes], Answer],
        faults: FaultInjector,
        **kwargs: Any,
    ) -> None:
        super().__init__(handler, **kwargs)
        self._answer = answer
        self._faults = faults

    def __call__(self) -> RequestHandler:
        return FastLaneHandler(
            self, loop=self._loop, answer=self._answer, faults=self._faults, **self._kwargs
        )
