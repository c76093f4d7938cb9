"""Watch streams: newline-delimited JSON events read from the store's history ring.

A stream keeps a cursor into its resource's ring and, when it has caught up, waits on the
store's per-resource "changed" future; one write wakes every waiting stream once, and each
stream then sends everything new in one chunk. Selector watches translate transitions as the
real server does: an object that starts matching is ADDED, one that stops matching is DELETED.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

from scheduler.sim.apiserver import codec
from scheduler.sim.apiserver.errors import ApiError, bad_request, expired
from scheduler.sim.apiserver.history import Event, History
from scheduler.sim.apiserver.resources import ResourceInfo
from scheduler.sim.apiserver.selectors import Selector
from scheduler.sim.apiserver.store import Store

DEFAULT_TIMEOUT = 1800.0
INITIAL_EVENTS_END = "k8s.io/initial-events-end"


@dataclass
class WatchOptions:
    resource_version: str | None = None
    timeout: float = DEFAULT_TIMEOUT
    bookmarks: bool = False
    bookmark_interval: float = 5.0
    # seconds a woken stream waits for more events before sending (0 = send at once)
    coalesce: float = 0.0
    send_initial_events: bool | None = None
    # seconds after which the server drops the stream (fault injection), None = never
    close_after: Callable[[], float | None] = lambda: None


def _error_line(err: ApiError) -> bytes:
    return b'{"type":"ERROR","object":' + codec.dumps(err.status()) + b"}\n"


def _too_old(rv: int, floor: int) -> ApiError:
    return expired(f"too old resource version: {rv} ({floor})")


class WatchStream:
    def __init__(self, store: Store, res: ResourceInfo, selector: Selector, opts: WatchOptions) -> None:
        self.store = store
        self.res = res
        self.selector = selector
        self.opts = opts
        rv_text = opts.resource_version
        self.start_rv: int | None = None
        if rv_text not in (None, "", "0"):
            try:
                self.start_rv = int(str(rv_text))
            except ValueError:
                raise bad_request(f"invalid resource version: {rv_text!r}") from None
        self.initial = self.start_rv is None or bool(opts.send_initial_events)

    def _bookmark(self, annotations: dict[str, str] | None = None) -> bytes:
        md: dict[str, object] = {"resourceVersion": str(self.store.rv)}
        if annotations:
            md["annotations"] = annotations
        obj = {"kind": self.res.kind, "apiVersion": self.res.api_version, "metadata": md}
        return b'{"type":"BOOKMARK","object":' + codec.dumps(obj) + b"}\n"

    def _lines(self, events: list[Event]) -> list[bytes]:
        # the hot loop of watch fan-out: the common selector shapes get a comprehension each
        sel = self.selector
        if sel.empty:
            return [ev.line() for ev in events]
        if sel.namespace_only:
            ns = sel.namespace
            return [ev.line() for ev in events if ev.ns == ns]
        return [line for ev in events if (line := self._line(ev)) is not None]

    def _chunk(self, history: History, cursor: int) -> tuple[bytes, int | None]:
        """What this stream sends of the events from `cursor` on, and the last event's rv.

        The watchers a write woke ask for the same events at once: for the selectors that are
        a plain function of the events (none, or a namespace), the first one's chunk serves all.
        """
        sel = self.selector
        key = "" if sel.empty else f"ns/{sel.namespace}" if sel.namespace_only else None
        if key is not None:
            hit = history.chunk(cursor, key)
            if hit is not None:
                return hit
        events = history.since(cursor)
        made = (b"".join(self._lines(events)), events[-1].rv if events else None)
        if key is not None:
            history.keep_chunk(cursor, key, made)
        return made

    def _line(self, ev: Event) -> bytes | None:
        sel = self.selector
        now = sel.matches(ev.obj)
        if ev.type == "ADDED":
            return ev.line() if now else None
        if ev.type == "DELETED":
            return ev.line() if now else None
        before = ev.old is not None and sel.matches(ev.old)
        if now and before:
            return ev.line()
        if now:
            return ev.line("ADDED")
        if before:
            return ev.line("DELETED")
        return None

    async def events(self) -> AsyncIterator[bytes]:
        history = self.store.history(self.res)
        started = time.monotonic()
        deadline = started + self.opts.timeout
        close_after = self.opts.close_after()
        if close_after is not None:
            deadline = min(deadline, started + close_after)
        if self.initial:
            # everything that exists now, as ADDED, then the changes after it
            cursor = history.seq
            batch = [
                b'{"type":"ADDED","object":' + self.store.encoded(self.res, o) + b"}\n"
                for o in self.store.iter_objects(self.res, self.selector)
            ]
            if self.opts.send_initial_events and self.opts.bookmarks:
                batch.append(self._bookmark({INITIAL_EVENTS_END: "true"}))
            for i in range(0, len(batch), 500):
                yield b"".join(batch[i : i + 500])
        else:
            assert self.start_rv is not None
            found = history.seq_after(self.start_rv)
            if found is None:
                yield _error_line(_too_old(self.start_rv, history.floor_rv))
                return
            cursor = found
        last_sent = time.monotonic()
        while True:
            if cursor < history.first_seq:
                # this stream fell behind the ring (or history was expired): the client must relist
                yield _error_line(_too_old(self.start_rv or 0, history.floor_rv))
                return
            chunk, last_rv = self._chunk(history, cursor)
            cursor = history.seq
            if last_rv is not None:
                self.start_rv = last_rv
            if chunk:
                yield chunk
                last_sent = time.monotonic()
                continue
            now = time.monotonic()
            if now >= deadline:
                return
            wait = deadline - now
            if self.opts.bookmarks:
                until_bookmark = last_sent + self.opts.bookmark_interval - now
                if until_bookmark <= 0:
                    yield self._bookmark()
                    last_sent = now
                    continue
                wait = min(wait, until_bookmark)
            if await self._wait_for_change(wait) and self.opts.coalesce > 0:
                # let a burst of writes accumulate: one chunk per watcher instead of one per write
                await asyncio.sleep(self.opts.coalesce)

    async def _wait_for_change(self, timeout: float) -> bool:
        """Wait for the next write to this resource, at most `timeout` seconds; True if one came."""
        fut = self.store.changed(self.res.key)
        if fut.done():
            return True
        loop = asyncio.get_running_loop()
        waiter = loop.create_future()

        def wake(_: object = None) -> None:
            if not waiter.done():
                waiter.set_result(None)

        # plain callbacks instead of wait_for(shield(...)): no task or extra future per wakeup
        fut.add_done_callback(wake)
        timer = loop.call_later(timeout, wake)
        try:
            await waiter
        finally:
            timer.cancel()
            fut.remove_done_callback(wake)
        return fut.done()
