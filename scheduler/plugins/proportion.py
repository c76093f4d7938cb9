"""proportion: queues share the cluster by weight, within capability and above guarantee (spec 7.5).

Deserved shares come from water-filling: each round gives every unmet queue its weighted part of
what is left, capped by its real capability and its request and raised to its guarantee, until
nothing is left or nothing changes.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

from scheduler.framework.plugin import Plugin
from scheduler.framework.session import PERMIT, REJECT, Event, EventHandler, Session
from scheduler.framework.shortfall import explain_sum
from scheduler.model.job import JobInfo
from scheduler.model.objects import ALLOCATED_STATUSES, PodGroupPhase, QueueInfo, TaskInfo, TaskStatus
from scheduler.model.resources import FIXED_NAMES, Infinity, Resource
from scheduler.plugins.queuesums import queue_sums

# the members themselves: an Enum member looked up on its class goes through EnumType's
# __getattr__ hook (~900 instructions), and overused is asked before every job allocate serves
_ZERO, _INFINITY = Infinity.ZERO, Infinity.INFINITY
_PENDING = TaskStatus.PENDING


@dataclass(slots=True)
class QueueAttr:
    queue: QueueInfo
    weight: int
    capability: Resource | None
    real_capability: Resource
    guarantee: Resource
    deserved: Resource = field(default_factory=Resource)
    allocated: Resource = field(default_factory=Resource)
    request: Resource = field(default_factory=Resource)
    inqueue: Resource = field(default_factory=Resource)
    elastic: Resource = field(default_factory=Resource)
    share: float = 0.0


def _unlimited_capability(cap: Resource | None, total: Resource) -> Resource:
    """spec.capability with absent (or non-positive cpu/memory) dimensions unlimited."""
    big = float("inf")
    r = total.clone()
    for k in r.scalars:
        r.scalars[k] = big
    r.milli_cpu = big
    r.memory = big
    if cap is None:
        return r
    if cap.milli_cpu > 0:
        r.milli_cpu = cap.milli_cpu
    if cap.memory > 0:
        r.memory = cap.memory
    for k, v in cap.scalars.items():
        r.scalars[k] = v
    return r


def share_of(allocated: Resource, deserved: Resource) -> float:
    """The largest allocated / deserved over deserved's names (cpu, memory, then its scalars, as
    Resource.items() lists them, each read as Resource.get reads it; 0 or 1 where nothing is
    deserved). Asked at every placement: read directly, the per-name step written out instead of
    a helper called per name."""
    a, d = allocated.milli_cpu, deserved.milli_cpu
    share = (0.0 if a == 0 else 1.0) if d <= 0 else a / d
    if not share > 0.0:
        share = 0.0  # a NaN or a negative figure leaves the share at 0, as max() from 0 does
    a, d = allocated.memory, deserved.memory
    s = (0.0 if a == 0 else 1.0) if d <= 0 else a / d
    if s > share:
        share = s
    mine = allocated.scalars
    # nothing of any scalar allocated: each one's share is 0 (or NaN), never above `share`
    # (unless a scalar is named like a fixed resource, which reads that resource)
    if deserved.scalars and (mine or not FIXED_NAMES.isdisjoint(deserved.scalars)):
        for name, d in deserved.scalars.items():
            # a scalar named like a fixed resource reads that resource, as Resource.get does
            a = allocated.get(name) if name in FIXED_NAMES else mine.get(name, 0.0)
            s = (0.0 if a == 0 else 1.0) if d <= 0 else a / d
            if s > share:
                share = s
    return share


def _elastic(job: JobInfo) -> Resource:
    """Resources allocated beyond minAvailable: what a job could give back without breaking its gang."""
    allocated = job.tasks_in(*ALLOCATED_STATUSES)
    extra = len(allocated) - job.min_available
    r = Resource()
    if extra <= 0:
        return r
    for t in sorted(allocated, key=lambda t: t.priority)[:extra]:
        r.add(t.resreq)
    return r


def _without_gated(job: JobInfo, r: Resource) -> Resource:
    """`r` less the requests of the job's scheduling-gated pods, never below zero (Volcano's
    DeductSchGatedResources): a gated pod must not hold queue room that other jobs could use."""
    gated = [t for t in job.task_status_index.get(_PENDING, {}).values() if t.scheduling_gated]
    if not gated:
        return r
    g = Resource()
    for t in gated:
        g.add(t.resreq)
    out = r.clone()
    out.milli_cpu = max(out.milli_cpu - g.milli_cpu, 0.0)
    out.memory = max(out.memory - g.memory, 0.0)
    for k, v in r.scalars.items():
        if k in g.scalars:
            out.scalars[k] = max(v - g.scalars[k], 0.0)
    return out


def _reservation(job: JobInfo, min_resources: Resource) -> Resource:
    """What an admitted job still holds back in its queue: minResources less what its tasks already
    hold (Volcano >= 1.13), so a job whose pods are placed but not yet running is not counted twice."""
    return _without_gated(job, min_resources.clone().sub(job.allocated).clip_at_zero())


def _part(job: JobInfo) -> list[tuple[int, Resource]]:
    """What a job adds to its queue's allocated (0), request (1), inqueue (2) and elastic (3)."""
    # Adding an all-zero vector without scalars changes nothing (a sum that starts at +0.0 is
    # never -0.0, and x + 0.0 is x): skipped, the allocation of a pending job and the pending
    # request of a running one.
    a = job.allocated
    part = [(0, a), (1, a)] if a.milli_cpu or a.memory or a.pods or a.scalars else []
    p = job.pending_request
    if p.milli_cpu or p.memory or p.pods or p.scalars:
        part.append((1, p))
    phase = job.pod_group_status.phase
    if job.min_resources is not None and (
        phase == PodGroupPhase.INQUEUE
        or (phase == PodGroupPhase.RUNNING and job.ready_task_num() >= job.min_available)
    ):
        part.append((2, _reservation(job, job.min_resources)))
    if job.min_available < len(job.tasks):
        part.append((3, _elastic(job)))
    return part


