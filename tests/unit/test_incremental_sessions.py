"""Sessions on views kept from the previous snapshot decide as sessions on fresh views would.

The snapshot hands out again a job or node view the last session left untouched, and drf and
proportion keep their per-job and per-queue sums between sessions. These tests change the cluster
and the views the way sessions do, and compare with what a from-scratch snapshot gives.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from scheduler.conf import SchedulerConfiguration
from scheduler.framework.cycle import close_session, open_session, run_actions
from scheduler.framework.nodesums import walk_totals
from scheduler.framework.session import Session, SessionOptions
from scheduler.framework.statement import Statement
from scheduler.model.cluster import ClusterState
from scheduler.model.job import JobInfo
from scheduler.model.node import NodeInfo, has_pod_affinity
from scheduler.model.objects import TaskStatus
from scheduler.model.snapshot import Snapshot
from scheduler.plugins.k8s.podindex import session_pods
from scheduler.registry import default_configuration, parse
from tests.builders import node, pod, podgroup, priority_class, queue, tiers

CONF = default_configuration()
# the other queue-sharing plugin, which keeps its sums through the same helper
CAPACITY = parse(
    tiers(
        "enqueue, allocate, backfill", ["priority", "gang"], ["overcommit", "drf", "predicates", "capacity"]
    )
)
# capacity over a queue tree: its settled tree is kept too while the queues stay the same
CAPACITY_TREE = parse(
    tiers(
        "enqueue, allocate, backfill", ["priority", "gang"], ["overcommit", "drf", "predicates", "capacity"]
    ).replace("  - name: capacity\n", "  - name: capacity\n    enableHierarchy: true\n")
)


def _state(nodes: int = 4, jobs: int = 6) -> ClusterState:
    state = ClusterState()
    state.apply_queue(queue("default"))
    state.apply_queue(queue("q2", weight=2))
    state.apply_priority_class(priority_class("hi", 100))
    state.apply_priority_class(priority_class("lo", 1))
    for i in range(nodes):
        state.apply_node(node(f"n{i}", cpu="8", memory="16Gi"))
    for j in range(jobs):
        q = "default" if j % 2 else "q2"
        state.apply_podgroup(podgroup(f"run{j}", min_member=2, queue=q, phase="Running"))
        for k in range(3):
            state.apply_pod(
                pod(f"run{j}-{k}", cpu="1", group=f"run{j}", node_name=f"n{(j + k) % nodes}", phase="Running")
            )
    return state


def _job_fields(j: JobInfo) -> tuple[Any, ...]:
    return (
        j.uid,
        j.queue,
        j.min_available,
        {uid: (t.status, t.node_name) for uid, t in j.tasks.items()},
        {s: sorted(d) for s, d in j.task_status_index.items() if d},
        (j.allocated.milli_cpu, j.allocated.memory),
        (j.total_request.milli_cpu, j.total_request.memory),
        (j.pending_request.milli_cpu, j.pending_request.memory),
        j.pod_group_status.to_manifest(),
        j.fit_error,
        dict(j.nodes_fit_errors),
    )


def _node_fields(n: NodeInfo) -> tuple[Any, ...]:
    return (
        n.name,
        {uid: t.status for uid, t in n.tasks.items()},
        (n.idle.milli_cpu, n.idle.memory),
        (n.used.milli_cpu, n.used.memory),
        (n.releasing.milli_cpu, n.releasing.memory),
        (n.pipelined.milli_cpu, n.pipelined.memory),
        dict(n.used_ports),
        n.devices,
    )


def _assert_like_fresh(state: ClusterState, snap: Snapshot) -> None:
    """Every view of `snap` reads as a fresh view of the cluster's object would."""
    assert list(snap.jobs) == [u for u in state.jobs if u in snap.jobs]
    for uid, view in snap.jobs.items():
        assert _job_fields(view) == _job_fields(state.jobs[uid].session_view()), uid
    assert list(snap.nodes) == list(state.nodes)
    for name, view in snap.nodes.items():
        assert _node_fields(view) == _node_fields(state.nodes[name].session_view()), name
    # what the snapshot tells of the nodes without a walk is what a walk finds
    assert snap.node_list is not None and len(snap.node_list) == len(snap.nodes)
    assert all(a is b for a, b in zip(snap.node_list, snap.nodes.values(), strict=True))
    assert snap.node_versions == NodeInfo.view_versions(snap.node_list)
    assert snap.node_index == {name: i for i, name in enumerate(snap.nodes)}
    assert snap.has_taints == any(n.taints for n in snap.node_list)
    named = {j.queue for j in snap.jobs.values()} & snap.queues.keys()
    assert snap.queues_with_jobs is not None and snap.queues_with_jobs >= len(named)


