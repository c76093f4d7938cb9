"""capacity: each queue's deserved, capability and guarantee per resource, flat or hierarchical.

A queue may use idle resources beyond its deserved share up to its real capability (borrowing);
`reclaim` takes back, from queues above their deserved share on the dimensions the reclaimer
needs, what a queue below its share asks for, never below a queue's guarantee. With
`enableHierarchy: true` queues form a tree under `root` (`spec.parent`): jobs run in leaf queues
only, and every allocation must fit each ancestor's real capability as well. `ancestorReclaimLevel`
(hierarchy only) makes reclaim also look at ancestors up to that many levels up: a victim is
taken only if its ancestor at that level is above its own deserved share, and a queue below its
share there may reclaim even when the leaf itself is not.

A queue tree that does not reach root (unknown parent, cycle) is reported by queue name; jobs in
those queues are not admitted or placed, and every other queue goes on as before.
"""

from __future__ import annotations

from typing import ClassVar

from scheduler.actions.victims import victim_order
from scheduler.framework.arguments import Arguments
from scheduler.framework.plugin import Plugin
from scheduler.framework.session import (
    GANG_RECLAIM,
    PERMIT,
    REJECT,
    EventHandler,
    EvictionContext,
    Session,
    ValidateResult,
)
from scheduler.model.job import JobInfo
from scheduler.model.objects import QueueInfo, TaskInfo
from scheduler.model.resources import Infinity, Resource
from scheduler.plugins.capacity.attrs import (
    ROOT,
    QueueAttr,
    build_flat,
    build_tree,
    deduct_gated,
    job_part,
)
from scheduler.plugins.capacity.compare import (
    above_on_relevant,
    over_on_requested,
    present_names,
    room_on_some_requested,
)
from scheduler.plugins.queuesums import queue_sums

ANCESTOR_RECLAIM_LEVEL = "ancestorReclaimLevel"
# the key the queue tree's shape is carried under from one session to the next
_TREE = "capacity.tree"


def _level(left: QueueAttr, right: QueueAttr) -> int:
    """Index of the deepest ancestor two queues share, counting from root (Volcano's getQueueLevel)."""
    level = 0
    for i in range(min(len(left.ancestors), len(right.ancestors))):
        if left.ancestors[i] != right.ancestors[i]:
            return level
        level = i
    return level


def _ancestor_at(attr: QueueAttr, depth: int) -> str | None:
    """The ancestor `depth` levels up (1 = parent)."""
    if depth <= 0 or len(attr.ancestors) < depth:
        return None
    return attr.ancestors[len(attr.ancestors) - depth]


def _compare_share(left: QueueAttr, right: QueueAttr) -> int:
    if left.share == right.share:
        ld, rd = not left.deserved.is_empty(), not right.deserved.is_empty()
        if ld == rd:
            return 0
        return -1 if ld else 1
    return -1 if left.share < right.share else 1