def water_fill(attrs: dict[str, QueueAttr], total: Resource) -> None:
    remaining = total.clone()
    met: set[str] = set()
    while True:
        total_weight = sum(a.weight for n, a in attrs.items() if n not in met)
        if total_weight == 0:
            break
        old_remaining = remaining.clone()
        increased = Resource()
        decreased = Resource()
        for name, a in attrs.items():
            if name in met:
                continue
            old = a.deserved.clone()
            a.deserved.add(remaining.clone().multi(a.weight / total_weight))
            a.deserved.min_dimension(a.real_capability, _INFINITY)
            a.deserved.min_dimension(a.request, _ZERO)
            a.deserved.set_max(a.guarantee)
            if a.request.less_equal(a.deserved, _ZERO) or a.deserved == old:
                met.add(name)
            diff_inc = a.deserved.clone().sub(old)
            for dim, v in diff_inc.items():
                if v > 0:
                    increased.set(dim, increased.get(dim) + v)
                elif v < 0:
                    decreased.set(dim, decreased.get(dim) - v)
        remaining.add(decreased).sub(increased).clip_at_zero()
        if remaining.is_empty() or remaining == old_remaining:
            break


class ProportionPlugin(Plugin):
    name = "proportion"

    def on_session_open(self, ssn: Session) -> None:
        total = ssn.total_resource
        attrs: dict[str, QueueAttr] = {}
        total_guarantee = Resource()
        for q in ssn.queues.values():
            total_guarantee.add(q.guarantee)
        for name, (allocated, request, inqueue, elastic) in queue_sums(ssn, self.name, 4, _part).items():
            q = ssn.queues[name]
            real = total.clone().sub(total_guarantee).clip_at_zero().add(q.guarantee)
            cap = _unlimited_capability(q.capability, total)
            real.min_dimension(cap, _INFINITY)
            a = QueueAttr(q, max(q.weight, 0), q.capability, real, q.guarantee.clone())
            a.allocated, a.request = allocated.clone(), request.clone()
            a.inqueue, a.elastic = inqueue.clone(), elastic.clone()
            attrs[name] = a
        water_fill(attrs, total)
        for a in attrs.values():
            a.share = share_of(a.allocated, a.deserved)
        self.attrs = attrs

        def queue_order(left: QueueInfo, right: QueueInfo) -> int:
            if left.priority != right.priority:
                return -1 if left.priority > right.priority else 1
            la, ra = attrs.get(left.name), attrs.get(right.name)
            ls = la.share if la else 0.0
            rs = ra.share if ra else 0.0
            if ls == rs:
                return 0
            return -1 if ls < rs else 1

        def overused(queue: QueueInfo) -> bool:
            a = attrs.get(queue.name)
            if a is None:
                return False
            return a.deserved.less_equal(a.allocated, _ZERO)

        def allocatable(queue: QueueInfo, task: TaskInfo) -> bool:
            if not queue.is_open():
                return False
            a = attrs.get(queue.name)
            if a is None:
                return True
            if a.allocated.plus_less_equal_with_dimension(task.resreq, a.deserved):
                return True
            ssn.denials[task.uid] = explain_sum(
                task.resreq,
                [("request", task.resreq), ("allocated", a.allocated)],
                ("deserved", a.deserved),
                hard=a.real_capability,
            )
            return False

        def reclaimable(_reclaimer: TaskInfo, reclaimees: list[TaskInfo]) -> tuple[list[TaskInfo], int]:
            running: dict[str, Resource] = {}
            victims: list[TaskInfo] = []
            for t in reclaimees:
                job = ssn.jobs.get(t.job)
                if job is None:
                    continue
                a = attrs.get(job.queue)
                if a is None:
                    continue
                if job.queue not in running:
                    running[job.queue] = a.allocated.clone()
                alloc = running[job.queue]
                if not alloc.less_equal(a.deserved, _ZERO):
                    alloc.sub(t.resreq)
                    victims.append(t)
            return victims, PERMIT

        def job_enqueueable(job: JobInfo) -> int:
            q = ssn.queues.get(job.queue)
            if q is None or not q.is_open():
                return REJECT
            a = attrs.get(job.queue)
            if a is None or job.min_resources is None:
                return PERMIT
            want = job.min_resources.clone().add(a.allocated).add(a.inqueue).sub(a.elastic)
            if want.less_equal_with_dimension(a.real_capability, job.min_resources):
                return PERMIT
            elastic = a.elastic.clone().multi(-1)
            detail = explain_sum(
                job.min_resources,
                [("minResources", job.min_resources), ("allocated", a.allocated), ("inqueue", a.inqueue),
                 ("elastic", elastic)],
                ("capability" if a.capability is not None else "cluster total", a.real_capability),
            )  # fmt: skip
            msg = f"queue resource quota insufficient: queue {job.queue} {detail}"
            ssn.decisions.job_events.append((job.uid, "Normal", "Unschedulable", msg))
            return REJECT

        def job_enqueued(job: JobInfo) -> None:
            a = attrs.get(job.queue)
            if a is not None and job.min_resources is not None:
                a.inqueue.add(_without_gated(job, job.min_resources))

        def update(sign: int, ev: Event) -> None:
            job = ssn.jobs.get(ev.task.job)
            a = None if job is None else attrs.get(job.queue)
            if a is None:
                return
            if sign > 0:
                a.allocated.add(ev.task.resreq)
            else:
                a.allocated.sub(ev.task.resreq)
            a.share = share_of(a.allocated, a.deserved)

        ssn.add_queue_order_fn(self.name, queue_order)
        ssn.add_overused_fn(self.name, overused)
        ssn.add_allocatable_fn(self.name, allocatable)
        ssn.add_preemptive_fn(self.name, allocatable)
        ssn.add_reclaimable_fn(self.name, reclaimable)
        ssn.add_job_enqueueable_fn(self.name, job_enqueueable)
        ssn.add_job_enqueued_fn(self.name, job_enqueued)
        # partials, not lambdas: the sign is passed in C, a Python call less per placement
        ssn.add_event_handler(EventHandler(functools.partial(update, 1), functools.partial(update, -1)))
