"""A session's job view copies its totals when the session first changes it, except the total
request, which a status change leaves alone: that one is copied only before a task comes or goes.
The cluster's job and the other views must never see a session's change, and each view's totals
must be what the same steps give on a job that owned everything from the start."""

from __future__ import annotations

import random

from scheduler.model.convert import pod_to_task, podgroup_to_job
from scheduler.model.job import JobInfo
from scheduler.model.objects import TaskInfo, TaskStatus
from scheduler.model.resources import Resource
from tests.builders import pod


def _figures(r: Resource) -> tuple:
    return r.milli_cpu, r.memory, r.pods, tuple(r.scalars.items())


def _state(job: JobInfo) -> tuple:
    return (
        sorted((uid, t.status) for uid, t in job.tasks.items()),
        _figures(job.total_request),
        _figures(job.allocated),
        _figures(job.pending_request),
    )


def _job(tasks: list[TaskInfo]) -> JobInfo:
    job = podgroup_to_job({"metadata": {"name": "g", "namespace": "c1"}, "spec": {"minMember": 2}})
    for t in tasks[:4]:
        job.add_task(t.clone())
    return job


def test_job_views_changed_in_any_order_leak_nothing_and_keep_exact_totals() -> None:
    rng = random.Random(5)
    tasks = [
        pod_to_task(pod(f"p{i}", cpu=f"{100 + 7 * i}m", memory=f"{i + 1}Mi", group="g")) for i in range(8)
    ]
    statuses = [TaskStatus.PENDING, TaskStatus.ALLOCATED, TaskStatus.BINDING, TaskStatus.RUNNING]
    for _ in range(40):
        cluster = _job(tasks)
        before = _state(cluster)
        reference = _job(tasks)  # a job of its own, no view: it owns its totals from the start
        view, other = cluster.session_view(), cluster.session_view()
        for _step in range(6):
            uid = rng.choice(tasks).uid
            op = rng.random()
            status = rng.choice(statuses)
            for job in (view, reference):
                current = job.tasks.get(uid)
                if current is None:
                    job.add_task(next(t for t in tasks if t.uid == uid).clone())
                elif op < 0.3:
                    job.delete_task(current)
                else:
                    mine = current.clone()
                    job.replace_task(current, mine)
                    job.update_task_status(mine, status)
            assert _state(view) == _state(reference)
            assert _state(cluster) == before
            assert _state(other) == before
