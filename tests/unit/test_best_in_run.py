"""allocate's pick over a window where every node fits, read in place from the shape's per-node
arrays (PlacementCache._best_in_run), is the pick best() makes over the arrays it gathers for the
window: the same binds in the same order, the same tie draws, the same reasons for pods left
pending, for one-pod jobs and for gangs whose later pods meet the node their last pod changed."""

from __future__ import annotations

import random

import pytest

from scheduler.framework import placement
from scheduler.framework.cycle import run_session
from scheduler.framework.placement import PlacementCache
from scheduler.framework.session import SessionOptions
from scheduler.model.cluster import ClusterState
from scheduler.registry import parse
from scheduler.sim.devicebench import FLOOR_SESSION_CONF
from tests import builders

# nodeorder alone scores mostly ties (the draws from the session rng must be the same)
NODEORDER_CONF = FLOOR_SESSION_CONF.replace("  - name: binpack\n", "")


def _cluster(seed: int) -> ClusterState:
    """Nodes of two sizes; jobs of 1-3 pods of a few CPU sizes, some too big for the small nodes
    (their windows hold refusals and are not runs) and enough of them to fill some nodes."""
    rng = random.Random(seed)
    state = ClusterState()
    state.apply_queue(builders.queue("default"))
    sizes = [("8", "32Gi")] * rng.randrange(8, 14) + [("16", "64Gi")] * rng.randrange(4, 8)
    for i, (cpu, memory) in enumerate(sizes):
        state.apply_node(builders.node(f"n{i:02d}", cpu=cpu, memory=memory))
    for j in range(rng.randrange(70, 100)):
        name = f"job-{j:03d}"
        size = rng.choice((1, 1, 1, 1, 2, 3))
        cpu = rng.choice(("100m", "500m", "1", "6"))
        state.apply_podgroup(builders.podgroup(name, min_member=size, ns="ml"))
        for k in range(size):
            state.apply_pod(builders.pod(f"{name}-{k}", cpu=cpu, memory="1Gi", ns="ml", group=name))
    return state


def _decide(conf: str, seed: int, deterministic: bool = False) -> tuple[list[tuple[str, str]], list[str]]:
    options = SessionOptions(
        minimum_feasible_nodes=3, percentage_nodes_to_find=40, deterministic=deterministic
    )
    res = run_session(_cluster(seed).snapshot(), parse(conf), options, rng=random.Random(seed))
    conditions = sorted(f"{c.task.key}: {c.message}" for c in res.pod_conditions)
    return [(b.task.key, b.node) for b in res.binds], conditions


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Record whether each in-place pick decided (True) or left the choice to best()'s lists."""
    seen: list[bool] = []
    real = PlacementCache._best_in_run

    def counted(self: PlacementCache, *args: object) -> object:
        got = real(self, *args)  # type: ignore[arg-type]
        seen.append(got is not placement._UNDECIDED)
        return got

    monkeypatch.setattr(PlacementCache, "_best_in_run", counted)
    return seen


@pytest.mark.parametrize("conf", [FLOOR_SESSION_CONF, NODEORDER_CONF], ids=["binpack", "nodeorder"])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_in_place_pick_decides_what_the_gathered_pick_decides(
    conf: str, seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    with monkeypatch.context() as m:
        seen = _counting(m)
        fast = _decide(conf, seed)
    with monkeypatch.context() as m:
        m.setattr(PlacementCache, "_best_in_run", lambda self, *args: placement._UNDECIDED)
        gathered = _decide(conf, seed)
    assert len(fast[0]) > 40 and fast[1]  # pods bound and pods left pending
    # the in-place pick decided the one-pod jobs (and gangs' last pods) whose window is a run
    assert sum(seen) >= 10
    assert fast == gathered


def test_a_deterministic_pick_is_left_to_the_gathered_lists(monkeypatch: pytest.MonkeyPatch) -> None:
    """deterministic sessions pick the first tie by name, which the in-place pick does not do."""
    seen = _counting(monkeypatch)
    binds, _ = _decide(FLOOR_SESSION_CONF, 1, deterministic=True)
    assert binds and seen and not any(seen)
