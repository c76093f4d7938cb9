"""What gangpreempt and gangreclaim share: evict whole victim bundles for a whole starving gang.

Volcano's gang-aware eviction (actions/gangpreempt, actions/gangreclaim, actions/utils). For each
starving job, queue by queue in queue order and job by job in job order:

1. The tasks to make room for: every pending task of the job's worksheet (its partitions in
   allocate's order), or, for a job already gang-ready, only those of its first partition.
2. The candidate domains: the HyperNodes the network-topology-aware gradient offers for eviction
   (widest first, at most `maxDomains`), or the whole cluster for a job without a hard topology.
3. In each domain, the victims' bundles (see bundles.py), filtered by the plugins'
   UnifiedEvictable votes and sorted. Bundles are added one at a time; as soon as the domain's
   idle and releasing resources plus the victims cover the job's need, the eviction is dry-run:
   the victims are evicted and every partition's pending tasks pipelined (inside a HyperNode of
   its own gradient for a hard topology), and the plan stands only if the job becomes
   pipelined. Otherwise the next bundle is added and the dry run repeated.
4. The job's evictions and pipelines are committed only when the job is pipelined, else all are
   undone: a gang gets its minimum or evicts nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from scheduler.actions.allocate_topology import (
    JobUnit,
    TopologyJob,
    job_pipelined,
    prepare,
    subjob_pipelined,
    subjob_ready,
)
from scheduler.actions.bundles import (
    Bundle,
    BundleType,
    apply_allowed,
    create_job_bundles,
    flatten,
    sort_bundles,
    sum_resreq,
)
from scheduler.actions.victims import has_pod_slot
from scheduler.actions.worklist import queue_worklist
from scheduler.framework.arguments import Arguments
from scheduler.framework.placement import prioritize
from scheduler.framework.pqueue import PriorityQueue
from scheduler.framework.session import EvictionContext, Session
from scheduler.framework.statement import PIPELINE, Statement
from scheduler.framework.status import AllocateError
from scheduler.model.job import JobInfo
from scheduler.model.node import NodeInfo
from scheduler.model.objects import QueueInfo, TaskInfo, TaskStatus
from scheduler.model.resources import Resource
from scheduler.model.subjob import SubJob, TopologyError, build_subjobs
from scheduler.model.topology import HyperNodeInfo

MAX_DOMAINS = "maxDomains"
ALLOW_WHOLE_BUNDLE = "allowWholeBundle"
DEFAULT_MAX_DOMAINS = 8
# the purpose the HyperNode gradient is asked for: widest domains first, sized on allocatable
PURPOSE_EVICT = "evict"


@dataclass(frozen=True, slots=True)
class GangEvictOptions:
    """gangpreempt's and gangreclaim's arguments (Volcano's names and defaults)."""

    max_domains: int = DEFAULT_MAX_DOMAINS
    allow_whole_bundle: bool = True

    @classmethod
    def parse(cls, arguments: Arguments) -> GangEvictOptions:
        """Raises ArgumentError for a value of the wrong type; a `maxDomains` of 0 or less falls
        back to the default, as in Volcano (which warns)."""
        max_domains = arguments.get_int(MAX_DOMAINS, DEFAULT_MAX_DOMAINS)
        return cls(
            max_domains if max_domains > 0 else DEFAULT_MAX_DOMAINS,
            arguments.get_bool(ALLOW_WHOLE_BUNDLE, True),
        )


@dataclass(frozen=True, slots=True)
class GangKind:
    """What differs between gangpreempt and gangreclaim."""

    name: str  # the action, the EvictionContext kind and the eviction reason
    # may tasks of `victim` be evicted for `job`? (before plugins and bundles)
    victim_job: Callable[[Session, JobInfo, JobInfo], bool]
    victim_task: Callable[[TaskInfo], bool]  # in a state to be evicted
    # the rank of a bundle's job (preempt) or queue (reclaim) among the victims: lowest first
    victim_rank: Callable[[Session, JobInfo, list[Bundle]], Callable[[Bundle], object]]
    # may the queue evict for these pending tasks at all? (reclaim: the Preemptive vote)
    may_evict: Callable[[Session, QueueInfo, list[TaskInfo]], bool]
    skip_overused: bool  # an overused queue evicts for none of its jobs (reclaim)


def gang_preemptable(job: JobInfo | None) -> bool:
    """Volcano's IsJobPreemptableForGangEviction: a PodGroup without volcano.sh/preemptable may
    be a victim; one that sets it follows its value."""
    return job is None or job.preemptable is not False


def domain_free(nodes: list[NodeInfo]) -> Resource:
    """Idle plus releasing over the domain's nodes (what is or will be free without evicting)."""
    total = Resource()
    for n in nodes:
        total.add(n.idle).add(n.releasing)
    return total


def run(ssn: Session, kind: GangKind) -> None:
    arguments = ssn.conf.action_arguments(kind.name)
    opts = GangEvictOptions.parse(arguments)
    if arguments.get_int(MAX_DOMAINS, DEFAULT_MAX_DOMAINS) != opts.max_domains:
        # Volcano warns every session too
        ssn.warn(f"{kind.name}: {MAX_DOMAINS} must be positive; the default {DEFAULT_MAX_DOMAINS} is used")
    admitted = (j for j in ssn.jobs.values() if not j.is_pending() and ssn.job_valid(j) is None)
    queues, starving = queue_worklist(ssn, admitted, ssn.job_starving)
    # the jobs holding nodes (placing the preemptors adds none): scanned per job, not per node
    holders = [j for j in ssn.jobs.values() if any(kind.victim_task(t) for t in j.tasks.values())]

    while not queues.empty():
        queue = queues.pop()
        if kind.skip_overused and ssn.overused(queue):
            continue
        jobs = starving.get(queue.name)
        while jobs is not None and not jobs.empty():
            job = jobs.pop()
            stmt = Statement(ssn)
            victims = [v for v in holders if gang_preemptable(v) and kind.victim_job(ssn, job, v)]
            tj = _evict_for_job(ssn, stmt, kind, opts, queue, job, victims) if victims else None
            if job_pipelined(ssn, tj) if tj is not None else ssn.job_pipelined(job):
                if stmt.has_evictions():
                    # as a Pipeline after evictions upstream: the pods show where they will run
                    for op in stmt.operations:
                        if op.kind == PIPELINE:
                            ssn.nominated[op.task.uid] = op.task.node_name
                stmt.commit()
            else:
                stmt.discard()


def pending_for_eviction(ssn: Session, job: JobInfo) -> TopologyJob | None:
    """The job's partitions with the pending tasks to make room for, in allocate's order (tasks
    that are gated or request nothing need no room); None when there are none."""
    pending = [
        t
        for t in job.task_status_index.get(TaskStatus.PENDING, {}).values()
        if not t.scheduling_gated and not t.resreq.is_empty()
    ]
    return prepare(ssn, job, pending) if pending else None


def worksheet_tasks(ssn: Session, tj: TopologyJob) -> list[TaskInfo]:
    """Volcano's CollectPendingTasksForGangEviction: for a gang-ready job only its first
    partition's pending tasks (it asks for one more partition), else all of them."""
    ws = tj.worksheet.clone()
    out: list[TaskInfo] = []
    ready = ssn.job_ready(tj.job)
    while not ws.subjobs.empty():
        sj = ws.subjobs.pop()
        tasks = ws.tasks[sj.uid]
        while not tasks.empty():
            out.append(tasks.pop())
        if ready and out:
            break
    return out


def hard_topology(job: JobInfo) -> bool:
    nt = job.network_topology
    return (nt is not None and nt.hard) or any(
        p.network_topology is not None and p.network_topology.hard for p in job.subgroup_policies
    )


def candidate_domains(ssn: Session, unit: JobUnit, max_domains: int) -> list[str]:
    """Volcano's GetCandidateDomains: the eviction gradient's HyperNodes, deduplicated and capped;
    without any, the cluster top unless the job's topology is hard."""
    top = ssn.topology.top
    out: list[str] = []
    for group in ssn.hypernode_gradient(unit, top, PURPOSE_EVICT):
        for hn in group:
            if hn.name not in out:
                out.append(hn.name)
                if len(out) >= max_domains:
                    return out
    if not out and not hard_topology(unit.job):
        out.append(top.name)
    return out


def _evict_for_job(
    ssn: Session,
    stmt: Statement,
    kind: GangKind,
    opts: GangEvictOptions,
    queue: QueueInfo,
    job: JobInfo,
    victims: list[JobInfo],
) -> TopologyJob | None:
    tj = pending_for_eviction(ssn, job)
    if tj is None:
        return None
    pending = worksheet_tasks(ssn, tj)
    if not pending or not kind.may_evict(ssn, queue, pending):
        return tj
    need = Resource()
    for t in pending:
        need.add(t.init_resreq)
    for domain in candidate_domains(ssn, tj.unit, opts.max_domains):
        nodes = ssn.hypernode_nodes(domain)
        if not nodes:
            continue
        bundles = domain_bundles(ssn, kind, opts, job, need, victims, domain)
        free = domain_free(nodes)
        chosen: list[TaskInfo] = []
        for bundle in bundles:
            chosen.extend(bundle.tasks)
            if not need.less_equal(free.clone().add(sum_resreq(chosen))):
                continue
            plan = nomination_plan(ssn, queue, tj, ssn.topology.hypernodes[domain], chosen, kind.name)
            if plan is not None:
                stmt.operations.extend(plan.operations)
                return tj
    return tj


def domain_bundles(
    ssn: Session,
    kind: GangKind,
    opts: GangEvictOptions,
    job: JobInfo,
    need: Resource,
    victims: list[JobInfo],
    domain: str,
) -> list[Bundle]:
    """The bundles of the victim jobs' tasks on the domain's nodes that the plugins allow, in the
    order they are tried."""
    hn = ssn.topology.hypernodes.get(domain)
    members = hn.nodes if hn is not None else frozenset()
    bundles: list[Bundle] = []
    for victim in victims:
        tasks = [
            t
            for t in victim.tasks.values()
            if t.node_name in members and t.preemptable and kind.victim_task(t)
        ]
        if tasks:
            bundles.extend(create_job_bundles(victim, tasks, _subjobs(ssn, victim)))
    if not bundles:
        return []
    sort_bundles(bundles, need, kind.victim_rank(ssn, job, bundles))
    allowed = ssn.unified_evictable(EvictionContext(kind.name, job, domain), flatten(bundles))
    valid = apply_allowed(bundles, {t.uid for t in allowed})
    sort_bundles(valid, need, kind.victim_rank(ssn, job, valid))
    return [b for b in valid if b.type == BundleType.SAFE or opts.allow_whole_bundle]


def _subjobs(ssn: Session, job: JobInfo) -> dict[str, SubJob] | None:
    """A victim's partitions, for its minSubGroups check (only jobs with a subGroupPolicy)."""
    if not job.subgroup_policies:
        return None
    try:
        return build_subjobs(job, ssn.topology)
    except TopologyError:
        return None  # its constraint names an unknown tier: judged on minMember and roles only


def nomination_plan(
    ssn: Session,
    queue: QueueInfo,
    tj: TopologyJob,
    domain: HyperNodeInfo,
    victims: list[TaskInfo],
    reason: str,
) -> Statement | None:
    """Volcano's BuildNominationPlanInDomain: evict the victims and pipeline the job's pending
    partitions inside the domain until the job is pipelined (for a gang-ready job, its first
    partition). Returns the applied plan, or None with the session unchanged."""
    if not ssn.hypernode_nodes(domain.name) or tj.worksheet.empty():
        return None
    job = tj.job
    was_ready = ssn.job_ready(job)
    plan = Statement(ssn)
    for v in victims:
        plan.evict(v, reason)
    ws = tj.worksheet.clone()
    pipelined = False
    while not ws.subjobs.empty():
        sj = ws.subjobs.pop()
        tasks = ws.tasks.get(sj.uid)
        if tasks is None or tasks.empty():
            continue
        hypernodes = (
            [hn for group in ssn.hypernode_gradient(sj, domain, PURPOSE_EVICT) for hn in group]
            if hard_topology(job)
            else [domain]
        )
        if not any(_place_subjob(ssn, plan, queue, tj, sj, tasks, hn.name) for hn in hypernodes):
            plan.discard()
            return None
        pipelined = job_pipelined(ssn, tj)
        if was_ready or pipelined:
            break
    if not pipelined:
        plan.discard()
        return None
    return plan


def _place_subjob(
    ssn: Session,
    plan: Statement,
    queue: QueueInfo,
    tj: TopologyJob,
    sj: SubJob,
    tasks: PriorityQueue[TaskInfo],
    hypernode: str,
) -> bool:
    """Pipeline the partition's pending tasks onto the HyperNode's nodes, each on the best node
    where it fits the future idle; kept in `plan` only if the partition becomes ready or
    pipelined."""
    candidates = ssn.hypernode_nodes(hypernode)
    if not candidates:
        return False
    trial = Statement(ssn)
    left = tasks.clone()
    ok = True
    while ok and not left.empty():
        task = left.pop()
        ok = ssn.allocatable(queue, task) and ssn.pre_predicate(task) is None
        if not ok:
            break
        fits = [n for n in candidates if _fits_future(ssn, task, n)]
        best = prioritize(ssn, task, fits) if fits else None
        if best is None:
            ok = False
            break
        try:
            trial.pipeline(task, best)
        except AllocateError:
            ok = False
    if ok and trial.operations and (subjob_ready(ssn, tj.job, sj) or subjob_pipelined(ssn, tj.job, sj)):
        plan.operations.extend(trial.operations)
        return True
    trial.discard()
    return False


def _fits_future(ssn: Session, task: TaskInfo, node: NodeInfo) -> bool:
    return (
        task.init_resreq.less_equal(node.future_idle())
        and has_pod_slot(node)
        and ssn.predicate(task, node) is None
    )