def _open(snap: Snapshot, conf: SchedulerConfiguration = CONF) -> Session:
    return open_session(snap, conf, SessionOptions(), random.Random(0))


def test_untouched_views_are_handed_out_again() -> None:
    state = _state()
    first = state.snapshot()
    close_session(_open(first))  # the first session sees every job as changed and writes statuses
    second = state.snapshot()
    close_session(_open(second))
    third = state.snapshot()
    assert all(third.jobs[u] is second.jobs[u] for u in third.jobs)
    assert all(third.nodes[n] is second.nodes[n] for n in third.nodes)
    assert third.job_changes is not None and not third.job_changes.fresh
    _assert_like_fresh(state, third)
    # a session writes fit errors and the status of a job it was told is not quiet, without
    # changing the job's tasks: a pod no node can hold stays pending, with its reasons
    state.apply_podgroup(podgroup("stuck", min_member=1, queue="default", phase="Inqueue"))
    state.apply_pod(pod("stuck-0", cpu="100", group="stuck"))
    state.snapshot()
    stuck = state.snapshot()
    ssn = _open(stuck)
    assert "c1/stuck" in [j.uid for j in ssn.unquiet_jobs()]
    run_actions(ssn)
    res = close_session(ssn)
    assert stuck.jobs["c1/stuck"].nodes_fit_errors and any(
        c.task.name == "stuck-0" for c in res.pod_conditions
    )
    stuck.nodes["n0"].set_device("gpu", object())
    after = state.snapshot()
    assert after.job_changes is not None and "c1/stuck" in after.job_changes.fresh
    assert after.jobs["c1/stuck"] is not stuck.jobs["c1/stuck"]
    assert after.nodes["n0"] is stuck.nodes["n0"]  # device ledgers are rebuilt by every session
    _assert_like_fresh(state, after)


def test_the_session_after_the_first_keeps_the_views_whose_status_it_recomputed() -> None:
    """The first session after a restart sees every job as changed and recomputes every status
    (a new condition id on each); the next snapshot hands the same views out again, their status
    put back to the cluster's, instead of rebuilding every view (seconds at 75,000 jobs)."""
    state = _state()
    first = state.snapshot()
    res = close_session(_open(first))
    assert res.podgroup_status and all(
        not first.jobs[u].pod_group_status.same_as(state.jobs[u].pod_group_status)
        for u in res.podgroup_status
    )
    second = state.snapshot()
    assert all(second.jobs[u] is first.jobs[u] for u in second.jobs)
    assert second.job_changes is not None and not second.job_changes.fresh
    _assert_like_fresh(state, second)


