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

import argparse
import asyncio
import contextlib
import logging
import random
import re
import signal
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import structlog

from scheduler.framework.cycle import SessionResult, close_session, open_session, run_actions
from scheduler.framework.session import SessionOptions
from scheduler.kube.binder import Binder, Evictor
from scheduler.kube.cache import SchedulerCache
from scheduler.kube.client import ClientOptions, KubeClient
from scheduler.kube.informer import Informer, Resource
from scheduler.kube.leader import LeaderConfig, LeaderElector
from scheduler.kube.status import EventRecorder, ObjectRef, StatusWriter, podgroup_ref
from scheduler.metrics import SchedulerMetrics
from scheduler.model.cluster import ClusterOptions
from scheduler.model.objects import TaskStatus
from scheduler.model.resources import Resource as Res
from scheduler.reload import DEFAULT_CONFIGMAP, DEFAULT_CONFIGMAP_NAMESPACE, ConfigReloader
from scheduler.server import HttpServer, Probes, split_address

log = structlog.get_logger("vc-scheduler")

VOLCANO_API = "/apis/scheduling.volcano.sh/v1beta1"
DEVICE_CONFIGMAP = ("kube-system", "volcano-vgpu-device-config")


# ---------------------------------------------------------------------------------- flags --
_DURATION_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_DURATION_RE = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")


def parse_duration(text: str) -> float:
    """Go's time.ParseDuration (`1s`, `500ms`, `1m30s`, `1.5h`, `0`) in seconds."""
    s = text.strip()
    sign = -1.0 if s.startswith("-") else 1.0
    body = s.lstrip("+-")
    if body == "0":
        return 0.0
    if not body:
        raise ValueError(f"invalid duration {text!r}")
    pos, total = 0, 0.0
    while pos < len(body):
        m = _DURATION_RE.match(body, pos)
        if m is None:
            if re.fullmatch(r"\d+(\.\d*)?", body[pos:]):
                raise ValueError(f"missing unit in duration {text!r} (e.g. {body}s)")
            raise ValueError(f"invalid duration {text!r} (use Go syntax: 1s, 500ms, 1m30s)")
        total += float(m.group(1)) * _DURATION_UNITS[m.group(2)]
        pos = m.end()
    return sign * total


