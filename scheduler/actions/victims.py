"""What preempt and reclaim share: candidate nodes, victim order, evict-until-it-fits.

Candidate nodes are those whose predicate failures evictions could cure (resources are not checked
there). Victims leave in the reverse of scheduling order: the job that job order puts last goes
first, and within a job the task that task order puts last; across queues VictimQueueOrder decides.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

from scheduler.framework.fiterrors import FitErrors
from scheduler.framework.placement import predicate_nodes, score_nodes
from scheduler.framework.session import Session
from scheduler.framework.statement import Statement
from scheduler.framework.status import AllocateError, Unfit
from scheduler.model.node import NodeInfo
from scheduler.model.objects import QueueInfo, TaskInfo, TaskStatus
from scheduler.model.resources import Resource


def candidate_nodes(ssn: Session, task: TaskInfo) -> list[NodeInfo]:
    errors = FitErrors()

    def check(t: TaskInfo, n: NodeInfo) -> Unfit | None:
        return ssn.predicate(t, n)

    return predicate_nodes(
        ssn, task, ssn.node_list, check, errors, sample=False, accept=lambda u: u.resolvable
    )


def sorted_by_score(ssn: Session, task: TaskInfo, nodes: list[NodeInfo]) -> list[NodeInfo]:
    scores = score_nodes(ssn, task, nodes)
    return sorted(nodes, key=lambda n: -scores[n.name])


def has_pod_slot(node: NodeInfo, victims: Sequence[TaskInfo] = ()) -> bool:
    """Whether the node has a pod slot for one more pod once its releasing pods and `victims` are
    gone. Volcano counts `pods` as a resource of every task (1 each), so a preemptor needs a free
    slot in the node's future idle: on a node whose slots are full victims are evicted for it even
    when CPU and memory are to spare."""
    if not node.max_task_num:
        return True
    held = sum(1 for t in node.tasks.values() if t.status != TaskStatus.RELEASING)
    held -= sum(1 for v in victims if v.status != TaskStatus.RELEASING)
    return node.max_task_num - held >= 1


def victims_cover(task: TaskInfo, node: NodeInfo, victims: list[TaskInfo]) -> bool:
    freed = node.future_idle()
    for v in victims:
        freed.add(v.resreq)
    return has_pod_slot(node, victims) and task.init_resreq.less_equal(freed)


def victim_order(ssn: Session, preemptor_queue: QueueInfo | None) -> Callable[[TaskInfo], object]:
    def cmp(a: TaskInfo, b: TaskInfo) -> int:
        ja, jb = ssn.jobs.get(a.job), ssn.jobs.get(b.job)
        if ja is not None and jb is not None:
            if ja.queue != jb.queue and preemptor_queue is not None:
                qa, qb = ssn.queues.get(ja.queue), ssn.queues.get(jb.queue)
                if qa is not None and qb is not None:
                    r = ssn.victim_queue_compare(qa, qb, preemptor_queue)
                    if r:
                        return r
            if ja.uid != jb.uid:
                return -ssn.job_compare(ja, jb)
        return -ssn.task_compare(a, b)

    return functools.cmp_to_key(cmp)


def fits_after(ssn: Session, queue: QueueInfo, task: TaskInfo, node: NodeInfo) -> bool:
    return (
        ssn.allocatable(queue, task)
        and task.init_resreq.less_equal(node.future_idle())
        and has_pod_slot(node)
        and ssn.predicate(task, node) is None
    )


def evict_until_fit(
    ssn: Session,
    stmt: Statement,
    queue: QueueInfo,
    task: TaskInfo,
    node: NodeInfo,
    victims: list[TaskInfo],
    reason: str,
) -> bool:
    """Evict victims in order until the task fits, then pipeline it there; undo all on failure."""
    trial = Statement(ssn)
    ordered = sorted(victims, key=victim_order(ssn, queue))
    evicted = 0
    for v in ordered:
        if fits_after(ssn, queue, task, node):
            break
        trial.evict(v, reason)
        evicted += 1
    if not fits_after(ssn, queue, task, node):
        trial.discard()
        return False
    if evicted > 1:
        _spare_device_victims(ssn, trial, queue, task, node)
    try:
        trial.pipeline(task, node)
    except AllocateError:
        trial.discard()
        return False
    if evicted:
        ssn.nominated[task.uid] = node.name
    stmt.operations.extend(trial.operations)
    return True


def _spare_device_victims(
    ssn: Session, trial: Statement, queue: QueueInfo, task: TaskInfo, node: NodeInfo
) -> None:
    """Give back the victims holding extended resources (devices) that the preemptor fits without.

    Evicting in victim order can take a sharer off a GPU that never frees up (another pod stays
    on it) before reaching the victim whose card does; only such device holders are given back,
    so CPU/memory-only preemption keeps Volcano's evict-in-order behaviour.
    """
    for op in reversed(trial.operations[:-1]):  # the last victim is the one that made it fit
        if not any(v > 0 for v in op.task.resreq.scalars.values()):
            continue
        ssn.unmark_releasing(op.task, op.prior_status)
        if fits_after(ssn, queue, task, node):
            trial.operations.remove(op)
        else:
            op.task, _ = ssn.mark_releasing(op.task)


def preempted_resources(victims: list[TaskInfo]) -> Resource:
    total = Resource()
    for v in victims:
        total.add(v.resreq)
    return total