def test_allocate_then_discard_leaves_the_next_view_correct() -> None:
    state = _state()
    state.apply_podgroup(podgroup("new", min_member=2, queue="default", phase="Inqueue"))
    for k in range(2):
        state.apply_pod(pod(f"new-{k}", cpu="1", group="new"))
    state.snapshot()
    snap = state.snapshot()
    ssn = _open(snap)
    job = ssn.jobs["c1/new"]
    stmt = Statement(ssn)
    on_n0 = ssn.nodes["n0"].pod_count()
    for t, n in zip(job.tasks_in(TaskStatus.PENDING), ("n0", "n1"), strict=True):
        stmt.allocate(t, ssn.nodes[n])
    assert job.count(TaskStatus.ALLOCATED) == 2 and ssn.nodes["n0"].pod_count() == on_n0 + 1
    stmt.discard()
    job.fit_error = "tried and gave up"
    nxt = state.snapshot()
    assert nxt.jobs["c1/new"] is not job and nxt.nodes["n0"] is not ssn.nodes["n0"]
    _assert_like_fresh(state, nxt)


def test_pipeline_and_evict_in_a_session_do_not_leak_into_the_next() -> None:
    state = _state()
    state.apply_podgroup(podgroup("wait", min_member=1, queue="q2", phase="Inqueue"))
    state.apply_pod(pod("wait-0", cpu="2", group="wait"))
    state.snapshot()
    snap = state.snapshot()
    ssn = _open(snap)
    victim = next(iter(ssn.jobs["c1/run0"].tasks_in(TaskStatus.RUNNING)))
    stmt = Statement(ssn)
    stmt.evict(victim, "make room")
    stmt.pipeline(next(iter(ssn.jobs["c1/wait"].tasks_in(TaskStatus.PENDING))), ssn.nodes[victim.node_name])
    stmt.commit()  # the eviction is decided, but nothing is carried out: the cluster is unchanged
    # the quiet running job whose task the session evicted gets its status recomputed
    assert "c1/run0" in [j.uid for j in ssn.active_jobs()]
    assert [j.uid for j in ssn.active_jobs()] == _all_active(ssn, set(snap.dirty_jobs or ()))
    close_session(ssn)
    nxt = state.snapshot()
    assert nxt.jobs["c1/run0"].count(TaskStatus.RELEASING) == 0
    assert nxt.nodes[victim.node_name].pipelined.milli_cpu == 0
    _assert_like_fresh(state, nxt)


def test_a_change_between_sessions_is_seen() -> None:
    state = _state()
    state.snapshot()
    before = state.snapshot()
    idle = before.nodes["n3"].idle.milli_cpu
    state.apply_pod(pod("run1-3", cpu="2", group="run1", node_name="n3", phase="Running"))
    state.remove_pod("c1", "run2-0")
    after = state.snapshot()
    assert after.nodes["n3"].idle.milli_cpu == idle - 2000
    assert len(after.jobs["c1/run1"].tasks) == 4 and len(after.jobs["c1/run2"].tasks) == 2
    assert after.job_changes is not None and {"c1/run1", "c1/run2"} <= after.job_changes.fresh
    state.remove_podgroup("c1", "run3")
    state.remove_pod("c1", "run3-0")
    later = state.snapshot()
    assert "c1/run3" not in later.jobs
    assert later.job_changes is not None and later.job_changes.gone == {"c1/run3"}
    state.apply_node(node("n3", cpu="16", memory="16Gi"))
    last = state.snapshot()
    assert last.nodes["n3"].allocatable.milli_cpu == 16000
    _assert_like_fresh(state, last)


def _sums(ssn: Session) -> tuple[Any, ...]:
    attrs = (ssn.plugins.get("proportion") or ssn.plugins["capacity"]).attrs
    per_queue = {
        name: tuple(
            (r.milli_cpu, r.memory, r.pods, dict(r.scalars))
            for r in (a.allocated, a.request, a.inqueue, a.elastic, a.deserved)
        )
        for name, a in attrs.items()
    }
    priorities = {u: j.priority for u, j in ssn.jobs.items()}
    return list(attrs), per_queue, dict(ssn.plugins["drf"].shares), priorities


