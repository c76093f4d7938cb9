"""An event loop on a thread of its own, for I/O that must go on while the daemon's loop is held.

A session holds the daemon's event loop for as long as it decides (20 s for a backlog at 20,000
nodes). Three things cannot wait that long: probes and scrapes (`scheduler/server.py`), the
leader lease's renewals (`leasethread.py`) and Bindings sent while their session still decides
(`earlybind.py`). Each runs on a `LoopThread`: a daemon thread with a loop of its own, which other
threads reach only through `call_soon` and `submit`, both harmless once that loop has ended.
Waiting on sockets releases the interpreter lock, and the interpreter hands the lock to the
thread every switch interval (5 ms) even while a session computes.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class LoopThread:
    """A daemon thread running its own event loop: `main()` to its end, or (without a `main`) until
    `stop()`. The loop is made by `start` (an unstarted one holds no file descriptors)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.loop: asyncio.AbstractEventLoop | None = None
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._main: Callable[[], Coroutine[Any, Any, Any]] | None = None
        self._running = threading.Event()  # the loop runs (or the thread has ended)

    @property
    def started(self) -> bool:
        return self._thread.ident is not None

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def start(
        self, main: Callable[[], Coroutine[Any, Any, Any]] | None = None, wait: float | None = 5.0
    ) -> None:
        """Start the thread and return once its loop runs (at most `wait` seconds)."""
        self._main = main
        self.loop = asyncio.new_event_loop()
        self._thread.start()
        self._running.wait(wait)

    def _run(self) -> None:
        loop = self.loop
        assert loop is not None
        asyncio.set_event_loop(loop)
        try:
            if self._main is None:
                loop.call_soon(self._running.set)
                loop.run_forever()
            else:
                loop.run_until_complete(self._serve(self._main))
        finally:
            self._running.set()  # never leave `start` waiting, whatever happened
            try:
                _cancel_remaining(loop)
                loop.run_until_complete(loop.shutdown_asyncgens())
            finally:
                asyncio.set_event_loop(None)
                loop.close()

    async def _serve(self, main: Callable[[], Coroutine[Any, Any, Any]]) -> None:
        self._running.set()
        await main()

    def call_soon(self, fn: Callable[[], Any]) -> None:
        """Run `fn` on the thread's loop (from any thread); nothing before `start` or once the loop
        has ended."""
        if self.loop is not None:
            with contextlib.suppress(RuntimeError):
                self.loop.call_soon_threadsafe(fn)

    def submit(self, coro: Coroutine[Any, Any, T]) -> Awaitable[T]:
        """Run `coro` on the thread's loop and await its result from another loop's coroutine."""
        assert self.loop is not None, "submit before start"
        return asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, self.loop))

    def stop(self) -> None:
        """End a loop started without a `main` (its remaining tasks are cancelled)."""
        if self.loop is not None:
            self.call_soon(self.loop.stop)

    def join(self, timeout: float | None = None) -> bool:
        """Wait for the thread, blocking the caller; True when it has ended."""
        if self.started:
            self._thread.join(timeout)
        return not self._thread.is_alive()

    async def join_async(self, timeout: float | None = None) -> bool:
        """`join` without blocking the caller's event loop."""
        if self.started:
            await asyncio.to_thread(self._thread.join, timeout)
        return not self._thread.is_alive()


def _cancel_remaining(loop: asyncio.AbstractEventLoop) -> None:
    """What `asyncio.run` does on the way out: the tasks still pending are cancelled and awaited."""
    tasks = [t for t in asyncio.all_tasks(loop) if not t.done()]
    if not tasks:
        return
    for t in tasks:
        t.cancel()
    loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
