"""The leader lease renewed on its own thread, so a long session cannot let it lapse.

A session runs on the daemon's event loop without yielding: a 20,000-pod backlog after a restart
decides for many seconds. An elector on that loop could not renew meanwhile; the lease would lapse
by our own clock, the fence would drop every decision of the session as soon as it ended, a
standby would take the lease, and with one replica the next session over the same backlog would
end the same way — nothing would ever bind. Volcano's elector is a goroutine beside its sessions
for this reason.

The elector therefore runs here on a thread with its own event loop and its own API client (an
aiohttp session belongs to one loop). The interpreter hands the thread the GIL every switch
interval (5 ms) even while a session computes, which is plenty for one small request every retry
period. Fencing keeps its meaning: a process that is paused (SIGSTOP, a frozen VM) stops this
thread too, and the fence still ends the term on a renew gap longer than the renew deadline.

The fence and the daemon read the elector's plain attributes (`is_leader`, `last_renew`, the
clock) from the main thread; the elector's callbacks are handed to the daemon's loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Callable

import structlog

from scheduler.kube.client import ClientOptions, KubeClient
from scheduler.kube.leader import LeaderConfig, LeaderElector

log = structlog.get_logger("vc-scheduler.leader")


class LeaseThread:
    """Runs `elector` (its `run()` and, on stop, its `release()`) on a thread of its own."""

    def __init__(self, elector: LeaderElector, client_options: ClientOptions) -> None:
        self.elector = elector
        self.client_options = client_options
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping: asyncio.Event | None = None
        self._release = True
        self._running = threading.Event()  # the thread's loop accepts stop requests

    @classmethod
    def build(
        cls,
        client_options: ClientOptions,
        config: LeaderConfig,
        on_started: Callable[[], None],
        on_stopped: Callable[[], None],
        loop: asyncio.AbstractEventLoop,
    ) -> LeaseThread:
        """An elector whose callbacks run on `loop` (the daemon's) and whose clock is the
        process's monotonic clock, the same whichever thread reads it."""

        def on_loop(fn: Callable[[], None]) -> Callable[[], None]:
            def call() -> None:
                with contextlib.suppress(RuntimeError):  # the daemon's loop already closed
                    loop.call_soon_threadsafe(fn)

            return call

        # the client is made on the thread's loop once it runs (start())
        elector = LeaderElector(
            None,  # type: ignore[arg-type]
            config,
            on_started=on_loop(on_started),
            on_stopped=on_loop(on_stopped),
            clock=time.monotonic,
        )
        return cls(elector, client_options)

    def start(self) -> None:
        self._thread = threading.Thread(target=self._main, name="leader-lease", daemon=True)
        self._thread.start()
        self._running.wait(5.0)

    def _main(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            loop.run_until_complete(self._serve())
        finally:
            loop.close()

    async def _serve(self) -> None:
        self._stopping = asyncio.Event()
        self._running.set()
        client = await self._client()
        if client is None:
            return
        self.elector.client = client
        campaign = asyncio.ensure_future(self.elector.run())
        try:
            await self._stopping.wait()
        finally:
            campaign.cancel()
            await asyncio.gather(campaign, return_exceptions=True)
            if self._release:
                await self.elector.release()
            await client.close()

    async def _client(self) -> KubeClient | None:
        """The thread's own client; the daemon's was built from the same options a moment ago,
        so a failure here is transient (a kubeconfig being rotated): try again each retry period."""
        assert self._stopping is not None
        while not self._stopping.is_set():
            try:
                return await KubeClient.create(self.client_options)
            except Exception as exc:
                log.error("cannot build the lease client", error=f"{type(exc).__name__}: {exc}")
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stopping.wait(), self.elector.config.retry_period)
        return None

    async def stop(self, release: bool = True, timeout: float = 5.0) -> None:
        """End the campaign (giving the lease up first when `release` and we hold it) and wait
        for the thread, without blocking the caller's loop."""
        self._release = release
        if self._thread is None:
            return
        loop, stopping = self._loop, self._stopping
        if loop is not None and stopping is not None:
            with contextlib.suppress(RuntimeError):  # the thread's loop already ended
                loop.call_soon_threadsafe(stopping.set)
        await asyncio.to_thread(self._thread.join, timeout)
        if self._thread.is_alive():
            log.warning("the lease thread did not stop in time", timeout_s=timeout)
