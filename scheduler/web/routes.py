"""The web view's HTTP side: the page, its assets, `/api/...` JSON and a server-sent event stream.

Everything answers from `Summary` (the last session's state): no request reaches the API server.
In the daemon the HTTP server has its own thread (scheduler/server.py): answers are computed on
the daemon's loop (`owner`), where the state they read is never changed under them, and the
session notifications cross to the server's loop.
`/api/events` sends one `session` event per published session; the page then re-reads only what
it shows. Clients that stop reading are dropped rather than buffered without bound.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from importlib import resources
from typing import Any

import structlog
from aiohttp import web

from scheduler.web.summary import Summary

log = structlog.get_logger("vc-scheduler")

STATIC = ("app.js", "app.css")
_TYPES = {"js": "text/javascript", "css": "text/css", "html": "text/html"}
KEEPALIVE_S = 15.0


def asset(name: str) -> str:
    return resources.files("scheduler.web").joinpath("static", name).read_text(encoding="utf-8")


def _json(data: Any) -> web.Response:
    return web.Response(
        text=json.dumps(data, separators=(",", ":")),
        content_type="application/json",
        headers={"Cache-Control": "no-store"},
    )


class WebView:
    def __init__(self, summary: Summary, explain: Any = None) -> None:
        self.summary = summary
        self.explain = explain  # (namespace, name) -> dict | None, from the last session
        self._listeners: set[asyncio.Queue[int]] = set()
        self.owner: Any = None  # an OwnerLoop when the server runs on another thread
        self._loop: asyncio.AbstractEventLoop | None = None  # the server's loop, for notifications

    def add_routes(self, app: web.Application) -> None:
        r = app.router
        r.add_get("/", self._index)
        for name in STATIC:
            r.add_get(f"/static/{name}", self._static(name))
        s = self.summary
        for name, fn, paged in (
            ("overview", s.overview, False),
            ("queues", s.queues, False),
            ("sessions", s.sessions, False),
            ("jobs", s.jobs, True),
            ("nodes", s.nodes, True),
            ("pending", s.pending, True),
        ):
            r.add_get(f"/api/{name}", self._endpoint(fn, paged))
        r.add_get("/api/explain/{namespace}/{name}", self._explain)
        r.add_get("/api/events", self._events)

    def _endpoint(self, fn: Any, paged: bool) -> Any:
        async def handler(req: web.Request) -> web.Response:
            return await (self._answer(fn, req.query) if paged else self._answer(fn))

        return handler

    async def _on_owner(self, fn: Any, *args: Any) -> Any:
        return fn(*args) if self.owner is None else await self.owner.call(lambda: fn(*args))

    async def _answer(self, fn: Any, *args: Any) -> web.Response:
        try:
            return _json(await self._on_owner(fn, *args))
        except Exception as exc:  # a view bug on odd state: say so, never take the daemon down
            log.exception("web view endpoint failed", error=f"{type(exc).__name__}: {exc}")
            return web.json_response({"error": f"{type(exc).__name__}: {exc}"}, status=500)

    async def _index(self, _req: web.Request) -> web.Response:
        return web.Response(text=asset("index.html"), content_type="text/html")

    def _static(self, name: str) -> Any:
        async def handler(_req: web.Request) -> web.Response:
            return web.Response(text=asset(name), content_type=_TYPES[name.rsplit(".", 1)[1]])

        return handler

    async def _explain(self, req: web.Request) -> web.Response:
        ns, name = req.match_info["namespace"], req.match_info["name"]
        data = await self._on_owner(self.explain, ns, name) if self.explain is not None else None
        if data is None:
            return web.json_response({"error": f"pod {ns}/{name} is not in the last session"}, status=404)
        return _json(data)

    # -- live updates ------------------------------------------------------------------------
    def close(self) -> None:
        self.notify(-1)

    def notify(self, session: int) -> None:
        loop = self._loop
        if loop is not None and not loop.is_closed():
            try:
                here = asyncio.get_running_loop()
            except RuntimeError:
                here = None
            if here is not loop:
                loop.call_soon_threadsafe(self._notify_here, session)
                return
        self._notify_here(session)

    def _notify_here(self, session: int) -> None:
        for q in list(self._listeners):
            if q.full():  # a client that does not read: drop it, never buffer without bound
                self._listeners.discard(q)
                continue
            q.put_nowait(session)

    async def _events(self, req: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-store"})
        await resp.prepare(req)
        self._loop = asyncio.get_running_loop()
        q: asyncio.Queue[int] = asyncio.Queue(maxsize=64)
        self._listeners.add(q)
        try:
            view = self.summary.view
            await resp.write(f"event: session\ndata: {view.number if view else 0}\n\n".encode())
            while q in self._listeners:
                try:
                    n = await asyncio.wait_for(q.get(), KEEPALIVE_S)
                except TimeoutError:
                    await resp.write(b": keepalive\n\n")
                    continue
                if n < 0:
                    break
                await resp.write(f"event: session\ndata: {n}\n\n".encode())
        except ConnectionResetError:
            pass
        finally:
            self._listeners.discard(q)
        with contextlib.suppress(ConnectionResetError):
            await resp.write_eof()
        return resp
