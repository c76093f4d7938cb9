"""`vc-scheduler` (no subcommand): the scheduler daemon, wired from its parts.

    informers ──▶ kube/cache ──snapshot every --schedule-period──▶ session (pure core)
                                                                    │
        kube/binder (Bindings, evictions) ◀── decisions ───────────┤
        kube/status (PodGroup/Queue status, pod conditions, events) ◀┘

A session runs only on the leader, only after the informers' initial sync, and only when the
cache changed or some pod is still pending. It runs in the event loop's thread: it is CPU-bound
but short, and running it there means the cache cannot change under it. Everything it decides is
handed to asynchronous writers, so a slow API server delays writes, never the next decision.
Flags follow Volcano's vc-scheduler (spec 1.3) so existing manifests work unchanged.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import random
import signal
import sys
import time
from collections.abc import Callable, Collection, Iterator, Sequence
from typing import Any

import structlog

from scheduler.flags import Options, build_parser, parse_args, parse_duration
from scheduler.framework.cycle import (
    SessionResult,
    bind_decision,
    close_session,
    open_session,
    run_actions,
)
from scheduler.framework.session import Session, SessionOptions
from scheduler.kube.binder import Binder, Evictor
from scheduler.kube.cache import SchedulerCache
from scheduler.kube.client import ClientOptions, KubeClient
from scheduler.kube.earlybind import CommitSender
from scheduler.kube.fence import Fence
from scheduler.kube.informer import Informer, Resource
from scheduler.kube.leader import LeaderConfig, LeaderElector
from scheduler.kube.leasethread import LeaseThread
from scheduler.kube.podfields import decode_pod_list, pod_event_decoder
from scheduler.kube.status import EventRecorder, ObjectRef, SessionPhases, StatusWriter, podgroup_ref
from scheduler.metrics import SchedulerMetrics
from scheduler.model.cluster import ClusterOptions
from scheduler.model.objects import TaskInfo, TaskStatus
from scheduler.model.resources import Resource as Res
from scheduler.pacing import Pacer
from scheduler.plugins.deviceshare.gpushare import KIND as GPUSHARE_KIND
from scheduler.plugins.deviceshare.vgpu import KIND as VGPU_KIND
from scheduler.reload import ConfigReloader
from scheduler.server import HttpServer, Probes, split_address
from scheduler.web.explain import explain
from scheduler.web.routes import WebView
from scheduler.web.summary import SessionView, Summary

log = structlog.get_logger("vc-scheduler")

VOLCANO_API = "/apis/scheduling.volcano.sh/v1beta1"
TOPOLOGY_API = "/apis/topology.volcano.sh/v1alpha1"
DEVICE_CONFIGMAP = ("kube-system", "volcano-vgpu-device-config")

# a session shorter than this sends its binds after it, as before (scheduler/kube/earlybind.py
# says why), unless its sender carries the last session's batch (then they go at once); the first
# session after a restart at 5,000 nodes commits its first job later anyway
SEND_DURING_SESSION_AFTER_S = 0.5
# the cyclic collector stays off across sessions that place pods at most this long (see
# Daemon._collector_off); the first turn of the session loop that decides nothing turns it on
COLLECTOR_DEFER_MAX_S = 10.0
# the flag parsing lives in scheduler.flags; these names stay importable from here
__all__ = ["Daemon", "Options", "build_parser", "main", "parse_args", "parse_duration"]


def configure_logging(fmt: str, verbosity: int) -> None:
    level = logging.DEBUG if verbosity >= 4 else logging.INFO
    renderer: Any = (
        structlog.processors.JSONRenderer() if fmt == "json" else structlog.dev.ConsoleRenderer(colors=False)
    )
    structlog.configure(
        processors=[
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(level),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=False,
    )
    # libraries (aiohttp, kubernetes_asyncio) log through the standard library: warnings only
    logging.basicConfig(
        level=logging.WARNING, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s"
    )


class Daemon:
    """The running scheduler. `run()` until `stop()`; `run_once()` is one session (tests use it)."""

    def __init__(self, opts: Options, client: KubeClient | None = None) -> None:
        self.opts = opts
        self.client = client
        self.metrics = SchedulerMetrics()
        # looked up once: labels() takes the family's lock and builds a key for every new pod
        self._watched_ms = self.metrics.task_latency.labels("Watched")
        self.cache = SchedulerCache(
            ClusterOptions(scheduler_names=tuple(opts.scheduler_names), default_queue=opts.default_queue),
            node_selector=opts.node_selector,
            device_configmaps=("/".join(DEVICE_CONFIGMAP),),
        )
        self.session_options = SessionOptions(
            minimum_feasible_nodes=opts.minimum_feasible_nodes,
            minimum_percentage_nodes_to_find=opts.minimum_percentage_nodes_to_find,
            percentage_nodes_to_find=opts.percentage_nodes_to_find,
            scheduler_name=opts.scheduler_names[0],
            default_queue=opts.default_queue,
        )
        self.reloader = ConfigReloader(
            opts.scheduler_conf,
            opts.scheduler_configmap,
            opts.scheduler_configmap_namespace,
            on_failure=lambda src, _err: self.metrics.config_reload_failures.labels(src).inc(),
            on_reload=lambda src, _conf: self.metrics.config_reloads.labels(src).inc(),
            warn_event=self._config_event,
        )
        self.rng = random.Random()
        self.cache.on_watched = self._watched
        self.informers: list[Informer] = []
        self.elector: LeaderElector | None = None
        self.lease_thread: LeaseThread | None = None
        self.fence = Fence(None)
        self.recorder: EventRecorder | None = None
        self.status: StatusWriter | None = None
        self.binder: Binder | None = None
        self.evictor: Evictor | None = None
        self.server: HttpServer | None = None
        self.ports: list[int] = []
        self.synced = asyncio.Event()
        self._stop = asyncio.Event()
        self._wake = asyncio.Event()  # run a session now instead of at the end of the period
        self.pacer = Pacer(opts.schedule_period, opts.schedule_on_arrival)
        self._tasks: list[asyncio.Task[Any]] = []
        self._last_generation = -1
        self._pruned_at = -1
        # the process's garbage collector is tuned around the initial sync (see settle_gc) only
        # when the daemon owns the process, never when it is embedded (tests, other programs)
        self.manage_gc = False
        # when the daemon last turned the collector off for a session, while it is still off
        self._collector_off_since: float | None = None
        self._in_session_loop = False  # run_once called by _session_loop (not directly)
        # binds leave while their session still decides (scheduler/kube/earlybind.py) only when
        # the daemon owns the process: the thread that sends them waits for answers while the
        # event loop is busy, so an API server served by this same loop (tests, embedding
        # programs) would answer only after the session
        self.send_during_session = False
        self.heartbeat = time.monotonic()
        self.sessions = 0
        self.session_errors = 0
        self.failed_in_a_row = 0  # sessions that raised since the last good one (/healthz)
        self.last_failure = ""
        self._last_plugin_errors: set[str] = set()
        self._node_warnings: dict[str, str] = {}  # node -> the device warning last sent as an Event
        self.last_result: SessionResult | None = None
        self._last_warnings: set[str] = set()
        # the web view reads the last session's state; publishing is a few references per session
        self.summary: Summary | None = Summary() if opts.enable_web else None
        self.webview: WebView | None = None
        if self.summary is not None:
            summary = self.summary
            self.webview = WebView(
                summary, lambda ns, name: explain(summary.view, ns, name) if summary.view else None
            )

    # ------------------------------------------------------------------ wiring --
    def _wire_writers(self) -> None:
        o = self.opts
        identity = self.elector.identity if self.elector else ""
        self.fence = Fence(self.elector)
        self.fence.on_closed.append(self._fenced)
        if self.client is not None:
            self.client.write_guard = self.fence.allows
        self.recorder = EventRecorder(
            self.client, component=o.scheduler_names[0], instance=identity, dry_run=o.dry_run
        )
        self.status = StatusWriter(self.client, self.cache, self.recorder, dry_run=o.dry_run)
        self.binder = Binder(
            self.client,
            self.cache,
            self.status,
            self.recorder,
            self.metrics,
            dry_run=o.dry_run,
            fence=self.fence,
        )
        self.evictor = Evictor(
            self.client, self.cache, self.recorder, o.scheduler_names[0], dry_run=o.dry_run, fence=self.fence
        )

    def _fenced(self, why: str) -> None:
        """The lease is in doubt: what we assumed but did not send is forgotten (the pods are
        Pending again for whoever leads next), and queued binds are refused by the fence."""
        forgotten = self.cache.forget_assumed()
        self.metrics.fenced.inc()
        log.warning("lease in doubt: cache assumptions dropped", reason=why, forgotten_binds=forgotten)

    def _config_event(self, reason: str, message: str, _kind: str) -> None:
        if self.recorder is not None:
            ref = ObjectRef(
                "ConfigMap", self.opts.scheduler_configmap_namespace, self.opts.scheduler_configmap
            )
            self.recorder.record(ref, "Warning", reason, message)

    def _informer_specs(self) -> list[tuple[Resource, Any]]:
        o, c = self.opts, self.cache
        cm_ns, cm_name = o.scheduler_configmap_namespace, o.scheduler_configmap
        specs: list[tuple[Resource, Any]] = [
            (Resource("Node", "/api/v1/nodes"), c.nodes),
            (
                Resource("Pod", "/api/v1/pods", loads=decode_pod_list, watch_loads=pod_event_decoder()),
                c.pods,
            ),
            (Resource("PodGroup", f"{VOLCANO_API}/podgroups"), c.podgroups),
            (Resource("Queue", f"{VOLCANO_API}/queues"), c.queues),
            (Resource("HyperNode", f"{TOPOLOGY_API}/hypernodes", optional=True), c.hypernodes),
            (Resource("Namespace", "/api/v1/namespaces"), c.namespaces),
            # read by the resourcequota and pdb plugins
            (Resource("ResourceQuota", "/api/v1/resourcequotas"), c.resource_quotas),
            (Resource("PodDisruptionBudget", "/apis/policy/v1/poddisruptionbudgets"), c.pdbs),
            (
                Resource(
                    "ConfigMap",
                    f"/api/v1/namespaces/{DEVICE_CONFIGMAP[0]}/configmaps",
                    f"metadata.name={DEVICE_CONFIGMAP[1]}",
                ),
                c.configmaps,
            ),
            (
                Resource(
                    "SchedulerConfigMap", f"/api/v1/namespaces/{cm_ns}/configmaps", f"metadata.name={cm_name}"
                ),
                self.reloader,  # the scheduler ConfigMap feeds the reloader, not the cache
            ),
        ]
        if o.priority_class:
            specs.append(
                (Resource("PriorityClass", "/apis/scheduling.k8s.io/v1/priorityclasses"), c.priority_classes)
            )
        return specs

    # ------------------------------------------------------------------ probes --
    def _ready(self) -> tuple[bool, str]:
        if not self.synced.is_set():
            waiting = [i.resource.kind for i in self.informers if not i.synced.is_set()]
            return False, f"initial sync not done: waiting for {', '.join(waiting) or 'informers'}"
        role = "leader" if self.is_leader else "standby (caches synced)"
        return True, f"ok: {role}; config {self.reloader.current_source}"

    def _alive(self) -> tuple[bool, str]:
        limit = max(30.0, 10 * self.opts.schedule_period)
        stalled = time.monotonic() - self.heartbeat
        if stalled > limit:
            return False, f"session loop has not run for {stalled:.0f}s"
        n = self.opts.healthz_max_failed_sessions
        if n and self.failed_in_a_row >= n:
            return False, f"the last {self.failed_in_a_row} sessions failed: {self.last_failure}"
        if self.elector is not None and not self.elector.healthy():
            return False, "leader lease not renewed in time"
        return True, "ok"

    @property
    def is_leader(self) -> bool:
        return self.elector is None or self.elector.is_leader

    def _watched(self, created: float) -> None:
        self._watched_ms.observe(max(time.time() - created, 0.0) * 1000)
        if self.synced.is_set():  # the initial list's pending pods wait for the first session anyway
            self.pacer.arrived.set()

    def _on_leading(self) -> None:
        self.metrics.is_leader.set(1)
        self._wake.set()  # a new leader schedules at once, not a period later

    def _on_stopped_leading(self) -> None:
        self.metrics.is_leader.set(0)

    # ------------------------------------------------------------------ lifecycle --
    def stop(self) -> None:
        self._stop.set()

    async def run(self) -> int:
        o = self.opts
        try:
            addresses = [split_address(o.listen_address, 8080)]
            if o.enable_healthz and o.healthz_address:
                extra = split_address(o.healthz_address, 11251)
                if extra != addresses[0] or extra[1] == 0:  # the same fixed address is served once
                    addresses.append(extra)
        except ValueError as exc:
            log.error("bad listen address", error=str(exc))
            return 1
        try:
            self.reloader.load_initial(strict=o.disable_default_scheduler_config)
        except Exception as exc:
            log.error(
                "invalid scheduler configuration and --disable-default-scheduler-config is set",
                error=str(exc),
            )
            return 1
        client_options = ClientOptions(o.kubeconfig, o.master, o.kube_api_qps, o.kube_api_burst)
        own_client = self.client is None
        if self.client is None:
            try:
                self.client = await KubeClient.create(client_options)
            except Exception as exc:
                log.error(
                    "cannot load the Kubernetes client configuration", error=f"{type(exc).__name__}: {exc}"
                )
                return 1
        if o.leader_elect and not o.dry_run:
            lease = LeaderConfig(
                o.lease_namespace, o.lease_name, "", o.lease_duration, o.renew_deadline, o.retry_period
            )
            if own_client:  # renewed beside the sessions (scheduler/kube/leasethread.py says why)
                self.lease_thread = LeaseThread.build(
                    client_options,
                    lease,
                    self._on_leading,
                    self._on_stopped_leading,
                    asyncio.get_running_loop(),
                )
                self.elector = self.lease_thread.elector
            else:  # a client handed in (tests) lives on this loop: so does its elector
                self.elector = LeaderElector(
                    self.client, lease, on_started=self._on_leading, on_stopped=self._on_stopped_leading
                )
        else:
            self.metrics.is_leader.set(1)
        self._wire_writers()
        self.server = HttpServer(
            self.metrics if o.enable_metrics else None,
            Probes(self._ready, self._alive),
            self.webview,
            own_thread=True,
        )
        try:
            self.ports = await self.server.start(addresses)
        except OSError as exc:
            log.error("cannot listen", address=o.listen_address, error=str(exc))
            await self.client.close()
            return 1
        log.info(
            "vc-scheduler starting",
            api=self.client.host,
            listen=[f"{h}:{p}" for (h, _), p in zip(addresses, self.ports, strict=True)],
            scheduler_names=o.scheduler_names,
            leader_elect=self.elector is not None,
            dry_run=o.dry_run,
            schedule_period_s=o.schedule_period,
        )
        assert self.status is not None
        self.status.start()
        # The initial lists allocate hundreds of thousands of objects that all stay alive in the
        # cache: every generation-2 collection during the sync would walk all of them again for
        # nothing (a third of the sync time at 150,000 pods). The cache is frozen after it instead.
        if self.manage_gc:
            gc.disable()
        for res, handler in self._informer_specs():
            inf = Informer(self.client, res, handler)
            self.informers.append(inf)
            self._tasks.append(asyncio.ensure_future(inf.run()))
        if self.lease_thread is not None:
            self.lease_thread.start()
        elif self.elector is not None:
            self._tasks.append(asyncio.ensure_future(self.elector.run()))
        if o.scheduler_conf:
            self._tasks.append(asyncio.ensure_future(self.reloader.poll_file(1.0)))
        self._tasks.append(asyncio.ensure_future(self._wait_synced()))
        try:
            await self._session_loop()
        finally:
            await self._shutdown()
        return 0

    async def _wait_synced(self) -> None:
        t0, cpu0 = time.monotonic(), time.process_time()
        waits = [asyncio.ensure_future(i.synced.wait()) for i in self.informers]
        timeout = self.opts.resource_sync_timeout or None
        _done, pending = await asyncio.wait(waits, timeout=timeout)
        if pending:
            late = [i.resource.kind for i in self.informers if not i.synced.is_set()]
            # never schedule on a partial view (it would overcommit nodes): keep waiting, loudly
            log.error("initial sync timed out; scheduling waits for it", waiting_for=late, timeout_s=timeout)
            while pending:
                # a sync that keeps failing must not run for long without the collector; one that
                # is only slow (600,000 pods on a slow host) must not get it halfway, when every
                # collection walks hundreds of thousands of objects for nothing
                if self.manage_gc and not gc.isenabled() and self._sync_failing():
                    gc.enable()
                _done, pending = await asyncio.wait(pending, timeout=1.0)
        sync_ms = round((time.monotonic() - t0) * 1000)
        # the process's CPU over the sync: what is left of `ms` waited for the API server
        sync_cpu_ms = round((time.process_time() - cpu0) * 1000)
        if self.manage_gc:
            # without a full collection first: the sync leaves almost no cyclic garbage (140
            # objects at 62,000 pods, measured), and one collection over the new cache would take
            # seconds at 600,000 pods before the first session; freezing itself is a list splice
            settle_gc(collect=False)
        self.synced.set()
        self._wake.set()
        s = self.cache.state
        log.info(
            "initial sync done",
            ms=sync_ms,
            cpu_ms=sync_cpu_ms,
            nodes=len(s.nodes),
            pods=len(s.tasks),
            jobs=len(s.jobs),
            queues=len(s.queues),
        )

    def _sync_failing(self) -> bool:
        """Some informer of the initial sync has failed a list or watch and is retrying."""
        return any(i.backoff.attempt for i in self.informers if not i.synced.is_set())

    async def _session_loop(self) -> None:
        self._in_session_loop = True
        try:
            await self._session_turns()
        finally:
            self._in_session_loop = False
            self._collector_on(idle=True)

    async def _session_turns(self) -> None:
        while not self._stop.is_set():
            self.heartbeat = time.monotonic()
            busy = False
            if self.synced.is_set() and self.is_leader:
                if self.cache.generation != self._last_generation or self.cache.has_pending_work():
                    if self.binder is not None and self.send_during_session:
                        await self.binder.prepare_early()
                    t0 = time.perf_counter()
                    res = self.run_once()
                    self.pacer.last_session_s = time.perf_counter() - t0
                    # the collector waits while sessions place pods (a burst), not after one
                    # that decided nothing
                    busy = res is not None and bool(res.binds or res.evictions)
                else:
                    self.metrics.sessions_skipped.inc()
            self._collector_on(idle=not busy)
            # Volcano's wait.Until: the period counts from the end of a cycle; the end of the
            # initial sync or winning the lease cuts the wait short, and so do new pods
            # (scheduler/pacing.py says when)
            self._wake.clear()
            await self.pacer.pause((self._stop, self._wake), self._bindings_settled())

    def _bindings_settled(self) -> asyncio.Event | None:
        """What the pacer waits for before the next session: the last session's Bindings, unless
        the next session's commit sender carries those still unsent (Binder.carry_into)."""
        if self.binder is None or (self.send_during_session and self.binder.carries()):
            return None
        return self.binder.settled

    def run_once(self) -> SessionResult | None:
        """One session on the current cache, its decisions handed to the writers."""
        term = self.fence.term()
        if term is None:  # the lease is in doubt: decide nothing that could not be sent
            return None
        conf = self.reloader.current
        self._last_generation = self.cache.generation
        t0 = time.perf_counter()
        sender = (
            self.binder.commit_sender(term, time.monotonic() + SEND_DURING_SESSION_AFTER_S)
            if self.binder is not None and self.send_during_session
            else None
        )
        if sender is not None:
            assert self.binder is not None
            self.binder.carry_into(sender, term)
        early: set[str] = set()
        # as run_session does: the snapshot and the session keep what they allocate until the
        # session ends, so the collector waits (only where this process's collector is ours);
        # the daemon's own session loop keeps it off until the sessions stop (_collector_off)
        pause = self._collector_off() if self.manage_gc else contextlib.nullcontext()
        try:
            with pause:
                snap = self.cache.snapshot()
                ssn = open_session(snap, conf, self.session_options, self.rng)
                open_ms = (time.perf_counter() - t0) * 1000
                if sender is not None:
                    ssn.on_dispatch = _early_hook(ssn, sender)
                timings: dict[str, float] = {}
                run_actions(ssn, timings)
                res = close_session(ssn)
        except Exception as exc:  # a core bug on odd input must not end the daemon
            if sender is not None:  # what already left is claimed; the rest stays Pending
                assert self.binder is not None
                self.binder.settle_early(sender.finish(), term)
            self.session_errors += 1
            self.failed_in_a_row += 1
            self.last_failure = f"{type(exc).__name__}: {exc}"[:300]
            self.metrics.session_failures.inc()
            log.exception("session failed", error=self.last_failure, in_a_row=self.failed_in_a_row)
            return None
        if sender is not None:
            assert self.binder is not None
            early = self.binder.settle_early(sender.finish(), term)
        self.failed_in_a_row = 0
        self.last_failure = ""
        res.action_ms, res.open_ms = timings, open_ms
        res.total_ms = (time.perf_counter() - t0) * 1000
        # the queue-sharing plugin in use (proportion or capacity) knows each queue's allocation
        attrs = getattr(ssn.plugins.get("proportion"), "attrs", None) or getattr(
            ssn.plugins.get("capacity"), "attrs", None
        )
        self.sessions += 1
        self.last_result = res
        if self.summary is not None and self.webview is not None:
            self.summary.publish(SessionView(self.sessions, res, ssn.node_list, ssn.queues, attrs))
            self.webview.notify(self.sessions)
        try:
            self._report_contained(res)
            self._apply(res, attrs, term, early)
            shares = getattr(ssn.plugins.get("drf"), "shares", None)
            if shares:
                self.metrics.observe_job_shares(shares)
            # only deviceshare gives views ledgers: without it, no walk over every node
            nodes = ssn.node_list if "deviceshare" in ssn.plugins else []
            self.metrics.set_device_ledgers(*device_ledgers(nodes))
        except Exception as exc:  # a writer bug costs this session's writes, never the daemon
            self.session_errors += 1
            log.exception("applying session decisions failed", error=f"{type(exc).__name__}: {exc}")
        return res

    @contextlib.contextmanager
    def _collector_off(self) -> Iterator[None]:
        """The collector off for a session, and left off after it while sessions place pods.

        A session ends with most of what it allocated still alive (the cache's new records, the
        incremental snapshot's views, the placement cache), so the collection that followed every
        session walked it all, and moved it to older generations that later collections walked
        again: at 30,000 running pods a burst of 5,000 ran 16 collections in its bind window and
        settling (one of 119 ms, one of 213 ms), and none found a single cycle. Reference
        counting frees everything else as usual; the collector runs at the first turn of the
        session loop that decides nothing, the burst placed (`_collector_on`). Outside the
        session loop (a direct `run_once`) it is on again at the end, as `collector_paused`
        leaves it."""
        if gc.isenabled():
            gc.disable()
            self._collector_off_since = time.monotonic()
        elif self._collector_off_since is None:  # off by someone else: theirs to turn on
            yield
            return
        try:
            yield
        finally:
            if not self._in_session_loop:
                self._collector_on(idle=True)

    def _collector_on(self, idle: bool) -> None:
        """Turn the collector back on after sessions: at a turn of the loop that decided nothing
        (`idle`: no session, or one without binds or evictions), or once it has been off for
        `COLLECTOR_DEFER_MAX_S`, so that a steady stream of arrivals still collects."""
        since = self._collector_off_since
        if since is None:
            return
        if idle or time.monotonic() - since >= COLLECTOR_DEFER_MAX_S:
            self._collector_off_since = None
            # What the sessions left alive while the collector was off is the cache's new state
            # (records, views, placement caches): the first young collection after a burst walked
            # all of it (300 ms at 30,000 running pods, and a 910 ms full collection later) and
            # found no garbage. The daemon leaves no reference cycles (tests/integration/
            # test_daemon_cyclic_garbage.py), so it joins the sync's frozen cache instead; frozen
            # objects still go away by reference counting.
            gc.freeze()
            gc.enable()

    def _report_contained(self, res: SessionResult) -> None:
        """Plugin exceptions contained to a node or job: counted every time, logged once each;
        unusable device registrations: a Warning event on the node, once per distinct reason."""
        seen: set[str] = set()
        for err in res.plugin_errors:
            self.metrics.plugin_errors.labels(err.plugin).inc()
            line = str(err)
            if line not in self._last_plugin_errors and line not in seen:
                log.error(
                    "plugin error contained", plugin=err.plugin, where=err.where, pod=err.pod, error=err.error
                )
            seen.add(line)
        self._last_plugin_errors = seen
        if self.recorder is None or self.opts.dry_run:
            return
        current: dict[str, str] = {}
        for node, why in res.node_warnings:
            current[node] = why
            if self._node_warnings.get(node) != why:
                self.recorder.record(ObjectRef("Node", "", node), "Warning", "InvalidDeviceRegistration", why)
        self._node_warnings = current

    def _apply(
        self,
        res: SessionResult,
        attrs: dict[str, Any] | None,
        term: int | None = 0,
        early: Collection[str] = (),
    ) -> None:
        """Hand a session's decisions to the writers; `early`: keys of the binds already sent
        while the session ran."""
        assert self.binder is not None and self.evictor is not None and self.status is not None
        assert self.recorder is not None
        binds = [b for b in res.binds if b.task.key not in early] if early else res.binds
        bound = self.binder.submit(binds, res.node_locks, term) + len(early)
        evicted = self.evictor.submit(res.evictions, term)
        pg_writes = sum(
            self.status.podgroup_status(uid, res.podgroup_status[uid]) for uid in res.podgroup_changed
        )
        cond_writes = sum(
            self.status.pod_condition(c.task, c.reason, c.message, c.nominated_node)
            for c in res.pod_conditions
        )
        for uid, etype, reason, message in res.job_events:
            if self.cache.is_real_podgroup(uid) and not self.opts.dry_run:
                self.recorder.record(
                    podgroup_ref(uid, self.cache.podgroup_object_uid.get(uid, "")), etype, reason, message
                )
        allocated: dict[str, Res] = {}
        if attrs:
            allocated = {q: a.allocated for q, a in attrs.items()}
        else:
            for job in res.jobs.values():
                allocated.setdefault(job.queue, Res()).add(job.allocated)
        # the counts can only move when the cache changed, a PodGroup's status changed or a
        # queue's allocation changed: the signature lets the writer skip an idle session's count
        signature = (
            self.cache.generation,
            tuple(sorted(res.podgroup_changed)),
            tuple(sorted((q, tuple(sorted(a.items()))) for q, a in allocated.items())),
        )
        q_writes = self.status.queue_statuses(SessionPhases(res.podgroup_status), allocated, signature)
        self._observe(res, attrs)
        busy = bound or evicted or pg_writes or cond_writes or q_writes
        new_warnings = sorted(set(res.warnings) - self._last_warnings)
        self._last_warnings = set(res.warnings)
        for w in new_warnings:  # a warning repeated by every session is logged once
            log.warning("session warning", warning=w)
        # one line per session that did something; idle sessions (pods that still do not fit)
        # only at -v=4, or a 1 s period would write 86,400 identical lines a day
        (log.info if busy else log.debug)(
            "session",
            session=res.uid[:8],
            ms=round(res.total_ms, 1),
            open_ms=round(res.open_ms, 1),
            action_ms={k: round(v, 1) for k, v in res.action_ms.items()},
            jobs=len(res.jobs),
            binds=bound,
            sent_during_session=len(early),
            decided=len(res.binds),
            evictions=evicted,
            pipelined=len(res.pipelined),
            unplaced=len(res.pod_conditions),
            podgroup_writes=pg_writes,
            condition_writes=cond_writes,
            queue_writes=q_writes,
            in_flight=self.binder.in_flight(),
        )

    def _observe(self, res: SessionResult, attrs: dict[str, Any] | None) -> None:
        m = self.metrics
        m.observe_session(res, attrs)
        placed: set[str] = {b.task.job for b in res.binds}
        for uid in placed:
            job = res.jobs.get(uid)
            if job is not None:
                done = not job.task_status_index.get(TaskStatus.PENDING)
                m.observe_job_placed(
                    job.name, job.queue, job.namespace, job.creation, job.schedule_start, done
                )
        # only a job or queue that left has series to drop: not every session of a burst walks
        # every job's series (tens of thousands) to find none
        if self.cache.state.removals != self._pruned_at:
            self._pruned_at = self.cache.state.removals
            m.prune(self.cache.state.jobs.keys(), self.cache.state.queues.keys())

    async def _shutdown(self) -> None:
        o = self.opts
        if self.manage_gc and not gc.isenabled():  # stopped before the initial sync finished
            gc.enable()
        log.info(
            "shutting down: no new sessions, draining writes",
            in_flight_binds=self.binder.in_flight() if self.binder else 0,
        )
        if self.binder is not None and not await self.binder.drain(o.drain_timeout):
            log.warning("binds still in flight at shutdown", count=self.binder.in_flight())
        if self.evictor is not None:
            await self.evictor.drain(max(o.drain_timeout / 2, 1.0))
        if self.status is not None:
            await self.status.drain(2.0)
        if self.lease_thread is not None:
            await self.lease_thread.stop(release=True)
        elif self.elector is not None:
            await self.elector.release()
        for t in self._tasks:
            t.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self.status is not None:
            await self.status.stop()
        if self.server is not None:
            await self.server.stop()
        if self.client is not None:
            await self.client.close()
        log.info("stopped", sessions=self.sessions)


