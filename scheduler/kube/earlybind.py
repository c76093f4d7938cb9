"""Bindings sent while the session that decided them is still deciding.

A session runs on the event loop's thread, so nothing the loop would send can leave before it
ends: after a restart at 20,000 nodes that is the whole backlog's session (20 s on a slow host)
before the first Binding. Volcano dispatches each job's binds when its statement commits. Here
the session tells `CommitSender.hand` of each bind as it commits, and one thread sends them with
an event loop and keep-alive client of its own: waiting on sockets releases the interpreter lock,
so the Bindings travel while the session computes (the thread gets the lock back at the
interpreter's switch interval, and then handles every answer that came meanwhile).

The thread touches nothing the event loop owns. It asks the fence with `Fence.still_open`, which
reads the clock and closes nothing; it takes tokens from the core clientset's bucket, which no one
else uses while the loop is busy in the session; it does not claim pods in the cache, whose task
maps the session's views share. `finish()`, on the loop's thread once the session is over, stops
the thread (waiting for the requests on the wire) and returns every bind with its outcome;
the binder claims and records them there, and whatever was not sent goes the usual way.

The sender also carries the unsent rest of the last session's bind batches (`carry`): those pods
are claimed already, and their Bindings would otherwise wait on the held loop for the whole
session — which is why the next session used to wait for them (scheduler/pacing.py). With them
travelling beside it, the next session can start as soon as new pods wait: the API server works
on the last session's Bindings on the other core while this one decides.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from scheduler.framework.cycle import BindDecision
from scheduler.kube.client import TokenBucket, json_dumps, resource_path
from scheduler.kube.keepalive import KeepAliveClient, TransportError, header_lines
from scheduler.kube.loopthread import LoopThread

SENT = "bound"  # the API accepted the Binding
REFUSED = "refused"  # the API answered an error status (`status` says which)
UNSENT = "unsent"  # not sent: the session ended first, the term closed, or the connection failed


@dataclass(slots=True)
class Early:
    """One bind handed to the sender, and what became of it."""

    decision: BindDecision
    outcome: str = UNSENT
    status: int = 0
    body: bytes = b""
    ms: float = 0.0
    at: float = 0.0  # wall-clock time it was sent
    carried: bool = False  # a bind of an earlier session's batch, claimed before it was handed


@dataclass(frozen=True, slots=True)
class Endpoint:
    """Where Bindings go: the API server's address as the loop's keep-alive writer has it."""

    base_url: str
    ssl_context: ssl.SSLContext | None = None
    server_hostname: str | None = None
    timeout: float = 10.0


def binding_body(d: BindDecision) -> dict[str, object]:
    """The Binding object of a decision (the API refuses it if the pod was replaced meanwhile)."""
    task = d.task
    md: dict[str, object] = {"name": task.name, "namespace": task.namespace}
    if task.uid and "/" not in task.uid:
        md["uid"] = task.uid
    if d.annotations:
        md["annotations"] = dict(d.annotations)
    return {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": md,
        "target": {"apiVersion": "v1", "kind": "Node", "name": d.node},
    }


class CommitSender:
    """Sends the Bindings one session hands it, from one thread, until `finish()`.

    The thread runs its own event loop with `concurrency` keep-alive connections
    (`kube/keepalive.py`), each with up to `PIPELINE` Bindings written back to back (HTTP/1.1
    pipelining). The thread needs the interpreter lock for every read and write, and while the
    session computes it gets the lock only every switch interval (5 ms): a request per connection
    sent about one Binding per hand-over (1,100 a second beside a session at 5,000 nodes), where
    a batch per connection has its answers waiting, read at once, at the next hand-over.
    """

    CONCURRENCY = 8
    PIPELINE = 8

    def __init__(
        self,
        endpoint: Endpoint,
        headers: dict[str, str],
        bucket: TokenBucket,
        still_open: Callable[[], bool],
        not_before: float = 0.0,
    ) -> None:
        self.endpoint = endpoint
        self.headers = {**headers, "Content-Type": "application/json"}
        self._lines = header_lines(self.headers)
        self.bucket = bucket
        self.still_open = still_open  # may a write of this session's term go now?
        # monotonic time before which nothing is sent (see `hand`)
        self.not_before = not_before
        self.handed: list[Early] = []
        self._pending: collections.deque[Early] = collections.deque()
        self._lock = threading.Lock()
        self._thread: LoopThread | None = None  # started by the first bind that may go
        self.concurrency = self.CONCURRENCY  # connections, each with one pipelined batch at a time
        self._more = asyncio.Event()  # set on the thread's loop when binds wait
        self._stop = False

    def hand(self, d: BindDecision) -> None:
        """A committed bind (called by the session, on the loop's thread)."""
        item = Early(d)
        self.handed.append(item)
        with self._lock:
            self._pending.append(item)
        # started by the first bind once the session has run for a while: an idle session costs
        # nothing, and a short one sends its binds after it as before, because each bind sent
        # beside the session costs the session the interpreter lock's hand-overs (about 1 ms a
        # bind, one request at a time, measured on a loaded 2-core host, against 0.1 ms on the
        # loop after the session)
        due = time.monotonic() >= self.not_before
        if self._thread is None:
            if not due:
                return
            self._start()
        elif not due:  # the thread carries an earlier batch: it takes these at `not_before`
            return
        self._wake()

    def carry(self, decisions: list[BindDecision]) -> None:
        """Binds already claimed by an earlier session's batch, sent from now on whatever
        `not_before` said, and this session's binds with them: the pods wait for them, not for
        this session's decisions."""
        if not decisions:
            return
        items = [Early(d, carried=True) for d in decisions]
        self.handed.extend(items)
        with self._lock:
            self._pending.extend(items)
        if self._thread is None:
            # the thread runs anyway: this session's binds go too, pipelined beside it (one
            # request a connection made each bind cost the session a lock hand-over, which is
            # why a short session otherwise sends after it ends)
            self.not_before = 0.0
            self._start()
        self._wake()

    def _start(self) -> None:
        self._thread = LoopThread("early-binds")
        self._thread.start(self._main, wait=0)

    def _wake(self) -> None:
        if self._thread is not None and not self._more.is_set():
            self._thread.call_soon(self._more.set)

    def finish(self) -> list[Early]:
        """Stop sending; every bind handed, with its outcome (on the loop's thread). Waits for
        the requests on the wire (at most the endpoint's timeout)."""
        self._stop = True
        if self._thread is not None:
            self._wake()
            self._thread.join()
            self._thread = None
        return self.handed

    # ------------------------------------------------------------------ the thread --
    async def _main(self) -> None:
        e = self.endpoint
        # a client per worker: each has one pipelined connection, and one batch on it at a time
        clients = [
            KeepAliveClient(e.base_url, e.ssl_context, e.server_hostname, 1) for _ in range(self.concurrency)
        ]
        try:
            await asyncio.gather(*(self._worker(c) for c in clients))
        finally:
            for c in clients:
                await c.close()

    def _take(self) -> list[Early]:
        """The next pipelined batch: carried binds at once, this session's from `not_before` on."""
        due = time.monotonic() >= self.not_before
        out: list[Early] = []
        with self._lock:
            pending = self._pending
            while pending and len(out) < self.PIPELINE and (due or pending[0].carried):
                out.append(pending.popleft())
        return out

    async def _worker(self, client: KeepAliveClient) -> None:
        while not self._stop:
            items = self._take()
            if not items:
                self._more.clear()
                if self._stop:
                    continue
                # this session's binds, not due yet: woken sooner only by `finish`
                wait = self.not_before - time.monotonic() if self._pending else None
                if wait is None or wait > 0:
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self._more.wait(), wait)
                continue
            delay = max(self.bucket.reserve() for _ in items)
            if delay > 0:
                await asyncio.sleep(delay)
            # asked right before the send, after any wait: a term that ended sends nothing more
            if self._stop or not self.still_open():
                self._stop = True  # the rest go the usual way, where the fence refuses them
                return
            await self._send(client, items)

    async def _send(self, client: KeepAliveClient, items: list[Early]) -> None:
        requests: list[tuple[str, str, str, bytes | None]] = []
        for item in items:
            task = item.decision.task
            path = resource_path("/api/v1", "pods", task.namespace, task.name, "binding")
            requests.append(("POST", path, self._lines, json_dumps(binding_body(item.decision))))
        at, t0 = time.time(), time.perf_counter()
        answers = await client.request_pipelined(requests, self.endpoint.timeout)
        ms = (time.perf_counter() - t0) * 1000
        for item, answer in zip(items, answers, strict=True):
            item.at = at
            if isinstance(answer, TransportError):
                # whether it landed is unknown: left unsent, the binder sends it again and a 409
                # there finds our own Binding (the binder's conflict check)
                continue
            item.ms = ms
            item.status = answer.status
            if 200 <= answer.status < 300:
                item.outcome = SENT
            else:
                item.outcome, item.body = REFUSED, answer.body
