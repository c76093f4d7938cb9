"""The /metrics output uses Volcano's names, types, labels and buckets, and forgets deleted objects."""

from __future__ import annotations

import re
from types import SimpleNamespace

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
    m.observe_session(SimpleNamespace(total_ms=12.0, open_ms=1.0, action_ms={"allocate": 3.0},
                                      plugin_open_ms={"gang": 0.2}, plugin_close_ms={"gang": 0.1},
                                      pod_conditions=[], podgroup_status={}, uid="u", evictions=[]))
    t = text(m)
    ty = types(t)
    for name in ("volcano_e2e_scheduling_latency_milliseconds", "volcano_open_session_duration_milliseconds",
                 "volcano_e2e_job_scheduling_latency_milliseconds", "volcano_plugin_scheduling_latency_milliseconds",
                 "volcano_action_scheduling_latency_milliseconds", "volcano_task_scheduling_latency_milliseconds",
                 "volcano_scheduling_stage_duration_milliseconds"):
        assert ty[name] == "histogram", name
    for name in ("volcano_e2e_job_scheduling_duration", "volcano_e2e_job_scheduling_start_time",
                 "volcano_e2e_job_scheduling_last_time", "volcano_pod_preemption_victims", "volcano_unschedule_task_count",
                 "volcano_unschedule_job_count", "volcano_queue_allocated_milli_cpu", "volcano_queue_deserved_memory_bytes",
                 "volcano_queue_real_capacity_scalar_resources", "volcano_queue_inqueue_milli_cpu", "volcano_queue_share",
                 "volcano_queue_weight", "volcano_queue_overused", "volcano_job_share"):
        assert ty[name] == "gauge", name
    for name in ("volcano_schedule_attempts_total", "volcano_eviction_transactions_total",
                 "volcano_total_preemption_attempts", "volcano_job_retry_counts", "volcano_pods_bound_total",
                 "volcano_config_reload_failures_total"):
        assert ty[name] == "counter", name
    # Go's name exactly, not prometheus_client's "<name>_total"
    assert re.search(r"^volcano_total_preemption_attempts 0$", t, re.M)
    assert "volcano_total_preemption_attempts_total" not in t
    assert "_created" not in t
    assert 'volcano_action_scheduling_latency_milliseconds_count{action="allocate"} 1.0' in t
    assert 'volcano_plugin_scheduling_latency_milliseconds_count{OnSession="OnSessionOpen",plugin="gang"} 1.0' in t
    assert "volcano_e2e_scheduling_latency_milliseconds_sum 12.0" in t


@pytest.mark.parametrize(("name", "lo", "hi", "n"), [
    ("volcano_e2e_scheduling_latency_milliseconds", 1, 5000, 20),
    ("volcano_e2e_job_scheduling_latency_milliseconds", 100, 120000, 30),
])
def test_buckets(name: str, lo: float, hi: float, n: int) -> None:
    b = buckets(text(SchedulerMetrics()), name)
    assert len(b) == n and b[0] == lo and b[-1] == pytest.approx(hi)


def test_unschedulable_counts_and_preemption() -> None:
    m = SchedulerMetrics()
    task = SimpleNamespace(job="ns/j1")
    st = PodGroupStatus("Inqueue", [Condition("Unschedulable", "True", "NotEnoughResources", "x", "sess")])
    res = SimpleNamespace(total_ms=1.0, open_ms=0.1, action_ms={}, plugin_open_ms={}, plugin_close_ms={}, uid="sess",
                          pod_conditions=[SimpleNamespace(task=task, reason="Unschedulable")] * 3,
                          podgroup_status={"ns/j1": st, "ns/j2": PodGroupStatus("Running")},
                          evictions=[(object(), "preempt"), (object(), "preempt")])
    m.observe_session(res)
    t = text(m)
    assert 'volcano_unschedule_task_count{job_id="ns/j1"} 3.0' in t
    assert "volcano_unschedule_job_count 1.0" in t
    assert "volcano_pod_preemption_victims 2.0" in t
    assert 'volcano_eviction_transactions_total{action="preempt"} 1.0' in t
    assert re.search(r"^volcano_total_preemption_attempts 1$", t, re.M)


def test_series_of_deleted_jobs_and_queues_are_removed() -> None:
    m = SchedulerMetrics()
    m.observe_job_placed("j1", "q1", "ns", creation=1.0, start=2.0, done=True)
    attr = SimpleNamespace(allocated=Resource.from_list({"cpu": "2", "nvidia.com/gpu": "1"}), request=Resource(),
                           deserved=Resource.from_list({"cpu": "4"}), capacity=None, real_capacity=Resource(),
                           inqueue=Resource(), share=0.5, weight=3)
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
