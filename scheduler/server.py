"""The daemon's HTTP endpoints: /metrics, /healthz, /readyz on one aiohttp server.

The server listens on `--listen-address` (Volcano's metrics address, default :8080) and, with
`--enable-healthz`, also on `--healthz-address` (default :11251), so probes written for Volcano's
chart keep working. `/metrics` answers only with `--enable-metrics`, as in Volcano.

Readiness: ready once the informers' initial sync is done and a configuration is loaded. With
leader election a standby is ready too: its caches are warm and it can take over at any moment;
making standbys unready would stall rolling updates of a replicated Deployment. The body says
whether this replica leads. Liveness fails when the session loop has not turned for a long time
(a wedged event loop or a crashed loop task) or the leader stopped renewing its lease.

The server runs on its own thread and event loop (`own_thread=True`, as the daemon starts it): a
session holds the daemon's loop for as long as it decides (20 s for a backlog at 20,000 nodes), and
probes or scrapes waiting behind it would time out, marking a busy replica unready or dead. The
probes read a few attributes and the metrics registry is thread-safe, so both answer from the
server's thread. What reads session state (the device gauges, the web view) still runs on the
daemon's loop between its steps; the device gauges are skipped for a scrape that would wait
behind a session (they are then one scrape old), the web view waits as before.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from aiohttp import web

from scheduler.kube.loopthread import LoopThread
from scheduler.metrics import SchedulerMetrics

CONTENT_TYPE_LATEST = "text/plain; version=0.0.4; charset=utf-8"
DEVICE_GAUGES_WAIT_S = 0.5  # how long a scrape waits for the daemon's loop to refresh device gauges
T = TypeVar("T")


@dataclass(slots=True)
class Probes:
    ready: Callable[[], tuple[bool, str]]
    alive: Callable[[], tuple[bool, str]]


def split_address(addr: str, default_port: int) -> tuple[str, int]:
    """`:8080`, `0.0.0.0:8080`, `[::1]:8080`, `127.0.0.1:0` -> (host, port); empty host = all."""
    host, sep, port = addr.rpartition(":")
    if not sep:
        host, port = addr, str(default_port)
    host = host.strip("[]") or "0.0.0.0"
    try:
        return host, int(port)
    except ValueError:
        raise ValueError(f"invalid address {addr!r}: the port must be a number") from None


class OwnerLoop:
    """Runs a function on the loop that owns the state it reads, from another loop's coroutine."""

    def __init__(self, loop: asyncio.AbstractEventLoop | None = None) -> None:
        self.loop = loop

    async def call(self, fn: Callable[[], T], timeout: float | None = None) -> T:
        if self.loop is None or self.loop is asyncio.get_running_loop():
            return fn()

        async def run() -> T:
            return fn()

        done = asyncio.wrap_future(asyncio.run_coroutine_threadsafe(run(), self.loop))
        return await asyncio.wait_for(done, timeout)


class HttpServer:
    def __init__(
        self,
        metrics: SchedulerMetrics | None,
        probes: Probes,
        webview: Any = None,
        *,
        own_thread: bool = False,
    ) -> None:
        self.metrics = metrics
        self.probes = probes
        self.webview = webview
        self.own_thread = own_thread
        self.owner = OwnerLoop()  # the daemon's loop, once started on another thread
        self._thread: LoopThread | None = None
        self.app = web.Application()
        self.app.router.add_get("/metrics", self._metrics)
        self.app.router.add_get("/healthz", self._healthz)
        self.app.router.add_get("/readyz", self._readyz)
        if webview is not None:
            webview.add_routes(self.app)
        self.runner: web.AppRunner | None = None
        self.ports: list[int] = []

    async def _metrics(self, _req: web.Request) -> web.Response:
        if self.metrics is None:
            return web.Response(status=404, text="metrics are disabled (start with --enable-metrics)\n")
        metrics = self.metrics
        # the ledgers belong to the daemon's loop, and a session may be using them
        with contextlib.suppress(TimeoutError):
            await self.owner.call(metrics.refresh_devices, DEVICE_GAUGES_WAIT_S)
        return web.Response(body=metrics.render(devices=False), headers={"Content-Type": CONTENT_TYPE_LATEST})

    async def _healthz(self, _req: web.Request) -> web.Response:
        ok, why = self.probes.alive()
        return web.Response(status=200 if ok else 500, text=(why or "ok") + "\n")

    async def _readyz(self, _req: web.Request) -> web.Response:
        ok, why = self.probes.ready()
        return web.Response(status=200 if ok else 503, text=(why or "ok") + "\n")

    async def start(self, addresses: list[tuple[str, int]]) -> list[int]:
        if not self.own_thread:
            return await self._start(addresses)
        self.owner = OwnerLoop(asyncio.get_running_loop())
        if self.webview is not None:
            self.webview.owner = self.owner
        self._thread = LoopThread("vc-scheduler-http")
        self._thread.start()
        try:
            return await self._thread.submit(self._start(addresses))
        except BaseException:
            await self._close_thread()
            raise

    async def _start(self, addresses: list[tuple[str, int]]) -> list[int]:
        self.runner = web.AppRunner(self.app, access_log=None)
        await self.runner.setup()
        for host, port in addresses:
            site = web.TCPSite(self.runner, host, port, reuse_address=True)
            await site.start()
            server = site._server
            sockets = getattr(server, "sockets", None) or []
            self.ports.append(sockets[0].getsockname()[1] if sockets else port)
        return self.ports

    async def stop(self) -> None:
        if self.webview is not None:
            self.webview.close()  # end the event streams, or the cleanup waits for them
        if self._thread is None:
            await self._cleanup()
            return
        await self._thread.submit(self._cleanup())
        await self._close_thread()

    async def _close_thread(self) -> None:
        assert self._thread is not None
        self._thread.stop()
        await self._thread.join_async(5.0)
        self._thread = None

    async def _cleanup(self) -> None:
        if self.runner is not None:
            await self.runner.cleanup()
            self.runner = None