def _duration_arg(text: str) -> float:
    try:
        return parse_duration(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _bool_arg(text: str) -> bool:
    v = text.strip().lower()
    if v in ("1", "t", "true", "yes", "y", "on"):
        return True
    if v in ("0", "f", "false", "no", "n", "off"):
        return False
    raise argparse.ArgumentTypeError(f"invalid boolean {text!r} (use true or false)")


def _verbosity_arg(text: str) -> int:
    try:
        return int(text.lstrip("="))  # `-v=4` reaches us as "=4"
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid verbosity {text!r} (an integer, e.g. -v=4)") from None


# Volcano flags we accept so existing manifests start unchanged, but that change nothing here.
_ACCEPTED_ONLY = {
    "--resync-period": "informers watch continuously; a periodic resync adds nothing",
    "--enable-pprof": "no pprof endpoint in the Python scheduler",
    "--plugins-dir": "out-of-tree Go plugins cannot be loaded",
    "--csi-storage": "volume binding is not modelled",
    "--cache-dumper": "no cache dumper",
    "--cache-dump-dir": "no cache dumper",
    "--node-worker-threads": "nodes are applied on the event loop",
    "--scheduler-sharding-mode": "sharding is not supported",
    "--scheduler-sharding-name": "sharding is not supported",
    "--ca-cert-file": "the webhook TLS flags do not apply to the scheduler",
    "--tls-cert-file": "the webhook TLS flags do not apply to the scheduler",
    "--tls-private-key-file": "the webhook TLS flags do not apply to the scheduler",
    "--gate-removal-worker-num": "scheduling-gate admission is not supported",
    "--ignored-provisioners": "volume binding is not modelled",
    "--logtostderr": "logs always go to stderr",
    "--log-flush-frequency": "logs are written unbuffered",
}


@dataclass(slots=True)
class Options:
    scheduler_names: list[str] = field(default_factory=lambda: ["volcano"])
    scheduler_conf: str = ""
    schedule_period: float = 1.0
    default_queue: str = "default"
    listen_address: str = ":8080"
    healthz_address: str = ":11251"
    enable_healthz: bool = False
    enable_metrics: bool = False
    priority_class: bool = True
    kubeconfig: str = ""
    master: str = ""
    kube_api_qps: float = 2000.0
    kube_api_burst: int = 2000
    minimum_feasible_nodes: int = 100
    minimum_percentage_nodes_to_find: int = 5
    percentage_nodes_to_find: int = 0
    node_selector: dict[str, set[str]] = field(default_factory=dict)
    resource_sync_timeout: float = 60.0
    disable_default_scheduler_config: bool = False
    leader_elect: bool = True
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    lease_namespace: str = "volcano-system"
    lease_name: str = "volcano"
    scheduler_configmap: str = DEFAULT_CONFIGMAP
    scheduler_configmap_namespace: str = DEFAULT_CONFIGMAP_NAMESPACE
    verbosity: int = 0
    log_format: str = "json"
    dry_run: bool = False
    drain_timeout: float = 10.0
    version: bool = False
    notes: list[str] = field(default_factory=list)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="vc-scheduler",
        description="Volcano-compatible batch scheduler daemon (flags as Volcano's vc-scheduler).",
        allow_abbrev=False,
    )

    def flag(*names: str, **kw: Any) -> None:
        p.add_argument(*names, **kw)

    def bool_flag(name: str, default: bool, help: str) -> None:
        # pflag style: `--flag`, `--flag=true|false`
        p.add_argument(name, nargs="?", const=True, default=default, type=_bool_arg, metavar="BOOL", help=help)

    flag("--scheduler-name", action="append", help="handle pods with this spec.schedulerName (repeatable; default volcano)")
    flag("--scheduler-conf", default="", help="scheduler configuration file (volcano-scheduler.conf); empty: built-in default")
    flag("--schedule-period", type=_duration_arg, default=1.0, help="period between sessions (Go duration, default 1s)")
    flag("--default-queue", default="default", help="queue of PodGroups that name none (default 'default')")
    flag("--listen-address", default=":8080", help="address of /metrics, /healthz, /readyz (default :8080)")
    flag("--healthz-address", default=":11251", help="extra address serving /healthz with --enable-healthz (default :11251)")
    bool_flag("--enable-healthz", False, "also serve the health endpoints on --healthz-address")
    bool_flag("--enable-metrics", False, "serve Prometheus metrics on /metrics")
    bool_flag("--priority-class", True, "honour PriorityClasses (default true)")
    flag("--kubeconfig", default="", help="kubeconfig file (default: in-cluster, then $KUBECONFIG or ~/.kube/config)")
    flag("--master", default="", help="API server address (overrides the kubeconfig)")
    flag("--kube-api-qps", type=float, default=2000.0, help="API requests per second (default 2000)")
    flag("--kube-api-burst", type=int, default=2000, help="API request burst (default 2000)")
    flag("--minimum-feasible-nodes", type=int, default=100)
    flag("--minimum-percentage-nodes-to-find", type=int, default=5)
    flag("--percentage-nodes-to-find", type=int, default=0, help="<= 0: adaptive")
    flag("--node-selector", action="append", default=[], help="key:value; only nodes matching one are scheduled on (repeatable)")
    flag("--resource-sync-timeout", type=_duration_arg, default=60.0, help="how long to wait for the initial sync before complaining (default 60s)")
    bool_flag("--disable-default-scheduler-config", False, "exit instead of using the built-in default when --scheduler-conf is invalid")
    bool_flag("--leader-elect", True, "run only while holding the leader Lease (default true)")
    flag("--leader-elect-lease-duration", type=_duration_arg, default=15.0)
    flag("--leader-elect-renew-deadline", type=_duration_arg, default=10.0)
    flag("--leader-elect-retry-period", type=_duration_arg, default=2.0)
    flag("--leader-elect-resource-lock", default="leases", help="only 'leases' is supported")
    flag("--leader-elect-resource-name", default="", help="Lease name (default: the scheduler name, or volcano)")
    flag("--leader-elect-resource-namespace", default="", help="Lease namespace (default volcano-system)")
    flag("--lock-object-namespace", default="", help="deprecated alias of --leader-elect-resource-namespace")
    flag("--scheduler-configmap", default=DEFAULT_CONFIGMAP, help="ConfigMap watched for configuration changes")
    flag("--scheduler-configmap-namespace", default=DEFAULT_CONFIGMAP_NAMESPACE)
    flag("-v", "--v", dest="verbosity", type=_verbosity_arg, default=0, help="log verbosity (>= 4: debug)")
    flag("--log-format", choices=("json", "console"), default="json")
    bool_flag("--dry-run", False, "shadow mode: decide and log what would be bound, write nothing, take no lease")
    flag("--drain-timeout", type=_duration_arg, default=10.0, help="how long SIGTERM waits for binds in flight (default 10s)")
    flag("--version", action="store_true", help="print the version and exit")
    for name in _ACCEPTED_ONLY:
        p.add_argument(name, nargs="?", const="true", default=None, help=argparse.SUPPRESS)
    return p