def _tree_fields(ssn: Session) -> tuple[Any, ...]:
    """What capacity's tree holds besides the sums: limits, places in the tree, shares."""
    attrs = ssn.plugins["capacity"].attrs

    def res(r: Any) -> tuple[Any, ...]:
        return (r.milli_cpu, r.memory, r.pods, dict(r.scalars))

    return tuple(
        (
            n,
            res(a.capability),
            res(a.real_capability),
            res(a.guarantee),
            tuple(a.ancestors),
            tuple(a.children),
            a.share,
        )
        for n, a in attrs.items()
    )


def _queue_change(state: ClusterState, rng: random.Random, serial: int) -> None:
    """A queue's deserved, guarantee or parent changes, or a new queue appears under one."""
    name = rng.choice(["default", "q2", f"team{serial % 3}"])
    spec: dict[str, Any] = {"weight": rng.randint(1, 3)}
    if rng.random() < 0.7:
        spec["deserved"] = {"cpu": str(rng.randint(2, 20)), "memory": f"{rng.randint(4, 40)}Gi"}
    if rng.random() < 0.3:
        spec["guarantee"] = {"resource": {"cpu": str(rng.randint(0, 2))}}
    if name != "team0" and rng.random() < 0.5:
        spec["parent"] = "team0"
    state.apply_queue(
        {"kind": "Queue", "metadata": {"name": name}, "spec": spec, "status": {"state": "Open"}}
    )


def _from_scratch(state: ClusterState, conf: SchedulerConfiguration) -> Session:
    snap = Snapshot(
        nodes={n: v.session_view() for n, v in state.nodes.items()},
        jobs={u: j.session_view() for u, j in state.jobs.items()},
        queues=dict(state.queues),
        priority_classes=dict(state.priority_classes),
    )
    return _open(snap, conf)


def _decides_as_scratch(
    snap: Snapshot,
    state: ClusterState,
    conf: SchedulerConfiguration,
    label: object,
    tree: bool = False,
    answers: bool = False,
) -> Session:
    """The session opened on `snap` (built on what the last one kept) against one built from
    scratch on the same cluster: the same sums (with `tree`, the same queue tree; with `answers`,
    the same capacity answers) and the same binds. Returns the session, its actions run."""
    ssn = _open(snap, conf)
    scratch = _from_scratch(state, conf)
    assert _sums(ssn) == _sums(scratch), label
    if tree:
        assert _tree_fields(ssn) == _tree_fields(scratch), label
    if answers:
        assert _capacity_answers(ssn) == _capacity_answers(scratch), label
    run_actions(ssn)
    run_actions(scratch)
    assert [(t.key, t.node_name) for t in ssn.decisions.binds] == [
        (t.key, t.node_name) for t in scratch.decisions.binds
    ], label
    return ssn


def _random_change(state: ClusterState, rng: random.Random, serial: int) -> None:
    jobs = sorted(state.jobs)
    pick = rng.random()
    if pick < 0.3:
        j = rng.choice(jobs)
        state.apply_pod(
            pod(
                f"x{serial}",
                cpu=str(rng.randint(1, 3)),
                memory=f"{rng.randint(1, 4)}Gi",
                group=j.split("/")[1],
            )
        )
    elif pick < 0.5:
        pending = [t for t in state.tasks.values() if t.status == TaskStatus.PENDING]
        if pending:
            t = rng.choice(pending)
            state.assume_bound(t.key, f"n{rng.randrange(4)}", {})
    elif pick < 0.65:
        t = rng.choice(sorted(state.tasks.values(), key=lambda t: t.key))
        state.remove_pod(t.namespace, t.name)
    elif pick < 0.8:
        name = f"g{serial}"
        phase = rng.choice(["Pending", "Inqueue", "Running"])
        state.apply_podgroup(
            podgroup(name, min_member=rng.randint(1, 3), queue=rng.choice(["default", "q2"]), phase=phase,
                     min_resources={"cpu": str(rng.randint(1, 4)), "memory": "2Gi"},
                     priority_class=rng.choice(["", "hi", "lo"]))
        )  # fmt: skip
        for k in range(rng.randint(0, 3)):
            running = rng.random() < 0.5
            state.apply_pod(
                pod(f"{name}-{k}", cpu="1", group=name, node_name=f"n{k}" if running else "",
                    phase="Running" if running else "Pending")
            )  # fmt: skip
    elif pick < 0.85:
        state.apply_priority_class(priority_class(rng.choice(["hi", "lo"]), rng.randint(0, 200)))
    else:
        j = state.jobs[rng.choice(jobs)]
        if j.uid not in state.implicit_jobs:
            state.apply_podgroup(podgroup(j.name, min_member=j.min_available, queue=j.queue, phase="Running"))


