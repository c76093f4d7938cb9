"""Prometheus metrics with Volcano's names, types, labels and buckets (spec section 9).

All collectors live in one dedicated `CollectorRegistry` per `SchedulerMetrics`, so tests and two
daemons in one process never collide in prometheus_client's global registry. Two Volcano counters
do not end in `_total` (`volcano_total_preemption_attempts`, `volcano_job_retry_counts`);
prometheus_client would append `_total` to them, so they are rendered by hand to keep the exact
names dashboards query. Series of deleted jobs and queues are removed after every session; series
of device cards and nodes that went away are removed at the next scrape. Beyond Volcano's set we
export a few of our own (`volcano_pods_bound_total`, `volcano_gpushare_node_*`, ...), each
documented where it is registered.
"""

from __future__ import annotations

import collections
import contextlib
import math
import threading
import time
from bisect import bisect_left
from collections.abc import Collection, Iterable
from typing import Any

import prometheus_client
import structlog
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.utils import floatToGoString

# Go's client does not export `_created` samples; without this every counter and histogram
# would carry an extra series Volcano users have never seen.
prometheus_client.disable_created_metrics()

NS = "volcano"
log = structlog.get_logger("vc-scheduler.metrics")


def exponential_buckets_range(low: float, high: float, count: int) -> list[float]:
    """Prometheus ExponentialBucketsRange: `count` buckets from low to high by a constant factor."""
    factor = math.pow(high / low, 1.0 / (count - 1))
    return [low * math.pow(factor, i) for i in range(count)]


# observations a `FoldedHistogram` keeps waiting before folding them without a scrape
FOLD_AT = 4096


class FoldedHistogram(Histogram):
    """A `Histogram` whose observations are folded into its buckets when it is read.

    A burst observes five latencies per pod (watched, bind and its stages), and each
    `Histogram.observe` takes two locks and walks the bucket bounds in Python: 4 % of the
    daemon's CPU in a burst. Here `observe` appends to a deque (atomic, so any thread may
    observe), and a scrape, or every `FOLD_AT` observations, folds what waits into the buckets
    (found by bisection) and the sum, adding to the sum in the order observed, so every sample
    reads exactly what `Histogram` would give."""

    def _metric_init(self) -> None:
        super()._metric_init()
        self._waiting: collections.deque[float] = collections.deque()
        self._fold_lock = threading.Lock()

    def observe(self, amount: float, exemplar: dict[str, str] | None = None) -> None:
        try:
            waiting = self._waiting
        except AttributeError:  # the parent of labelled series: raises as Histogram does
            self._raise_if_not_observable()
            raise
        if exemplar:
            with self._fold_lock:
                self._fold_waiting()
                super().observe(amount, exemplar)
            return
        waiting.append(amount)
        if len(waiting) >= FOLD_AT:
            self.fold()

    def fold(self) -> None:
        """Fold the waiting observations into the buckets and the sum."""
        with self._fold_lock:
            self._fold_waiting()

    def _fold_waiting(self) -> None:
        waiting, bounds = self._waiting, self._upper_bounds
        if not waiting:
            return
        counts = [0] * len(bounds)
        total = self._sum.get()
        pop = waiting.popleft
        while True:
            try:
                amount = pop()
            except IndexError:
                break
            total += amount
            i = bisect_left(bounds, amount)
            if i < len(bounds) and amount <= bounds[i]:  # NaN falls in no bucket, as in observe
                counts[i] += 1
        self._sum.set(total)
        for i, n in enumerate(counts):
            if n:
                self._buckets[i].inc(n)

    def _child_samples(self) -> Iterable[Any]:
        self.fold()
        return super()._child_samples()


