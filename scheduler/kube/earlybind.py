"""Bindings sent while the session that decided them is still deciding.

A session runs on the event loop's thread, so nothing the loop would send can leave before it
ends: after a restart at 20,000 nodes that is the whole backlog's session (20 s on a slow host)
before the first Binding. Volcano dispatches each job's binds when its statement commits. Here
the session tells `CommitSender.hand` of each bind as it commits, and one thread sends them on a
blocking keep-alive connection: socket I/O releases the interpreter lock, so the Bindings travel
while the session computes (the thread gets the lock back at the interpreter's switch interval).

The thread touches nothing the event loop owns. It asks the fence with `Fence.still_open`, which
reads the clock and closes nothing; it takes tokens from the core clientset's bucket, which no one
else uses while the loop is busy in the session; it does not claim pods in the cache, whose task
maps the session's views share. `finish()`, on the loop's thread once the session is over, stops
the thread (waiting for the one request on the wire) and returns every bind with its outcome;
the binder claims and records them there, and whatever was not sent goes the usual way.
"""

from __future__ import annotations

import collections
import http.client
import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from scheduler.framework.cycle import BindDecision
from scheduler.kube.client import TokenBucket, json_dumps, resource_path

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


@dataclass(frozen=True, slots=True)
class Endpoint:
    """Where Bindings go: the API server's address as the keep-alive writer parsed it."""

    host: str
    port: int
    prefix: str = ""
    ssl_context: ssl.SSLContext | None = None
    timeout: float = 10.0

    def connect(self) -> http.client.HTTPConnection:
        if self.ssl_context is not None:
            return http.client.HTTPSConnection(
                self.host, self.port, timeout=self.timeout, context=self.ssl_context
            )
        return http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)


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
    """Sends the Bindings one session hands it, from one thread, until `finish()`."""

    def __init__(
        self,
        endpoint: Endpoint,
        headers: dict[str, str],
        bucket: TokenBucket,
        still_open: Callable[[], bool],
        not_before: float = 0.0,
    ) -> None:
        self.endpoint = endpoint
        # monotonic time before which nothing is sent (see `hand`)
        self.not_before = not_before
        self.headers = {**headers, "Content-Type": "application/json"}
        self.bucket = bucket
        self.still_open = still_open  # may a write of this session's term go now?
        self.handed: list[Early] = []
        self._queue: collections.deque[Early] = collections.deque()
        self._wake = threading.Condition()
        self._stop = False
        self._thread: threading.Thread | None = None
        self._conn: http.client.HTTPConnection | None = None

    def hand(self, d: BindDecision) -> None:
        """A committed bind (called by the session, on the loop's thread)."""
        item = Early(d)
        self.handed.append(item)
        with self._wake:
            self._queue.append(item)
            self._wake.notify()
        # started by the first bind once the session has run for a while: an idle session costs
        # nothing, and a short one sends its binds after it as before, because each bind sent
        # beside the session costs the session the interpreter lock's hand-overs (about 1 ms a
        # bind measured on a loaded 2-core host, against 0.1 ms on the loop after the session)
        if self._thread is None and time.monotonic() >= self.not_before:
            self._thread = threading.Thread(target=self._run, name="early-binds", daemon=True)
            self._thread.start()

    def finish(self) -> list[Early]:
        """Stop sending; every bind handed, with its outcome (on the loop's thread)."""
        with self._wake:
            self._stop = True
            self._wake.notify()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        return self.handed

    def _next(self) -> Early | None:
        with self._wake:
            while not self._queue and not self._stop:
                self._wake.wait()
            return None if self._stop else self._queue.popleft()

    def _run(self) -> None:
        while (item := self._next()) is not None:
            delay = self.bucket.reserve()
            if delay > 0:
                with self._wake:  # a wait the end of the session cuts short
                    self._wake.wait_for(lambda: self._stop, timeout=delay)
                    if self._stop:
                        return
            # asked right before the send, after any wait: a term that ended sends nothing more
            if not self.still_open() or not self._send(item):
                return

    def _send(self, item: Early) -> bool:
        """One Binding; False when the connection failed (the rest go the usual way)."""
        task = item.decision.task
        path = resource_path("/api/v1", "pods", task.namespace, task.name, "binding")
        item.at, t0 = time.time(), time.perf_counter()
        try:
            if self._conn is None:
                self._conn = self.endpoint.connect()
            self._conn.request(
                "POST", self.endpoint.prefix + path, json_dumps(binding_body(item.decision)), self.headers
            )
            answer = self._conn.getresponse()
            body = answer.read()
        except (OSError, http.client.HTTPException):
            # whether it landed is unknown: left unsent, the binder sends it again and a 409
            # there finds our own Binding (the binder's conflict check)
            if self._conn is not None:
                self._conn.close()
                self._conn = None
            return False
        item.ms = (time.perf_counter() - t0) * 1000
        item.status = answer.status
        if 200 <= answer.status < 300:
            item.outcome = SENT
        else:
            item.outcome, item.body = REFUSED, body
        if answer.will_close:
            self._conn.close()
            self._conn = None
        return True
