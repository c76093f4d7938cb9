"""network-topology-aware's uniform scores: the placement caches choose by the kept scores where
the plugin adds one constant to every candidate (a gang inside a leaf HyperNode), and that
chooses exactly what scoring every node with the plugin's batch function chooses."""

from __future__ import annotations

import random
from typing import Any

import pytest

from scheduler.conf import DEFAULT_CONF
from scheduler.framework.placement import _order_kept
from scheduler.framework.session import Session
from scheduler.model.cluster import ClusterState
from scheduler.plugins.network_topology_aware import NetworkTopologyAwarePlugin
from scheduler.sim import bench
from scheduler.sim.decisionhash import TOPOLOGY_CONF, drive
from scheduler.sim.topologygen import make_hypernodes, parse_topology_spec

BINPACK_TOPOLOGY_CONF = TOPOLOGY_CONF + "  - name: binpack\n"


def _state(seed: int) -> ClusterState:
    """Gangs under spine=2,leaf=4 with every kind of constraint, on nodes partly filled already
    (so that the kept scores differ between nodes and ties are broken at random)."""
    rng = random.Random(seed)
    state = ClusterState()
    bench.gen_nodes(state, 96)
    for hn in make_hypernodes(parse_topology_spec("spine=2,leaf=4"), list(state.nodes)):
        state.apply_hypernode(hn)
    queues = bench.gen_queues(state, 2)
    bench.gen_running(state, 300, 96, queues)
    shapes = [("500m", "1Gi"), ("1", "2Gi"), ("3", "4Gi"), ("7", "30Gi")]
    constraints: list[dict[str, Any] | None] = [
        {"mode": "hard", "highestTierAllowed": 1},
        {"mode": "hard", "highestTierAllowed": 2},
        {"mode": "soft"},
        None,
    ]
    for j in range(40):
        name, (cpu, mem) = f"gang-{j:03d}", rng.choice(shapes)
        size = rng.choice([4, 8, 16, 24])
        pods = [bench._pod(f"{name}-{k}", "topo", name, cpu, mem, idx=j * 64 + k) for k in range(size)]
        bench.add_gang(state, name, "topo", j, queues[j % 2], "Inqueue", pods, constraints[j % 4])
    return state


@pytest.fixture
def uniform_answers(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every answer of the plugin's uniform form, recorded."""
    seen: list[Any] = []
    real = NetworkTopologyAwarePlugin.uniform_score

    def spy(self: NetworkTopologyAwarePlugin, *args: Any) -> Any:
        got = real(self, *args)
        seen.append(got)
        return got

    monkeypatch.setattr(NetworkTopologyAwarePlugin, "uniform_score", spy)
    return seen


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("conf", [TOPOLOGY_CONF, BINPACK_TOPOLOGY_CONF], ids=["default", "binpack"])
def test_uniform_scores_choose_what_the_batch_function_chooses(
    seed: int, conf: str, uniform_answers: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    fast = drive(_state(seed), conf, seed)
    used = sum(1 for a in uniform_answers if isinstance(a, float))
    monkeypatch.setattr(Session, "batch_node_order_offsets", lambda self: None)
    slow = drive(_state(seed), conf, seed)
    assert fast == slow
    assert fast[0] > 0
    if conf == TOPOLOGY_CONF:
        assert used > 100  # the hard tier-1 gangs' pods were chosen by the kept scores
    else:
        assert used == 0  # binpack's node-order scores are floats: nothing to prove, not asked


def test_offsets_only_without_node_order_functions_and_after_the_splits() -> None:
    from scheduler.registry import parse

    def offsets(conf: str) -> Any:
        captured: list[Any] = []
        real = Session.batch_node_order_offsets

        def grab(self: Session) -> Any:
            captured.append(real(self))
            return captured[-1]

        state = _state(1)
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(Session, "batch_node_order_offsets", grab)
            from scheduler.framework.cycle import run_session
            from scheduler.framework.session import SessionOptions

            run_session(state.snapshot(), parse(conf), SessionOptions(), rng=random.Random(1))
        return captured[0]

    got = offsets(TOPOLOGY_CONF)
    assert got is not None and len(got[0]) == 1 and len(got[1]) == 1
    assert offsets(BINPACK_TOPOLOGY_CONF) is None
    # the plugin before nodeorder (its own first tier): the kept split would not come first
    first = DEFAULT_CONF.replace(
        "  - name: conformance\n", "  - name: conformance\n  - name: network-topology-aware\n"
    )
    assert offsets(first) is None


def test_order_kept() -> None:
    assert _order_kept(300.0, [162.5])
    assert _order_kept(-12.0, [1e6, 0.1])
    assert _order_kept(0.0, [])
    # a sum that rounds top - 1 onto top (spacing 2 above 2**53), a fraction, NaN, infinities
    assert not _order_kept(2.0**51, [2.0**53])
    assert not _order_kept(300.5, [1.0])
    assert not _order_kept(float("nan"), [1.0])
    assert not _order_kept(300.0, [float("nan")])
    assert not _order_kept(300.0, [float("inf")])
    assert not _order_kept(float(2**52), [1.0])