def parse_args(argv: list[str]) -> Options:
    parser = build_parser()
    a = parser.parse_args(argv)
    names = a.scheduler_name or ["volcano"]
    selector: dict[str, set[str]] = {}
    for item in a.node_selector:
        for part in str(item).split(","):
            k, sep, v = part.partition(":")
            if not sep or not k.strip():
                parser.error(f"--node-selector {part!r}: expected key:value")
            selector.setdefault(k.strip(), set()).add(v.strip())
    if a.schedule_period <= 0:
        parser.error("--schedule-period must be positive")
    if a.leader_elect_resource_lock not in ("leases", "lease"):
        parser.error(f"--leader-elect-resource-lock {a.leader_elect_resource_lock!r}: only 'leases' is supported")
    if a.leader_elect and not a.leader_elect_renew_deadline < a.leader_elect_lease_duration:
        parser.error("--leader-elect-renew-deadline must be shorter than --leader-elect-lease-duration")
    notes = [f"flag {n} is accepted for compatibility and ignored: {why}" for n, why in _ACCEPTED_ONLY.items()
             if getattr(a, n.lstrip("-").replace("-", "_")) is not None]
    return Options(
        scheduler_names=names,
        scheduler_conf=a.scheduler_conf,
        schedule_period=a.schedule_period,
        default_queue=a.default_queue,
        listen_address=a.listen_address,
        healthz_address=a.healthz_address,
        enable_healthz=a.enable_healthz,
        enable_metrics=a.enable_metrics,
        priority_class=a.priority_class,
        kubeconfig=a.kubeconfig,
        master=a.master,
        kube_api_qps=a.kube_api_qps,
        kube_api_burst=a.kube_api_burst,
        minimum_feasible_nodes=a.minimum_feasible_nodes,
        minimum_percentage_nodes_to_find=a.minimum_percentage_nodes_to_find,
        percentage_nodes_to_find=a.percentage_nodes_to_find,
        node_selector=selector,
        resource_sync_timeout=a.resource_sync_timeout,
        disable_default_scheduler_config=a.disable_default_scheduler_config,
        leader_elect=a.leader_elect,
        lease_duration=a.leader_elect_lease_duration,
        renew_deadline=a.leader_elect_renew_deadline,
        retry_period=a.leader_elect_retry_period,
        lease_namespace=a.leader_elect_resource_namespace or a.lock_object_namespace or "volcano-system",
        # Volcano names the lock after the scheduler when exactly one name is given
        lease_name=a.leader_elect_resource_name or (names[0] if len(names) == 1 else "volcano"),
        scheduler_configmap=a.scheduler_configmap,
        scheduler_configmap_namespace=a.scheduler_configmap_namespace,
        verbosity=a.verbosity,
        log_format=a.log_format,
        dry_run=a.dry_run,
        drain_timeout=a.drain_timeout,
        version=a.version,
        notes=notes,
    )


def configure_logging(fmt: str, verbosity: int) -> None:
    level = logging.DEBUG if verbosity >= 4 else logging.INFO
    renderer: Any = structlog.processors.JSONRenderer() if fmt == "json" else structlog.dev.ConsoleRenderer(colors=False)
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
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")