def _all_active(ssn: Session, dirty: set[str]) -> list[str]:
    """What `active_jobs` is meant to be, by a walk over every job."""
    return [j.uid for j in ssn.jobs.values() if j.uid in dirty or not j._shared or not j.is_quiet()]


@pytest.mark.parametrize(
    "conf", [CONF, CAPACITY, CAPACITY_TREE], ids=["proportion", "capacity", "capacity-tree"]
)
def test_kept_sums_and_decisions_equal_a_from_scratch_session_after_random_changes(
    conf: SchedulerConfiguration,
) -> None:
    tree = conf is CAPACITY_TREE
    rng = random.Random(20261123)
    plugin = (
        "proportion" if any(p.name == "proportion" for t in conf.tiers for p in t.plugins) else "capacity"
    )
    state = _state()
    kept_rounds = 0
    for serial in range(60):
        for _ in range(rng.randint(0, 3)):
            _random_change(state, rng, serial)
        if tree and rng.random() < 0.25:
            _queue_change(state, rng, serial)
        snap = state.snapshot()
        _assert_like_fresh(state, snap)
        waiting = any(j.task_status_index.get(TaskStatus.PENDING) for j in state.jobs.values())
        assert state.has_pending_tasks() == waiting, serial
        dirty = set(snap.dirty_jobs or ())
        ch = snap.job_changes
        assert ch is not None
        kept_rounds += ch.carry.get(plugin, (0, None))[0] == ch.serial - 1
        ssn = _decides_as_scratch(snap, state, conf, serial, tree)
        assert [j.uid for j in ssn.active_jobs()] == _all_active(ssn, dirty), serial
        if rng.random() < 0.5:
            res = close_session(ssn)  # or dropped unclosed, as a failed session would be
            for b in res.binds[: rng.randint(0, len(res.binds))]:
                state.assume_bound(b.task.key, b.node, b.annotations)
    assert kept_rounds > 20  # the kept state was built on, not recomputed every time


def _tree_queue(name: str, parent: str, cpu: int, guarantee: int = 0) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "weight": 1,
        "reclaimable": True,
        "parent": parent,
        "deserved": {"cpu": str(cpu), "memory": f"{2 * cpu}Gi"},
    }
    if guarantee:
        spec["guarantee"] = {"resource": {"cpu": str(guarantee)}}
    return {"kind": "Queue", "metadata": {"name": name}, "spec": spec, "status": {"state": "Open"}}


def _tree_job(
    state: ClusterState, name: str, queue_name: str, pods: int, cpu: int, node_at: int = -1
) -> None:
    """A gang in `queue_name`: running on nodes from `node_at` on, or pending when it is -1."""
    running = node_at >= 0
    state.apply_podgroup(
        podgroup(name, min_member=1, queue=queue_name, phase="Running" if running else "Pending",
                 min_resources={"cpu": str(cpu), "memory": f"{cpu}Gi"})
    )  # fmt: skip
    for k in range(pods):
        state.apply_pod(
            pod(f"{name}-{k}", cpu=str(cpu), memory=f"{cpu}Gi", group=name,
                node_name=f"n{(node_at + k) % 4}" if running else "", phase="Running" if running else "Pending")
        )  # fmt: skip


