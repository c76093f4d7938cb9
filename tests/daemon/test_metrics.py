"""The /metrics output uses Volcano's names, types, labels and buckets, and forgets deleted objects."""

from __future__ import annotations

import re
from types import SimpleNamespace
from typing import Any

import pytest

from scheduler.metrics import SchedulerMetrics, exponential_buckets_range
from scheduler.model.objects import Condition, PodGroupStatus
from scheduler.model.resources import Resource


def text(m: SchedulerMetrics) -> str:
    return m.render().decode()


def types(t: str) -> dict[str, str]:
    return dict(re.findall(r"^# TYPE (\S+) (\S+)$", t, re.M))


def buckets(t: str, name: str) -> list[float]:
    return [float(x) for x in re.findall(rf'^{name}_bucket{{le="([^"+]+)"}}', t, re.M)]


def test_exponential_buckets_range_matches_prometheus() -> None:
    b = exponential_buckets_range(1, 5000, 20)
    assert len(b) == 20 and b[0] == 1 and b[-1] == pytest.approx(5000)
    assert b[1] / b[0] == pytest.approx(b[19] / b[18])


def test_volcano_metric_names_and_types() -> None:
    m = SchedulerMetrics()
    m.observe_session(
        SimpleNamespace(
            total_ms=12.0,
            open_ms=1.0,
            action_ms={"allocate": 3.0},
            plugin_open_ms={"gang": 0.2},
            plugin_close_ms={"gang": 0.1},
            pod_conditions=[],
            podgroup_status={},
            uid="u",
            evictions=[],
            preemption_victims=None,
            preemption_attempts=0,
            eviction_transactions={},
        )
    )
    t = text(m)
    ty = types(t)
    for name in (
        "volcano_e2e_scheduling_latency_milliseconds",
        "volcano_open_session_duration_milliseconds",
        "volcano_e2e_job_scheduling_latency_milliseconds",
        "volcano_plugin_scheduling_latency_milliseconds",
        "volcano_action_scheduling_latency_milliseconds",
        "volcano_task_scheduling_latency_milliseconds",
        "volcano_scheduling_stage_duration_milliseconds",
    ):
        assert ty[name] == "histogram", name
    for name in (
        "volcano_e2e_job_scheduling_duration",
        "volcano_e2e_job_scheduling_start_time",
        "volcano_e2e_job_scheduling_last_time",
        "volcano_pod_preemption_victims",
        "volcano_unschedule_task_count",
        "volcano_unschedule_job_count",
        "volcano_queue_allocated_milli_cpu",
        "volcano_queue_deserved_memory_bytes",
        "volcano_queue_real_capacity_scalar_resources",
        "volcano_queue_inqueue_milli_cpu",
        "volcano_queue_share",
        "volcano_queue_weight",
        "volcano_queue_overused",
        "volcano_job_share",
    ):
        assert ty[name] == "gauge", name
    for name in (
        "volcano_schedule_attempts_total",
        "volcano_eviction_transactions_total",
        "volcano_total_preemption_attempts",
        "volcano_job_retry_counts",
        "volcano_pods_bound_total",
        "volcano_config_reload_failures_total",
    ):
        assert ty[name] == "counter", name
    # Go's name exactly, not prometheus_client's "<name>_total"
    assert re.search(r"^volcano_total_preemption_attempts 0$", t, re.M)
    assert "volcano_total_preemption_attempts_total" not in t
    assert "_created" not in t
    assert 'volcano_action_scheduling_latency_milliseconds_count{action="allocate"} 1.0' in t
    assert (
        'volcano_plugin_scheduling_latency_milliseconds_count{OnSession="OnSessionOpen",plugin="gang"} 1.0'
        in t
    )
    assert "volcano_e2e_scheduling_latency_milliseconds_sum 12.0" in t


@pytest.mark.parametrize(
    ("name", "lo", "hi", "n"),
    [
        ("volcano_e2e_scheduling_latency_milliseconds", 1, 5000, 20),
        ("volcano_e2e_job_scheduling_latency_milliseconds", 100, 120000, 30),
    ],
)
def test_buckets(name: str, lo: float, hi: float, n: int) -> None:
    b = buckets(text(SchedulerMetrics()), name)
    assert len(b) == n and b[0] == lo and b[-1] == pytest.approx(hi)


