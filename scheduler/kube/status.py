"""Everything the scheduler writes besides Bindings: PodGroup and Queue status, pod conditions,
events (spec section 8).

Writes happen only when something changed, and a write we just made is not repeated while the
watch has not shown it yet: each write remembers the resourceVersion the object had when it was
decided, and an identical decision is skipped while the cache still shows that version (versions
are compared for equality only, never ordered). Writes go through sharded worker queues: one
object's writes stay in order, a newer status for an object not yet written replaces the older
one, and a slow API never blocks a scheduling session.

Events are deduplicated like client-go's EventCorrelator: the same object, type, reason and
message within a 10-minute window bump `count` on the existing Event instead of creating a new
one, and the bump is sent at most every 30 s per event. They are sent in the order recorded, in
batches pipelined on one connection of their own (`PipelinedQueue`), after the Bindings in flight.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import datetime as dt
import json
import time
import zlib
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import structlog

from scheduler.kube.cache import SchedulerCache
from scheduler.kube.client import (
    MERGE_PATCH,
    STRATEGIC_MERGE_PATCH,
    ApiError,
    Fenced,
    KubeClient,
    resource_path,
)
from scheduler.model.objects import PodGroupPhase, PodGroupStatus, TaskInfo
from scheduler.model.resources import format_quantity

log = structlog.get_logger("vc-scheduler.status")

PG_PREFIX = "/apis/scheduling.volcano.sh/v1beta1"


def _worth_a_warning(exc: ApiError) -> bool:
    # an object deleted meanwhile needs no status; a fenced write was announced when the fence closed
    return exc.status != 404 and not isinstance(exc, Fenced)


EVENT_WINDOW_S = 600.0
EVENT_FLUSH_S = 30.0


_last_stamp: tuple[int, str] = (-1, "")


def now_rfc3339() -> str:
    """The current second as Kubernetes writes timestamps; formatted once per second (a burst
    stamps thousands of events and conditions within the same one)."""
    global _last_stamp
    sec = int(time.time())
    if _last_stamp[0] != sec:
        _last_stamp = (sec, dt.datetime.fromtimestamp(sec, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))
    return _last_stamp[1]


# ---------------------------------------------------------------------------------- work queue --
class ShardedWorkQueue:
    """N serial workers; a key always goes to the same worker, so one object's writes stay ordered."""

    def __init__(self, name: str, shards: int = 8, maxsize: int = 20000) -> None:
        self.name = name
        self.queues: list[asyncio.Queue[tuple[str, int, Callable[[], Awaitable[None]]]]] = [
            asyncio.Queue(maxsize) for _ in range(shards)
        ]
        self.latest: dict[str, int] = {}
        self.dropped = 0
        self.done = 0
        self._workers: list[asyncio.Task[None]] = []

    def start(self) -> None:
        if not self._workers:
            self._workers = [asyncio.ensure_future(self._work(q)) for q in self.queues]

    def submit(self, key: str, fn: Callable[[], Awaitable[None]], replace: bool = True) -> None:
        version = self.latest.get(key, 0) + 1 if replace else 0
        if replace:
            self.latest[key] = version
        q = self.queues[zlib.crc32(key.encode()) % len(self.queues)]
        try:
            q.put_nowait((key, version, fn))
        except asyncio.QueueFull:
            self.dropped += 1
            log.warning("write queue full, dropping a write", queue=self.name, object=key)

    async def _work(self, q: asyncio.Queue[tuple[str, int, Callable[[], Awaitable[None]]]]) -> None:
        while True:
            key, version, fn = await q.get()
            try:
                if version == 0 or self.latest.get(key) == version:
                    if version:
                        del self.latest[key]
                    await fn()
                    self.done += 1
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                if not isinstance(exc, Fenced):  # the fence said why once, when it closed
                    log.warning("write failed", queue=self.name, object=key, error=str(exc))
            finally:
                q.task_done()

    def pending(self) -> int:
        return sum(q.qsize() for q in self.queues)

    async def join(self, timeout: float) -> bool:
        try:
            await asyncio.wait_for(asyncio.gather(*(q.join() for q in self.queues)), timeout)
            return True
        except TimeoutError:
            return False

    async def stop(self) -> None:
        for w in self._workers:
            w.cancel()
        await asyncio.gather(*self._workers, return_exceptions=True)
        self._workers = []


