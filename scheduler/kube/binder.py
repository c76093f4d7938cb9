"""Carry out a session's binds and evictions against the API server (spec section 8).

Binds are asynchronous to the scheduling cycle, as in Volcano: `submit` claims each pod in the
cache at once (so the next session sees the capacity used and never decides the pod again), then
Bindings are POSTed concurrently behind the client's token bucket. The API server itself refuses
a second Binding for a pod (409), which is the last guard against binding twice: a 409 means the
pod is someone's — possibly ours, when an earlier answer was lost — and we resync it from the
API instead of retrying. Throttling and server errors are retried with backoff; a final failure
rolls the pod back to Pending and tells the user why on the pod.
"""

from __future__ import annotations

import asyncio
import collections
import random
import time
from collections.abc import Iterable
from typing import Any

import structlog

from scheduler.framework.cycle import BindDecision
from scheduler.kube.cache import SchedulerCache
from scheduler.kube.client import MERGE_PATCH, ApiError, Fenced, KubeClient, resource_path, status_error
from scheduler.kube.earlybind import SENT, UNSENT, CommitSender, Early, Endpoint, binding_body
from scheduler.kube.fence import Fence
from scheduler.kube.keepalive import Slots
from scheduler.kube.status import EventRecorder, StatusWriter, pod_ref, podgroup_ref
from scheduler.metrics import SchedulerMetrics
from scheduler.model.objects import TaskInfo

log = structlog.get_logger("vc-scheduler.binder")
_rng = random.Random()


