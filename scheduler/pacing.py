"""When the daemon's next session starts: at the end of the period, or soon after pods arrive.

Volcano runs a session every `--schedule-period` (`wait.Until`), so a pod created just after a
session waits a whole period before anything looks at it, and a burst of pods that arrives in a
stream of watch events is split across sessions at arbitrary points. With `--schedule-on-arrival`
(the default) new pending pods start a session early, with three bounds that keep it safe:

- it waits until the stream of new pods pauses for `SETTLE_S` (a job controller creates a gang's
  pods one after another: deciding half a gang only to find it not ready is wasted work), but no
  longer than `MAX_DELAY_S` after the first new pod, so a steady arrival still gets sessions;
- it starts no sooner than `GAP_PER_SESSION` (half) the last session's duration after that
  session ended, so sessions take at most two thirds of the event loop and watch events keep
  flowing (at 20,000 nodes an idle session costs over a hundred milliseconds). The share is a
  latency trade: under a steady 500 pods/s at 5,000 nodes, a gap of twice the session (sessions a
  third of the loop) made each session's batch, and so the next session, longer — creation → bind
  p99 about 2.3-2.5 s with a 1 s period — where half the session gives about 1.1 s; the Bindings
  are protected by the hold below, not by this gap;
- it never starts later than the period would have: without arrivals nothing changes.

Where no sender can carry them (below), a session waits while the last one's Bindings are still
in flight (at most one more period, or twice the last session's duration when that is longer):
the daemon has one event loop, and a session started then cannot place the pods being bound but
stops their Bindings and watch events for its whole duration. At 20,000 nodes, where a session
takes seconds, sessions every period left the Bindings a sliver of the loop (17 binds a second).
The `vc-scheduler` process does not wait: the next session's commit sender carries the Bindings
still queued on its own thread (`Binder.carry_into`, scheduler/kube/earlybind.py), so the API
server binds the last session's pods while this one decides; in a burst of 5,000 pods the
second session used to start only once the first one's 2,000 Bindings were answered.

A session decides as it always did; only which pods it sees, and so how long pods wait, depends
on when it starts.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

SETTLE_S = 0.02  # the stream of new pods paused this long: the burst (or this part of it) is in
MAX_DELAY_S = 0.1  # never wait longer than this for a stream to pause
MIN_GAP_S = 0.05  # sessions never run back to back, however short
GAP_PER_SESSION = 0.5  # the pause after an early session, as a share of that session's duration


async def wait_any(events: Sequence[asyncio.Event], timeout: float) -> asyncio.Event | None:
    """The first of `events` set within `timeout` seconds (checked in order), or None."""
    for ev in events:
        if ev.is_set():
            return ev
    if timeout <= 0:
        return None
    waits = [asyncio.ensure_future(ev.wait()) for ev in events]
    try:
        await asyncio.wait(waits, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for w in waits:
            w.cancel()
    return next((ev for ev in events if ev.is_set()), None)


class Pacer:
    """Waits between sessions. `arrived` is set by the cache's watch of new pending pods;
    `urgent` events (stop, a new leader, the end of the initial sync) end the wait at once."""

    def __init__(self, period: float, on_arrival: bool = True) -> None:
        self.period = period
        self.on_arrival = on_arrival
        self.arrived = asyncio.Event()
        self.last_session_s = 0.0
        self.early = 0  # sessions started before the end of their period because pods arrived
        self.held = 0  # sessions that waited for the last one's Bindings to finish

    async def pause(self, urgent: Sequence[asyncio.Event], settled: asyncio.Event | None = None) -> None:
        """Called right after a session (or a turn without one): pods watched before now were
        in it, so only pods arriving from here on start the next session early. `settled` is
        set whenever no write the last session decided (its Bindings) is in flight."""
        self.arrived.clear()
        if await self._wait(urgent):
            return
        if settled is None or settled.is_set():
            return
        # woken by the binder the moment its last Binding is answered, not by polling for it
        hold = max(self.period, 2 * self.last_session_s)
        if await wait_any([*urgent, settled], hold) in urgent:
            return
        self.held += 1

    async def _wait(self, urgent: Sequence[asyncio.Event]) -> bool:
        """Until the next session is due; True when an urgent event ended the wait."""
        loop = asyncio.get_running_loop()
        start = loop.time()
        deadline = start + self.period
        if not self.on_arrival:
            return await wait_any(urgent, self.period) is not None
        earliest = start + min(self.period, max(MIN_GAP_S, GAP_PER_SESSION * self.last_session_s))
        fired = await wait_any([*urgent, self.arrived], self.period)
        if fired is not self.arrived:
            return fired is not None  # urgent, or the period ended
        cap = min(deadline, loop.time() + MAX_DELAY_S)
        while True:  # let the stream of new pods pause before deciding any of them
            self.arrived.clear()
            now = loop.time()
            fired = await wait_any([*urgent, self.arrived], min(cap, now + SETTLE_S) - now)
            if fired is None or loop.time() >= cap:
                break
            if fired is not self.arrived:
                return True
        now = loop.time()
        if now < earliest and await wait_any(urgent, earliest - now) is not None:
            return True
        if loop.time() < deadline:
            self.early += 1
        return False