# how long a batch of events waits at most for the Bindings in flight to be answered
GATE_WAIT_S = 0.5


class PipelinedQueue:
    """The events' writes, in the order recorded, sent in batches pipelined on one connection
    (`KubeClient.write_pipelined`): `ShardedWorkQueue`'s interface for writes that nobody waits
    on and whose answers matter only for their status.

    During a burst the binder records a Scheduled event for every pod it bound, thousands a
    second; through four serial workers each was a queue entry, a coroutine, a write system call
    and a read of its answer of its own. Here whatever was recorded while the last batch was out
    goes as the next batch (up to `batch`), one write and, mostly, one read for all of them. One
    line keeps every object's writes in order (a count bump never overtakes its create).

    With a `gate` (the binder's `settled`), a batch waits while Bindings are in flight, at most
    `GATE_WAIT_S`: the binds of a burst come first, its events follow between them."""

    def __init__(self, name: str, client: Any, batch: int = 128, maxsize: int = 80000) -> None:
        self.name = name
        self.client = client
        self.batch = batch
        self.maxsize = maxsize
        # (what for the log, method, path, body, content type, called once it succeeded)
        self._items: collections.deque[tuple[Any, str, str, Any, str | None, Callable[[], None]]] = (
            collections.deque()
        )
        self._wake = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        self.dropped = 0
        self.done = 0
        self._worker: asyncio.Task[None] | None = None
        self.gate: asyncio.Event | None = None

    def start(self) -> None:
        if self._worker is None:
            self._worker = asyncio.ensure_future(self._work())

    def submit(
        self,
        what: Any,
        method: str,
        path: str,
        body: Any,
        content_type: str | None,
        on_sent: Callable[[], None],
    ) -> None:
        if len(self._items) >= self.maxsize:
            self.dropped += 1
            log.warning("write queue full, dropping a write", queue=self.name, object=_named(what))
            return
        self._items.append((what, method, path, body, content_type, on_sent))
        self._idle.clear()
        self._wake.set()

    async def _work(self) -> None:
        items = self._items
        while True:
            await self._wake.wait()
            self._wake.clear()
            while items:
                gate = self.gate
                if gate is not None and not gate.is_set():
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(gate.wait(), GATE_WAIT_S)
                batch = [items.popleft() for _ in range(min(self.batch, len(items)))]
                try:
                    errors: list[Any] = await self.client.write_pipelined([b[1:5] for b in batch])
                except asyncio.CancelledError:
                    raise
                except Exception as exc:  # a client bug costs this batch, never the queue
                    errors = [exc] * len(batch)
                for item, exc in zip(batch, errors, strict=True):
                    if exc is None:
                        item[5]()
                        self.done += 1
                    elif not isinstance(exc, Fenced):  # the fence said why once, when it closed
                        log.warning("write failed", queue=self.name, object=_named(item[0]), error=str(exc))
            self._idle.set()

    def pending(self) -> int:
        return len(self._items)

    async def join(self, timeout: float) -> bool:
        try:
            await asyncio.wait_for(self._idle.wait(), timeout)
            return True
        except TimeoutError:
            return False

    async def stop(self) -> None:
        worker, self._worker = self._worker, None
        if worker is not None:
            worker.cancel()
            await asyncio.gather(worker, return_exceptions=True)


def _named(what: Any) -> str:
    return "|".join(what) if isinstance(what, tuple) else str(what)


async def with_retry(fn: Callable[[], Awaitable[Any]], attempts: int = 3, base: float = 0.2) -> Any:
    """Retry throttled / failed-server / unanswered calls; anything else is final."""
    for i in range(attempts):
        try:
            return await fn()
        except ApiError as exc:
            if not exc.retryable or i == attempts - 1:
                raise
            await asyncio.sleep(min(exc.retry_after or base * (2**i), 5.0))
    return None