def test_unschedulable_counts_and_preemption() -> None:
    m = SchedulerMetrics()
    task = SimpleNamespace(job="ns/j1")
    st = PodGroupStatus("Inqueue", [Condition("Unschedulable", "True", "NotEnoughResources", "x", "sess")])
    res = SimpleNamespace(
        total_ms=1.0,
        open_ms=0.1,
        action_ms={},
        plugin_open_ms={},
        plugin_close_ms={},
        uid="sess",
        pod_conditions=[SimpleNamespace(task=task, reason="Unschedulable")] * 3,
        podgroup_status={"ns/j1": st, "ns/j2": PodGroupStatus("Running")},
        evictions=[(object(), "preempt"), (object(), "preempt")],
        preemption_victims=2,
        preemption_attempts=1,
        eviction_transactions={"preempt": 1},
    )
    m.observe_session(res)
    t = text(m)
    # Volcano labels job_id with the PodGroup's name
    assert 'volcano_unschedule_task_count{job_id="j1"} 3.0' in t
    assert 'volcano_job_retry_counts{job_id="j1"} 1' in t
    assert "volcano_unschedule_job_count 1.0" in t
    assert "volcano_pod_preemption_victims 2.0" in t
    assert 'volcano_eviction_transactions_total{action="preempt"} 1.0' in t
    assert re.search(r"^volcano_total_preemption_attempts 1$", t, re.M)


def test_series_of_deleted_jobs_and_queues_are_removed() -> None:
    m = SchedulerMetrics()
    m.observe_job_placed("j1", "q1", "ns", creation=1.0, start=2.0, done=True)
    attr = SimpleNamespace(
        allocated=Resource.from_list({"cpu": "2", "nvidia.com/gpu": "1"}),
        request=Resource(),
        deserved=Resource.from_list({"cpu": "4"}),
        capacity=None,
        real_capacity=Resource(),
        inqueue=Resource(),
        share=0.5,
        weight=3,
    )
    m.set_queue("q1", attr)
    t = text(m)
    assert 'volcano_e2e_job_scheduling_duration{job_name="j1",job_namespace="ns",queue="q1"}' in t
    assert 'volcano_queue_allocated_milli_cpu{queue_name="q1"} 2000.0' in t
    # scalar resources in milli-units, as Volcano exports them
    assert 'volcano_queue_allocated_scalar_resources{queue_name="q1",resource="nvidia.com/gpu"} 1000.0' in t
    assert 'volcano_queue_weight{queue_name="q1"} 3.0' in t
    m.prune(jobs=set(), queues=set())
    t = text(m)
    assert 'job_name="j1"' not in t
    assert 'queue_name="q1"' not in t


def _session(uid: str, unschedulable: list[str]) -> SimpleNamespace:
    st = {
        j: PodGroupStatus("Inqueue", [Condition("Unschedulable", "True", "NotEnoughResources", "x", uid)])
        for j in unschedulable
    }
    return SimpleNamespace(
        total_ms=1.0,
        open_ms=0.1,
        action_ms={},
        plugin_open_ms={},
        plugin_close_ms={},
        uid=uid,
        pod_conditions=[],
        podgroup_status=st,
        evictions=[],
        preemption_victims=None,
        preemption_attempts=0,
        eviction_transactions={},
        jobs={j: SimpleNamespace(name=j.rpartition("/")[2]) for j in unschedulable},
    )


def test_retries_count_sessions_that_leave_a_job_unschedulable_and_go_with_the_job() -> None:
    m = SchedulerMetrics()
    for i in range(3):
        m.observe_session(_session(f"s{i}", ["ns/j1"]))
    m.observe_session(_session("s3", []))
    t = text(m)
    assert 'volcano_job_retry_counts{job_id="j1"} 3' in t
    assert 'volcano_unschedule_task_count{job_id="j1"} 0.0' in t
    m.prune(jobs=set(), queues=set())
    t = text(m)
    assert 'job_id="j1"' not in t


def test_job_share_from_drf_labelled_by_namespace_and_name_and_removed_with_the_job() -> None:
    m = SchedulerMetrics()
    m.observe_job_shares({"ns/j1": 0.25, "other/j2": 0.5})
    m.observe_job_shares({"ns/j1": 0.75, "other/j2": 0.5})
    t = text(m)
    assert 'volcano_job_share{job_id="j1",job_ns="ns"} 0.75' in t
    assert 'volcano_job_share{job_id="j2",job_ns="other"} 0.5' in t
    m.prune(jobs={"other/j2"}, queues=set())
    t = text(m)
    assert 'job_id="j1"' not in t
    assert 'volcano_job_share{job_id="j2",job_ns="other"} 0.5' in t


