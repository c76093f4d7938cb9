"""gang's PodGroup condition while pods are being deleted, checked against Volcano's
TestShouldSkipUnschedulableForReleasing: a job that is not ready only because some of its
placed pods are terminating keeps its condition (no Unschedulable churn), unless a pending or
pipelined replacement still needs scheduling, or too few pods are placed to make the gang."""

from __future__ import annotations

import pytest

from scheduler.model.objects import TaskStatus
from scheduler.plugins.gang import _only_releasing
from tests.unit.plugins.plugin_world import World

R, REL, P, PIPE = TaskStatus.RUNNING, TaskStatus.RELEASING, TaskStatus.PENDING, TaskStatus.PIPELINED

CASES = [
    pytest.param(2, [(R, "node-1"), (REL, "node-2")], True, id="partial termination"),
    pytest.param(2, [(R, "node-1"), (REL, "node-2"), (P, "")], False, id="pending replacement still needs condition"),
    pytest.param(2, [(R, "node-1"), (REL, "node-2"), (PIPE, "node-3")], False, id="pipelined replacement still needs condition"),
    pytest.param(1, [(REL, "")], False, id="never scheduled releasing task is not counted"),
    pytest.param(3, [(R, "node-1"), (REL, "node-2")], False, id="scheduled tasks below minAvailable"),
]  # fmt: skip


@pytest.mark.parametrize(("min_available", "tasks", "skips"), CASES)
def test_should_skip_unschedulable_for_releasing(
    min_available: int, tasks: list[tuple[TaskStatus, str]], skips: bool
) -> None:
    w = World()
    for n in ("node-1", "node-2", "node-3"):
        w.node(n)
    for i, (status, on) in enumerate(tasks):
        w.pod(f"t{i}", ns="job-1", on=on, status=status)
    job = w.jobs["job-1"]
    job.min_available = min_available
    assert _only_releasing(job) is skips
