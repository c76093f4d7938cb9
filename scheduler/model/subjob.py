"""Sub-jobs: the partitions of a job that carry their own gang size and network topology.

Built per session, only for jobs with a `networkTopology` or a `subGroupPolicy` (ordinary jobs
never pay for them). A pod selected by a policy (its `labelSelector`, with a value for every
`matchLabelKeys` label) joins the partition named by those values; every other pod joins the
job's default sub-job, which has the job's own minimum and network topology, as in Volcano.
Tasks are held by uid: the session replaces task objects with private copies as it changes them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from scheduler.model.job import JobInfo
from scheduler.model.objects import ALLOCATED_STATUSES, READY_STATUSES, TaskInfo, TaskStatus
from scheduler.model.resources import Resource
from scheduler.model.topology import NetworkTopologySpec, SubGroupPolicy, Topology


class TopologyError(ValueError):
    """A job whose constraint cannot be resolved against the topology (e.g. an unknown tier name)."""


@dataclass(slots=True)
class SubJob:
    uid: str
    gid: str
    job: str
    min_available: int = 1
    match_index: int = 0
    # effective constraint, after tier names are resolved and soft mode turned into a tier bound
    network_topology: NetworkTopologySpec | None = None
    task_uids: list[str] = field(default_factory=list)
    allocated_hypernode: str = ""

    @property
    def hard_tier(self) -> int | None:
        nt = self.network_topology
        if nt is None or not nt.hard or nt.highest_tier is None:
            return None
        return nt.highest_tier

    def tasks(self, job: JobInfo) -> list[TaskInfo]:
        return [job.tasks[u] for u in self.task_uids if u in job.tasks]

    def all_tasks(self, ssn: Any) -> list[TaskInfo]:
        """The tasks as the session has them (plugins get the session, not the job)."""
        return self.tasks(ssn.jobs[self.job])

    def is_ready(self, job: JobInfo) -> bool:
        tasks = self.tasks(job)
        n = sum(
            1
            for t in tasks
            if t.status in READY_STATUSES or (t.status == TaskStatus.PENDING and t.best_effort)
        )
        return n >= self.min_available

    def is_pipelined(self, job: JobInfo) -> bool:
        tasks = self.tasks(job)
        ok = (TaskStatus.PIPELINED, *READY_STATUSES)
        n = sum(1 for t in tasks if t.status in ok or (t.status == TaskStatus.PENDING and t.best_effort))
        return n >= self.min_available

    def min_request(self, ssn: Any) -> Resource:
        """What the sub-job's gang still needs: the requests of the pending tasks that make up
        its minimum (all of them for a partition, whose minimum is its size). Volcano sums every
        pending task, which keeps a job with minAvailable < replicas out of a HyperNode that
        holds its gang (its user guide's 3.3.1 example); this is a deliberate departure."""
        tasks = self.all_tasks(ssn)
        pending = sorted((t for t in tasks if t.status == TaskStatus.PENDING), key=lambda t: t.uid)
        placed = sum(1 for t in tasks if t.status in ALLOCATED_STATUSES or t.status == TaskStatus.SUCCEEDED)
        need = max(self.min_available - placed, 0)
        total = Resource()
        for t in pending[:need] if need < len(pending) else pending:
            total.add(t.init_resreq)
        return total


def subgroups_satisfied(job: JobInfo, subjobs: dict[str, SubJob], pipelined: bool = False) -> bool:
    """Every policy with `minSubGroups` has that many partitions ready (or pipelined)."""
    need = {f"{job.uid}/{p.name}": p.min_subgroups for p in job.subgroup_policies if p.min_subgroups > 0}
    if not need:
        return True
    have: dict[str, int] = {}
    for sj in subjobs.values():
        if sj.gid in need and (sj.is_pipelined(job) if pipelined else sj.is_ready(job)):
            have[sj.gid] = have.get(sj.gid, 0) + 1
    return all(have.get(gid, 0) >= n for gid, n in need.items())


def _match_values(policy: SubGroupPolicy, labels: dict[str, str]) -> list[str] | None:
    for k, v in policy.match_labels:
        if labels.get(k) != v:
            return None
    values = []
    for key in policy.match_label_keys:
        v = labels.get(key)
        if not v:
            return None
        values.append(v)
    return values


def resolve(
    nt: NetworkTopologySpec | None, topo: Topology, bound: int | None, where: str
) -> NetworkTopologySpec | None:
    """Volcano's session adjustment: a tier name becomes its tier number, and soft mode becomes
    hard mode bounded by `bound` (the job's tier, else the cluster top), so both modes share one
    search. Raises TopologyError for a tier name no HyperNode has."""
    if nt is None:
        return None
    tier = nt.highest_tier
    if tier is None and nt.highest_tier_name:
        tier = topo.tier_names.get(nt.highest_tier_name)
        if tier is None:
            raise TopologyError(f"{where}: no HyperNode has tierName {nt.highest_tier_name!r}")
    if not nt.hard:
        return NetworkTopologySpec("hard", bound if bound is not None else topo.top.tier)
    return NetworkTopologySpec("hard", tier) if tier is not None else NetworkTopologySpec("hard", None)


def build_subjobs(job: JobInfo, topo: Topology) -> dict[str, SubJob]:
    """The job's sub-jobs with their effective constraints and their tasks."""
    job_nt = resolve(job.network_topology, topo, None, "spec.networkTopology")
    sub_bound = (
        job_nt.highest_tier if job_nt is not None and job_nt.highest_tier is not None else topo.top.tier
    )
    out: dict[str, SubJob] = {}
    for task in job.tasks.values():
        sj = None
        for policy in job.subgroup_policies:
            values = _match_values(policy, task.pod.labels)
            if values:
                uid = f"{job.uid}/{policy.name}-{'-'.join(values)}"
                sj = out.get(uid)
                if sj is None:
                    where = f"subGroupPolicy {policy.name}"
                    idx = int(values[0]) if values[0].isdigit() else 0
                    sj = out[uid] = SubJob(
                        uid,
                        f"{job.uid}/{policy.name}",
                        job.uid,
                        policy.size,
                        idx,
                        resolve(policy.network_topology, topo, sub_bound, where),
                    )
                break
        if sj is None:
            sj = out.get(job.uid)
            if sj is None:
                size = 1 if job.subgroup_policies else job.min_available
                sj = out[job.uid] = SubJob(job.uid, job.uid, job.uid, size, 0, job_nt)
        sj.task_uids.append(task.uid)
    return out


def recover_allocated(job: JobInfo, subjobs: dict[str, SubJob], topo: Topology) -> str:
    """Each constrained sub-job's HyperNode (the lowest holding all its placed tasks), and the
    job's (their lowest common ancestor): what Volcano recovers from running pods on restart."""
    lca = ""
    for sj in subjobs.values():
        if sj.network_topology is None:
            continue
        nodes = {t.node_name for t in sj.tasks(job) if t.status in ALLOCATED_STATUSES and t.node_name}
        if not nodes:
            continue
        first = next(iter(sorted(nodes)))
        hn = ""
        for anc in topo.ancestors(topo.leaf_of.get(first, "")):
            if nodes <= topo.hypernodes[anc].nodes:
                hn = anc
                break
        sj.allocated_hypernode = hn
        if hn:
            lca = topo.lca(lca, hn)
    return lca
