"""The placement cache's answers as it asks them (PlacementCache._ask slicing runs of positions and
writing all-fit answers at once, _changed_at handing back the log's positions unfiltered) decide
what the per-node forms decide: the same binds in the same order and the same reasons for pods left
pending, over pods of many sizes whose windows are cold runs, scattered changed nodes and refusals."""

from __future__ import annotations

import random

import pytest

from scheduler.framework.cycle import run_session
from scheduler.framework.nodewindow import FIT, REFUSED
from scheduler.framework.placement import PlacementCache, _NodeValues
from scheduler.framework.session import SessionOptions
from scheduler.model.cluster import ClusterState
from scheduler.model.objects import TaskInfo
from scheduler.registry import parse
from scheduler.sim.devicebench import FLOOR_SESSION_CONF
from tests import builders


def _reference_ask(self: PlacementCache, task: TaskInfo, vals: _NodeValues, idx: list[int]) -> None:
    """Every asked node listed and its answer written one by one."""
    nodes, names = self.nodes, self._node_names()
    asked = [nodes[i] for i in idx]
    if self.check_many_idle is not None:
        got = self.check_many_idle(task, asked, idx, self._fit_array(vals), self._resource_rows())
    else:
        got = self.check_many(task, asked)
    for i, r in zip(idx, got, strict=True):
        if r is None:
            vals.codes[i] = FIT
        else:
            vals.verdicts[names[i]] = r
            vals.codes[i] = REFUSED


def _reference_changed_at(self: PlacementCache, log: list[str], seq: int) -> list[int]:
    index = self._index
    return [index[n] for n in log[seq:] if n in index]


def _cluster(seed: int) -> ClusterState:
    """Nodes of two sizes; one-pod jobs and small gangs of many CPU and memory sizes (each its own
    shape), some too big for the small nodes, enough of them to fill some nodes."""
    rng = random.Random(seed)
    state = ClusterState()
    state.apply_queue(builders.queue("default"))
    sizes = [("8", "32Gi")] * rng.randrange(10, 16) + [("16", "64Gi")] * rng.randrange(4, 8)
    for i, (cpu, memory) in enumerate(sizes):
        state.apply_node(builders.node(f"n{i:02d}", cpu=cpu, memory=memory))
    for j in range(rng.randrange(80, 110)):
        name = f"job-{j:03d}"
        size = rng.choice((1, 1, 1, 1, 2, 3))
        cpu = rng.choice(("100m", "300m", "500m", "1", "2", "6", "12"))
        memory = rng.choice(("512Mi", "1Gi", "3Gi"))
        state.apply_podgroup(builders.podgroup(name, min_member=size, ns="ml"))
        for k in range(size):
            state.apply_pod(builders.pod(f"{name}-{k}", cpu=cpu, memory=memory, ns="ml", group=name))
    return state


def _decide(seed: int) -> tuple[list[tuple[str, str]], list[str]]:
    options = SessionOptions(minimum_feasible_nodes=4, percentage_nodes_to_find=40)
    res = run_session(_cluster(seed).snapshot(), parse(FLOOR_SESSION_CONF), options, rng=random.Random(seed))
    return [(b.task.key, b.node) for b in res.binds], sorted(
        f"{c.task.key}: {c.message}" for c in res.pod_conditions
    )


@pytest.mark.parametrize("seed", range(6))
def test_asks_decide_as_the_per_node_forms(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[list[int]] = []
    real = PlacementCache._ask

    def recorded(self: PlacementCache, task: TaskInfo, vals: _NodeValues, idx: list[int]) -> None:
        asked.append(list(idx))
        real(self, task, vals, idx)

    monkeypatch.setattr(PlacementCache, "_ask", recorded)
    fast = _decide(seed)
    monkeypatch.setattr(PlacementCache, "_ask", _reference_ask)
    monkeypatch.setattr(PlacementCache, "_changed_at", _reference_changed_at)
    assert fast == _decide(seed)
    assert fast[0] and fast[1]  # pods bound and pods left pending
    # cold runs of several nodes and scattered positions were both asked
    assert any(len(ix) > 1 and ix == list(range(ix[0], ix[0] + len(ix))) for ix in asked)
    assert any(ix != list(range(ix[0], ix[0] + len(ix))) for ix in asked if ix)
