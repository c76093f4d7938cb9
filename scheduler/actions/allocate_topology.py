"""allocate for jobs with a network topology or partitions: HyperNode by HyperNode, tier by tier.

As Volcano's allocate does for such jobs: the HyperNode gradient (network-topology-aware plugin)
lists the HyperNodes the job may use, lowest tier first. Within a tier every HyperNode is tried as
a dry run: the job's sub-jobs (its partitions, or the one default sub-job) are placed in turn,
each searching its own gradient inside that HyperNode, and the attempt is undone. The HyperNode
whose attempt made the job ready (or pipelined) with the best HyperNode-order score wins and its
placements are made again for real; only when no HyperNode of a tier works is the next tier tried.
A hard constraint therefore keeps the gang inside one HyperNode of an allowed tier or leaves it
pending; soft mode is a hard bound at the cluster top, so it prefers closeness but never blocks.

Fast path, same decisions: when every HyperNode of a tier is a leaf and the sub-job has nothing
placed yet, a HyperNode's score does not depend on its dry run (it is the bin packing of the
sub-job's request into it), so the HyperNodes are tried best score first and the first that
works is the answer; the others are never tried.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from scheduler.actions.tasksteps import SKIP, STOP, place_best, task_gate
from scheduler.framework.fiterrors import FitErrors
from scheduler.framework.placement import NodePredicate, NodesPredicate, NodesPredicateIdle, PlacementCache
from scheduler.framework.pqueue import PriorityQueue
from scheduler.framework.session import Session
from scheduler.framework.statement import ALLOCATE, Statement
from scheduler.model.job import JobInfo
from scheduler.model.node import NodeInfo
from scheduler.model.objects import QueueInfo, TaskInfo
from scheduler.model.resources import Resource
from scheduler.model.subjob import (
    SubJob,
    TopologyError,
    build_subjobs,
    recover_allocated,
    resolve,
    subgroups_satisfied,
)
from scheduler.model.topology import CLUSTER_TOP, HyperNodeInfo, NetworkTopologySpec, Topology

PURPOSE = "allocate"


@dataclass(slots=True)
class JobUnit:
    """The job as the HyperNode gradient and order see it (the counterpart of a SubJob)."""

    job: JobInfo
    network_topology: NetworkTopologySpec | None
    allocated_hypernode: str = ""

    @property
    def hard_tier(self) -> int | None:
        nt = self.network_topology
        return nt.highest_tier if nt is not None and nt.hard else None

    def min_request(self, ssn: Session) -> Resource:
        return self.job.min_resources or Resource()

    def all_tasks(self, ssn: Session) -> list[TaskInfo]:
        return list(self.job.tasks.values())


@dataclass(slots=True)
class Worksheet:
    subjobs: PriorityQueue[SubJob]
    tasks: dict[str, PriorityQueue[TaskInfo]] = field(default_factory=dict)

    def clone(self) -> Worksheet:
        return Worksheet(self.subjobs.clone(), {k: q.clone() for k, q in self.tasks.items()})

    def empty(self) -> bool:
        return self.subjobs.empty()


@dataclass(slots=True)
class TopologyJob:
    job: JobInfo
    unit: JobUnit
    subjobs: dict[str, SubJob]
    worksheet: Worksheet


@dataclass(slots=True)
class Placer:
    """allocate's predicate and one placement cache per HyperNode searched in this session."""

    ssn: Session
    check: NodePredicate
    caches: dict[str, PlacementCache] = field(default_factory=dict)
    # the predicate's many-node forms, as the session-wide cache has them (the same answers)
    check_many: NodesPredicate | None = None
    check_many_idle: NodesPredicateIdle | None = None

    def cache(self, hypernode: str) -> PlacementCache:
        c = self.caches.get(hypernode)
        if c is None:
            nodes = self.ssn.hypernode_nodes(hypernode)
            c = self.caches[hypernode] = PlacementCache(
                self.ssn,
                self.check,
                nodes,
                check_many=self.check_many,
                check_many_idle=self.check_many_idle,
                domain=hypernode,
            )
        return c


