"""Volcano's shuffle test (pkg/scheduler/actions/shuffle/shuffle_test.go), and shuffle with pdb."""

from __future__ import annotations

from scheduler.actions.shuffle import shuffle
from scheduler.framework.cycle import open_session
from scheduler.model.job import JobInfo
from scheduler.model.node import NodeInfo
from scheduler.model.objects import PodInfo, QueueInfo, TaskInfo, TaskStatus
from scheduler.model.resources import Resource
from scheduler.model.snapshot import Snapshot
from scheduler.registry import parse
from tests.builders import node, pod, podgroup, queue, run

GI = 2**30
LOW, HIGH = 100, 1000


def test_shuffle_select_pods_with_low_priority_and_evict_them() -> None:
    nodes = {n: NodeInfo(n, Resource(4000, 8 * GI, pods=10)) for n in ("node1", "node2")}
    jobs: dict[str, JobInfo] = {}
    placed = [
        ("pod1-1", "node1", "pg1", LOW),
        ("pod1-2", "node1", "pg1", HIGH),
        ("pod1-3", "node1", "pg1", HIGH),
        ("pod2-1", "node1", "pg2", LOW),
        ("pod2-2", "node2", "pg2", HIGH),
        ("pod3-1", "node2", "pg3", LOW),
        ("pod3-2", "node2", "pg3", HIGH),
    ]
    for name, where, group, prio in placed:
        job = jobs.setdefault(f"test/{group}", JobInfo(f"test/{group}", group, "test", min_available=0))
        req = Resource(1000, 2e9)
        t = TaskInfo(PodInfo(f"test-{name}", name, "test"), job.uid, req, req.clone(), TaskStatus.RUNNING)
        t.priority = prio
        t.node_name = where
        nodes[where].add_task(t)
        job.add_task(t)
    snap = Snapshot(nodes=nodes, jobs=jobs, queues={"default": QueueInfo("default")})
    # the Go test's fake plugin (enabledVictim) names the low-priority pods; it sits in pdb's slot
    ssn = open_session(snap, parse('actions: "shuffle"\ntiers:\n- plugins:\n  - name: pdb\n'))
    ssn.add_victim_tasks_fn("pdb", lambda tasks: [t for t in tasks if t.priority == LOW])
    ssn.finish_registration()
    shuffle(ssn)
    evicted = sorted(f"{e.task.namespace}/{e.task.name}" for e in ssn.decisions.evictions)
    assert evicted == ["test/pod1-1", "test/pod2-1", "test/pod3-1"]


def test_shuffle_with_pdb_evicts_the_labelled_pods_no_budget_protects() -> None:
    budget = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "keep", "namespace": "c1"},
        "spec": {"selector": {"matchLabels": {"app": "kept"}}},
        "status": {"disruptionsAllowed": 0},
    }
    objs = [
        queue("default"),
        node("n1"),
        podgroup("pg", 1, phase="Running"),
        pod("kept", group="pg", node_name="n1", phase="Running", labels={"app": "kept"}),
        pod("free", group="pg", node_name="n1", phase="Running", labels={"app": "free"}),
        pod("unlabelled", group="pg", node_name="n1", phase="Running"),
        budget,
    ]
    out = run('actions: "shuffle"\ntiers:\n- plugins:\n  - name: pdb\n', objs)
    assert out.evictions == ["c1/free"]
