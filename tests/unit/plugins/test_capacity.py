"""capacity with hierarchical queues: borrowing, reclaim, and what a bad queue tree does."""

from __future__ import annotations

from typing import Any

from scheduler.kube.cache import SchedulerCache
from tests.builders import node, pod, podgroup, run

CONF = """\
actions: "enqueue, allocate, backfill, reclaim"
tiers:
- plugins:
  - name: priority
  - name: gang
    enablePreemptable: false
  - name: conformance
- plugins:
  - name: drf
    enablePreemptable: false
  - name: predicates
  - name: capacity
    enableHierarchy: true
  - name: nodeorder
"""


def queue(
    name: str, parent: str = "", deserved: dict | None = None, capability: dict | None = None
) -> dict[str, Any]:
    spec: dict[str, Any] = {"weight": 1, "reclaimable": True}
    if parent:
        spec["parent"] = parent
    if deserved:
        spec["deserved"] = deserved
    if capability:
        spec["capability"] = capability
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": name},
        "spec": spec,
        "status": {"state": "Open"},
    }


def job(name: str, queue_name: str, cpu: str = "1", n: int = 1, running_on: str = "") -> list[dict[str, Any]]:
    phase = "Running" if running_on else "Pending"
    objs: list[dict[str, Any]] = [
        podgroup(
            name, min_member=1, queue=queue_name, phase=phase, min_resources={"cpu": cpu, "memory": "1Gi"}
        )
    ]
    for i in range(n):
        objs.append(pod(f"{name}-{i}", cpu=cpu, group=name, node_name=running_on, phase=phase))
    return objs


def test_a_parent_cycle_names_the_queues_and_other_queues_go_on() -> None:
    objs = [
        node("n1", cpu="4"),
        queue("root"),
        queue("team-a", "root"),
        queue("loop-1", "loop-2"),
        queue("loop-2", "loop-1"),
        *job("good", "team-a"),
        *job("stuck", "loop-1"),
    ]
    out = run(CONF, objs)
    assert "c1/good-0" in out.bindings
    assert "c1/stuck-0" not in out.bindings
    assert "'loop-1'" in out.pending["c1/stuck-0"] and "cycle" in out.pending["c1/stuck-0"]
    assert any("cycle" in w and "'loop-2'" in w for w in out.warnings)


def test_an_unknown_parent_names_the_queue_and_its_children() -> None:
    objs = [
        node("n1", cpu="4"),
        queue("root"),
        queue("orphan", "no-such-queue"),
        queue("orphan-child", "orphan"),
        queue("team-a", "root"),
        *job("good", "team-a"),
        *job("lost", "orphan-child"),
    ]
    out = run(CONF, objs)
    assert "c1/good-0" in out.bindings
    why = out.pending["c1/lost-0"]
    assert "'orphan-child'" in why and "'no-such-queue'" in why
    assert any("queue 'orphan': parent queue 'no-such-queue' does not exist" in w for w in out.warnings)


def test_child_deserved_above_parent_warns_by_name_and_still_schedules() -> None:
    objs = [
        node("n1", cpu="8"),
        queue("root"),
        queue("dept", "root", deserved={"cpu": "2"}),
        queue("team", "dept", deserved={"cpu": "6"}),
        *job("j", "team"),
    ]
    out = run(CONF, objs)
    assert "c1/j-0" in out.bindings
    assert any("queue 'dept'" in w and "children's deserved" in w for w in out.warnings)


def test_a_negative_deserved_skips_that_queue_by_name() -> None:
    objs = [
        node("n1", cpu="4"),
        queue("root"),
        queue("bad", "root", deserved={"cpu": "-2"}),
        queue("team-a", "root"),
        *job("good", "team-a"),
    ]
    out = run(CONF, objs)
    assert "c1/good-0" in out.bindings
    assert any(s.where == "Queue bad" and "spec.deserved.cpu" in s.reason for s in out.skipped), out.skipped


def test_a_bad_update_keeps_the_last_good_queue() -> None:
    cache = SchedulerCache()
    cache.queues.upsert(queue("team", "root", deserved={"cpu": "2"}))
    cache.queues.upsert(queue("team", "root", deserved={"cpu": "-1"}))
    assert cache.state.queues["team"].deserved is not None
    assert cache.state.queues["team"].deserved.milli_cpu == 2000
    assert "Queue team" in cache.skipped


def test_a_leaf_borrows_idle_cpu_then_gives_back_its_siblings_deserved_share() -> None:
    # the walkthrough of Volcano's capacity guide, one level down a tree
    objs = [
        node("n1", cpu="4", memory="16Gi"),
        node("n2", cpu="4", memory="16Gi"),
        queue("root"),
        queue("org", "root", deserved={"cpu": "8", "memory": "32Gi"}),
        queue("q1", "org", deserved={"cpu": "2", "memory": "8Gi"}),
        queue("q2", "org", deserved={"cpu": "6", "memory": "24Gi"}),
    ]
    for i in range(8):
        objs += job(f"a{i}", "q1", running_on=f"n{1 + i // 4}")
    for i in range(8):
        objs += job(f"b{i}", "q2")
    out = run(CONF, objs, cycles=4)
    evicted = {k for k in out.evictions if k.startswith("c1/a")}
    bound_b = {k for k in out.bindings if k.startswith("c1/b")}
    assert len(evicted) == 6 and len(bound_b) == 6


def test_jobs_of_a_parent_queue_are_not_admitted() -> None:
    objs = [node("n1"), queue("root"), queue("dept", "root"), queue("team", "dept"), *job("j", "dept")]
    out = run(CONF, objs)
    assert "not a leaf queue" in out.pending["c1/j-0"]
