"""The placement cache's answers as it asks them (PlacementCache._ask slicing runs of positions and
writing all-fit answers at once, _changed_at handing back the log's positions unfiltered) decide
what the per-node forms decide: the same binds in the same order and the same reasons for pods left
pending, over pods of several sizes whose windows are cold runs, scattered changed nodes and refusals."""

from __future__ import annotations

import pytest

from scheduler.framework.nodewindow import FIT, REFUSED
from scheduler.framework.placement import PlacementCache, _NodeValues
from scheduler.model.objects import TaskInfo
from scheduler.sim.devicebench import FLOOR_SESSION_CONF
from tests.unit.test_best_in_run import _decide


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


@pytest.mark.parametrize("seed", range(1, 7))
def test_asks_decide_as_the_per_node_forms(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[list[int]] = []
    real = PlacementCache._ask

    def recorded(self: PlacementCache, task: TaskInfo, vals: _NodeValues, idx: list[int]) -> None:
        asked.append(list(idx))
        real(self, task, vals, idx)

    monkeypatch.setattr(PlacementCache, "_ask", recorded)
    fast = _decide(FLOOR_SESSION_CONF, seed)
    monkeypatch.setattr(PlacementCache, "_ask", _reference_ask)
    monkeypatch.setattr(PlacementCache, "_changed_at", _reference_changed_at)
    assert fast == _decide(FLOOR_SESSION_CONF, seed)
    assert fast[0] and fast[1]  # pods bound and pods left pending
    # cold runs of several nodes and scattered positions were both asked
    assert any(len(ix) > 1 and ix == list(range(ix[0], ix[0] + len(ix))) for ix in asked)
    assert any(ix != list(range(ix[0], ix[0] + len(ix))) for ix in asked if ix)


def test_a_one_node_ask_keeps_what_the_batch_ask_keeps() -> None:
    """The one-node ask (the usual one: the node a pod took since the shape's last window) keeps
    for every node the verdict, answer code and Idle-fit code that the batch ask keeps, over vGPU
    shapes that small nodes refuse for CPU and devices, before and after placements."""
    from scheduler.framework.placement import allocate_predicate, allocate_predicate_many_idle
    from scheduler.model.objects import TaskStatus
    from tests.unit.test_session_many import _pending, _session

    ssn = _session(nodes=12, pods=6)
    cache = PlacementCache(ssn, allocate_predicate(ssn), check_many_idle=allocate_predicate_many_idle(ssn))
    nodes = ssn.node_list
    tasks = _pending(ssn)
    seen = set()
    for placed in range(3):
        for task in tasks[placed:]:
            for i in range(len(nodes)):
                one, batch = _NodeValues(0), _NodeValues(0)
                for vals in (one, batch):
                    vals.codes = bytearray(len(nodes))
                cache._ask_one(task, one, i)
                _reference_ask(cache, task, batch, [i])
                assert one.codes == batch.codes and one.fit_codes == batch.fit_codes
                assert one.verdicts.keys() == batch.verdicts.keys()
                assert [_reason(r) for r in one.verdicts.values()] == [
                    _reason(r) for r in batch.verdicts.values()
                ]
                seen.add((one.codes[i], one.fit_codes[i]))
        task = tasks[placed]
        ssn.place(task, next(n for n in nodes if cache.check(task, n) is None), TaskStatus.ALLOCATED)
    assert {(FIT, FIT), (REFUSED, REFUSED)} <= seen  # fitting nodes and refusals were both asked


def _reason(r: object) -> object:
    return getattr(r, "reason", r)
