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
import time
from collections.abc import Callable

import structlog

from scheduler.kube.client import ClientOptions, KubeClient
from scheduler.kube.leader import LeaderConfig, LeaderElector
from scheduler.kube.loopthread import LoopThread

log = structlog.get_logger("vc-scheduler.leader")


class LeaseThread:
    """Runs `elector` (its `run()` and, on stop, its `release()`) on a thread of its own."""

    def __init__(self, elector: LeaderElector, client_options: ClientOptions) -> None:
        self.elector = elector
        self.client_options = client_options
        self._thread: LoopThread | None = None
        self._stopping = asyncio.Event()  # set on the thread's loop by `stop`
        self._release = True

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
        self._thread = LoopThread("leader-lease")
        self._thread.start(self._serve)

    async def _serve(self) -> None:
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
        self._thread.call_soon(self._stopping.set)
        if not await self._thread.join_async(timeout):
            log.warning("the lease thread did not stop in time", timeout_s=timeout)
