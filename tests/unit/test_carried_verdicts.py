"""Allocate's refusals kept from one session to the next change no decision and no message.

A pod that fits nowhere is answered from the last session's refusals on the nodes that did not
change (framework/placement.py). These tests run the same cluster history with the carry on and
off and compare what a user sees: binds, pipelined pods, pod conditions and PodGroup statuses.
"""

from __future__ import annotations

import random
from typing import Any

from scheduler.conf import SchedulerConfiguration
from scheduler.framework.cycle import SessionResult, run_session
from scheduler.framework.fiterrors import FitErrors
from scheduler.framework.placement import CARRY
from scheduler.framework.session import SessionOptions
from scheduler.model.cluster import ClusterState
from scheduler.model.objects import TaskStatus
from scheduler.registry import default_configuration, parse
from tests.builders import node, pod, podgroup, priority_class, queue, tiers

CONF = default_configuration()
# without predicates the selector misfit fits: changing the configuration drops the kept refusals
OTHER = parse(tiers("enqueue, allocate, backfill", ["priority", "gang"], ["drf", "binpack"]))
NODES = 6


def _state() -> ClusterState:
    state = ClusterState()
    state.apply_queue(queue("default"))
    state.apply_namespace({"metadata": {"name": "c1", "labels": {"team": "a"}}})
    for i in range(NODES):
        state.apply_node(node(f"n{i}", cpu="8", memory="16Gi", labels={"zone": f"z{i % 2}"}))
    for k in range(NODES * 2):
        state.apply_podgroup(podgroup(f"run{k}", phase="Running"))
        state.apply_pod(
            pod(f"run{k}-0", cpu="1", group=f"run{k}", node_name=f"n{k % NODES}", phase="Running")
        )
    _misfits(state, 0)
    return state


def _misfits(state: ClusterState, serial: int) -> None:
    """Pods that fit no node as the cluster starts: too big, and a selector no node matches."""
    state.apply_podgroup(podgroup(f"big{serial}"))
    state.apply_pod(pod(f"big{serial}-0", cpu="12", group=f"big{serial}"))
    state.apply_podgroup(podgroup(f"sel{serial}"))
    state.apply_pod(pod(f"sel{serial}-0", cpu="1", group=f"sel{serial}", selector={"zone": "z9"}))


def _random_change(state: ClusterState, rng: random.Random, serial: int) -> None:
    pick = rng.random()
    name = f"n{rng.randrange(NODES)}"
    if pick < 0.25:  # a running pod arrives on or leaves a node
        if rng.random() < 0.5:
            state.apply_pod(pod(f"x{serial}", cpu=str(rng.randint(1, 4)), node_name=name, phase="Running"))
        else:
            on = sorted(t.key for t in state.tasks.values() if t.node_name)
            if on:
                ns, pname = rng.choice(on).split("/")
                state.remove_pod(ns, pname)
    elif pick < 0.45:  # a node changes: bigger (the big pod may fit), relabelled, tainted, gone, back
        how = rng.random()
        if how < 0.3:
            state.apply_node(node(name, cpu=rng.choice(["8", "16"]), memory="16Gi", labels={"zone": "z0"}))
        elif how < 0.6:
            state.apply_node(node(name, cpu="8", memory="16Gi", labels={"zone": rng.choice(["z1", "z9"])}))
        elif how < 0.8:
            taints = [{"key": "gpu", "value": "true", "effect": "NoSchedule"}]
            state.apply_node(node(name, cpu="8", memory="16Gi", taints=taints))
        elif len(state.nodes) > 2:
            state.remove_node(name)
        else:
            state.apply_node(node(name, cpu="8", memory="16Gi"))
    elif pick < 0.6:  # pods that fit, in gangs
        g = f"g{serial}"
        size = rng.randint(1, 3)
        state.apply_podgroup(podgroup(g, min_member=size))
        for k in range(size):
            state.apply_pod(pod(f"{g}-{k}", cpu=str(rng.randint(1, 6)), group=g))
    elif pick < 0.75:
        _misfits(state, serial)
    elif pick < 0.8:  # a misfit goes away
        pending = sorted(t.key for t in state.tasks.values() if t.status == TaskStatus.PENDING)
        if pending:
            ns, pname = rng.choice(pending).split("/")
            state.remove_pod(ns, pname)
    elif pick < 0.9:
        state.apply_namespace({"metadata": {"name": "c1", "labels": {"team": rng.choice(["a", "b"])}}})
    else:
        state.apply_configmap(
            {"metadata": {"name": "cfg", "namespace": "kube-system"}, "data": {"k": str(serial)}}
        )