def _early_hook(ssn: Session, sender: CommitSender) -> Callable[[TaskInfo], None]:
    """The session's commit hook: each bind to the sender while no device lock is involved (a
    lock must reach the node before its bind, and locks go with the usual batch)."""

    def hand(task: TaskInfo) -> None:
        if not ssn.node_locks:
            sender.hand(bind_decision(task))

    return hand


def device_ledgers(nodes: list[Any]) -> tuple[list[Any], list[Any]]:
    """The vGPU and gpu-share ledgers deviceshare built on a session's nodes (for the gauges)."""
    vgpu: list[Any] = []
    share: list[Any] = []
    for n in nodes:
        if n.devices:
            led = n.devices.get(VGPU_KIND)
            if led is not None:
                vgpu.append(led)
            led = n.devices.get(GPUSHARE_KIND)
            if led is not None:
                share.append(led)
    return vgpu, share


def settle_gc(collect: bool = True) -> None:
    """After the initial sync: collect once (unless `collect` is False), then move the cache out of
    the collector's sight.

    Everything alive now is the cache, which lives as long as the daemon; `gc.freeze()` puts it in
    the permanent generation, so later collections walk only what sessions allocate. Objects leave
    it by reference counting as usual when pods go away. A larger first-generation threshold keeps
    a session, which allocates a copy-on-write view per node and job, from triggering dozens of
    young collections.
    """
    if collect:
        gc.collect()
    gc.freeze()
    gc.set_threshold(20_000, 10, 10)
    gc.enable()


def _install_loop_policy() -> str:
    try:
        import uvloop

        asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
        return "uvloop"
    except ImportError:
        return "asyncio"


async def _serve(opts: Options) -> int:
    daemon = Daemon(opts)
    daemon.manage_gc = True
    daemon.send_during_session = True
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, daemon.stop)
    return await daemon.run()


def main(argv: Sequence[str] | None = None) -> int:
    from scheduler.__version__ import __version__

    try:
        opts = parse_args(list(sys.argv[1:] if argv is None else argv))
    except SystemExit as exc:  # argparse: --help (0) or a bad flag (2), already explained
        return int(exc.code or 0)
    if opts.version:
        print(f"vc-scheduler {__version__}")
        return 0
    configure_logging(opts.log_format, opts.verbosity)
    for note in opts.notes:
        log.info(note)
    loop_kind = _install_loop_policy()
    log.debug("event loop", kind=loop_kind)
    try:
        return asyncio.run(_serve(opts))
    except KeyboardInterrupt:
        return 0
