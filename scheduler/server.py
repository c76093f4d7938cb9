"""The daemon's HTTP endpoints: /metrics, /healthz, /readyz on one aiohttp server.

The server listens on `--listen-address` (Volcano's metrics address, default :8080) and, with
`--enable-healthz`, also on `--healthz-address` (default :11251), so probes written for Volcano's
chart keep working. `/metrics` answers only with `--enable-metrics`, as in Volcano.

Readiness: ready once the informers' initial sync is done and a configuration is loaded. With
leader election a standby is ready too: its caches are warm and it can take over at any moment;
making standbys unready would stall rolling updates of a replicated Deployment. The body says
whether this replica leads. Liveness fails when the session loop has not turned for a long time
(a wedged event loop or a crashed loop task) or the leader stopped renewing its lease.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from scheduler.metrics import SchedulerMetrics

CONTENT_TYPE_LATEST = "text/plain; version=0.0.4; charset=utf-8"


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


class HttpServer:
    def __init__(self, metrics: SchedulerMetrics | None, probes: Probes, webview: Any = None) -> None:
        self.metrics = metrics
        self.probes = probes
        self.webview = webview
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
        return web.Response(body=self.metrics.render(), headers={"Content-Type": CONTENT_TYPE_LATEST})

    async def _healthz(self, _req: web.Request) -> web.Response:
        ok, why = self.probes.alive()
        return web.Response(status=200 if ok else 500, text=(why or "ok") + "\n")

    async def _readyz(self, _req: web.Request) -> web.Response:
        ok, why = self.probes.ready()
        return web.Response(status=200 if ok else 503, text=(why or "ok") + "\n")

    async def start(self, addresses: list[tuple[str, int]]) -> list[int]:
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
        if self.runner is not None:
            await self.runner.cleanup()
            self.runner = None
