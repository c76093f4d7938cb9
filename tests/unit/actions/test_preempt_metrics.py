"""Volcano's preemption metrics count what happened, not sessions: two preemptor jobs that each
evict in one session are two eviction transactions and (at least) two preemption attempts.
The victim jobs have minMember 0: gang protects a job's minMember from preemption."""

from __future__ import annotations

import re

from scheduler.metrics import SchedulerMetrics
from tests.builders import node, pod, podgroup, priority_class, queue, run, tiers

PREEMPT = tiers("preempt", ["priority", "gang", "conformance"], ["predicates"])


def _cluster(preemptors: int) -> list[dict]:
    objs: list[dict] = [priority_class("low", 10), priority_class("high", 100), queue("q1")]
    for i in range(2):
        objs.append(node(f"n{i}", cpu="2"))
        objs.append(podgroup(f"low{i}", 0, queue="q1", phase="Running", priority_class="low"))
        objs.append(
            pod(
                f"low{i}-0",
                cpu="2",
                group=f"low{i}",
                node_name=f"n{i}",
                phase="Running",
                priority_class="low",
                annotations={"volcano.sh/preemptable": "true"},
            )
        )
    for i in range(preemptors):
        objs.append(podgroup(f"high{i}", 1, queue="q1", priority_class="high"))
        objs.append(pod(f"high{i}-0", cpu="2", group=f"high{i}", priority_class="high"))
    return objs


def _metrics_text(preemptors: int) -> tuple[list[str], str]:
    out = run(PREEMPT, _cluster(preemptors))
    m = SchedulerMetrics()
    for res in out.cycles:
        m.observe_session(res)
    return sorted(out.evictions), m.render().decode()


def test_each_preemptor_job_that_evicts_is_one_transaction() -> None:
    evictions, t = _metrics_text(2)
    assert evictions == ["c1/low0-0", "c1/low1-0"]
    assert 'volcano_eviction_transactions_total{action="preempt"} 2.0' in t
    attempts = re.search(r"^volcano_total_preemption_attempts (\d+)$", t, re.M)
    assert attempts is not None and int(attempts.group(1)) >= 2
    # the victims the plugins allowed on the last node looked at: one pod per node here
    assert "volcano_pod_preemption_victims 1.0" in t


def test_a_session_that_evicts_nothing_counts_no_transaction() -> None:
    evictions, t = _metrics_text(0)
    assert evictions == []
    assert 'volcano_eviction_transactions_total{action="preempt"}' not in t
    assert re.search(r"^volcano_total_preemption_attempts 0$", t, re.M)