def needs_topology(job: JobInfo) -> bool:
    return job.network_topology is not None or bool(job.subgroup_policies)


def job_ready(ssn: Session, tj: TopologyJob) -> bool:
    """The gang's readiness, and the partitions' `minSubGroups` (Volcano's gang checks both)."""
    return ssn.job_ready(tj.job) and subgroups_satisfied(tj.job, tj.subjobs)


def job_pipelined(ssn: Session, tj: TopologyJob) -> bool:
    return ssn.job_pipelined(tj.job) and subgroups_satisfied(tj.job, tj.subjobs, pipelined=True)


def subjob_ready(ssn: Session, job: JobInfo, sj: SubJob) -> bool:
    return sj.is_ready(job) if job.subgroup_policies else ssn.job_ready(job)


def subjob_pipelined(ssn: Session, job: JobInfo, sj: SubJob) -> bool:
    return sj.is_pipelined(job) if job.subgroup_policies else ssn.job_pipelined(job)


def prepare(ssn: Session, job: JobInfo, pending: list[TaskInfo]) -> TopologyJob | None:
    """The job's sub-jobs and worksheet; None (with the reason on the job) when its constraint
    names a tier no HyperNode has."""
    topo = ssn.topology
    try:
        job_nt = resolve(job.network_topology, topo, None, "spec.networkTopology")
        subjobs = build_subjobs(job, topo)
    except TopologyError as exc:
        job.fit_error = f"network topology: {exc}"
        return None
    for sj in subjobs.values():
        ssn.task_subjob.update(dict.fromkeys(sj.task_uids, sj))
    unit = JobUnit(job, job_nt, recover_allocated(job, subjobs, topo))
    pending_ids = {t.uid for t in pending}
    ready_count: dict[str, int] = {}
    waiting: list[SubJob] = []
    for sj in subjobs.values():
        if subjob_ready(ssn, job, sj):
            ready_count[sj.gid] = ready_count.get(sj.gid, 0) + 1
        else:
            waiting.append(sj)
    waiting.sort(key=lambda s: (s.match_index, s.uid))
    minimum = {f"{job.uid}/{p.name}": p.min_subgroups for p in job.subgroup_policies}
    required: set[str] = set()
    for sj in waiting:
        if ready_count.get(sj.gid, 0) < minimum.get(sj.gid, 0):
            required.add(sj.uid)
            ready_count[sj.gid] = ready_count.get(sj.gid, 0) + 1

    def order(a: SubJob, b: SubJob) -> int:
        ra, rb = a.uid in required, b.uid in required
        if ra != rb:
            return -1 if ra else 1
        ka, kb = (a.match_index, a.uid), (b.match_index, b.uid)
        return -1 if ka < kb else (1 if ka > kb else 0)

    ws = Worksheet(PriorityQueue(order))
    for sj in subjobs.values():
        tasks = [job.tasks[u] for u in sj.task_uids if u in pending_ids]
        if tasks:
            ws.tasks[sj.uid] = _task_queue(ssn, tasks)
            ws.subjobs.push(sj)
    if ws.empty():
        return None
    return TopologyJob(job, unit, subjobs, ws)


def _task_queue(ssn: Session, tasks: list[TaskInfo]) -> PriorityQueue[TaskInfo]:
    """The sub-job's pending tasks in task order: by sort keys when the task order plugins give
    them (allocate's _task_heap: the same pops without task_compare's plugin calls, ~5 % of a
    gang backlog's session here), else compared by task_compare. The queue and its clones are
    only popped, so a keyed one stays a sorted run."""
    keys = ssn.task_order_keys(tasks)
    if keys is None:
        return PriorityQueue(ssn.task_compare, tasks)
    return PriorityQueue.from_keys(ssn.task_compare, tasks, keys)


def _replay(ssn: Session, ops: list[tuple[str, TaskInfo, NodeInfo]]) -> Statement:
    stmt = Statement(ssn)
    for kind, task, node in ops:
        if kind == ALLOCATE:
            stmt.allocate(task, node)
        else:
            stmt.pipeline(task, node)
    return stmt