def _capacity_answers(ssn: Session) -> tuple[Any, ...]:
    """What capacity answers the actions with, asked for every queue pair and pending pod."""
    queues = sorted(ssn.queues.values(), key=lambda q: q.name)
    order = [[ssn.queue_compare(a, b) for b in queues] for a in queues]
    running = sorted(
        (t for j in ssn.jobs.values() for t in j.task_status_index.get(TaskStatus.RUNNING, {}).values()),
        key=lambda t: t.key,
    )
    per_task = []
    for j in ssn.jobs.values():
        for t in j.task_status_index.get(TaskStatus.PENDING, {}).values():
            q = ssn.queues[j.queue]
            victims = [v.key for v in ssn.reclaimable(t, running)]
            per_task.append((t.key, ssn.allocatable(q, t), ssn.preemptive(q, t), victims))
    admitted = [(j.uid, ssn.job_enqueueable(j)) for j in ssn.jobs.values() if j.is_pending()]
    return order, per_task, admitted


def test_capacity_tree_after_pods_finish_go_and_jobs_move_answers_as_a_fresh_snapshot() -> None:
    """The kept per-queue sums and the kept tree of capacity (hierarchical) after each kind of
    change that takes something off a queue: a pod finishes, a pod is deleted, a job moves to a
    leaf of another branch, a job is deleted, a queue moves under another parent. Each session
    built on the previous one gives the amounts, limits, shares and answers (queue order,
    allocatable, preemptive, reclaimable victims, enqueueable) a from-scratch session gives."""
    state = ClusterState()
    for q in (
        _tree_queue("root", "", 32),
        _tree_queue("team-a", "root", 16),
        _tree_queue("team-b", "root", 8, guarantee=2),
        _tree_queue("a1", "team-a", 8),
        _tree_queue("a2", "team-a", 8, guarantee=1),
        _tree_queue("b1", "team-b", 4),
        _tree_queue("b2", "team-b", 4),
    ):
        state.apply_queue(q)
    for i in range(4):
        state.apply_node(node(f"n{i}", cpu="8", memory="16Gi"))
    _tree_job(state, "ra1", "a1", 4, 2, node_at=0)
    _tree_job(state, "ra2", "a2", 3, 2, node_at=1)
    _tree_job(state, "rb1", "b1", 3, 1, node_at=2)
    _tree_job(state, "rb2", "b2", 2, 2, node_at=3)
    _tree_job(state, "wait-a2", "a2", 1, 3)
    _tree_job(state, "wait-b1", "b1", 2, 2)
    for leaf in ("a1", "a2", "b1", "b2"):  # pods no node fits: asked about every period
        _tree_job(state, f"big-{leaf}", leaf, 1, 9)

    def finish(name: str) -> None:
        t = state.tasks[f"c1/{name}"]
        state.apply_pod(pod(name, cpu="2", memory="2Gi", group=t.job.split("/")[1], node_name=t.node_name,
                            phase="Succeeded"))  # fmt: skip

    def move(job: str, to: str) -> None:
        state.apply_podgroup(podgroup(job, min_member=1, queue=to, phase="Running",
                                      min_resources={"cpu": "2", "memory": "2Gi"}))  # fmt: skip
        assert state.jobs[f"c1/{job}"].queue == to

    def admit(job: str, cpu: int) -> None:  # Inqueue: its minResources count as the queue's inqueue
        state.apply_podgroup(podgroup(job, min_member=1, queue=state.jobs[f"c1/{job}"].queue, phase="Inqueue",
                                      min_resources={"cpu": str(cpu), "memory": f"{cpu}Gi"}))  # fmt: skip

    def drop(job: str) -> None:
        for t in [t for t in state.tasks.values() if t.job == f"c1/{job}"]:
            state.remove_pod(t.namespace, t.name)
        state.remove_podgroup("c1", job)

    changes = [
        lambda: None,
        lambda: finish("ra1-0"),
        lambda: admit("wait-b1", 4),
        lambda: state.remove_pod("c1", "rb1-1"),
        lambda: move("ra2", "b2"),  # from team-a's a2 to team-b's b2: both branches change
        lambda: drop("rb2"),
        lambda: _tree_job(state, "late-b2", "b2", 2, 2),
        lambda: finish("ra1-1"),
        lambda: drop("wait-b1"),  # an admitted job's reservation goes with it
        lambda: state.apply_queue(_tree_queue("b2", "team-a", 4)),  # the tree's shape changes
        lambda: move("ra2", "a1"),
        lambda: None,
    ]
    kept = 0
    for step, change in enumerate(changes):
        change()
        snap = state.snapshot()
        ch = snap.job_changes
        assert ch is not None
        kept += ch.carry.get("capacity", (0, None))[0] == ch.serial - 1
        ssn = _decides_as_scratch(snap, state, CAPACITY_TREE, step, tree=True, answers=True)
        for b in close_session(ssn).binds[:1]:  # one placement a period reaches the cluster
            state.assume_bound(b.task.key, b.node, b.annotations)
    assert kept >= len(changes) - 1  # every session after the first built on the kept sums