# ---------------------------------------------------------------------------------- events --
@dataclass(slots=True)
class ObjectRef:
    kind: str
    namespace: str
    name: str
    uid: str = ""
    api_version: str = "v1"

    def to_dict(self) -> dict[str, str]:
        d = {"kind": self.kind, "name": self.name, "apiVersion": self.api_version}
        if self.namespace:
            d["namespace"] = self.namespace
        if self.uid:
            d["uid"] = self.uid
        return d


@dataclass(slots=True)
class _Seen:
    event_name: str
    count: int
    first: str
    last_seen: float
    last_sent: float
    sent_count: int


_last_event_ns = 0


def _event_suffix() -> str:
    """client-go's event name suffix (the time in hex nanoseconds), never the same twice here.

    uuid4 would do as well, but costs a system call per event: 5,000 binds are 5,000 events.
    """
    global _last_event_ns
    _last_event_ns = max(time.time_ns(), _last_event_ns + 1)
    return f"{_last_event_ns:x}"


class EventCorrelator:
    """Decides whether an event is new, a count bump to send now, or a bump to hold back."""

    def __init__(
        self, window: float = EVENT_WINDOW_S, flush: float = EVENT_FLUSH_S, max_keys: int = 4096
    ) -> None:
        self.window = window
        self.flush = flush
        self.max_keys = max_keys
        self.seen: OrderedDict[tuple[str, ...], _Seen] = OrderedDict()

    def observe(self, key: tuple[str, ...], now: float, name_hint: str) -> tuple[str, _Seen]:
        """('create' | 'patch' | 'hold', record)."""
        s = self.seen.get(key)
        if s is None or now - s.last_seen > self.window:
            s = _Seen(f"{name_hint}.{_event_suffix()}", 1, now_rfc3339(), now, now, 1)
            self.seen[key] = s
            self.seen.move_to_end(key)
            while len(self.seen) > self.max_keys:
                self.seen.popitem(last=False)
            return "create", s
        s.count += 1
        s.last_seen = now
        self.seen.move_to_end(key)
        if now - s.last_sent >= self.flush:
            s.last_sent = now
            s.sent_count = s.count
            return "patch", s
        return "hold", s