class CapacityPlugin(Plugin):
    name: ClassVar[str] = "capacity"

    def __init__(self, arguments: Arguments) -> None:
        super().__init__(arguments)
        # Volcano falls back to 0 for a negative level (validate warns)
        self.ancestor_reclaim_level = max(arguments.get_int(ANCESTOR_RECLAIM_LEVEL, 0), 0)
        self.attrs: dict[str, QueueAttr] = {}
        self.hierarchy = False
        self.broken: dict[str, str] = {}

    @classmethod
    def validate(cls, arguments: Arguments) -> list[str] | None:
        cls(arguments)
        level = arguments.get_int(ANCESTOR_RECLAIM_LEVEL, 0)
        if level < 0:
            return [f"argument {ANCESTOR_RECLAIM_LEVEL!r} must be >= 0, got {level}; 0 is used"]
        return None

    # ------------------------------------------------------------------ session open --
    def on_session_open(self, ssn: Session) -> None:
        self.hierarchy = ssn.hierarchy_enabled(self.name)
        # what each queue's jobs hold, ask and reserve, kept between sessions (a walk over every
        # job was nearly all of an idle session's cost)
        sums = queue_sums(ssn, self.name, 4, job_part)
        if self.hierarchy:
            kept = ssn.carried(_TREE)
            tree, shape = build_tree(
                ssn.queues, ssn.jobs, ssn.total_resource, sums, kept[2] if kept is not None else None
            )
            ssn.carry(_TREE, shape)  # the settled tree, for a next session with the same queues
            self.attrs, self.broken = tree.attrs, tree.broken
            for w in tree.warnings:
                ssn.warn(f"capacity: {w}")
            ssn.add_queue_order_fn(self.name, self._tree_queue_order)
            ssn.add_victim_queue_order_fn(self.name, self._victim_queue_order)
        else:
            self.attrs = build_flat(ssn.queues, ssn.jobs, ssn.total_resource, sums)
            ssn.add_queue_order_fn(self.name, self._flat_queue_order)
        self.ssn = ssn
        if self.broken:
            ssn.add_job_valid_fn(self.name, self._job_valid)
        ssn.add_reclaimable_fn(self.name, self._reclaimable)
        ssn.add_unified_evictable_fn(self.name, self._gang_evictable)
        ssn.add_preemptive_fn(self.name, self._preemptive)
        ssn.add_allocatable_fn(self.name, self._allocatable)
        ssn.add_job_enqueueable_fn(self.name, self._job_enqueueable)
        ssn.add_job_enqueued_fn(self.name, self._job_enqueued)
        ssn.add_event_handler(
            EventHandler(lambda ev: self._account(ev.task, 1), lambda ev: self._account(ev.task, -1))
        )

    def on_session_close(self, ssn: Session) -> None:
        self.ssn = None  # type: ignore[assignment]

    def _job_valid(self, job: JobInfo) -> ValidateResult | None:
        """A job in a queue cut off from root waits with the reason on its pods."""
        why = self.broken.get(job.queue)
        if why is None:
            return None
        return ValidateResult(False, "InvalidQueue", f"{why}; its jobs are not scheduled")

    # ------------------------------------------------------------------ helpers --
    def _attr_of_job(self, job_uid: str) -> QueueAttr | None:
        job = self.ssn.jobs.get(job_uid)
        return None if job is None else self.attrs.get(job.queue)

    def _chain(self, attr: QueueAttr) -> list[QueueAttr]:
        """The queue then its ancestors up to root: where an allocation must fit."""
        return [self.attrs[n] for n in reversed(attr.chain()) if n in self.attrs]

    def _usable(self, queue: QueueInfo) -> QueueAttr | None:
        """The queue's attributes when it may take work at all (open, known, a leaf if hierarchical)."""
        if not queue.is_open():
            return None
        attr = self.attrs.get(queue.name)
        if attr is None:
            return None
        if self.hierarchy and attr.children:
            return None
        return attr

    def _account(self, task: TaskInfo, sign: int) -> None:
        attr = self._attr_of_job(task.job)
        if attr is None:
            return
        for a in [attr, *(self.attrs[n] for n in attr.ancestors)]:
            if sign > 0:
                a.allocated.add(task.resreq)
            else:
                a.allocated.sub(task.resreq)
        attr.update_share()

    # ------------------------------------------------------------------ ordering --
    def _flat_queue_order(self, left: QueueInfo, right: QueueInfo) -> int:
        if left.priority != right.priority:
            return -1 if left.priority > right.priority else 1
        la, ra = self.attrs.get(left.name), self.attrs.get(right.name)
        if la is None or ra is None:
            return 0
        return _compare_share(la, ra)

    def _tree_queue_order(self, left: QueueInfo, right: QueueInfo) -> int:
        # called ~6 times per queue popped from a heap, so written for speed: the lines of the
        # two queues are read from their kept paths, not worked out from their ancestors
        if left.priority != right.priority:
            return -1 if left.priority > right.priority else 1
        attrs = self.attrs
        la, ra = attrs.get(left.name), attrs.get(right.name)
        if la is None or ra is None:
            return 0
        if la.children or ra.children:
            if not la.children:
                return -1  # a leaf before an inner queue
            if not ra.children:
                return 1
            return _compare_share(la, ra)
        if not la.ancestors or not ra.ancestors:
            return self._by_level(la, ra)  # root as a leaf: a tree of one queue
        # Two leaves compete through their ancestors just below the deepest one they share: the
        # first place their paths differ (both start at root; two leaves part by the latest at
        # their own names, one leaf's path is never the start of another's).
        for a, b in zip(la.path, ra.path, strict=False):
            if a != b:
                lp, rp = attrs[a], attrs[b]
                if lp.share != rp.share:
                    return -1 if lp.share < rp.share else 1
                return _compare_share(lp, rp)
        return _compare_share(la, ra)  # the same queue

    def _by_level(self, la: QueueAttr, ra: QueueAttr) -> int:
        """Two leaves compared through Volcano's getQueueLevel, read off their ancestors."""
        level = _level(la, ra)
        lp = la.ancestors[level + 1] if level + 1 < len(la.ancestors) else la.name
        rp = ra.ancestors[level + 1] if level + 1 < len(ra.ancestors) else ra.name
        return _compare_share(self.attrs[lp], self.attrs[rp])

    def _victim_queue_order(self, left: QueueInfo, right: QueueInfo, preemptor: QueueInfo) -> int:
        la, ra, pa = (self.attrs.get(q.name) for q in (left, right, preemptor))
        if la is None or ra is None or pa is None:
            return 0
        ll, rl = _level(la, pa), _level(ra, pa)
        if ll == rl:
            return 0
        # victims from the queue closest to the reclaimer's go first
        return -1 if ll > rl else 1

    # ------------------------------------------------------------------ allocation --
    def _fits_real_capability(self, attr: QueueAttr, req: Resource) -> list[str]:
        future = attr.allocated.clone().add(req)
        return over_on_requested(future, attr.real_capability, req)

    def _allocatable(self, queue: QueueInfo, task: TaskInfo) -> bool:
        attr = self._usable(queue)
        if attr is None:
            return False
        return all(not self._fits_real_capability(a, task.resreq) for a in self._chain(attr))

    def _preemptive(self, queue: QueueInfo, task: TaskInfo) -> bool:
        if not queue.is_open() or queue.name in self.broken:
            return False
        attr = self.attrs.get(queue.name)
        if attr is None:
            return False
        req = task.resreq
        future = attr.allocated.clone().add(req)
        if over_on_requested(future, attr.real_capability, req):
            return False
        # one requested dimension still under deserved is enough to reclaim for it
        if room_on_some_requested(future, attr.deserved, req):
            return True
        if self.hierarchy:
            for depth in range(1, self.ancestor_reclaim_level + 1):
                anc = _ancestor_at(attr, depth)
                if anc is None or anc == ROOT or anc not in self.attrs:
                    continue
                a = self.attrs[anc]
                if room_on_some_requested(a.allocated.clone().add(req), a.deserved, req):
                    return True
        return False

    # ------------------------------------------------------------------ reclaim --
    def _reclaimee_ancestor(self, reclaimer: QueueAttr, reclaimee: QueueAttr, depth: int) -> QueueAttr | None:
        """The reclaimee's ancestor at `depth` when it is not shared with the reclaimer (else None)."""
        theirs = _ancestor_at(reclaimee, depth)
        if theirs is None or theirs == ROOT:
            return None
        if _ancestor_at(reclaimer, depth) == theirs:
            return None
        return self.attrs.get(theirs)

    def _shares_ancestor(self, a: QueueAttr, b: QueueAttr) -> bool:
        level = self.ancestor_reclaim_level
        mine = {_ancestor_at(a, d) for d in range(1, level + 1)} - {None, ROOT}
        theirs = {_ancestor_at(b, d) for d in range(1, level + 1)}
        return bool(mine & theirs)

    def _reclaimable(self, reclaimer: TaskInfo, reclaimees: list[TaskInfo]) -> tuple[list[TaskInfo], int]:
        ssn = self.ssn
        rjob = ssn.jobs.get(reclaimer.job)
        rattr = self.attrs.get(rjob.queue) if rjob is not None else None
        if rattr is None:
            return [], REJECT
        rqueue = ssn.queues.get(rjob.queue)  # type: ignore[union-attr]
        ordered = sorted(reclaimees, key=victim_order(ssn, rqueue))
        wanted = present_names(reclaimer.init_resreq)
        running: dict[str, Resource] = {}
        victims: list[TaskInfo] = []
        ancestors_on = self.hierarchy and self.ancestor_reclaim_level > 0
        for t in ordered:
            attr = self._attr_of_job(t.job)
            if attr is None:
                continue
            if not (present_names(t.resreq) & wanted):
                continue  # it holds nothing the reclaimer needs
            alloc = running.setdefault(attr.name, attr.allocated.clone())
            if not attr.guarantee.less_equal(alloc.clone().sub(t.resreq), Infinity.ZERO):
                continue  # taking it would leave its queue below its guarantee
            if not (present_names(t.resreq) & present_names(attr.deserved)):
                # its queue deserves none of what it holds: always reclaimable, unless both
                # queues sit under one ancestor and the reclaimer deserves nothing it asks for
                if (
                    ancestors_on
                    and self._shares_ancestor(rattr, attr)
                    and not (present_names(reclaimer.resreq) & present_names(rattr.deserved))
                ):
                    continue
            elif not above_on_relevant(alloc, attr.deserved, t.resreq):
                continue
            touched: list[Resource] = []
            if ancestors_on:
                ok = True
                for depth in range(1, self.ancestor_reclaim_level + 1):
                    if _ancestor_at(attr, depth) in (None, ROOT):
                        continue
                    anc = self._reclaimee_ancestor(rattr, attr, depth)
                    if anc is None:
                        continue
                    anc_alloc = running.setdefault(anc.name, anc.allocated.clone())
                    touched.append(anc_alloc)
                    if not (present_names(t.resreq) & present_names(anc.deserved)):
                        continue
                    if not above_on_relevant(anc_alloc, anc.deserved, t.resreq):
                        ok = False
                        break
                if not ok:
                    continue
            alloc.sub(t.resreq)
            for a in touched:
                a.sub(t.resreq)
            victims.append(t)
        return victims, PERMIT

    def _gang_evictable(self, ctx: EvictionContext, candidates: list[TaskInfo]) -> tuple[list[TaskInfo], int]:
        """gangreclaim's victims, in the order given: none that would take its queue below its
        guarantee, and only from queues above their deserved share on what the victim holds (or
        deserving none of it). Volcano checks neither the reclaimer's request nor ancestors here."""
        if ctx.kind != GANG_RECLAIM:
            return candidates, PERMIT  # as for preempt, capacity does not filter preemption
        running: dict[str, Resource] = {}
        victims: list[TaskInfo] = []
        for t in candidates:
            attr = self._attr_of_job(t.job)
            if attr is None:
                continue
            alloc = running.setdefault(attr.name, attr.allocated.clone())
            if not attr.guarantee.less_equal(alloc.clone().sub(t.resreq), Infinity.ZERO):
                continue
            immediate = not (present_names(t.resreq) & present_names(attr.deserved))
            if immediate or above_on_relevant(alloc, attr.deserved, t.resreq):
                alloc.sub(t.resreq)
                victims.append(t)
        return victims, PERMIT

    # ------------------------------------------------------------------ enqueue --
    def _job_enqueueable(self, job: JobInfo) -> int:
        queue = self.ssn.queues.get(job.queue)
        if queue is None:
            return REJECT
        if queue.name in self.broken:
            self._refuse(job, self.broken[queue.name])
            return REJECT
        attr = self._usable(queue)
        if attr is None:
            if self.hierarchy and queue.name in self.attrs:
                self._refuse(job, f"queue {queue.name!r} is not a leaf queue")
            return REJECT
        if job.min_resources is None:
            return PERMIT
        min_req = job.min_resources
        for a in self._chain(attr):
            want = min_req.clone().add(a.allocated).add(a.inqueue).sub(a.elastic)
            over = over_on_requested(want, a.real_capability, min_req)
            if over:
                self._refuse(
                    job, "queue resource quota insufficient: " + ", ".join(f"insufficient {n}" for n in over)
                )
                return REJECT
        return PERMIT

    def _refuse(self, job: JobInfo, message: str) -> None:
        self.ssn.decisions.job_events.append((job.uid, "Normal", "Unschedulable", message))

    def _job_enqueued(self, job: JobInfo) -> None:
        attr = self.attrs.get(job.queue)
        if attr is None or job.min_resources is None:
            return
        held = deduct_gated(job, job.min_resources)
        for a in [attr, *(self.attrs[n] for n in attr.ancestors)]:
            a.inqueue.add(held)
