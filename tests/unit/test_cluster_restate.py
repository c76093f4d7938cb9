"""A task that changes its status or node in place (a bind assumed or forgotten, a status from the
watch) leaves the state the former detach-and-attach-again left: every map, set, total, index and
counter the same, in the same order, but for the order of `tasks` and `pod_keys` (keyed lookups
only: the task is no longer moved to their end)."""

from __future__ import annotations

import random
from typing import Any

import pytest

from scheduler.model.cluster import ClusterState
from scheduler.model.objects import TaskInfo
from scheduler.model.podstatus import StatusUpdate
from tests.builders import node, pod, podgroup
from tests.unit.test_cluster_bulk import picture


class FormerState(ClusterState):
    """Every restate as before: the task leaves `tasks`, `pod_keys` and the anti-affinity set
    and enters them again."""

    def _detach(self, task: TaskInfo, indexed: bool = False) -> None:
        super()._detach(task)

    def _attach(self, task: TaskInfo, key: str = "", indexed: bool = False) -> None:
        super()._attach(task, key)


ANTI = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": []}}


def _load(state: ClusterState) -> list[str]:
    for i in range(4):
        state.apply_node(node(f"n{i}", cpu="8", memory="16Gi"))
    state.apply_podgroup(podgroup("g1", 2))
    keys = []
    for i in range(12):
        spec = {"affinity": ANTI} if i % 4 == 0 else None
        group = "g1" if i % 3 else None  # some in an implicit group of their own
        state.apply_pod(pod(f"p{i}", cpu="500m", memory="1Gi", group=group, spec=spec))
        keys.append(f"c1/p{i}")
    state.apply_pod(pod("r0", cpu="1", memory="1Gi", group="g1", node_name="n0", phase="Running"))
    return keys


def _unordered(pic: dict[str, Any]) -> dict[str, Any]:
    out = dict(pic)
    for name in ("tasks", "pod_keys"):
        out[name] = sorted(map(repr, pic[name][1]))
    return out


@pytest.mark.parametrize("seed", range(6))
def test_restates_leave_the_state_the_former_way_left(seed: int) -> None:
    rng = random.Random(seed)
    now, former = ClusterState(), FormerState()
    keys = _load(now)
    _load(former)
    for _ in range(60):
        key, op = rng.choice(keys), rng.randrange(3)
        where = f"n{rng.randrange(5)}"  # n4: not (yet) a node
        update = StatusUpdate(rng.choice(["Pending", "Running", "Succeeded"]), "", None, str(rng.random()))
        for state in (now, former):
            task = state.get_task(key)
            assert task is not None
            if op == 0 and task.status.name == "PENDING":
                state.assume_bound(key, where, {"a": "b"})
            elif op == 1:
                state.forget_bind(key)
            else:
                state.apply_pod_status(task, update)
        assert _unordered(picture(now)) == _unordered(picture(former))
    assert now.tasks.keys() == former.tasks.keys() and now.pod_keys == former.pod_keys
