"""`ApiServer`: start and stop the sandbox API server on a loopback port."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import secrets
import ssl
import tempfile
import time
from collections import deque
from pathlib import Path
from typing import Any

from aiohttp import web

from scheduler.sim.apiserver.app import App
from scheduler.sim.apiserver.faults import FaultInjector
from scheduler.sim.apiserver.kubeconfig import write_kubeconfig
from scheduler.sim.apiserver.store import Store


def rss_mb() -> float:
    """Resident memory of this process in MiB (Linux /proc; peak RSS elsewhere)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def settle_heap() -> None:
    """Tune the collector for a process that owns a long-lived object store (call it once loaded).

    Everything alive now (the initial cluster) lives as long as the server: `gc.freeze()` keeps
    full collections from walking it. Objects written later are mostly acyclic dicts freed by
    reference counting, so collections can be rarer than the default's every 700 allocations:
    with the defaults, each of the frequent full collections over the objects written since the
    freeze stalls every request and watch for a few hundred milliseconds.
    """
    gc.collect()
    gc.freeze()
    gc.set_threshold(20_000, 10, 10)


class ApiServer:
    """The sandbox API server. See the package docstring for the contract."""

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        tls: bool = False,
        history_size: int = 10_000,
        *,
        store: Store | None = None,
        error_rate: float = 0.0,
        error_codes: list[int] | None = None,
        latency_ms: float = 0.0,
        close_watches_every: float | None = None,
        retry_after: int = 1,
        bookmark_interval: float = 5.0,
        watch_timeout: float = 1800.0,
        watch_coalesce: float = 0.002,
        require_auth: bool = False,
        request_log_size: int = 100_000,
        client_certs: bool = False,
        fast_lane: bool = True,
    ) -> None:
        self.host = host
        self.port = port
        self.tls = tls
        self.store = store or Store(history_size=history_size)
        self.faults = FaultInjector(
            error_rate=error_rate,
            error_codes=list(error_codes or [500]),
            latency_ms=latency_ms,
            close_watches_every=close_watches_every,
            retry_after=retry_after,
        )
        self.bookmark_interval = bookmark_interval
        self.watch_timeout = watch_timeout
        self.watch_coalesce = watch_coalesce
        # a bearer token is always written to the kubeconfig; it is checked only when asked to
        self.token = secrets.token_urlsafe(24)
        self.require_auth = require_auth
        # plain writes answered on arrival (see `fastlane`); False: every request through aiohttp
        self.fast_lane = fast_lane
        # with TLS: clients may authenticate with a certificate the CA signed, as on a kubeadm
        # cluster, and the kubeconfig then carries one instead of the token
        self.client_certs = client_certs and tls
        self.client_cert_files: tuple[str, str] | None = None
        self.request_log: deque[dict[str, Any]] = deque(maxlen=request_log_size)
        self.in_flight: set[asyncio.Task[Any]] = set()
        self.active_watches = 0
        self.ca_file: str | None = None
        self._runner: web.ServerRunner | None = None
        self._tmpdir: tempfile.TemporaryDirectory[str] | None = None

    @property
    def url(self) -> str:
        scheme = "https" if self.tls else "http"
        return f"{scheme}://{self.host}:{self.port}"

    async def start(self) -> None:
        """Listen; returns once the port is bound (`self.port` is then the real port)."""
        ssl_ctx: ssl.SSLContext | None = None
        if self.tls:
            from scheduler.sim.apiserver.tls import make_certificates

            self._tmpdir = tempfile.TemporaryDirectory(prefix="vc-sandbox-tls-")
            certs = make_certificates(Path(self._tmpdir.name), self.host, client=self.client_certs)
            self.ca_file = str(certs.ca_file)
            ssl_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            ssl_ctx.load_cert_chain(certs.cert_file, certs.key_file)
            if certs.client_cert_file and certs.client_key_file:
                # optional: a client without a certificate may still present the token
                ssl_ctx.load_verify_locations(certs.ca_file)
                ssl_ctx.verify_mode = ssl.CERT_OPTIONAL
                self.client_cert_files = (str(certs.client_cert_file), str(certs.client_key_file))
        self._runner = web.ServerRunner(App(self).build(), handle_signals=False, shutdown_timeout=0.5)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port, ssl_context=ssl_ctx, reuse_address=True)
        await site.start()
        server = site._server
        sockets = getattr(server, "sockets", None) or []
        if sockets:
            self.port = sockets[0].getsockname()[1]

    async def stop(self) -> None:
        # end long-running watches first: the runner would otherwise wait for them
        for task in list(self.in_flight):
            task.cancel()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self._tmpdir is not None:
            with contextlib.suppress(OSError):
                self._tmpdir.cleanup()
            self._tmpdir = None

    async def __aenter__(self) -> ApiServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    def write_kubeconfig(self, path: str | os.PathLike[str], namespace: str = "default") -> Path:
        if self.client_cert_files:
            return write_kubeconfig(path, self.url, None, self.ca_file, namespace, self.client_cert_files)
        return write_kubeconfig(path, self.url, self.token, self.ca_file, namespace)

    def set_faults(self, **knobs: Any) -> None:
        """Same knobs as `POST /sandbox/faults`; history knobs act on the store at once."""
        history_size = knobs.pop("history_size", None)
        expire = knobs.pop("expire_history", False)
        self.faults.configure(knobs)
        if history_size is not None:
            self.store.set_history_size(int(history_size))
        if expire:
            self.store.expire_history()

    def fault_state(self) -> dict[str, Any]:
        return {**self.faults.to_dict(), "history_size": self.store.history_size}

    def stats(self) -> dict[str, Any]:
        return {
            "resourceVersion": self.store.rv,
            "writes": self.store.writes,
            "active_watches": self.active_watches,
            "requests": len(self.request_log),
            "rss_mb": round(rss_mb(), 1),
            "cpu_seconds": round(time.process_time(), 3),
            "objects": {r: n for r in sorted(self.store._data) if (n := self.store.count(r))},
        }