class Binder:
    def __init__(
        self,
        client: KubeClient | None,
        cache: SchedulerCache,
        status: StatusWriter,
        recorder: EventRecorder,
        metrics: SchedulerMetrics,
        dry_run: bool = False,
        concurrency: int = 64,
        attempts: int = 4,
        fence: Fence | None = None,
    ) -> None:
        self.client = client
        self.fence = fence or Fence(None)
        self.cache = cache
        self.status = status
        self.recorder = recorder
        self.metrics = metrics
        # the labelled series every bind observes, looked up once (never pruned)
        self._assumed_ms = metrics.task_latency.labels("Assumed")
        self._bound_ms = metrics.task_latency.labels("Bound")
        self._bind_stage_ms = metrics.stage_duration.labels("Bind")
        self._prebind_ms = metrics.stage_duration.labels("PreBind")
        self._prebound_ms = metrics.task_latency.labels("PreBound")
        self.dry_run = dry_run
        self.attempts = attempts
        self.concurrency = concurrency
        self._sem = Slots(concurrency)
        self._tasks: set[asyncio.Task[Any]] = set()
        # each batch's binds not yet taken by its workers, and the term they were decided in:
        # a sender may carry them beside the next session (`carry_into`)
        self._queues: list[tuple[collections.deque[BindDecision], int | None]] = []
        # set while no batch is in flight: the next session waits on it (scheduler/pacing.py)
        self.settled = asyncio.Event()
        self.settled.set()
        # the events' writes wait for the Bindings in flight (see PipelinedQueue)
        if isinstance(recorder, EventRecorder):
            recorder.queue.gate = self.settled
        self._dry_seen: set[str] = set()
        # Scheduled events of binds that succeeded, sent once their batch is done: during a burst
        # the Bindings alone use the event loop and the token bucket, the events follow
        self._scheduled: list[BindDecision] = []
        self.bound = 0
        self.failed = 0
        self.conflicts = 0
        self.fenced = 0  # decisions dropped because the term they were made in had ended
        self.early = 0  # binds sent while their session still ran (scheduler/kube/earlybind.py)
        self.carried = 0  # binds of a batch sent beside the next session (`carry_into`)
        self._early_headers: dict[str, str] | None = None

    # ------------------------------------------------------------------ early binds --
    async def prepare_early(self) -> None:
        """Fresh credentials for the next session's early binds (see scheduler/kube/earlybind.py)."""
        if self.client is not None and self._endpoint() is not None and not self.dry_run:
            self._early_headers = await self.client.credentials()

    def _endpoint(self) -> Endpoint | None:
        writer = self.client.writer if self.client is not None else None
        if writer is None or self.client is None:  # writes go through aiohttp (a proxy)
            return None
        timeout = min(self.client.options.request_timeout, 10.0)
        return Endpoint(self.client.host, writer.ssl_context, writer.server_hostname, timeout)

    def commit_sender(self, term: int | None, not_before: float = 0.0) -> CommitSender | None:
        """A sender for the binds of the session about to run in `term`, sending from monotonic
        time `not_before` on; None for a dry run, without credentials prepared, through a proxy,
        or when the term already closed."""
        headers, self._early_headers = self._early_headers, None
        endpoint = self._endpoint()
        if headers is None or endpoint is None or self.client is None or not self.fence.allows(term):
            return None
        fence = self.fence
        return CommitSender(endpoint, headers, self.client.bucket, lambda: fence.still_open(term), not_before)

    def settle_early(self, early: list[Early], term: int | None) -> set[str]:
        """Claim and record the binds a sender sent (on the loop, after the session); returns the
        keys of those settled here, which `submit` must leave alone. Refused ones are claimed
        and go through the conflict check (409, 404) or the usual failure path."""
        settled: set[str] = set()
        unsent: list[BindDecision] = []
        carried = 0
        for item in early:
            d = item.decision
            if item.carried:  # claimed and observed by its batch already
                if item.outcome == UNSENT:
                    unsent.append(d)
                    continue
                carried += 1
            elif self._claim_early(item):
                settled.add(d.task.key)
            else:
                continue
            self._settle_outcome(item, term)
        if unsent:  # the carried binds the session ended before: back to the loop, in order
            self._spawn(self._send_all(unsent, term))
        self.carried += carried
        if carried or unsent:
            log.info("carried binds settled", sent=carried, unsent=len(unsent))
        if settled or carried:
            self.early += len(settled)
            self._record_scheduled()
        return settled

    def _claim_early(self, item: Early) -> bool:
        """Claim a bind the session's own sender sent: its task assumed on the node, as a batch
        would have before sending; False for one not sent, or one the cache no longer takes."""
        d = item.decision
        if item.outcome == UNSENT or not self.cache.assume(d.task.key, d.task.uid, d.node, d.annotations):
            return False
        if d.task.pod.creation:  # claimed, in effect, when it was sent
            self._assumed_ms.observe(max(item.at - d.task.pod.creation, 0) * 1000)
        if item.outcome == SENT:  # no node lock: nothing ran before the Binding
            self._prebound([d], 0.0, item.at)
        return True

    def _settle_outcome(self, item: Early, term: int | None) -> None:
        """A claimed early bind's answer: recorded when sent, otherwise the conflict check (409,
        404), a retry the usual way, or the failure path."""
        d = item.decision
        if item.outcome == SENT:
            self._bind_stage_ms.observe(item.ms)
            self._succeeded(d)
            return
        exc = status_error(item.status, item.body, {})
        self.metrics.bind_errors.labels(str(exc.status)).inc()
        if exc.status in (409, 404):
            self._spawn(self._conflict(d, exc))
        elif exc.retryable:  # with its attempts and backoff
            self._spawn(self._send_all([d], term) if item.carried else self._batch([d], [], term))
        else:
            self._spawn(self._failed(d, exc))

    def carry_into(self, sender: CommitSender, term: int | None) -> int:
        """Hand `sender` the binds of this term's batches that no worker has taken yet: the
        session about to hold the loop would stop them, the sender's thread sends them beside
        it. `settle_early` settles them after the session; returns how many were handed."""
        taken: list[BindDecision] = []
        for queue, batch_term in self._queues:
            if batch_term == term:
                taken.extend(queue)
                queue.clear()
        sender.carry(taken)
        return len(taken)

    def carries(self) -> bool:
        """Whether sessions' commit senders can carry unsent batches (see `carry_into`)."""
        return self.client is not None and not self.dry_run and self._endpoint() is not None

    # ------------------------------------------------------------------ submit --
    def submit(
        self,
        binds: Iterable[BindDecision],
        node_locks: Iterable[tuple[str, str, str]] = (),
        term: int | None = 0,
    ) -> int:
        """Claim and start binding; returns how many binds were started (claimed).

        `term` is the fence term the decisions were made in: they are sent only while it lasts.
        """
        binds = list(binds)
        if self.dry_run:
            return self._dry(binds)
        if binds and not self.fence.allows(term):
            self.fenced += len(binds)
            log.warning("decisions dropped: made before the lease was lost", pods=len(binds))
            return 0
        claimed: list[BindDecision] = []
        for d in binds:
            if self.cache.assume(d.task.key, d.task.uid, d.node, d.annotations):
                claimed.append(d)
                if d.task.pod.creation:
                    self._assumed_ms.observe(max(time.time() - d.task.pod.creation, 0) * 1000)
            else:
                log.debug("bind skipped: pod already claimed or bound", pod=d.task.key)
        locks = list(node_locks)
        if claimed:
            self._spawn(self._batch(claimed, locks, term))
        return len(claimed)

    def _dry(self, binds: list[BindDecision]) -> int:
        new = [d for d in binds if d.task.uid not in self._dry_seen]
        for d in new:
            self._dry_seen.add(d.task.uid)
        if new:
            self.metrics.dry_run_binds.inc(len(new))
            log.info(
                "dry run: would bind",
                count=len(new),
                sample={d.task.key: d.node for d in new[:10]},
            )
        return len(new)

    def _spawn(self, coro: Any) -> None:
        t = asyncio.ensure_future(coro)
        self._tasks.add(t)
        self.settled.clear()
        t.add_done_callback(self._finished)

    def _finished(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not self._tasks:
            self.settled.set()

    async def _batch(
        self, binds: list[BindDecision], locks: list[tuple[str, str, str]], term: int | None
    ) -> None:
        t0 = time.perf_counter()
        if locks and self.fence.allows(term):
            # device plugins look for the locked node's pending pod: the lock precedes the bind
            await asyncio.gather(*(self._lock_node(*lk) for lk in locks))
        # the node locks are our PreBind: Volcano observes its duration and the PreBound latency
        # for every pod it binds, with or without device pre-binding work
        self._prebound(binds, (time.perf_counter() - t0) * 1000, time.time())
        await self._send_all(binds, term, t0)

    async def _send_all(self, binds: list[BindDecision], term: int | None, t0: float | None = None) -> None:
        """Send claimed binds (`_batch` after its node locks, or those a sender did not send)."""
        t0 = time.perf_counter() if t0 is None else t0
        # `concurrency` workers take the binds in order: a task per bind (20,000 after a restart
        # at 20,000 nodes) would all be started before the first Binding is written
        entry = (collections.deque(binds), term)
        queue = entry[0]
        self._queues.append(entry)
        results: list[str] = []

        async def worker() -> None:
            while queue:  # shared: each bind is taken by one worker (or carried by a sender)
                results.append(await self._bind_guarded(queue.popleft(), term))  # contains errors

        try:
            await asyncio.gather(*(worker() for _ in range(min(self.concurrency, len(binds)))))
        finally:  # by identity: two emptied queues of one term are equal
            self._queues = [e for e in self._queues if e is not entry]
        self._record_scheduled()
        outcome: dict[str, int] = {}
        for r in results:
            outcome[r] = outcome.get(r, 0) + 1
        log.info(
            "bind batch done", pods=len(binds), ms=round((time.perf_counter() - t0) * 1000, 1), **outcome
        )

    def _prebound(self, binds: list[BindDecision], prebind_ms: float, now: float) -> None:
        """Observe the PreBind stage and PreBound latency of binds about to be sent at `now`."""
        prebind, prebound = self._prebind_ms, self._prebound_ms
        for d in binds:
            prebind.observe(prebind_ms)
            if d.task.pod.creation:
                prebound.observe(max(now - d.task.pod.creation, 0) * 1000)

    async def _lock_node(self, node: str, key: str, value: str) -> None:
        assert self.client is not None
        path = resource_path("/api/v1", "nodes", "", node)
        try:
            await self.client.request(
                "PATCH", path, body={"metadata": {"annotations": {key: value}}}, content_type=MERGE_PATCH
            )
        except ApiError as exc:
            log.warning("node lock failed", node=node, lock=key, error=str(exc))

    async def _bind_guarded(self, d: BindDecision, term: int | None = 0) -> str:
        slots = self._sem
        waiting = slots.take()
        if waiting is not None:
            await slots.wait(waiting)
        try:
            return await self._bind(d, term)
        except Exception as exc:  # the pod must never stay claimed by a bug
            self.cache.bind_failed(d.task.key)
            log.error("bind crashed", pod=d.task.key, error=f"{type(exc).__name__}: {exc}")
            return "error"
        finally:
            slots.give()

    # ------------------------------------------------------------------ one bind --
    async def _bind(self, d: BindDecision, term: int | None = 0) -> str:
        assert self.client is not None
        task = d.task
        body = binding_body(d)
        last: ApiError | None = None
        for attempt in range(self.attempts):
            t0 = time.perf_counter()
            try:
                if not self.fence.allows(term):
                    # decided in a term that has ended (a pause, a lost lease): never sent now
                    raise Fenced("POST", f"pods/{task.key}/binding")
                await self.client.bind(task.namespace, task.name, body, term)
            except Fenced:
                self.fenced += 1
                self.cache.bind_failed(task.key)
                return "fenced"
            except ApiError as exc:
                # kept past the except block: without its traceback, whose frames (this one
                # included) would hold it in a reference cycle that only the collector frees
                last = exc.with_traceback(None)
                self.metrics.bind_errors.labels(str(exc.status)).inc()
                if exc.status in (409, 404):
                    return await self._conflict(d, exc)
                if exc.retryable and attempt < self.attempts - 1:
                    delay = 0.1 * (2**attempt) * (1 + _rng.random())
                    if exc.retry_after:
                        delay = max(delay, min(exc.retry_after, 5.0))
                    await asyncio.sleep(delay)
                    continue
                break
            self._bind_stage_ms.observe((time.perf_counter() - t0) * 1000)
            self._succeeded(d)
            return "bound"
        assert last is not None
        return await self._failed(d, last)

    def _succeeded(self, d: BindDecision) -> None:
        task = d.task
        self.cache.bind_sent(task.key)
        self.status.forget_pod(task.key)
        self.bound += 1
        self.metrics.pods_bound.inc()
        if task.pod.creation:
            self._bound_ms.observe(max(time.time() - task.pod.creation, 0) * 1000)
        self._scheduled.append(d)

    def _record_scheduled(self) -> None:
        done, self._scheduled = self._scheduled, []
        for d in done:
            self.recorder.record(
                pod_ref(d.task), "Normal", "Scheduled", f"Successfully assigned {d.task.key} to {d.node}"
            )

    async def _conflict(self, d: BindDecision, exc: ApiError) -> str:
        """Someone (maybe our own earlier, unanswered attempt) bound it, or it is gone: ask the API."""
        assert self.client is not None
        task = d.task
        pod: dict[str, Any] | None
        try:
            pod = await self.client.request(
                "GET", resource_path("/api/v1", "pods", task.namespace, task.name)
            )
        except ApiError as gexc:
            pod = None if gexc.status == 404 else {}
        if pod == {}:
            # cannot tell: keep it claimed as bound; the watch decides (never retry the Binding)
            self.cache.bind_sent(task.key)
            self.conflicts += 1
            return "conflict"
        node = ((pod or {}).get("spec") or {}).get("nodeName")
        uid = ((pod or {}).get("metadata") or {}).get("uid")
        if pod is not None and node == d.node and (not uid or uid == task.uid):
            # our Binding landed on an earlier attempt whose answer was lost
            self.cache.resync_pod(task.key, pod)
            self._succeeded(d)
            return "bound"
        self.conflicts += 1
        log.info("bind conflict, pod resynced", pod=task.key, error=str(exc), node_now=node or "")
        self.cache.resync_pod(task.key, pod)
        return "conflict"

    async def _failed(self, d: BindDecision, exc: ApiError) -> str:
        task = d.task
        self.failed += 1
        self.cache.bind_failed(task.key)
        msg = f"failed to bind to node {d.node}: {exc}"
        log.warning("bind failed", pod=task.key, node=d.node, error=str(exc))
        # pod condition + Warning FailedScheduling event, as Volcano's bind error path does
        self.status.pod_condition(task, "SchedulerError", msg, force=True)
        return "failed"

    async def drain(self, timeout: float) -> bool:
        """Wait for in-flight binds (bounded). True when all finished."""
        if not self._tasks:
            return True
        _done, pending = await asyncio.wait(set(self._tasks), timeout=timeout)
        return not pending

    def in_flight(self) -> int:
        return len(self._tasks)


class Evictor:
    """Spec 8 eviction: event, Ready=False + DisruptionTarget conditions, then DELETE."""

    def __init__(
        self,
        client: KubeClient | None,
        cache: SchedulerCache,
        recorder: EventRecorder,
        scheduler_name: str,
        dry_run: bool = False,
        fence: Fence | None = None,
    ) -> None:
        self.client = client
        self.cache = cache
        self.recorder = recorder
        self.fence = fence or Fence(None)
        self.scheduler_name = scheduler_name
        self.dry_run = dry_run
        self._tasks: set[asyncio.Task[Any]] = set()
        self.evicted = 0

    def submit(self, evictions: Iterable[tuple[TaskInfo, str]], term: int | None = 0) -> int:
        evictions = list(evictions)
        if evictions and not self.dry_run and not self.fence.allows(term):
            log.warning("evictions dropped: decided before the lease was lost", pods=len(evictions))
            return 0
        started = 0
        for task, reason in evictions:
            if self.dry_run:
                log.info("dry run: would evict", pod=task.key, reason=reason)
                continue
            if self.cache.evicting.get(task.key) == task.uid:
                continue
            self.cache.evicting[task.key] = task.uid
            t = asyncio.ensure_future(self._evict(task, reason, term))
            self._tasks.add(t)
            t.add_done_callback(self._tasks.discard)
            started += 1
        return started

    async def _evict(self, task: TaskInfo, reason: str, term: int | None = 0) -> None:
        assert self.client is not None
        if not self.fence.allows(term):
            self.cache.evicting.pop(task.key, None)
            return
        message = f"Pod is evicted, because of {reason}"
        self.recorder.record(pod_ref(task), "Warning", "Evict", message)
        path = resource_path("/api/v1", "pods", task.namespace, task.name)
        try:
            for _attempt in range(3):
                pod = await self.client.request("GET", path)
                if ((pod.get("metadata") or {}).get("uid")) not in (task.uid, None) and "/" not in task.uid:
                    return  # a different pod now carries the name
                conds = [
                    c for c in ((pod.get("status") or {}).get("conditions") or []) if isinstance(c, dict)
                ]
                ready = {"type": "Ready", "status": "False", "reason": "Evict", "message": message}
                old = next((c for c in conds if c.get("type") == "Ready"), None)
                if old is not None and all(old.get(k) == v for k, v in ready.items()):
                    return  # already evicted by an earlier attempt (Volcano stops here too)
                now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
                disruption = {
                    "type": "DisruptionTarget",
                    "status": "True",
                    "reason": "PreemptionByScheduler",
                    "message": f"{self.scheduler_name}: preempting to accommodate a higher priority pod",
                    "lastTransitionTime": now,
                }
                new = [c for c in conds if c.get("type") not in ("Ready", "DisruptionTarget")]
                new += [{**ready, "lastTransitionTime": now}, disruption]
                patch = {
                    "metadata": {"resourceVersion": (pod.get("metadata") or {}).get("resourceVersion")},
                    "status": {"conditions": new},
                }
                try:
                    await self.client.request("PATCH", path + "/status", body=patch, content_type=MERGE_PATCH)
                    break
                except ApiError as exc:
                    if exc.status != 409:
                        raise
            opts: dict[str, Any] = {"apiVersion": "v1", "kind": "DeleteOptions"}
            if "/" not in task.uid:
                opts["preconditions"] = {"uid": task.uid}
            if not self.fence.allows(term):  # the GET and PATCH above may have spanned a pause
                raise Fenced("DELETE", path)
            await self.client.request("DELETE", path, body=opts)
            self.evicted += 1
            if task.job:
                pg_uid = self.cache.podgroup_object_uid.get(task.job, "")
                self.recorder.record(podgroup_ref(task.job, pg_uid), "Normal", "Evict", reason)
        except ApiError as exc:
            self.cache.evicting.pop(task.key, None)
            if exc.status != 404:
                log.warning("eviction failed", pod=task.key, reason=reason, error=str(exc))

    async def drain(self, timeout: float) -> bool:
        if not self._tasks:
            return True
        _done, pending = await asyncio.wait(set(self._tasks), timeout=timeout)
        return not pending
