"""drf: dominant resource fairness between jobs (spec 7.4).

A job's share is its largest fraction of any cluster resource; smaller shares go first, and a
preemptor may take from a job only while that leaves the preemptor no richer than the victim.
Hierarchical mode (`enableHierarchy`) is not implemented: it loads with a warning.
"""

from __future__ import annotations

from scheduler.framework.plugin import Plugin
from scheduler.framework.session import PERMIT, Event, EventHandler, Session
from scheduler.model.job import JobInfo
from scheduler.model.objects import TaskInfo
from scheduler.model.resources import EPSILON, FIXED_NAMES, Resource

SHARE_DELTA = 1e-6


def share_of(allocated: Resource, total: Resource) -> float:
    """The dominant share: the largest allocated / total over total's names not under EPSILON
    (cpu, memory, then the scalars, as Resource.items() lists them, each read as Resource.get
    reads it), read directly at each placement instead of through a generator and get(). The
    per-name step is written out (not a helper called per name: five calls per placement);
    a NaN total counts 0 or 1."""
    # cpu, then memory, written out (not a loop over a tuple of pairs built per call)
    a, t = allocated.milli_cpu, total.milli_cpu
    share = 0.0 if t < EPSILON else (a / t if t > 0 else (0.0 if a == 0 else 1.0))
    if not share > 0.0:
        share = 0.0  # a NaN or a negative figure leaves the share at 0, as max() from 0 does
    a, t = allocated.memory, total.memory
    if not t < EPSILON:
        s = a / t if t > 0 else (0.0 if a == 0 else 1.0)
        if s > share:
            share = s
    mine = allocated.scalars
    # nothing of any scalar allocated: each one's share is 0, no more than `share` (unless a
    # scalar is named like a fixed resource, which reads that resource)
    if total.scalars and (mine or not FIXED_NAMES.isdisjoint(total.scalars)):
        for name, t in total.scalars.items():
            if t < EPSILON:
                continue
            # a scalar named like a fixed resource reads that resource, as Resource.get does
            a = allocated.get(name) if name in FIXED_NAMES else mine.get(name, 0.0)
            s = a / t if t > 0 else (0.0 if a == 0 else 1.0)
            if s > share:
                share = s
    return share


def _total_key(total: Resource) -> tuple[float, float, float, tuple[tuple[str, float], ...]]:
    return total.milli_cpu, total.memory, total.pods, tuple(total.scalars.items())


def _job_shares(ssn: Session, total: Resource) -> tuple[dict[str, Resource], dict[str, float]]:
    """Every job's allocation and dominant share as the session opens. The previous session's
    figures are kept for the jobs whose view is the same (their allocation is the same object,
    unchanged) while the cluster's total is; only the others are computed.

    The two maps are handed on as they are, not copied (at 20,000 nodes the two copies were a
    sixth of an idle period): the session changes the entries of the jobs it places or evicts
    only, and a job whose view a session changed gets a new view, and is fresh, in the next."""
    key = _total_key(total)
    prev = ssn.carried("drf")
    if prev is not None and prev[2][0] == key:
        fresh, gone, (_, allocated, shares) = prev
        for uid in gone:
            allocated.pop(uid, None)
            shares.pop(uid, None)
        jobs = [ssn.jobs[uid] for uid in fresh]
    else:
        allocated, shares = {}, {}
        jobs = list(ssn.jobs.values())
    # Jobs of the same size have the same share: computed once per (cpu, memory) allocation.
    memo: dict[tuple[float, float], float] = {}
    for job in jobs:
        a = job.allocated
        allocated[job.uid] = a
        if a.scalars:
            shares[job.uid] = share_of(a, total)
            continue
        k = (a.milli_cpu, a.memory)
        s = memo.get(k)
        if s is None:
            s = memo[k] = share_of(a, total)
        shares[job.uid] = s
    ssn.carry("drf", (key, allocated, shares))
    return allocated, shares


class DrfPlugin(Plugin):
    name = "drf"

    def on_session_open(self, ssn: Session) -> None:
        total = ssn.total_resource
        # Each job's allocation, shared with the job until an event changes it (then copied).
        allocated, shares = _job_shares(ssn, total)
        owned: set[str] = set()
        self.shares = shares

        def mine(uid: str) -> Resource | None:
            a = allocated.get(uid)
            if a is not None and uid not in owned:
                a = allocated[uid] = a.clone()
                owned.add(uid)
            return a

        def job_order(left: JobInfo, right: JobInfo) -> int:
            ls, rs = shares.get(left.uid, 0.0), shares.get(right.uid, 0.0)
            if ls == rs:
                return 0
            return -1 if ls < rs else 1

        def job_key(job: JobInfo) -> float | None:
            s = shares.get(job.uid, 0.0)
            return s if s == s else None  # a NaN share is not ordered as job_order orders it

        def preemptable(preemptor: TaskInfo, preemptees: list[TaskInfo]) -> tuple[list[TaskInfo], int]:
            base = allocated.get(preemptor.job)
            if base is None:
                return [], PERMIT
            ls = share_of(base.clone().add(preemptor.resreq), total)
            running: dict[str, Resource] = {}
            victims: list[TaskInfo] = []
            for t in preemptees:
                if t.job not in running:
                    running[t.job] = (allocated.get(t.job) or Resource()).clone()
                alloc = running[t.job].sub(t.resreq)
                rs = share_of(alloc, total)
                if ls < rs or abs(ls - rs) <= SHARE_DELTA:
                    victims.append(t)
            return victims, PERMIT

        def on_allocate(ev: Event) -> None:
            # mine() written out: a call less per placement
            uid = ev.task.job
            a = allocated.get(uid)
            if a is not None and uid not in owned:
                a = allocated[uid] = a.clone()
                owned.add(uid)
            if a is not None:
                a.add(ev.task.resreq)
                shares[ev.task.job] = share_of(a, total)

        def on_deallocate(ev: Event) -> None:
            a = mine(ev.task.job)
            if a is not None:
                a.sub(ev.task.resreq)
                shares[ev.task.job] = share_of(a, total)

        ssn.add_job_order_fn(self.name, job_order, key=job_key)
        ssn.add_preemptable_fn(self.name, preemptable)
        ssn.add_event_handler(EventHandler(on_allocate, on_deallocate))
