"""preempt: starving jobs take resources from lower-priority work in their own queue (spec 6.4).

Inter-job first (victims from other jobs of the same queue), then intra-job (a job's own
lower-priority tasks). The preemptor is pipelined onto the node, not bound: it is allocated in a
later cycle once the victims are gone. A job's evictions are committed only if it becomes
pipelined; otherwise they are undone.

With `enableTopologyAwarePreemption` (the preempt action's argument) victims are chosen as
kube-scheduler does: on each candidate node every lower-priority victim is taken off in victim
order until the preemptor fits, then the victims are given back, highest priority first, as long
as the preemptor still fits; the node whose remaining victims matter least is chosen. So only what
is needed is evicted (a pod in the way of an anti-affinity rule, not its neighbours), and nothing
where evicting every victim would still leave the preemptor unfit.

As in Volcano, a preemptor's inter-pod affinity and spread counts are those of its pre-predicate:
evicting the pod its anti-affinity refuses does not make it fit, so without topology-aware
preemption nothing is evicted for such a conflict. The dry run's removals do reach the inter-pod
affinity counts when the predicates plugin's enablePreemptable or enabledAllocatable switch is on
(`Session.follows_dry_run`, Volcano's SimulateRemoveTask).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from scheduler.actions.victims import (
    candidate_nodes,
    evict_until_fit,
    fits_after,
    sorted_by_score,
    victim_order,
    victims_cover,
)
from scheduler.framework.arguments import Arguments
from scheduler.framework.pqueue import PriorityQueue
from scheduler.framework.session import Session
from scheduler.framework.statement import Statement
from scheduler.framework.status import AllocateError
from scheduler.model.job import JobInfo
from scheduler.model.node import NodeInfo
from scheduler.model.objects import PREEMPTABLE_STATUSES, QueueInfo, TaskInfo, TaskStatus

Filter = Callable[[TaskInfo], bool]


@dataclass(frozen=True, slots=True)
class PreemptOptions:
    """The preempt action's arguments (Volcano's names and defaults)."""

    topology_aware: bool = False
    min_candidate_nodes_percentage: int = 10
    min_candidate_nodes_absolute: int = 1
    max_candidate_nodes_absolute: int = 100

    @classmethod
    def parse(cls, arguments: Arguments) -> PreemptOptions:
        """Raises ArgumentError for a value of the wrong type (checked when the config loads)."""
        return cls(
            arguments.get_bool("enableTopologyAwarePreemption", False),
            arguments.get_int("minCandidateNodesPercentage", 10),
            arguments.get_int("minCandidateNodesAbsolute", 1),
            arguments.get_int("maxCandidateNodesAbsolute", 100),
        )

    def candidates_wanted(self, nodes: int) -> int:
        n = nodes * self.min_candidate_nodes_percentage // 100
        n = min(max(n, self.min_candidate_nodes_absolute), self.max_candidate_nodes_absolute)
        return min(n, nodes)


def _starving_jobs(ssn: Session) -> dict[str, list[JobInfo]]:
    by_queue: dict[str, list[JobInfo]] = {}
    for job in ssn.jobs.values():
        if not job.task_status_index.get(TaskStatus.PENDING):
            continue
        if job.is_pending() or ssn.job_valid(job) is not None:
            continue
        if job.queue not in ssn.queues:
            continue
        if not ssn.job_starving(job):
            continue
        # as Volcano (its issue 4374): a job with a network topology does not preempt
        if job.network_topology is not None or any(p.network_topology for p in job.subgroup_policies):
            continue
        by_queue.setdefault(job.queue, []).append(job)
    return by_queue


def _pending(job: JobInfo) -> list[TaskInfo]:
    return [t for t in job.task_status_index.get(TaskStatus.PENDING, {}).values() if not t.scheduling_gated]


def preempt(ssn: Session) -> None:
    opts = PreemptOptions.parse(ssn.conf.action_arguments("preempt"))
    starving = _starving_jobs(ssn)
    queues = sorted((ssn.queues[q] for q in starving), key=ssn.queue_key)
    for queue in queues:
        jobs = starving[queue.name]
        preemptors: PriorityQueue[JobInfo] = PriorityQueue(ssn.job_compare, jobs)
        task_heaps = {j.uid: PriorityQueue(ssn.task_compare, _pending(j)) for j in jobs}
        while not preemptors.empty():
            job = preemptors.pop()
            stmt = Statement(ssn)
            assigned = False
            tasks = task_heaps[job.uid]
            while ssn.job_starving(job) and not tasks.empty():
                task = tasks.pop()

                def other_job(v: TaskInfo, task: TaskInfo = task, qname: str = queue.name) -> bool:
                    vj = ssn.jobs.get(v.job)
                    return vj is not None and vj.queue == qname and v.job != task.job

                if _preempt_task(ssn, stmt, queue, task, other_job, opts):
                    assigned = True
            if ssn.job_pipelined(job):
                stmt.commit()
            else:
                stmt.discard()
                continue
            if assigned and not tasks.empty():
                preemptors.push(job)

        for job in jobs:
            if not ssn.job_starving(job):
                continue
            for task in sorted(_pending(job), key=ssn.task_key):
                stmt = Statement(ssn)

                def same_job(v: TaskInfo, task: TaskInfo = task) -> bool:
                    return v.job == task.job

                if _preempt_task(ssn, stmt, queue, task, same_job, opts):
                    stmt.commit()
                else:
                    stmt.discard()
                    break


def _base_filter(preemptor: TaskInfo, victim: TaskInfo) -> bool:
    if victim.status not in PREEMPTABLE_STATUSES or not victim.preemptable:
        return False
    return not (preemptor.best_effort and not victim.best_effort)


def _preempt_task(
    ssn: Session, stmt: Statement, queue: QueueInfo, task: TaskInfo, extra: Filter, opts: PreemptOptions
) -> bool:
    if task.pod.preemption_policy == "Never":
        return False
    if ssn.pre_predicate(task) is not None:
        return False
    if opts.topology_aware:
        return _topology_aware_preempt(ssn, stmt, queue, task, extra, candidate_nodes(ssn, task), opts)
    nodes = sorted_by_score(ssn, task, candidate_nodes(ssn, task))
    for node in nodes:
        victims = _victims_on(ssn, task, node, extra)
        if not victims or not victims_cover(task, node, victims):
            continue
        ssn.preemption_attempts += 1
        if evict_until_fit(ssn, stmt, queue, task, node, victims, "preempt"):
            return True
    return False


def _victims_on(ssn: Session, task: TaskInfo, node: NodeInfo, extra: Filter) -> list[TaskInfo]:
    preemptees = [v for v in node.tasks.values() if _base_filter(task, v) and extra(v)]
    victims = ssn.preemptable(task, preemptees) if preemptees else []
    ssn.last_preemption_victims = len(victims)
    return victims


def _topology_aware_preempt(
    ssn: Session,
    stmt: Statement,
    queue: QueueInfo,
    task: TaskInfo,
    extra: Filter,
    nodes: list[NodeInfo],
    opts: PreemptOptions,
) -> bool:
    """Volcano's topologyAwarePreempt: a dry run on candidate nodes, then the best candidate."""
    if not nodes:
        return False
    wanted = opts.candidates_wanted(len(nodes))
    offset = ssn.rng.randrange(len(nodes))  # upstream starts at a random node too
    candidates: list[tuple[NodeInfo, list[TaskInfo]]] = []
    for i in range(len(nodes)):
        node = nodes[(offset + i) % len(nodes)]
        victims = _minimal_victims(ssn, queue, task, node, _victims_on(ssn, task, node, extra))
        if victims:
            candidates.append((node, victims))
            if len(candidates) >= wanted:
                break
    if not candidates:
        return False
    node, victims = min(candidates, key=_candidate_cost)
    trial = Statement(ssn)
    for v in victims:
        trial.evict(v, "preempt")
    ssn.preemption_attempts += 1
    try:
        trial.pipeline(task, node)
    except AllocateError:
        trial.discard()
        return False
    ssn.nominated[task.uid] = node.name
    stmt.operations.extend(trial.operations)
    return True