def _status(manifest: dict[str, Any]) -> dict[str, Any]:
    """A PodGroup status without what differs between any two sessions (a fresh transition id)."""
    conds = [{k: v for k, v in c.items() if k != "transitionID"} for c in manifest.get("conditions", [])]
    return {**manifest, "conditions": conds}


def _node_errors(res: SessionResult) -> dict[str, list[tuple[str, list[str]]]]:
    """Each task's per-node reasons, in the order they were recorded (the explain view's)."""
    return {
        uid: list(fe.nodes.items())
        for job in res.jobs.values()
        for uid, fe in sorted(job.nodes_fit_errors.items())
        if isinstance(fe, FitErrors)
    }


def _seen(res: SessionResult) -> tuple[Any, ...]:
    return (
        _node_errors(res),
        [(b.task.key, b.node) for b in res.binds],
        dict(res.pipelined),
        sorted((c.task.key, c.reason, c.message, c.nominated_node) for c in res.pod_conditions),
        {uid: _status(st.to_manifest()) for uid, st in res.podgroup_status.items()},
        sorted(res.podgroup_changed),
    )


def _session(state: ClusterState, conf: SchedulerConfiguration, carry: bool, serial: int) -> SessionResult:
    opts = SessionOptions(deterministic=True, carry_placement=carry)
    return run_session(state.snapshot(), conf, opts, random.Random(serial), now=1000.0 + serial)


def test_carried_refusals_decide_and_explain_as_a_full_recheck() -> None:
    rng = random.Random(20261123)
    on, off = _state(), _state()
    carried_rounds = 0
    for serial in range(150):
        # idle periods (nothing changed) are what the carry is for: a good part of the rounds
        changes = [] if rng.random() < 0.4 else [rng.random() for _ in range(rng.randint(1, 2))]
        for seed in changes:
            _random_change(on, random.Random(seed), serial)
            _random_change(off, random.Random(seed), serial)
        conf = OTHER if rng.random() < 0.1 else CONF
        before = on._carry.get(CARRY)
        got_on = _session(on, conf, True, serial)
        got_off = _session(off, conf, False, serial)
        carried_rounds += before is not None and before[0] == on._snapshots - 1
        assert _seen(got_on) == _seen(got_off), serial
        bound = rng.randint(0, len(got_on.binds))
        for res, state in ((got_on, on), (got_off, off)):
            for b in res.binds[:bound]:
                state.assume_bound(b.task.key, b.node, b.annotations)
    assert carried_rounds > 50  # the refusals were built on, not recomputed every time


def test_a_node_that_now_fits_the_misfit_is_seen_by_the_next_session() -> None:
    state = _state()
    opts = SessionOptions(deterministic=True)
    for _ in range(3):
        res = run_session(state.snapshot(), CONF, opts)
        assert not res.binds
    assert state._carry.get(CARRY) is not None
    msg = {c.task.key: c.message for c in res.pod_conditions}
    assert "Insufficient cpu" in msg["c1/big0-0"]
    state.apply_node(node("n3", cpu="16", memory="16Gi", labels={"zone": "z1"}))
    res = run_session(state.snapshot(), CONF, opts)
    assert [(b.task.key, b.node) for b in res.binds] == [("c1/big0-0", "n3")]
    state.assume_bound("c1/big0-0", "n3", {})
    # a running pod leaving a full node is a change too, though the node's view is the same object
    state.apply_pod(pod("filler", cpu="7", node_name="n1", phase="Running"))
    state.apply_pod(pod("filler-n5", cpu="7", node_name="n5", phase="Running"))
    state.apply_podgroup(podgroup("mid"))
    state.apply_pod(pod("mid-0", cpu="4", group="mid", selector={"zone": "z1"}))
    for _ in range(2):
        before = state.snapshot()
        res = run_session(before, CONF, opts)
        assert not res.binds
    state.remove_pod("c1", "filler")
    snap = state.snapshot()
    assert snap.nodes["n1"] is before.nodes["n1"]
    assert snap.job_changes is not None and snap.job_changes.carry[CARRY][0] == snap.job_changes.serial - 1
    res = run_session(snap, CONF, opts)
    assert [(b.task.key, b.node) for b in res.binds] == [("c1/mid-0", "n1")]