class SeriesFamily:
    """One metric family with a series per job, its exposition lines kept rendered.

    prometheus_client renders every sample on every scrape: at 75,000 jobs the four per-job
    families are 300,000 lines and 5-7 s of CPU, which a scrape on the server's thread takes from
    the session running beside it (the GIL). Here a line is rendered when its value changes and
    the family's text when one of its lines did, so a scrape of an idle cluster joins cached text.
    Samples come out in the order their series were first set, labels sorted by name and values
    formatted as prometheus_client does (`gauge`), or as Go writes a counter whose name does not
    end in `_total` (`legacy_counter`, sorted by label values).
    """

    def __init__(
        self, name: str, documentation: str, labels: Iterable[str] = (), kind: str = "gauge"
    ) -> None:
        self.name = name
        self.documentation = documentation
        self.labels = tuple(labels)
        self.kind = kind
        self.values: dict[tuple[str, ...], float] = {}
        self._lines: dict[tuple[str, ...], str] = {}
        self._text: str | None = None
        # written by the daemon's loop, rendered on the HTTP server's thread
        self._lock = threading.Lock()
        typ = "counter" if kind == "legacy_counter" else "gauge"
        doc = documentation.replace("\\", "\\\\").replace("\n", "\\n")
        self._head = f"# HELP {name} {doc}\n# TYPE {name} {typ}\n"
        self._order = sorted(range(len(self.labels)), key=lambda i: self.labels[i])

    def set(self, *label_values: str, value: float) -> None:
        with self._lock:
            if self.values.get(label_values) == value:
                return  # an idle cluster sets the same values every session
            self.values[label_values] = value
            self._lines[label_values] = self._line(label_values, value)
            self._text = None

    def inc(self, *label_values: str, amount: float = 1.0) -> None:
        with self._lock:
            value = self.values.get(label_values, 0.0) + amount
            self.values[label_values] = value
            self._lines[label_values] = self._line(label_values, value)
            self._text = None

    def remove(self, *label_values: str) -> None:
        with self._lock:
            if self.values.pop(label_values, None) is not None:
                del self._lines[label_values]
                self._text = None

    def render(self) -> str:
        with self._lock:
            if self._text is None:
                if self.kind == "legacy_counter" and not self.labels and not self.values:
                    # an unlabelled Go counter is exported at 0 from the start
                    self.values[()] = 0.0
                    self._lines[()] = self._line((), 0.0)
                lines = self._lines
                body = (
                    "".join(lines[k] for k in sorted(lines))
                    if self.kind == "legacy_counter"
                    else "".join(lines.values())
                )
                self._text = self._head + body
            return self._text

    def _line(self, label_values: tuple[str, ...], value: float) -> str:
        if self.kind == "legacy_counter":
            num = _num(value)
        else:
            num = floatToGoString(value)
        if not label_values:
            return f"{self.name} {num}\n"
        lab = ",".join(f'{self.labels[i]}="{_escape(label_values[i])}"' for i in self._order)
        return f"{self.name}{{{lab}}} {num}\n"


