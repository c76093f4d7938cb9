"""Victim bundles of gangpreempt and gangreclaim: a victim job's tasks on a domain, split by what
their eviction costs the victim's gang (Volcano's actions/utils/bundle.go).

A task is *safe* when evicting it (after the safe ones before it) leaves its job gang-ready: the
job keeps `minAvailable` ready tasks, each role its `minTaskMember`, each partition group its
`minSubGroups` whole partitions. The rest form the job's *whole* bundle: taking any of them breaks
the gang, so they are taken all together or not at all. A job already short of its minimum has
only a safe bundle (evicting more cannot break it further).

Bundles are tried safe first, then in victim order (preempt: the reverse of job order; reclaim:
victim queue order), then by how much of the preemptor's need they free per resource of the victim
job they cost (ROI), then deterministically by job and task uid.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from scheduler.model.job import JobInfo
from scheduler.model.objects import ALLOCATED_STATUSES, TaskInfo, TaskStatus
from scheduler.model.resources import Resource
from scheduler.model.subjob import SubJob


class BundleType(enum.IntEnum):
    SAFE = 0
    WHOLE = 1


@dataclass(slots=True)
class Bundle:
    type: BundleType
    job: JobInfo
    tasks: list[TaskInfo]
    # what the bundle frees on the domain, and (whole bundles) what the victim job holds in all
    local: Resource = field(default_factory=Resource)
    global_: Resource = field(default_factory=Resource)


def sum_resreq(tasks: list[TaskInfo]) -> Resource:
    total = Resource()
    for t in tasks:
        total.add(t.resreq)
    return total


def _ready_count(job: JobInfo) -> int:
    """Volcano's ReadyTaskNum: placed or finished tasks, and pending ones that request nothing."""
    return job.ready_task_num() + sum(
        1 for t in job.task_status_index.get(TaskStatus.PENDING, {}).values() if t.init_resreq.is_empty()
    )


def _role_surplus(job: JobInfo) -> dict[str, int]:
    ready: dict[str, int] = {}
    for status, tasks in job.task_status_index.items():
        counted = status in ALLOCATED_STATUSES or status == TaskStatus.SUCCEEDED
        for t in tasks.values():
            if counted or (status == TaskStatus.PENDING and t.init_resreq.is_empty()):
                ready[t.role] = ready.get(t.role, 0) + 1
    return {role: ready.get(role, 0) - need for role, need in job.task_min_available.items()}


def create_job_bundles(
    job: JobInfo, local: list[TaskInfo], subjobs: dict[str, SubJob] | None = None
) -> list[Bundle]:
    """Split a victim job's candidate tasks on a domain into its safe and whole bundles.
    `subjobs` (the job's partitions, for a job with a subGroupPolicy) adds the partition check."""
    if not local:
        return []
    tasks = sorted(local, key=lambda t: (t.priority, t.uid))
    job_surplus = _ready_count(job) - job.min_available
    if job_surplus < 0:
        return [Bundle(BundleType.SAFE, job, tasks, sum_resreq(tasks))]

    # as the gang plugin's role check, which only applies when minMember covers the role minimums
    roles = _role_surplus(job) if job.min_available >= job.task_min_available_total else {}
    min_groups = {f"{job.uid}/{p.name}": p.min_subgroups for p in job.subgroup_policies if p.min_subgroups}
    group_surplus: dict[str, int] = {}
    broken: set[str] = set()
    by_task: dict[str, SubJob] = {}
    enforce_groups = bool(min_groups and subjobs)
    if enforce_groups and subjobs:
        for sj in subjobs.values():
            by_task.update(dict.fromkeys(sj.task_uids, sj))
            if sj.is_ready(job):
                group_surplus[sj.gid] = group_surplus.get(sj.gid, 0) + 1
            else:
                broken.add(sj.uid)
        for gid, need in min_groups.items():
            group_surplus[gid] = group_surplus.get(gid, 0) - need

    safe: list[TaskInfo] = []
    whole: list[TaskInfo] = []
    for t in tasks:
        role_safe = t.role not in roles or roles[t.role] > 0
        sj = by_task.get(t.uid)
        if not enforce_groups:
            group_safe = True
        elif sj is None:
            group_safe = False  # a task outside every partition: keep the gang whole
        else:
            group_safe = sj.uid in broken or group_surplus.get(sj.gid, 0) > 0
        if job_surplus > 0 and role_safe and group_safe:
            safe.append(t)
            job_surplus -= 1
            if t.role in roles:
                roles[t.role] -= 1
            if sj is not None and enforce_groups and sj.uid not in broken:
                broken.add(sj.uid)  # its first eviction breaks the partition
                group_surplus[sj.gid] = group_surplus.get(sj.gid, 0) - 1
        else:
            whole.append(t)

    out: list[Bundle] = []
    if safe:
        out.append(Bundle(BundleType.SAFE, job, safe, sum_resreq(safe)))
    if whole:
        out.append(
            Bundle(BundleType.WHOLE, job, whole, sum_resreq(whole), sum_resreq(list(job.tasks.values())))
        )
    return out


def flatten(bundles: list[Bundle]) -> list[TaskInfo]:
    return [t for b in bundles for t in b.tasks]


def apply_allowed(bundles: list[Bundle], allowed: set[str]) -> list[Bundle]:
    """Keep what the plugins allow: a whole bundle only if every task of it is allowed (it is
    atomic), a safe bundle shrunk to its allowed tasks."""
    out: list[Bundle] = []
    for b in bundles:
        kept = [t for t in b.tasks if t.uid in allowed]
        if b.type == BundleType.WHOLE:
            if kept and len(kept) == len(b.tasks):
                out.append(b)
        elif kept:
            out.append(replace(b, tasks=kept, local=sum_resreq(kept)))
    return out


def _score(res: Resource, need: Resource, cap: bool) -> float:
    score = 0.0
    for name in need.names():
        n = need.get(name)
        if n <= 0:
            continue
        v = res.get(name)
        score += (min(v, n) if cap else v) / n
    return score


def roi(bundle: Bundle, need: Resource) -> float:
    """How much of the need the bundle frees here, per resource its whole job holds (a safe
    bundle costs no gang: infinite)."""
    cost = _score(bundle.global_, need, False)
    return math.inf if cost == 0 else _score(bundle.local, need, True) / cost


def sort_bundles(bundles: list[Bundle], need: Resource, victim_rank: Callable[[Bundle], object]) -> None:
    """Order in place: safe before whole, then `victim_rank` (the first victim first), then the
    best ROI, then job uid, first task uid and size."""

    def key(b: Bundle) -> tuple[object, ...]:
        return (
            b.type,
            victim_rank(b),
            -roi(b, need),
            b.job.uid,
            b.tasks[0].uid if b.tasks else "",
            len(b.tasks),
        )

    bundles.sort(key=key)