def test_a_placement_earlier_in_the_session_is_in_the_misfits_message() -> None:
    state = _state()
    opts = SessionOptions(deterministic=True)
    for _ in range(3):
        res = run_session(state.snapshot(), CONF, opts)
    assert {c.task.key: c.message for c in res.pod_conditions}["c1/big0-0"] == (
        "0/6 nodes are unavailable: 6 Insufficient cpu."
    )
    # placed before the misfit is looked at (higher priority), it leaves one node short of memory
    state.apply_priority_class(priority_class("hi", 100))
    state.apply_podgroup(podgroup("hog", priority_class="hi"))
    state.apply_pod(pod("hog-0", cpu="1", memory="14Gi", group="hog", priority_class="hi"))
    res = run_session(state.snapshot(), CONF, opts)
    assert [b.task.key for b in res.binds] == ["c1/hog-0"]
    assert {c.task.key: c.message for c in res.pod_conditions}["c1/big0-0"] == (
        "0/6 nodes are unavailable: 1 Insufficient memory, 6 Insufficient cpu."
    )


def _burst(state: ClusterState, serial: int, size: int = 2) -> None:
    state.apply_podgroup(podgroup(f"b{serial}", min_member=size))
    for k in range(size):
        state.apply_pod(pod(f"b{serial}-{k}", cpu="1", group=f"b{serial}"))


def test_sessions_that_bind_keep_the_misfits_errors_and_see_a_node_freed_meanwhile(monkeypatch: Any) -> None:
    """A burst: every session binds pods (nodes change within it) while a pod fits nowhere. The
    misfit's errors of every node are kept across such sessions and only the changed nodes are
    asked again; a node that a running pod leaves (the same view, a new version) is one of them,
    and the misfit goes there at once, as a full recheck finds."""
    from scheduler.framework import placement

    filled = [0]
    fill = placement._Known.fill

    def counted(self: Any, *args: Any) -> bool:
        ok = fill(self, *args)
        filled[0] += ok
        return ok

    monkeypatch.setattr(placement._Known, "fill", counted)
    on, off = _state(), _state()
    for state in (on, off):
        # looked at before the bursts' pods, which would take the freed node first
        state.apply_priority_class(priority_class("hi", 100))
        state.apply_podgroup(podgroup("seven", priority_class="hi"))
        state.apply_pod(pod("seven-0", cpu="7", group="seven", priority_class="hi"))
    placed = None
    freed = ""
    last: set[str] = set()
    for serial in range(10):
        for state in (on, off):
            _burst(state, serial)
        if serial == 6:
            # a node the last session left alone empties: room for the 7-cpu pod, on a view
            # handed out again, which only the snapshot's record of changed nodes tells
            freed = min(n for n in on.nodes if n not in last)
            for state in (on, off):
                for key in sorted(t.key for t in state.tasks.values() if t.node_name == freed):
                    ns, name = key.split("/")
                    state.remove_pod(ns, name)
        got_on = _session(on, CONF, True, serial)
        got_off = _session(off, CONF, False, serial)
        assert _seen(got_on) == _seen(got_off), serial
        assert len(got_on.binds) >= 2, serial  # nodes change in every session
        for res, state in ((got_on, on), (got_off, off)):
            for b in res.binds:
                state.assume_bound(b.task.key, b.node, b.annotations)
        last = {b.node for b in got_on.binds}
        if any(b.task.key == "c1/seven-0" for b in got_on.binds):
            placed = serial
            assert [b.node for b in got_on.binds if b.task.key == "c1/seven-0"] == [freed]
    assert placed == 6
    # the misfits' errors came from the kept ones in the sessions after the first
    assert filled[0] >= 2 * 8