def _vgpu_ledger(node_name: str) -> Any:
    from scheduler.model.node import NodeInfo
    from scheduler.plugins.deviceshare import annotations as ann
    from scheduler.plugins.deviceshare.config import DEFAULT_CONFIG
    from scheduler.plugins.deviceshare.vgpu import VgpuLedger

    cards = [
        ann.RegisteredCard(f"GPU-{node_name}-{i}", 10, 16384, "NVIDIA-Tesla T4", True, "hami-core")
        for i in range(2)
    ]
    alloc = {
        "cpu": "8",
        "memory": "32Gi",
        ann.VGPU_NUMBER: "20",
        ann.VGPU_MEMORY: "32768",
        ann.VGPU_CORES: "200",
    }
    node = NodeInfo(
        node_name, Resource.from_list(alloc), annotations={ann.VGPU_REGISTER: ann.encode_vgpu_register(cards)}
    )
    node.raw_capacity = dict(alloc)
    led, why = VgpuLedger.from_node(node, DEFAULT_CONFIG)
    assert led is not None, why
    return led


def _share_ledger(node_name: str) -> Any:
    from scheduler.model.node import NodeInfo
    from scheduler.plugins.deviceshare import annotations as ann
    from scheduler.plugins.deviceshare.gpushare import GpuShareLedger

    alloc = {"cpu": "8", "memory": "32Gi", ann.GPU_MEMORY: "2000", ann.GPU_NUMBER: "2"}
    node = NodeInfo(node_name, Resource.from_list(alloc))
    node.raw_capacity = dict(alloc)
    led = GpuShareLedger.from_node(node)
    assert led is not None
    return led


def test_vgpu_and_gpushare_gauges_follow_the_ledgers_and_vanish_with_the_node() -> None:
    from scheduler.plugins.deviceshare import annotations as ann

    m = SchedulerMetrics()
    v1, v2 = _vgpu_ledger("g1"), _vgpu_ledger("g2")
    v1.add_pod("p", "", [[ann.DeviceEntry("GPU-g1-0", 3000, 30)]])
    s1 = _share_ledger("s1")
    s1.add_pod("a", 300, "Running", [1])
    m.set_device_ledgers([v1, v2], [s1])
    t = text(m)
    assert 'volcano_vgpu_device_allocated_memory{NodeName="g1",devID="GPU-g1-0"} 3000.0' in t
    assert 'volcano_vgpu_device_allocated_cores{NodeName="g1",devID="GPU-g1-0"} 30.0' in t
    assert 'volcano_vgpu_device_shared_number{NodeName="g1",devID="GPU-g1-0"} 1.0' in t
    assert 'volcano_vgpu_device_memory_limit{NodeName="g1",devID="GPU-g1-0"} 16384.0' in t
    assert 'volcano_vgpu_device_shared_number{NodeName="g2",devID="GPU-g2-1"} 0.0' in t
    assert 'volcano_gpushare_node_memory_allocated{NodeName="s1"} 300.0' in t
    assert 'volcano_gpushare_node_cards_busy{NodeName="s1"} 1.0' in t
    assert 'volcano_gpushare_node_memory_total{NodeName="s1"} 2000.0' in t
    # next session: g2 and s1 are gone, g1's pod left
    v1b = _vgpu_ledger("g1")
    m.set_device_ledgers([v1b], [])
    t = text(m)
    assert 'volcano_vgpu_device_allocated_memory{NodeName="g1",devID="GPU-g1-0"} 0.0' in t
    assert 'NodeName="g2"' not in t
    assert 'NodeName="s1"' not in t


def test_device_ledgers_are_collected_from_the_session_nodes() -> None:
    from scheduler.daemon import device_ledgers

    v, s = _vgpu_ledger("g1"), _share_ledger("s1")
    nodes = [
        SimpleNamespace(devices={"hamivgpu": v}),
        SimpleNamespace(devices={}),
        SimpleNamespace(devices={"GpuShare": s}),
    ]
    assert device_ledgers(nodes) == ([v], [s])