class Daemon:
    """The running scheduler. `run()` until `stop()`; `run_once()` is one session (tests use it)."""

    def __init__(self, opts: Options, client: KubeClient | None = None) -> None:
        self.opts = opts
        self.client = client
        self.metrics = SchedulerMetrics()
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
        self.informers: list[Informer] = []
        self.elector: LeaderElector | None = None
        self.recorder: EventRecorder | None = None
        self.status: StatusWriter | None = None
        self.binder: Binder | None = None
        self.evictor: Evictor | None = None
        self.server: HttpServer | None = None
        self.ports: list[int] = []
        self.synced = asyncio.Event()
        self._stop = asyncio.Event()
        self._tasks: list[asyncio.Task[Any]] = []
        self._last_generation = -1
        self.heartbeat = time.monotonic()
        self.sessions = 0
        self.session_errors = 0
        self.last_result: SessionResult | None = None
        self._last_warnings: set[str] = set()

    # ------------------------------------------------------------------ wiring --
    def _wire_writers(self) -> None:
        o = self.opts
        identity = self.elector.identity if self.elector else ""
        self.recorder = EventRecorder(self.client, component=o.scheduler_names[0], instance=identity, dry_run=o.dry_run)
        self.status = StatusWriter(self.client, self.cache, self.recorder, dry_run=o.dry_run)
        self.binder = Binder(self.client, self.cache, self.status, self.recorder, self.metrics, dry_run=o.dry_run)
        self.evictor = Evictor(self.client, self.cache, self.recorder, o.scheduler_names[0], dry_run=o.dry_run)

    def _config_event(self, reason: str, message: str, _kind: str) -> None:
        if self.recorder is not None:
            ref = ObjectRef("ConfigMap", self.opts.scheduler_configmap_namespace, self.opts.scheduler_configmap)
            self.recorder.record(ref, "Warning", reason, message)

    def _informer_specs(self) -> list[tuple[Resource, Any]]:
        o, c = self.opts, self.cache
        cm_ns, cm_name = o.scheduler_configmap_namespace, o.scheduler_configmap
        specs: list[tuple[Resource, Any]] = [
            (Resource("Node", "/api/v1/nodes"), c.nodes),
            (Resource("Pod", "/api/v1/pods"), c.pods),
            (Resource("PodGroup", f"{VOLCANO_API}/podgroups"), c.podgroups),
            (Resource("Queue", f"{VOLCANO_API}/queues"), c.queues),
            (Resource("Namespace", "/api/v1/namespaces"), c.namespaces),
            (
                Resource("ConfigMap", f"/api/v1/namespaces/{DEVICE_CONFIGMAP[0]}/configmaps", f"metadata.name={DEVICE_CONFIGMAP[1]}"),
                c.configmaps,
            ),
            (
                Resource("SchedulerConfigMap", f"/api/v1/namespaces/{cm_ns}/configmaps", f"metadata.name={cm_name}"),
                self.reloader,  # the scheduler ConfigMap feeds the reloader, not the cache
            ),
        ]
        if o.priority_class:
            specs.append((Resource("PriorityClass", "/apis/scheduling.k8s.io/v1/priorityclasses"), c.priority_classes))
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
        if self.elector is not None and not self.elector.healthy():
            return False, "leader lease not renewed in time"
        return True, "ok"

    @property
    def is_leader(self) -> bool:
        return self.elector is None or self.elector.is_leader

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
            log.error("invalid scheduler configuration and --disable-default-scheduler-config is set", error=str(exc))
            return 1
        if self.client is None:
            try:
                self.client = await KubeClient.create(
                    ClientOptions(o.kubeconfig, o.master, o.kube_api_qps, o.kube_api_burst)
                )
            except Exception as exc:
                log.error("cannot load the Kubernetes client configuration", error=f"{type(exc).__name__}: {exc}")
                return 1
        if o.leader_elect and not o.dry_run:
            self.elector = LeaderElector(
                self.client,
                LeaderConfig(o.lease_namespace, o.lease_name, "", o.lease_duration, o.renew_deadline, o.retry_period),
                on_started=lambda: self.metrics.is_leader.set(1),
                on_stopped=lambda: self.metrics.is_leader.set(0),
            )
        else:
            self.metrics.is_leader.set(1)
        self._wire_writers()
        self.server = HttpServer(self.metrics if o.enable_metrics else None, Probes(self._ready, self._alive))
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
        for res, handler in self._informer_specs():
            inf = Informer(self.client, res, handler)
            self.informers.append(inf)
            self._tasks.append(asyncio.ensure_future(inf.run()))
        if self.elector is not None:
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
        t0 = time.monotonic()
        waits = [asyncio.ensure_future(i.synced.wait()) for i in self.informers]
        timeout = self.opts.resource_sync_timeout or None
        _done, pending = await asyncio.wait(waits, timeout=timeout)
        if pending:
            late = [i.resource.kind for i in self.informers if not i.synced.is_set()]
            # never schedule on a partial view (it would overcommit nodes): keep waiting, loudly
            log.error("initial sync timed out; scheduling waits for it", waiting_for=late, timeout_s=timeout)
            await asyncio.wait(pending)
        self.synced.set()
        s = self.cache.state
        log.info(
            "initial sync done",
            ms=round((time.monotonic() - t0) * 1000),
            nodes=len(s.nodes),
            pods=len(s.tasks),
            jobs=len(s.jobs),
            queues=len(s.queues),
        )

    async def _session_loop(self) -> None:
        period = self.opts.schedule_period
        while not self._stop.is_set():
            self.heartbeat = time.monotonic()
            if self.synced.is_set() and self.is_leader:
                if self.cache.generation != self._last_generation or self.cache.has_pending_work():
                    self.run_once()
                else:
                    self.metrics.sessions_skipped.inc()
            # Volcano's wait.Until: the period counts from the end of a cycle
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), timeout=period)

    def run_once(self) -> SessionResult | None:
        """One session on the current cache, its decisions handed to the writers."""
        conf = self.reloader.current
        self._last_generation = self.cache.generation
        t0 = time.perf_counter()
        try:
            snap = self.cache.snapshot()
            ssn = open_session(snap, conf, self.session_options, self.rng)
            open_ms = (time.perf_counter() - t0) * 1000
            timings: dict[str, float] = {}
            run_actions(ssn, timings)
            res = close_session(ssn)
        except Exception as exc:  # a core bug on odd input must not end the daemon
            self.session_errors += 1
            log.exception("session failed", error=f"{type(exc).__name__}: {exc}")
            return None
        res.action_ms, res.open_ms = timings, open_ms
        res.total_ms = (time.perf_counter() - t0) * 1000
        attrs = getattr(ssn.plugins.get("proportion"), "attrs", None)
        self.sessions += 1
        self.last_result = res
        try:
            self._apply(res, attrs)
        except Exception as exc:  # a writer bug costs this session's writes, never the daemon
            self.session_errors += 1
            log.exception("applying session decisions failed", error=f"{type(exc).__name__}: {exc}")
        return res

    def _apply(self, res: SessionResult, attrs: dict[str, Any] | None) -> None:
        assert self.binder is not None and self.evictor is not None and self.status is not None
        assert self.recorder is not None
        bound = self.binder.submit(res.binds, res.node_locks)
        evicted = self.evictor.submit(res.evictions)
        pg_writes = sum(self.status.podgroup_status(uid, res.podgroup_status[uid]) for uid in res.podgroup_changed)
        cond_writes = sum(
            self.status.pod_condition(c.task, c.reason, c.message, c.nominated_node) for c in res.pod_conditions
        )
        for uid, etype, reason, message in res.job_events:
            if self.cache.is_real_podgroup(uid) and not self.opts.dry_run:
                self.recorder.record(podgroup_ref(uid), etype, reason, message)
        allocated: dict[str, Res] = {}
        if attrs:
            allocated = {q: a.allocated for q, a in attrs.items()}
        else:
            for job in res.jobs.values():
                allocated.setdefault(job.queue, Res()).add(job.allocated)
        q_writes = self.status.queue_statuses({u: st.phase for u, st in res.podgroup_status.items()}, allocated)
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
            jobs=len(res.jobs),
            binds=bound,
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
                m.observe_job_placed(job.name, job.queue, job.namespace, job.creation, job.schedule_start, done)
        m.prune(set(self.cache.state.jobs), set(self.cache.state.queues))

    async def _shutdown(self) -> None:
        o = self.opts
        log.info("shutting down: no new sessions, draining writes", in_flight_binds=self.binder.in_flight() if self.binder else 0)
        if self.binder is not None and not await self.binder.drain(o.drain_timeout):
            log.warning("binds still in flight at shutdown", count=self.binder.in_flight())
        if self.evictor is not None:
            await self.evictor.drain(max(o.drain_timeout / 2, 1.0))
        if self.status is not None:
            await self.status.drain(2.0)
        if self.elector is not None:
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


def _install_loop_policy() -> str:
    try:
        import uvloop

        asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
        return "uvloop"
    except ImportError:
        return "asyncio"


async def _serve(opts: Options) -> int:
    daemon = Daemon(opts)
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
