"""Per-queue sums of what every job counts for, kept from one session to the next.

A queue-sharing plugin adds up, per queue, what each job holds, asks for and reserves. With
15,000 running jobs that walk is most of an idle session, while between two periods only a few
jobs change: the sums are kept with each job's part and only the jobs whose view is new are
redone (see `Session.carried`). They are kept only while every part is a whole number of each
resource without extended resources: float sums of whole numbers are exact in any order, so the
kept sums are bit for bit what a walk over every job gives. Otherwise every session walks.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from scheduler.framework.session import Session
from scheduler.model.job import JobInfo
from scheduler.model.resources import Resource

# One job's additions, in the order a walk makes them: (which sum, amount)
Part = Sequence[tuple[int, Resource]]
# beyond this, whole floats are no longer all representable
_EXACT_LIMIT = float(2**53)


@dataclass(slots=True)
class _Kept:
    width: int
    sums: dict[str, list[Resource]]  # queue -> its sums
    jobs: dict[str, int]  # queue -> how many jobs count in it
    parts: dict[str, tuple[str, Part]] | None  # job uid -> (its queue, its part); None: not exact


def queue_of(job: JobInfo) -> str:
    return job.queue


def queue_sums(
    ssn: Session,
    plugin: str,
    width: int,
    part_of: Callable[[JobInfo], Part],
    group: Callable[[JobInfo], str] = queue_of,
) -> dict[str, list[Resource]]:
    """group (by default the queue) -> the `width` sums of `part_of(job)` over the session's jobs
    of that group, the groups in the order their first job comes in `ssn.jobs` (as a walk over the
    jobs finds them). Kept for the next session: the caller copies them before changing them."""
    prev = ssn.carried(plugin)
    kept = None
    if prev is not None and prev[2].width == width:
        kept = _advance(ssn, prev[0], prev[1], prev[2], part_of, group)
    if kept is None:
        kept = _walk(ssn, width, part_of, group)
    if kept.parts is not None:
        ssn.carry(plugin, kept)
    return _in_job_order(ssn, kept, group)


def _exact(part: Part) -> bool:
    """Every amount of the part a whole number below 2**53, without extended resources."""
    return _own(part) is not None


def _own(part: Part) -> Part | None:
    """The part with copies of its amounts, or None when an amount is not exact (see _exact): a
    job's totals change in place as its pods do. An amount the part names twice in a row (a
    job's allocated counts in two sums) is looked at and copied once: nothing changes the
    copies, they are only added and taken off again. The test and the copies in one pass: the
    first session asks it of every job's part (two passes and two calls were a tenth of the
    walk over 3,875 jobs).

    `v % 1.0` is 0.0 exactly for a whole float (NaN for NaN and the infinities): the test of
    `float(v).is_integer()` without two calls per figure."""
    out = []
    last = copy = None
    for i, r in part:
        if r is not last:
            last = r
            if r.scalars:
                return None
            cpu, mem, pods = r.milli_cpu, r.memory, r.pods
            if cpu % 1.0 or mem % 1.0 or pods % 1.0:
                return None
            if not (-_EXACT_LIMIT < cpu < _EXACT_LIMIT and -_EXACT_LIMIT < mem < _EXACT_LIMIT):
                return None
            if not -_EXACT_LIMIT < pods < _EXACT_LIMIT:
                return None
            copy = r.clone()
        out.append((i, copy))
    return tuple(out)


def _walk(
    ssn: Session, width: int, part_of: Callable[[JobInfo], Part], group: Callable[[JobInfo], str]
) -> _Kept:
    sums: dict[str, list[Resource]] = {}
    jobs: dict[str, int] = {}
    parts: dict[str, tuple[str, Part]] | None = {}
    by_queue = group is queue_of  # the queue read directly: a call less per job
    for uid, job in ssn.jobs.items():
        q = job.queue if by_queue else group(job)
        s = sums.get(q)
        if s is None:
            s = sums[q] = [Resource() for _ in range(width)]
            jobs[q] = 0
        jobs[q] += 1
        part = part_of(job)
        if not part:
            # a job that counts for none of the sums (overcommit's view of a job without
            # minResources: most jobs): its kept part is empty, without the two calls that say so
            if parts is not None:
                parts[uid] = (q, ())
            continue
        for i, r in part:
            if r.scalars:
                s[i].add(r)
            else:  # Resource.add without a scalar, written out: the same three sums
                t = s[i]
                t.milli_cpu += r.milli_cpu
                t.memory += r.memory
                t.pods += r.pods
        if parts is not None:
            kept = _own(part)
            if kept is None:
                parts = None
            else:
                parts[uid] = (q, kept)
    return _Kept(width, sums, jobs, parts)


def _advance(
    ssn: Session,
    fresh: set[str],
    gone: set[str],
    prev: _Kept,
    part_of: Callable[[JobInfo], Part],
    group: Callable[[JobInfo], str],
) -> _Kept | None:
    """The previous session's sums less the parts of jobs gone or changed, plus the new parts.
    Changed in place: were this given up half way, the kept state still carries the previous
    snapshot's number, which no later session builds on."""
    assert prev.parts is not None
    sums, jobs, parts = prev.sums, prev.jobs, prev.parts
    for changed in (gone, fresh):
        for uid in changed:
            old = parts.pop(uid, None)
            if old is not None:
                q, part = old
                s = sums[q]
                for i, r in part:
                    s[i].sub(r)
                jobs[q] -= 1
    for uid in fresh:
        job = ssn.jobs[uid]
        q = group(job)
        part = part_of(job)
        kept = _own(part)
        if kept is None:
            return None
        s = sums.get(q)
        if s is None:
            s = sums[q] = [Resource() for _ in range(prev.width)]
            jobs[q] = 0
        jobs[q] += 1
        for i, r in part:
            s[i].add(r)
        parts[uid] = (q, kept)
    return prev


def _in_job_order(ssn: Session, kept: _Kept, group: Callable[[JobInfo], str]) -> dict[str, list[Resource]]:
    want = sum(1 for n in kept.jobs.values() if n > 0)
    out: dict[str, list[Resource]] = {}
    for job in ssn.jobs.values():
        if len(out) == want:
            break
        q = group(job)
        if q not in out and kept.jobs.get(q, 0) > 0:
            out[q] = kept.sums[q]
    return out