def _minimal_victims(
    ssn: Session, queue: QueueInfo, task: TaskInfo, node: NodeInfo, victims: list[TaskInfo]
) -> list[TaskInfo]:
    """Volcano's SelectVictimsOnNode, on the session itself and undone before returning: take
    victims off in victim order until the preemptor fits, then give them back, highest priority
    first, keeping off only those without which it does not fit. Empty when no set of these
    victims makes it fit."""
    if not victims or not victims_cover(task, node, victims):
        return []
    trial = Statement(ssn)
    ssn.victim_dry_run = True
    try:
        for v in sorted(victims, key=victim_order(ssn, queue)):
            trial.evict(v, "preempt")
            if fits_after(ssn, queue, task, node):
                break
        if ssn.predicate(task, node) is not None:
            return []
        chosen: list[TaskInfo] = []
        for op in reversed(list(trial.operations)):
            ssn.unmark_releasing(op.task, op.prior_status)
            if fits_after(ssn, queue, task, node):
                trial.operations.remove(op)
            else:
                op.task, _ = ssn.mark_releasing(op.task)
                chosen.append(op.task)
        return chosen
    finally:
        trial.discard()
        ssn.victim_dry_run = False


def _candidate_cost(candidate: tuple[NodeInfo, list[TaskInfo]]) -> tuple[int, int, int, float]:
    """kube-scheduler's pickOneNodeForPreemption order: the lowest highest-priority victim, the
    lowest sum of priorities, the fewest victims, the latest start of the highest-priority ones."""
    victims = candidate[1]
    top = max(v.priority for v in victims)
    earliest_top = min(v.pod.creation for v in victims if v.priority == top)
    return top, sum(v.priority for v in victims), len(victims), -earliest_top