class EventRecorder:
    """Core v1 Events (what `kubectl describe` shows), deduplicated, best effort."""

    def __init__(
        self,
        client: KubeClient | None,
        component: str = "volcano",
        instance: str = "",
        dry_run: bool = False,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self.client = client
        self.component = component
        self.instance = instance
        self.dry_run = dry_run
        self.correlator = EventCorrelator()
        self.queue = PipelinedQueue("events", client)
        self._clock = clock or (lambda: asyncio.get_running_loop().time())
        self.created = 0
        self.patched = 0

    def record(self, ref: ObjectRef, etype: str, reason: str, message: str) -> None:
        if self.dry_run or self.client is None:
            return
        key = (ref.kind, ref.namespace, ref.name, ref.uid, etype, reason, message)
        action, seen = self.correlator.observe(key, self._clock(), ref.name)
        if action == "hold":
            return
        ns = ref.namespace or "default"
        ts = now_rfc3339()
        if action == "create":
            body = {
                "apiVersion": "v1",
                "kind": "Event",
                "metadata": {"name": seen.event_name, "namespace": ns},
                "involvedObject": ref.to_dict(),
                "reason": reason,
                "message": message[:1024],
                "type": etype,
                "source": {"component": self.component},
                "reportingComponent": self.component,
                "reportingInstance": self.instance,
                "firstTimestamp": seen.first,
                "lastTimestamp": ts,
                "count": 1,
            }
            self.queue.submit(key, "POST", resource_path("/api/v1", "events", ns), body, None, self._created)
        else:
            patch = {"count": seen.sent_count, "lastTimestamp": ts}
            path = resource_path("/api/v1", "events", ns, seen.event_name)
            self.queue.submit(key, "PATCH", path, patch, MERGE_PATCH, self._patched)

    def _created(self) -> None:
        self.created += 1

    def _patched(self) -> None:
        self.patched += 1


def pod_ref(task: TaskInfo) -> ObjectRef:
    return ObjectRef("Pod", task.namespace, task.name, task.uid if "/" not in task.uid else "")


def podgroup_ref(uid: str, object_uid: str = "") -> ObjectRef:
    ns, _, name = uid.partition("/")
    return ObjectRef("PodGroup", ns, name, object_uid, "scheduling.volcano.sh/v1beta1")


# ---------------------------------------------------------------------------------- statuses --
def podgroup_status_body(st: PodGroupStatus) -> dict[str, Any]:
    return st.to_manifest(now_rfc3339())


def _comparable(st: PodGroupStatus) -> str:
    return json.dumps(
        [
            st.phase,
            st.running,
            st.succeeded,
            st.failed,
            [(c.type, c.status, c.reason, c.message) for c in st.conditions],
        ]
    )


QUEUE_PHASES = (
    ("pending", PodGroupPhase.PENDING),
    ("inqueue", PodGroupPhase.INQUEUE),
    ("running", PodGroupPhase.RUNNING),
    ("unknown", PodGroupPhase.UNKNOWN),
    ("completed", PodGroupPhase.COMPLETED),
)
_PHASE_FIELD = {phase: name for name, phase in QUEUE_PHASES}


class SessionPhases:
    """`uid -> phase` over a session's PodGroup statuses, without building a 20,000-entry dict."""

    __slots__ = ("statuses",)

    def __init__(self, statuses: dict[str, Any]) -> None:
        self.statuses = statuses

    def get(self, uid: str, default: str) -> str:
        st = self.statuses.get(uid)
        return st.phase if st is not None else default


def _count_phases(
    counts: dict[str, dict[str, int]], jobs: dict[str, Any], implicit: set[str], phases: Any
) -> None:
    """Each PodGroup counted in its queue under the field of its phase: `phases.get(uid, default)`,
    or a session's statuses looked up here (`SessionPhases`: one pass over every PodGroup, 20,000
    at 150,000 pods, after each busy session of a burst, where a method call per PodGroup was
    half of the pass)."""
    field_of, get = _PHASE_FIELD, phases.get
    statuses = phases.statuses if type(phases) is SessionPhases else None
    for uid, job in jobs.items():
        if uid in implicit:
            continue
        queue_counts = counts.get(job.queue)
        if queue_counts is None:
            continue
        try:
            if statuses is not None:
                st = statuses.get(uid)
                field_name = field_of.get(job.pod_group_status.phase if st is None else st.phase)
            else:
                field_name = field_of.get(get(uid, job.pod_group_status.phase))
        except TypeError:  # a phase that is not even a string (a malformed status)
            continue
        if field_name is not None:
            queue_counts[field_name] += 1


# the log field that names the object of each kind of remembered write
_LOG_KEYS = {"PodGroup status": "podgroup", "pod condition": "pod"}


class StatusWriter:
    """Turns a SessionResult into status writes and events; skips what is already true."""

    def __init__(
        self, client: KubeClient | None, cache: SchedulerCache, recorder: EventRecorder, dry_run: bool = False
    ) -> None:
        self.client = client
        self.cache = cache
        self.recorder = recorder
        self.dry_run = dry_run
        self.queue = ShardedWorkQueue("status", shards=8)
        # object -> (decision, resourceVersion when decided, resourceVersion our write produced)
        self._pg_written: dict[str, tuple[str, str, str]] = {}
        self._pod_written: dict[str, tuple[tuple[str, str, str], str, str]] = {}
        self._queue_written: dict[str, str] = {}
        self._queue_signature: Any = None
        self._queue_retry = False
        self.podgroup_writes = 0
        self.pod_writes = 0
        # kinds whose CRD has no status subresource (found by a 404 on .../status)
        self._no_status_subresource: set[str] = set()
        self.queue_writes = 0

    def start(self) -> None:
        self.queue.start()
        self.recorder.queue.start()

    async def drain(self, timeout: float) -> None:
        await self.queue.join(timeout)
        await self.recorder.queue.join(max(timeout / 2, 0.5))

    async def stop(self) -> None:
        await self.queue.stop()
        await self.recorder.queue.stop()

    # ----------------------------------------------------------------- status subresource --
    async def _patch_status(
        self, plural: str, on_status: Callable[[], Awaitable[Any]], on_object: Callable[[], Awaitable[Any]]
    ) -> Any:
        """Patch `.../status` (`on_status`), or the object (`on_object`) when the CRD has no status subresource.

        Volcano's CRDs declare the status subresource, but clusters installed from older or
        hand-edited manifests do not; there the API server answers 404 for `.../status` although
        the object exists, and the status is part of the object itself. A 404 is therefore retried
        once on the object: if that works, this kind is written that way from then on; if it is
        404 too, the object is really gone and the caller ignores the write.
        """
        if plural in self._no_status_subresource:
            return await with_retry(on_object)
        try:
            return await with_retry(on_status)
        except ApiError as exc:
            if exc.status != 404:
                raise
        out = await with_retry(on_object)
        if plural not in self._no_status_subresource:
            self._no_status_subresource.add(plural)
            log.warning(
                "no status subresource: writing status into the whole object from now on",
                resource=f"{plural}.scheduling.volcano.sh",
                hint="install Volcano's CRDs with `subresources: {status: {}}`",
            )
        return out

    async def _remembered_write(
        self,
        written: dict[str, Any],
        key: str,
        decision: Any,
        rv_then: str,
        send: Callable[[], Awaitable[Any]],
        what: str,
    ) -> bool:
        """Send one write of `decision` for `key`; True when it went through. On failure the record
        of it is dropped, so that the next session writes again; on success it is completed with the
        resourceVersion the write produced, so that the watch's echo of our own write is not taken
        for a change by someone else."""
        try:
            out = await send()
        except ApiError as exc:
            written.pop(key, None)
            if _worth_a_warning(exc):
                log.warning(f"{what} write failed", **{_LOG_KEYS[what]: key}, error=str(exc))
            return False
        rv = str(((out or {}).get("metadata") or {}).get("resourceVersion") or "")
        prev = written.get(key)
        if prev is not None and prev[0] == decision:
            written[key] = (decision, rv_then, rv)
        return True

    # ----------------------------------------------------------------- PodGroups --
    def podgroup_status(self, uid: str, st: PodGroupStatus) -> bool:
        """Queue a status write for one PodGroup unless it is what we last wrote and still see."""
        if self.dry_run or self.client is None or not self.cache.is_real_podgroup(uid):
            return False
        decision = _comparable(st)
        cur_rv = self.cache.podgroup_rv.get(uid, "")
        prev = self._pg_written.get(uid)
        if prev is not None and prev[0] == decision and cur_rv in (prev[1], prev[2]):
            return False
        self._pg_written[uid] = (decision, cur_rv, "")
        ns, _, name = uid.partition("/")
        body = {"status": podgroup_status_body(st)}
        client = self.client
        path = resource_path(PG_PREFIX, "podgroups", ns, name, "status")
        object_path = resource_path(PG_PREFIX, "podgroups", ns, name)

        async def send() -> Any:
            return await self._patch_status(
                "podgroups",
                lambda: client.request("PATCH", path, body=body, content_type=MERGE_PATCH),
                lambda: client.request("PATCH", object_path, body=body, content_type=MERGE_PATCH),
            )

        async def write() -> None:
            if await self._remembered_write(self._pg_written, uid, decision, cur_rv, send, "PodGroup status"):
                self.podgroup_writes += 1

        self.queue.submit(f"pg/{uid}", write)
        return True

    # ----------------------------------------------------------------- pods --
    def pod_condition(
        self, task: TaskInfo, reason: str, message: str, nominated: str = "", force: bool = False
    ) -> bool:
        """PodScheduled=False with reason/message (+ nominatedNodeName), and a FailedScheduling event."""
        if self.dry_run or self.client is None:
            return False
        live = self.cache.state.get_task(task.key)
        if live is None or live.uid != task.uid:
            return False
        desired = ("False", reason, message)
        pod = live.pod
        same_nominated = not nominated or nominated == pod.nominated_node
        if not force and pod.scheduled_condition == desired and same_nominated:
            return False
        prev = self._pod_written.get(task.key)
        if (
            not force
            and prev is not None
            and prev[0] == desired
            and pod.resource_version in (prev[1], prev[2])
        ):
            return False
        self._pod_written[task.key] = (desired, pod.resource_version, "")
        status: dict[str, Any] = {
            "conditions": [
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "reason": reason,
                    "message": message,
                    "lastTransitionTime": now_rfc3339(),
                }
            ]
        }
        if nominated:
            status["nominatedNodeName"] = nominated
        body = {"status": status}
        client = self.client
        key = task.key
        rv_then = pod.resource_version
        path = resource_path("/api/v1", "pods", task.namespace, task.name, "status")

        async def send() -> Any:
            # strategic merge: conditions merge by type, as kube-scheduler patches them
            return await with_retry(
                lambda: client.request("PATCH", path, body=body, content_type=STRATEGIC_MERGE_PATCH)
            )

        async def write() -> None:
            if await self._remembered_write(self._pod_written, key, desired, rv_then, send, "pod condition"):
                self.pod_writes += 1

        self.queue.submit(f"pod/{key}", write)
        self.recorder.record(pod_ref(task), "Warning", "FailedScheduling", message)
        return True

    def forget_pod(self, key: str) -> None:
        self._pod_written.pop(key, None)

    # ----------------------------------------------------------------- queues --
    def queue_statuses(self, phases: Any, allocated: dict[str, Any], signature: Any = None) -> int:
        """PodGroup counts by phase (and allocated resources) per queue, written when changed.

        `phases` maps a job uid to the phase this session gives it (anything with `.get`).
        With a `signature` (something that changes whenever the inputs can), the count over every
        PodGroup is skipped when it equals the previous call's and no write failed meanwhile: on an
        idle cluster with 20,000 PodGroups that count is most of this method's cost.
        """
        if self.dry_run or self.client is None:
            return 0
        if signature is not None and signature == self._queue_signature and not self._queue_retry:
            return 0
        self._queue_signature, self._queue_retry = signature, False
        counts: dict[str, dict[str, int]] = {
            q: {k: 0 for k, _ in QUEUE_PHASES} for q in self.cache.state.queues
        }
        state = self.cache.state
        _count_phases(counts, state.jobs, state.implicit_jobs, phases)
        written = 0
        for q, c in counts.items():
            body: dict[str, Any] = dict(c)
            alloc = allocated.get(q)
            if alloc is not None:
                body["allocated"] = {name: format_quantity(name, v) for name, v in alloc.items() if v}
            cur = self.cache.queue_status.get(q, {})
            cur_view = {k: cur.get(k, 0) or 0 for k in body if k != "allocated"}
            if "allocated" in body:
                cur_view["allocated"] = cur.get("allocated") or {}
            decision = json.dumps(body, sort_keys=True)
            if json.dumps(cur_view, sort_keys=True) == decision:
                self._queue_written.pop(q, None)  # confirmed by the watch
                continue
            if self._queue_written.get(q) == decision:
                continue  # written, the watch has not shown it yet
            self._queue_written[q] = decision
            self._submit_queue(q, body, decision)
            written += 1
        return written

    def _submit_queue(self, q: str, body: dict[str, Any], decision: str) -> None:
        client = self.client
        assert client is not None
        path = resource_path(PG_PREFIX, "queues", "", q, "status")
        object_path = resource_path(PG_PREFIX, "queues", "", q)
        patch = {"status": body}

        async def write() -> None:
            try:
                await self._patch_status(
                    "queues",
                    lambda: client.request("PATCH", path, body=patch, content_type=MERGE_PATCH),
                    lambda: client.request("PATCH", object_path, body=patch, content_type=MERGE_PATCH),
                )
                self.queue_writes += 1
            except ApiError as exc:
                self._queue_retry = True  # count again next session even if nothing else changed
                if self._queue_written.get(q) == decision:
                    del self._queue_written[q]
                if _worth_a_warning(exc):
                    log.warning("queue status write failed", queue=q, error=str(exc))

        self.queue.submit(f"queue/{q}", write)