def test_per_job_families_render_as_prometheus_client_would() -> None:
    """The per-job families are rendered by hand from cached lines; a dashboard sees the same text."""
    from prometheus_client import CollectorRegistry, Gauge, generate_latest

    m = SchedulerMetrics()
    r = CollectorRegistry()
    ref = Gauge("volcano_job_share", "Share for one job", ["job_ns", "job_id"], registry=r)
    values = [("ns", "a", 0.75), ("ns", "b", 1.7976931348623157e308), ("o\\t", 'q"x', 1764000000.0)]
    for ns, name, v in values:
        ref.labels(ns, name).set(v)
        m.job_share.set(ns, name, value=v)
    ref.labels("ns", "a").set(0.5)
    m.job_share.set("ns", "a", value=0.5)
    ref.remove("ns", "b")
    m.job_share.remove("ns", "b")
    assert m.job_share.render() == generate_latest(r).decode()


def test_lines_rendered_at_the_scrape_match_prometheus_client_between_any_changes() -> None:
    """A line is rendered when scraped, not when set: whatever happened in between (a value set
    twice, removed, set again, a new series), each scrape shows what prometheus_client would."""
    from prometheus_client import CollectorRegistry, Gauge, generate_latest

    m = SchedulerMetrics()
    r = CollectorRegistry()
    ref = Gauge("volcano_job_share", "Share for one job", ["job_ns", "job_id"], registry=r)
    steps: list[list[tuple[str, str, float | None]]] = [
        [("ns", "a", 0.25), ("ns", "b", 2.0), ("ns", "a", 0.5)],
        [],
        [("ns", "b", None), ("ns", "c", 1e-9), ("ns", "b", 3.0)],
        [("ns", "a", 0.5), ("ns", "c", float("inf"))],
        [("ns", "a", None), ("ns", "c", None), ("ns", "b", None)],
        [("ns", "c", 7.0)],
    ]
    for step in steps:
        for ns, name, v in step:
            if v is None:
                ref.remove(ns, name)
                m.job_share.remove(ns, name)
            else:
                ref.labels(ns, name).set(v)
                m.job_share.set(ns, name, value=v)
        assert m.job_share.render() == generate_latest(r).decode()


def test_a_scrape_of_an_unchanged_cluster_reuses_the_rendered_text() -> None:
    m = SchedulerMetrics()
    for i in range(3):
        m.observe_job_placed(f"j{i}", "q", "ns", creation=0.0, start=0.0, done=False)
    first = m.e2e_job_duration.render()
    m.e2e_job_duration.set("j0", "q", "ns", value=0.0)  # the same value: nothing to re-render
    assert m.e2e_job_duration.render() is first
    m.e2e_job_duration.set("j0", "q", "ns", value=5.0)
    assert 'volcano_e2e_job_scheduling_duration{job_name="j0",job_namespace="ns",queue="q"} 5.0' in (
        m.e2e_job_duration.render()
    )
    m.prune(jobs={"ns/j1"}, queues=set())
    t = text(m)
    assert 'job_name="j1"' in t and 'job_name="j0"' not in t and 'job_name="j2"' not in t


def test_the_series_of_a_podgroup_that_left_go_at_the_next_session_and_not_before() -> None:
    """A session after a PodGroup was deleted drops its series (Volcano's DeleteJobMetrics); the
    sessions before that, whatever else changed in the cluster, keep them."""
    from scheduler.daemon import Daemon, parse_args
    from tests.builders import node, pod, podgroup, queue

    d = Daemon(parse_args(["--leader-elect=false", "--dry-run"]))
    d.reloader.load_initial(strict=False)
    d._wire_writers()
    cache = d.cache
    cache.upsert_node(node("n1", cpu="4", memory="8Gi"))
    cache.upsert_queue(queue("default"))
    for name, cpu in (("fits", "1"), ("huge", "64")):
        cache.upsert_podgroup(podgroup(name, ns="ns"))
        cache.upsert_pod(pod(f"{name}-0", cpu=cpu, ns="ns", group=name))
    assert d.run_once() is not None
    assert 'job_id="huge"' in d.metrics.render().decode()
    cache.upsert_pod(pod("late-0", cpu="1", ns="ns", group="fits"))  # a change, nothing left
    assert d.run_once() is not None
    assert 'job_id="huge"' in d.metrics.render().decode()
    cache.delete_pod("ns/huge-0", None)
    cache.delete_podgroup("ns/huge", None)
    assert d.run_once() is not None
    rendered = d.metrics.render().decode()
    assert 'job_id="huge"' not in rendered
    assert 'job_id="fits"' in rendered
