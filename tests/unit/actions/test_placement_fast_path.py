"""allocate's cached placement (aligned scores and Idle fits updated in place) decides exactly
what prioritize over the same candidates decides, random tie-breaks included."""

from __future__ import annotations

import random

import pytest

from scheduler.framework.cycle import run_session
from scheduler.framework.placement import PlacementCache, prioritize
from scheduler.framework.session import SessionOptions
from scheduler.model.cluster import ClusterState
from scheduler.registry import default_configuration, parse
from scheduler.sim.bench import _pod, gen_nodes, gen_pending_jobs, gen_queues

BINPACK = parse(
    'actions: "enqueue, allocate, backfill"\ntiers:\n- plugins:\n  - name: priority\n  - name: gang\n'
    "- plugins:\n  - name: drf\n  - name: predicates\n  - name: proportion\n  - name: nodeorder\n  - name: binpack\n"
)


def _decisions(conf, monkeypatch: pytest.MonkeyPatch, slow: bool) -> tuple[list, list]:
    if slow:
        monkeypatch.setattr(
            PlacementCache, "best", lambda self, task, cands: prioritize(self.ssn, task, cands, self)
        )
    state = ClusterState()
    gen_nodes(state, 12, cpu=8, mem_gi=16)  # small nodes: they fill up, fits and scores move
    queues = gen_queues(state, 2)
    # pods being deleted on half the nodes: those keep fitting FutureIdle once Idle is used up
    state.apply_podgroup(
        {
            "kind": "PodGroup",
            "metadata": {"name": "old", "namespace": "old"},
            "spec": {"minMember": 1, "queue": queues[0]},
            "status": {"phase": "Running"},
        }
    )
    for i in range(0, 12, 2):
        pod = _pod(f"old-{i}", "old", "old", "3", "1Gi", node=f"node-{i:05d}", phase="Running", idx=i)
        pod["metadata"]["deletionTimestamp"] = "2024-01-01T00:00:00Z"
        state.apply_pod(pod)
    gen_pending_jobs(state, 300, 5, queues, random.Random(11))
    snap = state.snapshot()
    res = run_session(
        snap,
        conf,
        SessionOptions(minimum_feasible_nodes=4, percentage_nodes_to_find=50),
        rng=random.Random(5),
    )
    monkeypatch.undo()
    return [(b.task.key, b.node) for b in res.binds], sorted(res.pipelined.items())


@pytest.mark.parametrize("conf", [default_configuration(), BINPACK], ids=["default", "binpack"])
def test_fast_path_binds_like_prioritize(conf, monkeypatch: pytest.MonkeyPatch) -> None:
    fast, fast_pipelined = _decisions(conf, monkeypatch, slow=False)
    slow, slow_pipelined = _decisions(conf, monkeypatch, slow=True)
    assert 20 < len(fast) < 300  # a real allocation happened, and not everything fits
    assert fast_pipelined  # some pods went where only releasing resources make room
    assert (fast, fast_pipelined) == (slow, slow_pipelined)