def _ops(stmts: list[Statement], ssn: Session) -> list[tuple[str, TaskInfo, NodeInfo]]:
    return [(op.kind, op.task, ssn.nodes[op.task.node_name]) for s in stmts for op in s.operations]


def _leaves_only(group: list[HyperNodeInfo]) -> bool:
    return all(not hn.children for hn in group)


def _nothing_placed(job: JobInfo, sj: SubJob) -> bool:
    """No task of the sub-job is on a node: HyperNode scores then do not depend on a dry run."""
    return not sj.allocated_hypernode and not any(t.node_name for t in sj.tasks(job))


def _ranked(ssn: Session, unit: SubJob, group: list[HyperNodeInfo]) -> list[HyperNodeInfo]:
    """The group best score first (ties keep gradient order). Scored together: the order's
    tie-break (tasks already in a HyperNode) is zero for a sub-job with nothing placed, which is
    when this is used, so each score is what it would be on its own."""
    scores = ssn.hypernode_scores(unit, [hn.name for hn in group])
    return sorted(group, key=lambda hn: -scores[hn.name])


def allocate_for_job(ssn: Session, queue: QueueInfo, tj: TopologyJob, placer: Placer) -> Statement | None:
    """Place the job inside the best HyperNode of the lowest workable tier; None if none works."""
    job = tj.job
    topo = ssn.topology
    single = len(tj.worksheet.tasks) == 1 and len(tj.subjobs) == 1
    for group in ssn.hypernode_gradient(tj.unit, topo.top, PURPOSE):
        only_sj = next(iter(tj.subjobs.values()))
        fast = single and _leaves_only(group) and _nothing_placed(job, only_sj)
        tries = _ranked(ssn, only_sj, group) if fast else group
        best: tuple[float, HyperNodeInfo, list, Worksheet, dict[str, str]] | None = None
        for hn in tries:
            job.nodes_fit_errors = {}
            ws = tj.worksheet.clone()
            saved = {u: sj.allocated_hypernode for u, sj in tj.subjobs.items()}
            stmts: list[Statement] = []
            score = 0.0
            while not ws.subjobs.empty():
                sj = ws.subjobs.pop()
                got = _allocate_for_subjob(ssn, queue, job, sj, ws.tasks[sj.uid], hn, placer)
                if got is not None:
                    stmt, s, left = got
                    stmts.append(stmt)
                    score += s
                    ws.tasks[sj.uid] = left
                    if not left.empty():
                        ws.subjobs.push(sj)
                    if job_ready(ssn, tj):
                        break
            decided = {u: sj.allocated_hypernode for u, sj in tj.subjobs.items()}
            for u, sj in tj.subjobs.items():
                sj.allocated_hypernode = saved[u]
            ops = _ops(stmts, ssn)
            works = bool(ops) and (job_ready(ssn, tj) or job_pipelined(ssn, tj))
            if works and fast:
                # the first HyperNode that works is the best: keep its placements as they are
                stmt = Statement(ssn)
                for st in stmts:
                    stmt.operations.extend(st.operations)
                return _decide(tj, hn, ws, decided, stmt, topo)
            if works and (best is None or score > best[0]):
                best = (score, hn, ops, ws, decided)
            for stmt in reversed(stmts):
                stmt.discard()
        if best is None:
            continue
        _, hn, ops, ws, decided = best
        return _decide(tj, hn, ws, decided, _replay(ssn, ops), topo)
    if not job.fit_error and tj.unit.hard_tier is not None and tj.unit.hard_tier < topo.top.tier:
        job.fit_error = (
            f"network topology (hard, highestTierAllowed {tj.unit.hard_tier}): "
            "no HyperNode of an allowed tier can hold the job"
        )
    return None