def _affinity_by_scan(nodes: list[NodeInfo]) -> list[tuple[str, str]]:
    """Every pod with a pod (anti-)affinity term, found by walking every pod of every node."""
    return [(uid, n.name) for n in nodes for uid, t in n.tasks.items() if has_pod_affinity(t.pod)]


def test_the_nodes_know_their_affinity_pods_across_sessions_and_changes() -> None:
    """Inter-pod affinity reads the pods with affinity terms from the nodes that hold them; the
    nodes' lists follow the cluster and the session's placements as a walk over every pod would."""
    term = {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": "kubernetes.io/hostname"}
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    state = _state()
    state.apply_podgroup(podgroup("aff", min_member=1, queue="default", phase="Running"))
    state.apply_pod(pod("aff-0", group="aff", node_name="n1", phase="Running", spec={"affinity": anti}))
    state.apply_podgroup(podgroup("new", min_member=1, queue="default", phase="Inqueue"))
    state.apply_pod(pod("new-0", group="new", labels={"app": "y"}, spec={"affinity": anti}))
    for step in range(3):
        ssn = _open(state.snapshot())
        seen = [(p.uid, n) for p, n in session_pods(ssn).affinity_pods()]
        assert seen == _affinity_by_scan(ssn.node_list)
        run_actions(ssn)  # places new-0: the session's own node view gains it, the cluster's not
        seen = [(p.uid, n) for p, n in session_pods(ssn).affinity_pods()]
        assert len(seen) == len(_affinity_by_scan(list(state.nodes.values()))) + 1
        assert sorted(seen) == sorted(_affinity_by_scan(ssn.node_list))
        close_session(ssn)
        on = {n.name: sorted(n.affinity_tasks) for n in state.nodes.values() if n.affinity_tasks}
        assert on == {n: [u for u, m in _affinity_by_scan(list(state.nodes.values())) if m == n] for n in on}
        assert len(_affinity_by_scan(list(state.nodes.values()))) == sum(map(len, on.values()))
        if step == 0:
            state.remove_pod("c1", "aff-0")
        elif step == 1:
            state.apply_pod(
                pod("aff-1", group="aff", node_name="n2", phase="Running", spec={"affinity": anti})
            )
    assert [n.name for n in state.nodes.values() if n.affinity_tasks] == ["n2"]


def _fields(r: Any) -> tuple[Any, ...]:
    return (r.milli_cpu, r.memory, r.pods, r.scalars, list(r.scalars))


def _walked_queue_order(ssn: Session) -> list[str]:
    """Session.queues_in_job_order by a walk over every job."""
    out: list[str] = []
    for job in ssn.jobs.values():
        if job.queue in ssn.queues and job.queue not in out:
            out.append(job.queue)
    return out


def test_node_views_follow_node_changes_and_sessions_without_a_walk() -> None:
    """The snapshot looks again only at nodes that changed and at views a session changed (placed
    on, gave device ledgers); every other view is handed out again. After random node updates,
    arrivals and departures, binds and sessions, every snapshot still reads as a fresh one, the
    nodes keep their places when updated (as Volcano's NodeList keeps them), and a session's
    versions at open and close are what a walk over its views gives."""
    rng = random.Random(20261127)
    state = _state(nodes=6, jobs=4)
    state.apply_queue(queue("empty"))  # a queue no job names: the order walk must still stop
    serial = 0
    prev: Snapshot | None = None
    for serial in range(80):
        pick = rng.random()
        names = list(state.nodes)
        if pick < 0.15:
            name = rng.choice(names)
            taints = [{"key": "k", "value": "v", "effect": "NoSchedule"}] if rng.random() < 0.3 else None
            state.apply_node(node(name, cpu=str(rng.choice((8, 16))), memory="16Gi", taints=taints))
            assert list(state.nodes) == names  # an update keeps the node's place
        elif pick < 0.22:
            state.apply_node(node(f"x{serial}", cpu="8", memory="16Gi"))
        elif pick < 0.27 and len(names) > 3:
            state.remove_node(rng.choice(names))
        elif pick < 0.6:
            _random_change(state, rng, serial)
        snap = state.snapshot()
        _assert_like_fresh(state, snap)
        if prev is not None and pick >= 0.27:
            # nothing joined or left: views of nodes untouched since are the same objects
            assert snap.node_index is prev.node_index
        ssn = _open(snap)
        assert ssn.open_versions() == NodeInfo.view_versions(ssn.node_list)
        assert [q.name for q in ssn.queues_in_job_order()] == _walked_queue_order(ssn)
        walked = walk_totals(ssn.node_list)
        assert _fields(ssn.total_resource) == _fields(walked[0]), serial
        assert _fields(ssn.used_total()) == _fields(walked[1]), serial
        scratch = _from_scratch(state, CONF)
        run_actions(ssn)
        run_actions(scratch)
        assert [(t.key, t.node_name) for t in ssn.decisions.binds] == [
            (t.key, t.node_name) for t in scratch.decisions.binds
        ], serial
        if rng.random() < 0.3:
            ssn.node_list[rng.randrange(len(ssn.node_list))].set_device("gpu", object())
        assert ssn.closing_versions() == NodeInfo.view_versions(ssn.node_list, changed_ok=True)
        if rng.random() < 0.7:
            for b in close_session(ssn).binds:
                state.assume_bound(b.task.key, b.node, b.annotations)
        prev = snap
    last = state.snapshot()
    again = state.snapshot()  # nothing changed in between: the very same map and lists
    assert again.nodes is last.nodes and again.node_list is last.node_list
    assert again.node_versions is last.node_versions and again.jobs is last.jobs
    _assert_like_fresh(state, again)


def test_a_snapshot_never_changes_a_map_it_handed_out() -> None:
    """A closed session may still be read (the web view, explanations) while the next snapshot
    is taken: that snapshot makes new maps for what changed instead of changing the old ones."""
    state = _state()
    first = state.snapshot()
    close_session(_open(first))
    jobs, nodes = dict(first.jobs), dict(first.nodes)
    order = list(first.node_list or ())
    state.apply_podgroup(podgroup("late", min_member=1, queue="default", phase="Inqueue"))
    state.apply_pod(pod("late-0", cpu="1", group="late"))
    state.remove_pod("c1", "run0-0")
    ssn = _open(state.snapshot())
    run_actions(ssn)
    close_session(ssn)
    state.snapshot()
    assert first.jobs == jobs and first.nodes == nodes and first.node_list == order