def _escape(v: str) -> str:
    return v.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _num(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else repr(v)


_RESOURCE_KINDS = ("allocated", "request", "deserved", "capacity", "real_capacity", "inqueue")


class SchedulerMetrics:
    def __init__(self) -> None:
        r = self.registry = CollectorRegistry(auto_describe=True)

        def hist(name: str, doc: str, lo: float, hi: float, n: int, labels: Iterable[str] = ()) -> Histogram:
            return FoldedHistogram(
                name, doc, list(labels), registry=r, buckets=exponential_buckets_range(lo, hi, n)
            )

        self.e2e_latency = hist(
            f"{NS}_e2e_scheduling_latency_milliseconds",
            "Duration of a single scheduling session execution in milliseconds.",
            1,
            5000,
            20,
        )
        self.open_session = hist(
            f"{NS}_open_session_duration_milliseconds",
            "Duration of opening a scheduling session in milliseconds, including cache snapshot and session initialization.",
            1,
            5000,
            20,
        )
        self.e2e_job_latency = hist(
            f"{NS}_e2e_job_scheduling_latency_milliseconds",
            "End-to-end job scheduling latency in milliseconds (creation to last task assumed)",
            100,
            120000,
            30,
        )
        job_labels = ["job_name", "queue", "job_namespace"]
        # per-job families are rendered by hand from cached lines (SeriesFamily)
        self.e2e_job_duration = SeriesFamily(
            f"{NS}_e2e_job_scheduling_duration",
            "Per-job duration from job creation to last task assumed in scheduler cache, in milliseconds",
            job_labels,
        )
        self.e2e_job_start = SeriesFamily(
            f"{NS}_e2e_job_scheduling_start_time", "E2E job scheduling start time", job_labels
        )
        self.e2e_job_last = SeriesFamily(
            f"{NS}_e2e_job_scheduling_last_time", "E2E job scheduling last time", job_labels
        )
        self.plugin_latency = hist(
            f"{NS}_plugin_scheduling_latency_milliseconds",
            "Plugin scheduling latency in milliseconds",
            0.1,
            100,
            15,
            ("plugin", "OnSession"),
        )
        self.action_latency = hist(
            f"{NS}_action_scheduling_latency_milliseconds",
            "Action scheduling latency in milliseconds",
            1,
            2000,
            20,
            ("action",),
        )
        self.task_latency = hist(
            f"{NS}_task_scheduling_latency_milliseconds",
            "Task scheduling latency from creation to various stages in milliseconds",
            50,
            60000,
            30,
            ("stage",),
        )
        self.stage_duration = hist(
            f"{NS}_scheduling_stage_duration_milliseconds",
            "Duration of per-task scheduling stages (Predicate, Scoring, PreBind, Bind) in milliseconds",
            0.1,
            500,
            20,
            ("stage",),
        )
        # Registered like Volcano's, which has no caller incrementing it.
        self.schedule_attempts = Counter(
            f"{NS}_schedule_attempts_total",
            "Number of attempts to schedule pods, by the result.",
            ["result"],
            registry=r,
        )
        self.preemption_victims = Gauge(
            f"{NS}_pod_preemption_victims", "Number of selected preemption victims", registry=r
        )
        self.preemption_attempts = SeriesFamily(
            f"{NS}_total_preemption_attempts",
            "Total preemption attempts in the cluster till now",
            kind="legacy_counter",
        )
        self.eviction_transactions = Counter(
            f"{NS}_eviction_transactions_total",
            "Total number of committed eviction transactions, by action",
            ["action"],
            registry=r,
        )
        self.unschedule_task_count = SeriesFamily(
            f"{NS}_unschedule_task_count", "Number of tasks could not be scheduled", ["job_id"]
        )
        self.unschedule_job_count = Gauge(
            f"{NS}_unschedule_job_count", "Number of jobs could not be scheduled", registry=r
        )
        self.job_share = SeriesFamily(f"{NS}_job_share", "Share for one job", ["job_ns", "job_id"])
        self.job_retry_counts = SeriesFamily(
            f"{NS}_job_retry_counts", "Number of retry counts for one job", ("job_id",), kind="legacy_counter"
        )
        self._by_hand = (
            self.e2e_job_duration,
            self.e2e_job_start,
            self.e2e_job_last,
            self.unschedule_task_count,
            self.job_share,
            self.preemption_attempts,
            self.job_retry_counts,
        )
        self.queue: dict[str, tuple[Gauge, Gauge, Gauge]] = {}
        for kind in _RESOURCE_KINDS:
            what = kind.replace("_", " ").capitalize()
            self.queue[kind] = (
                Gauge(
                    f"{NS}_queue_{kind}_milli_cpu",
                    f"{what} CPU count for one queue",
                    ["queue_name"],
                    registry=r,
                ),
                Gauge(
                    f"{NS}_queue_{kind}_memory_bytes",
                    f"{what} memory for one queue",
                    ["queue_name"],
                    registry=r,
                ),
                Gauge(
                    f"{NS}_queue_{kind}_scalar_resources",
                    f"{what} scalar resources for one queue",
                    ["queue_name", "resource"],
                    registry=r,
                ),
            )
        self.queue_share = Gauge(f"{NS}_queue_share", "Share for one queue", ["queue_name"], registry=r)
        self.queue_weight = Gauge(f"{NS}_queue_weight", "Weight for one queue", ["queue_name"], registry=r)
        self.queue_overused = Gauge(
            f"{NS}_queue_overused", "If one queue is overused", ["queue_name"], registry=r
        )
        # ours, beyond Volcano's set
        self.pods_bound = Counter(
            f"{NS}_pods_bound_total",
            "Pods bound to a node by this scheduler (Binding accepted by the API server)",
            registry=r,
        )
        self.bind_errors = Counter(
            f"{NS}_bind_errors_total",
            "Binding requests that failed, by HTTP status (0 = no answer)",
            ["code"],
            registry=r,
        )
        self.dry_run_binds = Counter(
            f"{NS}_dry_run_binds_total", "Binds decided but not written because of --dry-run", registry=r
        )
        self.config_reloads = Counter(
            f"{NS}_config_reloads_total",
            "Scheduler configurations accepted at runtime, by source",
            ["source"],
            registry=r,
        )
        self.config_reload_failures = Counter(
            f"{NS}_config_reload_failures_total",
            "Scheduler configurations refused at runtime (the last good one stays), by source",
            ["source"],
            registry=r,
        )
        self.is_leader = Gauge(
            f"{NS}_leader",
            "1 when this replica holds the leader lease (or leader election is off)",
            registry=r,
        )
        # Volcano's vGPU card gauges (labels devID = card UUID, NodeName), as its vgpu package exports them
        card = ["devID", "NodeName"]
        self.vgpu_shared = Gauge(
            f"{NS}_vgpu_device_shared_number", "The number of vgpu tasks sharing this card", card, registry=r
        )
        self.vgpu_memory = Gauge(
            f"{NS}_vgpu_device_allocated_memory",
            "The number of vgpu memory allocated in this card",
            card,
            registry=r,
        )
        self.vgpu_cores = Gauge(
            f"{NS}_vgpu_device_allocated_cores",
            "The percentage of gpu compute cores allocated in this card",
            card,
            registry=r,
        )
        self.vgpu_limit = Gauge(
            f"{NS}_vgpu_device_memory_limit",
            "The number of total device memory in this card",
            card,
            registry=r,
        )
        # ours: Volcano exports nothing for gpu-share (gpu-memory/gpu-number) nodes
        node = ["NodeName"]
        self.share_memory_used = Gauge(
            f"{NS}_gpushare_node_memory_allocated",
            "GPU memory (MiB) allocated to gpu-share pods on this node",
            node,
            registry=r,
        )
        self.share_memory_total = Gauge(
            f"{NS}_gpushare_node_memory_total",
            "GPU memory (MiB) of this node's shared cards",
            node,
            registry=r,
        )
        self.share_cards_busy = Gauge(
            f"{NS}_gpushare_node_cards_busy",
            "Shared cards of this node holding at least one pod",
            node,
            registry=r,
        )
        self.share_cards = Gauge(f"{NS}_gpushare_node_cards", "Shared cards of this node", node, registry=r)
        self.session_failures = Counter(
            f"{NS}_session_failures_total",
            "Scheduling sessions that raised and decided nothing (see the log for the cause)",
            registry=r,
        )
        self.plugin_errors = Counter(
            f"{NS}_plugin_errors_total",
            "Exceptions a plugin raised for one node or job, contained to it (the session went on)",
            ["plugin"],
            registry=r,
        )
        self.fenced = Counter(
            f"{NS}_fenced_total",
            "Times this replica stopped writing because its lease was in doubt (pause, failed renew)",
            registry=r,
        )
        self.sessions_skipped = Counter(
            f"{NS}_sessions_skipped_total",
            "Schedule periods with no session because nothing changed and nothing is pending",
            registry=r,
        )
        self._job_labels: dict[str, tuple[str, str, str]] = {}
        self._unsched_jobs: set[str] = set()
        self._job_names: dict[str, str] = {}  # job uid -> the name its job_id series carry
        self._job_shares: dict[str, float] = {}
        # device ledgers of the last session; turned into gauges only when /metrics is scraped
        self._ledgers: tuple[list[Any], list[Any]] = ([], [])
        self._vgpu_series: dict[tuple[str, str], tuple[float, ...]] = {}
        self._share_series: dict[str, tuple[float, ...]] = {}
        self._queue_scalars: dict[str, dict[str, set[str]]] = {}
        self._queues: set[str] = set()

    # ------------------------------------------------------------------ exposition --
    def render(self, devices: bool = True) -> bytes:
        """The exposition; `devices=False` when the caller refreshed the device gauges itself
        (on the loop that owns the ledgers) or chose not to wait for it."""
        if devices:
            self.refresh_devices()
        return generate_latest(self.registry) + "".join(f.render() for f in self._by_hand).encode()

    # ------------------------------------------------------------------ sessions --
    def observe_session(self, res: Any, proportion_attrs: dict[str, Any] | None = None) -> None:
        """One session's timings, unschedulable counts and (with proportion) queue gauges."""
        self.e2e_latency.observe(res.total_ms)
        self.open_session.observe(res.open_ms)
        for action, ms in res.action_ms.items():
            self.action_latency.labels(action).observe(ms)
        for plugin, ms in res.plugin_open_ms.items():
            self.plugin_latency.labels(plugin, "OnSessionOpen").observe(ms)
        for plugin, ms in res.plugin_close_ms.items():
            self.plugin_latency.labels(plugin, "OnSessionClose").observe(ms)
        self._observe_unschedulable(res)
        self._observe_evictions(res)
        if proportion_attrs:
            for name, attr in proportion_attrs.items():
                self.set_queue(name, attr)

    def _observe_unschedulable(self, res: Any) -> None:
        # Volcano labels these by the PodGroup's name (job.Name), not namespace/name
        jobs = getattr(res, "jobs", None) or {}

        def name_of(uid: str) -> str:
            job = jobs.get(uid)
            return job.name if job is not None else uid.rpartition("/")[2]

        per_job: dict[str, int] = {}
        for c in res.pod_conditions:
            if c.reason == "Unschedulable" or c.reason == "Schedulable":
                per_job[c.task.job] = per_job.get(c.task.job, 0) + 1
        unsched_jobs = {
            uid
            for uid, st in res.podgroup_status.items()
            if any(
                c.type == "Unschedulable" and c.status == "True" and c.transition_id == res.uid
                for c in st.conditions
            )
        }
        for uid in unsched_jobs:
            name = name_of(uid)
            self.unschedule_task_count.set(name, value=per_job.get(uid, 0))
            # gang counts a retry for every session that leaves the job unschedulable
            self.job_retry_counts.inc(name)
            self._job_names[uid] = name
        for uid in self._unsched_jobs - unsched_jobs:
            # a job that became schedulable: Volcano leaves the last value; 0 is what is true now
            self.unschedule_task_count.set(self._job_names.get(uid) or name_of(uid), value=0)
        self._unsched_jobs |= unsched_jobs
        self.unschedule_job_count.set(len(unsched_jobs))

    def observe_job_shares(self, shares: dict[str, float]) -> None:
        """drf's share per job (uid -> share), labelled (job_ns, job_id = PodGroup name) as Volcano does."""
        last = self._job_shares
        if shares == last:  # one comparison in C: an idle cluster's shares do not move
            return
        # thousands of jobs, a few of which moved: the unchanged ones are left out in one pass
        # (an infinite share is stored finite, so it is always looked at again below, as before)
        get = last.get
        for uid, share in [(u, s) for u, s in shares.items() if get(u) != s]:
            v = _finite(share)
            if last.get(uid) == v:
                continue  # thousands of jobs: only the ones whose share moved are touched
            last[uid] = v
            ns, _, name = uid.rpartition("/")
            self.job_share.set(ns, name, value=v)

    def _observe_evictions(self, res: Any) -> None:
        # counted as Volcano counts them: per committed eviction transaction, per preemption
        # attempt on a node, and the victims allowed on the last node preempt looked at
        for action, n in res.eviction_transactions.items():
            self.eviction_transactions.labels(action).inc(n)
        if res.preemption_attempts:
            self.preemption_attempts.inc(amount=res.preemption_attempts)
        if res.preemption_victims is not None:
            self.preemption_victims.set(res.preemption_victims)

    def observe_job_placed(
        self, name: str, queue: str, namespace: str, creation: float, start: float, done: bool
    ) -> None:
        now = time.time()
        uid = f"{namespace}/{name}"
        self._job_labels[uid] = (name, queue, namespace)
        ms = max(now - creation, 0.0) * 1000 if creation else 0.0
        self.e2e_job_duration.set(name, queue, namespace, value=ms)
        if start:
            self.e2e_job_start.set(name, queue, namespace, value=int(start))
        self.e2e_job_last.set(name, queue, namespace, value=int(now))
        if done:
            self.e2e_job_latency.observe(ms)

    def set_queue(self, name: str, attr: Any) -> None:
        self._queues.add(name)
        for kind in _RESOURCE_KINDS:
            res = getattr(attr, kind, None)
            if kind == "capacity" and res is None:
                continue
            if res is None:
                continue
            cpu_g, mem_g, scalar_g = self.queue[kind]
            cpu_g.labels(name).set(_finite(res.milli_cpu))
            mem_g.labels(name).set(_finite(res.memory))
            known = self._queue_scalars.setdefault(name, {}).setdefault(kind, set())
            current = {str(k): _finite(v) for k, v in res.scalars.items()}
            for k, v in current.items():
                scalar_g.labels(name, k).set(v)
            for k in known - set(current):
                scalar_g.labels(name, k).set(0)
            known |= set(current)
        self.queue_share.labels(name).set(_finite(attr.share))
        self.queue_weight.labels(name).set(attr.weight)
        overused = (
            attr.deserved is not None
            and attr.deserved.less_equal(attr.allocated)
            and not attr.allocated.is_empty()
        )
        self.queue_overused.labels(name).set(1 if overused else 0)

    # ------------------------------------------------------------------ devices --
    def set_device_ledgers(self, vgpu: list[Any], share: list[Any]) -> None:
        """The last session's vGPU and gpu-share ledgers (read-only from now on).

        Gauges are computed from them at scrape time, not per session: a cluster with thousands of
        cards would otherwise pay four gauge updates per card every second for nothing.
        """
        self._ledgers = (vgpu, share)

    def refresh_devices(self) -> None:
        try:
            self._sync_devices()
        except Exception as exc:  # a ledger we cannot read costs the device gauges, never /metrics
            log.warning("device gauges not updated", error=f"{type(exc).__name__}: {exc}")

    def _sync_devices(self) -> None:
        from scheduler.plugins.deviceshare.gpushare import gpushare_node_metrics
        from scheduler.plugins.deviceshare.vgpu import vgpu_card_metrics

        vgpu, share = self._ledgers
        cards: dict[tuple[str, str], tuple[float, ...]] = {}
        for led in vgpu:
            for m in vgpu_card_metrics(led):
                cards[(str(m["uuid"]), str(m["node"]))] = (
                    float(m["shared_pods"]),
                    float(m["memory_allocated"]),  # type: ignore[arg-type]
                    float(m["cores_allocated"]),
                    float(m["memory_limit"]),  # type: ignore[arg-type]
                )
        gauges = (self.vgpu_shared, self.vgpu_memory, self.vgpu_cores, self.vgpu_limit)
        for key, values in cards.items():
            if self._vgpu_series.get(key) != values:
                for g, v in zip(gauges, values, strict=True):
                    g.labels(*key).set(v)
        for key in self._vgpu_series.keys() - cards.keys():  # the card or its node went away
            for g in gauges:
                _remove(g, *key)
        self._vgpu_series = cards
        nodes: dict[str, tuple[float, ...]] = {}
        for led in share:
            m = gpushare_node_metrics(led)
            nodes[str(m["node"])] = (
                float(m["memory_used"]),
                float(m["memory_total"]),  # type: ignore[arg-type]
                float(m["cards_busy"]),
                float(m["cards_total"]),  # type: ignore[arg-type]
            )
        sgauges = (self.share_memory_used, self.share_memory_total, self.share_cards_busy, self.share_cards)
        for name, values in nodes.items():
            if self._share_series.get(name) != values:
                for g, v in zip(sgauges, values, strict=True):
                    g.labels(name).set(v)
        for name in self._share_series.keys() - nodes.keys():
            for g in sgauges:
                _remove(g, name)
        self._share_series = nodes

    # ------------------------------------------------------------------ removal --
    def prune(self, jobs: Collection[str], queues: Collection[str]) -> None:
        """Drop the series of jobs and queues that no longer exist (Volcano's Delete*Metrics)."""
        for uid in [u for u in self._job_labels if u not in jobs]:
            name, queue, ns = self._job_labels.pop(uid)
            for g in (self.e2e_job_duration, self.e2e_job_start, self.e2e_job_last):
                g.remove(name, queue, ns)
        for uid in [u for u in self._job_shares if u not in jobs]:
            del self._job_shares[uid]
            ns, _, name = uid.rpartition("/")
            self.job_share.remove(ns, name)
        for uid in [u for u in self._job_names if u not in jobs]:
            name = self._job_names.pop(uid)
            self._unsched_jobs.discard(uid)
            self.unschedule_task_count.remove(name)
            self.job_retry_counts.remove(name)
        for name in [q for q in self._queues if q not in queues]:
            self._queues.discard(name)
            for kind in _RESOURCE_KINDS:
                cpu_g, mem_g, scalar_g = self.queue[kind]
                _remove(cpu_g, name)
                _remove(mem_g, name)
                for res in self._queue_scalars.get(name, {}).get(kind, set()):
                    _remove(scalar_g, name, res)
            self._queue_scalars.pop(name, None)
            for g in (self.queue_share, self.queue_weight, self.queue_overused):
                _remove(g, name)


def _finite(v: float) -> float:
    # an unlimited capability is infinite inside the core; Prometheus accepts +Inf, but a huge
    # finite value is what Volcano exports (MaxFloat64), so dashboards compare the same way
    return v if math.isfinite(v) else 1.7976931348623157e308


def _remove(metric: Any, *labels: str) -> None:
    with contextlib.suppress(KeyError):
        metric.remove(*labels)