def _decide(
    tj: TopologyJob,
    hn: HyperNodeInfo,
    ws: Worksheet,
    decided: dict[str, str],
    stmt: Statement,
    topo: Topology,
) -> Statement:
    """Adopt the chosen HyperNode's outcome: the worksheet left, the sub-jobs' HyperNodes."""
    tj.worksheet = ws
    for u, sj in tj.subjobs.items():
        sj.allocated_hypernode = decided[u]
    tj.unit.allocated_hypernode = topo.lca(tj.unit.allocated_hypernode, hn.name)
    return stmt


def _allocate_for_subjob(
    ssn: Session,
    queue: QueueInfo,
    job: JobInfo,
    sj: SubJob,
    tasks: PriorityQueue[TaskInfo],
    hn_for_job: HyperNodeInfo,
    placer: Placer,
) -> tuple[Statement, float, PriorityQueue[TaskInfo]] | None:
    if tasks.empty():
        return None
    topo = ssn.topology
    for group in ssn.hypernode_gradient(sj, hn_for_job, PURPOSE):
        fast = _leaves_only(group) and _nothing_placed(job, sj)
        tries = _ranked(ssn, sj, group) if fast else group
        found: list[tuple[HyperNodeInfo, list, PriorityQueue[TaskInfo]]] = []
        for hn in tries:
            for u in sj.task_uids:
                job.nodes_fit_errors.pop(u, None)
            left = tasks.clone()
            stmt = _allocate_tasks_in(ssn, queue, job, sj, left, hn.name, placer)
            if stmt is not None and stmt.operations:
                if fast:  # the first that works is the best: no dry run needed
                    sj.allocated_hypernode = topo.lca(sj.allocated_hypernode, hn.name)
                    return stmt, ssn.hypernode_scores(sj, [hn.name])[hn.name], left
                found.append((hn, _ops([stmt], ssn), left))
                stmt.discard()
        if not found:
            continue
        scores = ssn.hypernode_scores(sj, [f[0].name for f in found])
        hn, ops, left = max(found, key=lambda f: scores[f[0].name])
        stmt = _replay(ssn, ops)
        sj.allocated_hypernode = topo.lca(sj.allocated_hypernode, hn.name)
        return stmt, scores[hn.name], left
    return None


def _allocate_tasks_in(
    ssn: Session,
    queue: QueueInfo,
    job: JobInfo,
    sj: SubJob,
    tasks: PriorityQueue[TaskInfo],
    hypernode: str,
    placer: Placer,
) -> Statement | None:
    """allocate's task loop restricted to the nodes under one HyperNode."""
    nodes = ssn.hypernode_nodes(hypernode)
    cache = placer.cache(hypernode)
    if not nodes:
        return None
    topo = ssn.topology
    stmt = Statement(ssn)
    allocated = sj.allocated_hypernode
    failed_roles: set[str] = set()
    need_all = job.min_available == len(job.tasks) or sj.min_available >= len(sj.task_uids)
    while not tasks.empty():
        task = tasks.pop()
        errors = FitErrors()
        gate = task_gate(ssn, queue, job, task, failed_roles, nodes, errors, not need_all)
        if gate is STOP:
            break
        if gate is SKIP:
            continue
        candidates = cache.feasible(task, errors)
        if not candidates:
            if hypernode != CLUSTER_TOP:
                errors.hypernode = hypernode
            ssn.record_fit_errors(job, task, errors)
            if task.role:
                failed_roles.add(task.role)
            if need_all:
                break
            continue
        if sj.network_topology is not None:
            ssn.task_job_hypernode[task.uid] = allocated
        placed = place_best(ssn, stmt, task, candidates, errors, cache, True)
        if not placed:
            ssn.record_fit_errors(job, task, errors)
            continue
        if sj.network_topology is not None:
            node_name = job.tasks[task.uid].node_name
            leaf = topo.leaf_of.get(node_name, "")
            if leaf and leaf != allocated:  # lca(x, x) is x: the gang's pods after its first
                allocated = topo.lca(allocated, leaf)
        if subjob_ready(ssn, job, sj):
            break
    if subjob_ready(ssn, job, sj) or subjob_pipelined(ssn, job, sj):
        return stmt
    stmt.discard()
    return None
