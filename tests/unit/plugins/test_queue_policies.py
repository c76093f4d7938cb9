"""sla, resourcequota and pdb as a user meets them, and the configuration checks around them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from scheduler.conf import ConfigError
from scheduler.registry import parse
from tests.builders import node, pod, podgroup, priority_class, queue, run, tiers


def test_capacity_with_proportion_loads_with_a_warning() -> None:
    conf = parse(tiers("enqueue, allocate", ["priority", "gang"], ["proportion", "capacity"]))
    assert any("'capacity' and 'proportion'" in w for w in conf.warnings)


def test_negative_ancestor_reclaim_level_warns_and_counts_as_zero() -> None:
    conf = parse(tiers("allocate", ["capacity"], args={"capacity": {"ancestorReclaimLevel": -1}}))
    assert any("ancestorReclaimLevel" in w and "0 is used" in w for w in conf.warnings)


def test_ancestor_reclaim_level_of_the_wrong_type_is_refused_by_name() -> None:
    with pytest.raises(ConfigError, match="ancestorReclaimLevel"):
        parse(tiers("allocate", ["capacity"], args={"capacity": {"ancestorReclaimLevel": "deep"}}))


def test_unparsable_sla_waiting_time_warns_and_is_ignored() -> None:
    conf = parse(tiers("allocate", ["sla"], args={"sla": {"sla-waiting-time": "soon"}}))
    assert any("sla-waiting-time" in w and "ignored" in w for w in conf.warnings)


def test_check_config_prints_the_plugin_warnings(tmp_path: Path) -> None:
    f = tmp_path / "c.conf"
    f.write_text(tiers("allocate", ["sla"], args={"sla": {"sla-waiting-time": "-1m"}}))
    proc = subprocess.run(
        [sys.executable, "-m", "scheduler", "check-config", str(f)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0
    assert "sla-waiting-time" in proc.stderr and "positive" in proc.stderr


def test_no_plugin_of_this_issue_is_reported_as_not_implemented() -> None:
    conf = parse(tiers("allocate", ["sla", "resourcequota", "pdb", "capacity"]))
    assert not [w for w in conf.warnings if "does not implement" in w]


def _sla_world(annotation: dict[str, str] | None) -> list[dict]:
    late = podgroup("late", queue="default", phase="Inqueue")
    late["metadata"]["creationTimestamp"] = "2024-01-01T00:10:00Z"
    if annotation:
        late["metadata"]["annotations"] = annotation
    early = podgroup("early", queue="default", phase="Inqueue")
    early["metadata"]["creationTimestamp"] = "2024-01-01T00:00:00Z"
    return [node("n1", cpu="1"), early, late, pod("early-0", group="early"), pod("late-0", group="late")]


def test_a_job_with_a_shorter_sla_deadline_goes_first() -> None:
    conf = tiers("allocate", ["sla", "gang"])
    without = run(conf, _sla_world(None))
    assert "c1/early-0" in without.bindings  # jobs without an SLA keep creation order
    with_sla = run(conf, _sla_world({"volcano.sh/sla-waiting-time": "1m"}))
    assert "c1/late-0" in with_sla.bindings and "c1/early-0" not in with_sla.bindings


def test_resource_quota_status_used_counts_against_the_hard_limit() -> None:
    quota = {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "team", "namespace": "c1"},
        "spec": {"hard": {"cpu": "4"}},
        "status": {"hard": {"cpu": "4"}, "used": {"cpu": "3"}},
    }
    objs = [
        node("n1", cpu="8"),
        quota,
        podgroup("big", phase="Pending", min_resources={"cpu": "2"}),
        pod("big-0", cpu="2", group="big"),
        podgroup("small", phase="Pending", min_resources={"cpu": "1"}),
        pod("small-0", cpu="1", group="small"),
    ]
    out = run(tiers("enqueue, allocate", ["gang", "resourcequota"]), objs)
    assert "c1/small-0" in out.bindings
    why = out.pending["c1/big-0"]
    assert "resource quota insufficient (ResourceQuota c1/team)" in why and "limited: {cpu: 4}" in why


def test_pdb_keeps_the_budgeted_pod_and_preempts_elsewhere() -> None:
    budget = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "db", "namespace": "c1"},
        "spec": {"selector": {"matchLabels": {"app": "db"}}},
        "status": {"disruptionsAllowed": 0},
    }
    objs = [
        node("n1", cpu="1"),
        node("n2", cpu="1"),
        priority_class("high", 1000),
        budget,
        queue("default"),
        podgroup("db", phase="Running"),
        pod("db-0", group="db", node_name="n1", phase="Running", labels={"app": "db"}),
        podgroup("batch", phase="Running"),
        pod("batch-0", group="batch", node_name="n2", phase="Running", labels={"app": "batch"}),
        podgroup("urgent", phase="Inqueue", priority_class="high"),
        pod("urgent-0", group="urgent", priority_class="high"),
    ]
    # gang would keep every one-pod gang whole: only priority and pdb choose victims here
    conf = tiers("preempt", ["priority", "gang", "conformance", "pdb"], ["predicates"]).replace(
        "  - name: gang\n", "  - name: gang\n    enablePreemptable: false\n"
    )
    out = run(conf, objs)
    assert out.evictions == ["c1/batch-0"]
    del objs[3]  # without the budget, db-0 (first in victim order) is the one to go
    out = run(conf, objs)
    assert out.evictions == ["c1/db-0"]
    objs.insert(3, budget)
    out = run(conf, objs)
    assert out.evictions == ["c1/batch-0"]
    assert out.pipelined.get("c1/urgent-0") == "n2"
