"""The cluster as the scheduler knows it, kept incrementally, and the per-cycle snapshot.

Fed by the informers (daemon) or by manifests (simulate); both call the same `apply_*` and
`remove_*` methods with plain Kubernetes dicts. Malformed objects are refused with a
`ConvertError` naming them; the state keeps everything else.

Nodes and jobs are live records updated as pods come and go, so a snapshot is a set of
copy-on-write views (see `NodeInfo.session_view`) rather than a deep copy: opening a session on
5,000 nodes and 150,000 pods copies almost nothing. The views are kept between snapshots: a
session writes only on the views it changes (they note it) and on the jobs it was told are not
quiet, so the next snapshot looks only at those and at what changed in the cluster. Pods of other schedulers still occupy their
nodes; pods of ours without a PodGroup get a one-pod gang, as Volcano's PodGroup controller would
give them; pods whose PodGroup has not arrived yet wait, unscheduled, until it does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from scheduler.model.convert import (
    GROUP_NAME_ANNOTATION,
    QUEUE_NAME_ANNOTATION,
    ConvertError,
    _dict,
    _kind_name,
    hypernode_to_spec,
    job_with_status,
    node_to_info,
    podgroup_status,
    podgroup_to_job,
    priority_class_to_info,
    queue_to_info,
    task_status,
)
from scheduler.model.job import JobInfo
from scheduler.model.node import NodeInfo
from scheduler.model.objects import (
    ALLOCATED_STATUSES,
    ON_NODE_STATUSES,
    READY_STATUSES,
    PriorityClassInfo,
    QueueInfo,
    TaskInfo,
    TaskStatus,
)
from scheduler.model.podconvert_impl import convert_impl
from scheduler.model.podstatus import StatusUpdate
from scheduler.model.policy import PdbInfo, ResourceQuotaInfo, pdb_to_info, resource_quota_to_info
from scheduler.model.resources import Resource
from scheduler.model.snapshot import JobViewChanges, Snapshot
from scheduler.model.topology import HyperNodeSpec, Topology, build_topology

# the member itself: a lookup on the enum class per call costs ~0.15 us, for every pod of a sync
_PENDING = TaskStatus.PENDING
_RELEASING, _PIPELINED = TaskStatus.RELEASING, TaskStatus.PIPELINED
_READY = frozenset(READY_STATUSES)
# every pod of an initial sync goes through this (compiled when built: scheduler/_native)
_pod_to_task = convert_impl.pod_to_task
# the same, for callers that convert before `add_listed_pod`
convert_pod = _pod_to_task


def _account_on_node(node: NodeInfo, task: TaskInfo, req: Resource, status: TaskStatus) -> None:
    """`node.add_task(task)` for a cluster node (not a view) that does not hold the task yet, and
    a task without scalar resources, host ports or affinity: the same operations, in the same
    order, on the same floats (`Resource.add` / `sub` spelled out)."""
    node.version += 1
    if status is _RELEASING or status is _PIPELINED:
        if status is _RELEASING:
            node.idle.sub(req)
            node.releasing.add(req)
            node.used.add(req)
        else:
            node.pipelined.add(req)
    else:
        idle, used = node.idle, node.used
        cpu, mem, pods = req.milli_cpu, req.memory, req.pods
        idle.milli_cpu -= cpu
        idle.memory -= mem
        idle.pods -= pods
        used.milli_cpu += cpu
        used.memory += mem
        used.pods += pods
    node.tasks[task.uid] = task


def _account_in_job(job: JobInfo, task: TaskInfo, req: Resource, status: TaskStatus) -> None:
    """`job.add_task(task)` for a cluster job (not a view) and a task without scalar resources:
    the same index and totals, the same floats (`_index_move`, `Resource.add` spelled out)."""
    uid = task.uid
    job.tasks[uid] = task
    index = job.task_status_index
    bucket = index.get(status)
    if bucket is None:
        bucket = index[status] = {}
    if uid not in bucket:
        if status in _READY:
            job._ready[0] += 1
        elif status is _PENDING and task.best_effort:
            job._ready[1] += 1
    bucket[uid] = task
    cpu, mem, pods = req.milli_cpu, req.memory, req.pods
    total = job.total_request
    total.milli_cpu += cpu
    total.memory += mem
    total.pods += pods
    if status in ALLOCATED_STATUSES:
        out = job.allocated
    elif status is _PENDING:
        out = job.pending_request
    else:
        return
    out.milli_cpu += cpu
    out.memory += mem
    out.pods += pods


def implicit_group_name(task: TaskInfo) -> str:
    """Volcano's controller names a bare pod's group after its controlling owner (else the pod)."""
    return f"podgroup-{task.pod.owner_uid or task.uid}"


@dataclass(slots=True)
class ClusterOptions:
    scheduler_names: tuple[str, ...] = ("volcano",)
    default_queue: str = "default"


class ClusterState:
    def __init__(self, options: ClusterOptions | None = None) -> None:
        self.options = options or ClusterOptions()
        self.nodes: dict[str, NodeInfo] = {}  # every node, with its tasks
        self.tasks: dict[str, TaskInfo] = {}  # every pod we know, by uid
        self.pod_keys: dict[str, str] = {}  # "ns/name" -> uid
        self.jobs: dict[str, JobInfo] = {}  # real PodGroups and implicit one-pod gangs
        self.implicit_jobs: set[str] = set()
        # tasks whose node has not arrived (or is gone) / whose PodGroup has not arrived
        self._off_node: dict[str, dict[str, TaskInfo]] = {}
        self._orphans: dict[str, dict[str, TaskInfo]] = {}
        # "Kind ns/name" -> why it was refused as malformed (kept by whoever feeds the state)
        self.refused: dict[str, str] = {}
        # PodGroups whose owners are all Pods (bare pods' groups, as Volcano's controller makes
        # them): with no pod left they are orphans, which no pod will ever join again
        self.pod_owned_groups: set[str] = set()
        # job uid -> what `podgroup_to_job` read outside the status of the PodGroup it was
        # converted from last (`_podgroup_inputs`): a version equal in those takes the status alone
        self._podgroup_inputs: dict[str, tuple[Any, ...]] = {}
        self.queues: dict[str, QueueInfo] = {}
        self.priority_classes: dict[str, PriorityClassInfo] = {}
        self.configmaps: dict[str, dict[str, str]] = {}
        self.namespaces: dict[str, dict[str, str]] = {}
        self.resource_quotas: dict[str, ResourceQuotaInfo] = {}
        self.pdbs: dict[str, PdbInfo] = {}
        self.anti_affinity_pods: set[str] = set()
        self.hypernodes: dict[str, HyperNodeSpec] = {}
        # the topology tree, rebuilt only when HyperNodes or the nodes (names, labels) change
        self._topology: Topology | None = None
        self._topology_key = -1
        # bumped when the Ready node set or a node's labels change (what HyperNode members select)
        self._node_epoch = 0
        # jobs changed since the last snapshot: the session recomputes their status
        self._dirty_jobs: set[str] = set()
        # bumped on every change, so a caller can tell that nothing happened since the last cycle
        self.generation = 0
        # the views handed to the last session, handed out again when neither the cluster nor
        # that session changed them (see `snapshot`)
        self._job_views: dict[str, JobInfo] = {}
        self._node_views: dict[str, NodeInfo] = {}
        # node name -> position in `nodes` (None: to be built again, a node joined or left), and
        # the nodes that have a taint: what every session asks of all nodes, kept as they change
        self._node_index: dict[str, int] | None = None
        self._tainted: set[str] = set()
        # nodes whose record changed since the last snapshot, and those whose view the sessions
        # changed (the views add themselves, see NodeInfo.session_view): the next snapshot looks
        # at these only, while no node joined or left
        self._dirty_nodes: set[str] = set()
        self._touched_nodes: set[str] = set()
        # queue name -> how many jobs name it (a session's walk for the queues' order stops once
        # it met every queue that has a job, instead of walking every job for a queue with none)
        self._queue_jobs: dict[str, int] = {}
        # the last snapshot's node views in order and the versions they showed
        self._node_order: list[NodeInfo] = []
        self._node_versions: list[int] = []
        self._snapshots = 0
        # job uid -> a number growing with its place in `jobs` (lets a session order a few jobs
        # as `jobs` has them without walking it), and the jobs whose last view was not quiet
        self._job_position: dict[str, int] = {}
        self._job_count = 0
        self._busy: set[str] = set()
        # views the sessions changed, and jobs dropped, since the last snapshot
        self._touched_jobs: set[str] = set()
        self._dropped_jobs: set[str] = set()
        self._had_orphans = False
        # jobs with a pending task (what makes a period worth a session when nothing changed)
        self._pending_jobs: set[str] = set()
        # the jobs the last session was told were not quiet: it may have written on their views
        self._last_unquiet: set[str] = set()
        self._carry: dict[str, tuple[int, Any]] = {}
        # jobs and queues that left so far: what the metrics' series of gone objects wait for
        self.removals = 0

    # ------------------------------------------------------------------ pods --
    def _ours(self, task: TaskInfo) -> bool:
        return task.pod.scheduler_name in self.options.scheduler_names

    def _attach(self, task: TaskInfo, key: str = "", indexed: bool = False) -> None:
        """`key` is `task.key` when the caller has it (spelled once per pod of a sync).
        `indexed`: the task is still in `tasks`, `pod_keys` and `anti_affinity_pods`, where
        `_detach(task, indexed=True)` left it."""
        if not indexed:
            self.tasks[task.uid] = task
            self.pod_keys[key or task.key] = task.uid
            aff = task.pod.affinity
            if aff and "podAntiAffinity" in aff:
                self.anti_affinity_pods.add(task.uid)
        if task.node_name and task.status in ON_NODE_STATUSES:
            node = self.nodes.get(task.node_name)
            if node is not None:
                node.add_task(task)
                self._dirty_nodes.add(node.name)
            else:
                self._off_node.setdefault(task.node_name, {})[task.uid] = task
        if task.job and self._ours(task):
            job = self.jobs.get(task.job)
            if job is None and not task.pod.annotations.get(GROUP_NAME_ANNOTATION):
                job = self._implicit_job(task)
                self._put_job(job)
                self.implicit_jobs.add(job.uid)
            if job is not None:
                job.add_task(task)
                self._dirty_jobs.add(job.uid)
                self._note_pending(job)
            else:
                self._orphans.setdefault(task.job, {})[task.uid] = task

    def _detach(self, task: TaskInfo, indexed: bool = False) -> None:
        """`indexed`: leave the task in `tasks`, `pod_keys` and `anti_affinity_pods`, for the
        `_attach(task, indexed=True)` that follows when a task changes its status or node in
        place (a bind assumed or forgotten, a new status): its uid, key and affinity stay, and
        the pop and insert again in those dicts of every pod were ~a fifth of each such change."""
        if not indexed:
            self.tasks.pop(task.uid, None)
            if self.pod_keys.get(task.key) == task.uid:
                del self.pod_keys[task.key]
            self.anti_affinity_pods.discard(task.uid)
        if task.node_name:
            node = self.nodes.get(task.node_name)
            if node is not None and task.uid in node.tasks:
                node.remove_task(task)
                self._dirty_nodes.add(node.name)
            off = self._off_node.get(task.node_name)
            if off is not None:
                off.pop(task.uid, None)
                if not off:
                    del self._off_node[task.node_name]
        if task.job:
            job = self.jobs.get(task.job)
            if job is not None and task.uid in job.tasks:
                job.delete_task(task)
                self._dirty_jobs.add(job.uid)
                self._note_pending(job)
                if task.job in self.implicit_jobs and not job.tasks:
                    self._drop_job(task.job)
                    self.implicit_jobs.discard(task.job)
            orphans = self._orphans.get(task.job)
            if orphans is not None:
                orphans.pop(task.uid, None)
                if not orphans:
                    del self._orphans[task.job]

    def apply_pod(self, pod: dict[str, Any]) -> TaskInfo:
        task = _pod_to_task(pod, self.priority_classes)
        # the same state as converting and attaching here (tests/unit/test_cluster_bulk.py), with
        # a new pod's accounting inline: each pod of a burst comes new through the watch
        self.add_listed_pod(task)
        return task

    def add_listed_pod(self, task: TaskInfo, key: str | None = None) -> bool:
        """`apply_pod` for a pod already converted (a first list's): the same state, and True when
        it is a pod the cluster did not have (`tasks` grew). `key` is `task.key` when the caller
        holds that string already (the informer's key for the pod: kept instead of another).

        The usual pod of a list is new, on a node that is there, in a job that is there: its
        node's and job's accounting is done here, inline, with the same operations in the same
        order as `NodeInfo.add_task` and `JobInfo.add_task` (the same floats), instead of through
        the dozen calls per pod of `_attach` (a quarter of an initial sync of 600,000 pods).
        Anything else (a key already known, a node view or job view of a session, scalar
        resources, host ports, affinity, a task the node already holds) takes those methods.
        Compiled when built (`native/podconvert.pyx`: `add_listed_pod`, which hands any pod but
        the usual one to this, `add_listed_pod_py`); `tests/unit/test_cluster_bulk.py` compares
        the state both leave with `apply_pod`'s."""
        pod = task.pod
        ours = pod.scheduler_name in self.options.scheduler_names
        if not task.job and ours:
            task.job = f"{task.namespace}/{implicit_group_name(task)}"
        if key is None:
            key = f"{task.namespace}/{task.name}"
        tasks = self.tasks
        known = len(tasks)
        if key in self.pod_keys:
            old = tasks.get(self.pod_keys[key])
            if old is not None:
                self._detach(old)
            self._attach(task, key)
            self.generation += 1
            return len(tasks) > known
        uid = task.uid
        tasks[uid] = task
        self.pod_keys[key] = uid
        aff = pod.affinity
        if aff and "podAntiAffinity" in aff:
            self.anti_affinity_pods.add(uid)
        req = task.resreq
        plain = not req.scalars
        status = task.status
        node_name = task.node_name
        if node_name and status in ON_NODE_STATUSES:
            node = self.nodes.get(node_name)
            if node is None:
                self._off_node.setdefault(node_name, {})[uid] = task
            else:
                if plain and not (node._shared or aff or pod.host_ports or uid in node.tasks):
                    _account_on_node(node, task, req, status)
                else:
                    node.add_task(task)
                self._dirty_nodes.add(node.name)
        job_uid = task.job
        if job_uid and ours:
            job = self.jobs.get(job_uid)
            if job is None and not pod.annotations.get(GROUP_NAME_ANNOTATION):
                job = self._implicit_job(task)
                self._put_job(job)
                self.implicit_jobs.add(job.uid)
            if job is None:
                self._orphans.setdefault(job_uid, {})[uid] = task
            else:
                if plain and not job._shared:
                    _account_in_job(job, task, req, status)
                else:
                    job.add_task(task)
                self._dirty_jobs.add(job.uid)
                if job.task_status_index.get(_PENDING) and self.jobs.get(job.uid) is job:
                    self._pending_jobs.add(job.uid)
                else:
                    self._pending_jobs.discard(job.uid)
        self.generation += 1
        return len(tasks) > known

    # the pure-Python form, which the compiled one falls back on
    add_listed_pod_py = add_listed_pod

    def move_task(self, task: TaskInfo, status: TaskStatus, node_name: str) -> None:
        """A task we hold takes a new status and node in place: `_detach(task, indexed=True)`,
        then `task.status` and `task.node_name`, then `_attach(task, indexed=True)`. What the
        callers change on the pod itself (phase, annotations, the pod's node) is set before:
        neither step reads it where the task's job is there.

        Compiled when built (`native/podconvert.pyx`: `move_task`, which hands any task but the
        usual one, a plain pod on a node and in a job the state has, to this, `move_task_py`):
        each pod of a burst moves twice (assumed bound, then running), and the dozen calls of
        the two steps were most of the cache's work on its watch events.
        `tests/unit/test_cluster_move.py` compares the state both leave."""
        self._detach(task, indexed=True)
        task.status = status
        task.node_name = node_name
        self._attach(task, indexed=True)

    # the pure-Python form, which the compiled one falls back on
    move_task_py = move_task

    def apply_pod_status(self, task: TaskInfo, update: StatusUpdate) -> None:
        """A new status for a pod whose other fields did not change (see `podstatus`): the same
        bookkeeping as `apply_pod`, on the task we hold instead of a fresh conversion."""
        pod = task.pod
        status = task_status(update.phase, task.node_name, pod.deleting)
        moved = status != task.status or update.phase != pod.phase
        pod.phase = update.phase
        pod.nominated_node = update.nominated_node
        pod.scheduled_condition = update.scheduled_condition
        pod.resource_version = update.resource_version
        if moved:  # the node's and the job's indexes by status change
            self.move_task(task, status, task.node_name)
        else:
            task.status = status
            if task.job in self.jobs:
                # the same indexes; the job's view is taken again so the session sees the new fields
                self._dirty_jobs.add(task.job)
        self.generation += 1

    def remove_pod(self, namespace: str, name: str) -> TaskInfo | None:
        uid = self.pod_keys.get(f"{namespace}/{name}")
        task = self.tasks.get(uid) if uid else None
        if task is not None:
            self._detach(task)
        self.generation += 1
        return task

    def get_task(self, key: str) -> TaskInfo | None:
        uid = self.pod_keys.get(key)
        return self.tasks.get(uid) if uid else None

    def assume_bound(self, key: str, node: str, annotations: dict[str, str]) -> None:
        """Record a bind we issued before the watch confirms it, so the next cycle counts it."""
        task = self.get_task(key)
        if task is not None:
            self.assume_task_bound(task, node, annotations)

    def assume_task_bound(self, task: TaskInfo, node: str, annotations: dict[str, str]) -> None:
        """`assume_bound` for a task the caller holds (the cache has just looked it up)."""
        if annotations:
            task.pod.annotations.update(annotations)
        task.pod.node_name = node
        self.move_task(task, TaskStatus.BOUND, node)
        self.generation += 1

    def forget_bind(self, key: str) -> None:
        """A bind failed: the task is Pending again (its annotations were never written)."""
        task = self.get_task(key)
        if task is None or task.status != TaskStatus.BOUND:
            return
        task.pod.node_name = ""
        self.move_task(task, TaskStatus.PENDING, "")
        self.generation += 1

    # ------------------------------------------------------------------ nodes --
    def apply_node(self, node: dict[str, Any]) -> NodeInfo:
        # Every node enters, whatever its conditions say: as in Volcano, a node that must not take
        # pods is told by the node controller's not-ready/unreachable taints and spec.unschedulable,
        # which the predicates check.
        info = node_to_info(node)
        self.generation += 1
        old = self.nodes.get(info.name)
        if old is None or old.labels != info.labels:
            self._node_epoch += 1
        if old is not None:
            info.with_tasks_of(old)
        else:
            self._node_index = None
        for t in self._off_node.pop(info.name, {}).values():
            info.add_task(t)
        # An update keeps the node's place in the order, as Volcano's cache keeps it in its
        # NodeList: the node list sessions scan (and their rotating start) does not reshuffle
        # each time a kubelet reports its status.
        self.nodes[info.name] = info
        self._dirty_nodes.add(info.name)
        if info.taints:
            self._tainted.add(info.name)
        else:
            self._tainted.discard(info.name)
        return info

    def remove_node(self, name: str) -> None:
        old = self.nodes.pop(name, None)
        self._tainted.discard(name)
        if old is not None:
            self._node_epoch += 1
            self._node_index = None
        if old is not None and old.tasks:
            self._off_node.setdefault(name, {}).update(old.tasks)
        self.generation += 1

    # ------------------------------------------------------------------ groups --
    def apply_podgroup(self, pg: dict[str, Any]) -> JobInfo:
        inputs = _podgroup_inputs(pg)
        if inputs is not None:
            old = self.jobs.get(inputs[0])
            if (
                old is not None
                and self._podgroup_inputs.get(old.uid) == inputs
                and old.uid not in self.implicit_jobs
            ):
                return self._apply_podgroup_status(pg, old)
        job = podgroup_to_job(pg, self.options.default_queue)
        owners = (pg.get("metadata") or {}).get("ownerReferences") or []
        if owners and all(isinstance(o, dict) and o.get("kind") == "Pod" for o in owners):
            self.pod_owned_groups.add(job.uid)
        else:
            self.pod_owned_groups.discard(job.uid)
        if inputs is not None and inputs[0] == job.uid:
            self._podgroup_inputs[job.uid] = inputs
        else:
            self._podgroup_inputs.pop(job.uid, None)
        old = self.jobs.get(job.uid)
        if old is not None and job.uid not in self.implicit_jobs:
            job = old.with_spec_of(job)
        elif old is not None:
            # a real PodGroup now carries the name of an implicit gang: it takes over its tasks
            self.implicit_jobs.discard(job.uid)
            job = old.with_spec_of(job)
        return self._install_job(job)

    def _install_job(self, job: JobInfo) -> JobInfo:
        """A PodGroup's new job in place of the old: the tasks that waited for it, its queue's
        count, and a new view for the next session."""
        for t in self._orphans.pop(job.uid, {}).values():
            job.add_task(t)
        self._put_job(job)
        self._note_pending(job)
        self._dirty_jobs.add(job.uid)
        self.generation += 1
        return job

    def _apply_podgroup_status(self, pg: dict[str, Any], old: JobInfo) -> JobInfo:
        """`apply_podgroup` for a new version of the PodGroup `old` was converted from that
        changed nothing but its status (our own status writes, mostly: a burst's gang comes back
        two or three times): the job `podgroup_to_job` would make, from the fields it read the
        last time and the new status alone. Its owners did not change: neither did
        `pod_owned_groups`. `tests/unit/test_cluster_move.py` compares both ways."""
        where = _kind_name(pg, "PodGroup")
        status = podgroup_status(_dict(pg, "status", where), where)
        return self._install_job(old.with_spec_of(job_with_status(old, status)))

    def remove_podgroup(self, namespace: str, name: str) -> None:
        uid = f"{namespace}/{name}"
        self._podgroup_inputs.pop(uid, None)
        self.pod_owned_groups.discard(uid)
        job = self._drop_job(uid)
        if job is not None and job.tasks:
            self._orphans.setdefault(uid, {}).update(job.tasks)
        self.generation += 1

    def _put_job(self, job: JobInfo) -> None:
        old = self.jobs.get(job.uid)
        if old is None:  # a new key goes last in the dict, and so in the order
            self._job_count += 1
            self._job_position[job.uid] = self._job_count
        else:
            self._count_queue(old.queue, -1)
        self._count_queue(job.queue, 1)
        self.jobs[job.uid] = job

    def _drop_job(self, uid: str) -> JobInfo | None:
        self._job_position.pop(uid, None)
        self._dropped_jobs.add(uid)
        self._pending_jobs.discard(uid)
        job = self.jobs.pop(uid, None)
        if job is not None:
            self._count_queue(job.queue, -1)
            self.removals += 1
        return job

    def _count_queue(self, queue: str, delta: int) -> None:
        n = self._queue_jobs.get(queue, 0) + delta
        if n > 0:
            self._queue_jobs[queue] = n
        else:
            self._queue_jobs.pop(queue, None)

    def _note_pending(self, job: JobInfo) -> None:
        if job.task_status_index.get(_PENDING) and self.jobs.get(job.uid) is job:
            self._pending_jobs.add(job.uid)
        else:
            self._pending_jobs.discard(job.uid)

    def has_pending_tasks(self) -> bool:
        """Some job has a pod waiting for a node (kept as pods come and go: no walk)."""
        return bool(self._pending_jobs)

    def _implicit_job(self, task: TaskInfo) -> JobInfo:
        queue = task.pod.annotations.get(QUEUE_NAME_ANNOTATION) or self.options.default_queue
        return JobInfo(
            uid=task.job,
            name=task.job.split("/", 1)[1],
            namespace=task.namespace,
            queue=queue,
            min_available=1,
            min_resources=task.resreq.clone(),
            priority_class_name=task.pod.priority_class_name,
            creation=task.pod.creation,
        )

    # ------------------------------------------------------------------ topology --
    def apply_hypernode(self, hn: dict[str, Any]) -> HyperNodeSpec:
        spec = hypernode_to_spec(hn)
        self.hypernodes[spec.name] = spec
        self._topology = None
        self.generation += 1
        return spec

    def remove_hypernode(self, name: str) -> None:
        if self.hypernodes.pop(name, None) is not None:
            self._topology = None
        self.generation += 1

    def topology(self) -> Topology:
        """The HyperNode tree over the Ready nodes; cached while neither side changes."""
        key = self._node_epoch
        if self._topology is None or key != self._topology_key:
            labels = {name: n.labels for name, n in self.nodes.items()}
            self._topology = build_topology(self.hypernodes.values(), labels)
            self._topology_key = key
        return self._topology

    # ------------------------------------------------------------------ others --
    def apply_queue(self, q: dict[str, Any]) -> QueueInfo:
        info = queue_to_info(q)
        self.queues[info.name] = info
        self.generation += 1
        return info

    def remove_queue(self, name: str) -> None:
        if self.queues.pop(name, None) is not None:
            self.removals += 1
        self.generation += 1

    def apply_priority_class(self, pc: dict[str, Any]) -> PriorityClassInfo:
        info = priority_class_to_info(pc)
        self.priority_classes[info.name] = info
        self.generation += 1
        return info

    def remove_priority_class(self, name: str) -> None:
        self.priority_classes.pop(name, None)
        self.generation += 1

    def apply_configmap(self, cm: dict[str, Any]) -> None:
        md = cm.get("metadata") or {}
        data = cm.get("data") or {}
        if not isinstance(data, dict):
            raise ConvertError(f"ConfigMap {md.get('namespace')}/{md.get('name')}: data must be an object")
        self.configmaps[f"{md.get('namespace') or 'default'}/{md.get('name')}"] = {
            str(k): str(v) for k, v in data.items()
        }
        self.generation += 1

    def remove_configmap(self, namespace: str, name: str) -> None:
        self.configmaps.pop(f"{namespace}/{name}", None)
        self.generation += 1

    def apply_namespace(self, ns: dict[str, Any]) -> None:
        md = ns.get("metadata") or {}
        self.namespaces[str(md.get("name"))] = {str(k): str(v) for k, v in (md.get("labels") or {}).items()}
        self.generation += 1

    def remove_namespace(self, name: str) -> None:
        self.namespaces.pop(name, None)
        self.generation += 1

    def apply_resource_quota(self, obj: dict[str, Any]) -> ResourceQuotaInfo:
        info = resource_quota_to_info(obj)
        self.resource_quotas[info.key] = info
        self.generation += 1
        return info

    def remove_resource_quota(self, namespace: str, name: str) -> None:
        self.resource_quotas.pop(f"{namespace}/{name}", None)
        self.generation += 1

    def apply_pdb(self, obj: dict[str, Any]) -> PdbInfo:
        info = pdb_to_info(obj)
        self.pdbs[info.key] = info
        self.generation += 1
        return info

    def remove_pdb(self, namespace: str, name: str) -> None:
        self.pdbs.pop(f"{namespace}/{name}", None)
        self.generation += 1

    # ------------------------------------------------------------------ snapshot --
    def snapshot(self) -> Snapshot:
        """Copy-on-write views of nodes and jobs that one session may change freely.

        A view the last session left as it found it is handed out again instead of a new one:
        its shared task maps and totals follow the cluster's changes by themselves, so a period in
        which little happened builds views only for what changed (or what that session touched)."""
        dirty, self._dirty_jobs = self._dirty_jobs, set()
        orphans = {uid for uid in self.pod_owned_groups if uid in self.jobs and not self.jobs[uid].tasks}
        self._snapshots += 1
        changes = JobViewChanges(self._snapshots, set(), set(), self._carry)
        nodes, node_list, versions, changed_at = self._node_snapshot()
        if self._node_index is None or len(self._node_index) != len(self.nodes):
            self._node_index = {name: i for i, name in enumerate(self.nodes)}
        return Snapshot(
            nodes=nodes,
            node_list=node_list,
            node_versions=versions,
            node_changed_at=changed_at,
            node_index=self._node_index,
            has_taints=bool(self._tainted),
            # jobs left out as orphans may make this more than the snapshot's jobs have: a
            # session then walks further, never less far
            queues_with_jobs=sum(1 for q in self._queue_jobs if q in self.queues),
            # an orphan PodGroup is no job: it reserves no queue resources and is not enqueued
            jobs=self._job_snapshot(dirty, orphans, changes),
            job_changes=changes,
            orphan_groups=sorted(orphans),
            queues=dict(self.queues),
            priority_classes=dict(self.priority_classes),
            configmaps=self.configmaps,
            namespaces=self.namespaces,
            resource_quotas=list(self.resource_quotas.values()),
            pdbs=list(self.pdbs.values()),
            has_required_anti_affinity=bool(self.anti_affinity_pods),
            dirty_jobs=dirty,
            busy_jobs=self._unquiet(dirty),
            job_position=self._job_position,
            topology=self.topology(),
            unattached=[
                (t, self._missing_group(uid))
                for uid, tasks in self._orphans.items()
                for t in tasks.values()
                if not t.node_name and t.status == TaskStatus.PENDING
            ],
            refused=self.refused,
        )

    def _node_snapshot(self) -> tuple[dict[str, NodeInfo], list[NodeInfo], list[int], list[int] | None]:
        """The node views by name and in order, and the version of the cluster's node each one
        shows. While no node joined or left, only the nodes that changed and the views a session
        changed are looked at; the others' views are handed out again as they are (each walk
        over every node cost a cache miss or more per node: a third of an idle period at 20,000
        nodes). The maps and lists handed out are never changed afterwards: a snapshot that
        changes something makes new ones. Last, the positions looked at again (None after a walk)."""
        redo = self._dirty_nodes | self._touched_nodes
        self._dirty_nodes = set()
        self._touched_nodes.clear()  # the same set: the views handed out hold it
        if self._node_index is None or len(self._node_order) != len(self.nodes):
            return (*self._node_walk(), None)
        if not redo:
            return self._node_views, self._node_order, self._node_versions, []
        views, order = self._node_views, self._node_order
        versions = self._node_versions = list(self._node_versions)
        index, nodes, touched = self._node_index, self.nodes, self._touched_nodes
        copied = False
        changed_at: list[int] = []
        for name in redo:
            node = nodes.get(name)
            i = index.get(name)
            if node is None or i is None:  # not expected: a node that left resets the index
                return (*self._node_walk(), None)
            changed_at.append(i)
            v = views[name]
            if not v.reuse_for(node):
                if not copied:  # a view replaced: new map and list (a node that only changed
                    # in the cluster keeps its view, which follows it by itself)
                    views = self._node_views = dict(views)
                    order = self._node_order = list(order)
                    copied = True
                v = views[name] = order[i] = node.session_view(touched)
            versions[i] = node.version
        changed_at.sort()
        return views, order, versions, changed_at

    def _node_walk(self) -> tuple[dict[str, NodeInfo], list[NodeInfo], list[int]]:
        """_node_snapshot by a walk over every node (after a node joined or left)."""
        last = self._node_views
        views: dict[str, NodeInfo] = {}
        order: list[NodeInfo] = []
        versions: list[int] = []
        keep, add = order.append, versions.append
        touched = self._touched_nodes
        for name, node in self.nodes.items():
            v = last.get(name)
            if v is None or not v.reuse_for(node):
                v = node.session_view(touched)
            views[name] = v
            keep(v)
            add(node.version)
        self._node_views, self._node_order, self._node_versions = views, order, versions
        return views, order, versions

    def _job_snapshot(
        self, dirty: set[str], orphans: set[str], changes: JobViewChanges
    ) -> dict[str, JobInfo]:
        """The last snapshot's job views, with new ones where the cluster or a session changed
        them. A session writes only on the jobs it changes (noted by the views themselves) and on
        those that were not quiet when it opened, so only these, and the changed jobs, are looked
        at: an idle period on 15,000 running jobs visits a handful."""
        views, jobs = self._job_views, self.jobs
        recheck = dirty | self._touched_jobs | self._last_unquiet
        self._touched_jobs.clear()
        dropped, self._dropped_jobs = self._dropped_jobs, set()
        popped = {uid for uid in dropped if uid in views}
        joining = {uid for uid in dirty if uid in jobs and (uid not in views or uid in popped)}
        if orphans or self._had_orphans or len(views) - len(popped) + len(joining) != len(jobs):
            # an orphan's place in `jobs` is not the end, where it would join the views: walk
            self._had_orphans = bool(orphans)
            return self._job_snapshot_walk(dirty, orphans, changes)
        position = self._job_position
        # in `jobs` order: a job joining the views goes last, as it went last in `jobs`
        renew = [
            uid
            for uid in sorted((u for u in recheck if u in jobs), key=position.__getitem__)
            if (v := views.get(uid)) is None or uid in popped or uid in dirty or not v.reuse_for(jobs[uid])
        ]
        if popped or renew:
            # Copied before the changes, not on the way out: the last session's map stays as it
            # was (a closed session is still read), and a period that changed no job (an idle
            # one) hands the same map out again instead of copying every job's entry.
            views = self._job_views = dict(views)
            for uid in popped:
                del views[uid]
            fresh = changes.fresh
            touched = self._touched_jobs
            for uid in renew:
                views[uid] = jobs[uid].session_view(touched)
                fresh.add(uid)
        # not `popped - views.keys()`: a set less a keys view walks every key (every job, each period)
        changes.gone = {uid for uid in popped if uid not in views}
        self._update_busy(views, changes)
        return views

    def _job_snapshot_walk(
        self, dirty: set[str], orphans: set[str], changes: JobViewChanges
    ) -> dict[str, JobInfo]:
        last = self._job_views
        views: dict[str, JobInfo] = {}
        fresh = changes.fresh
        for uid, job in self.jobs.items():
            if uid in orphans:
                continue
            v = last.get(uid)
            # a job changed in the cluster gets a fresh view: its status is recomputed anyway
            if v is None or uid in dirty or not v.reuse_for(job):
                v = job.session_view(self._touched_jobs)
                fresh.add(uid)
            views[uid] = v
        changes.gone = set(last.keys() - views.keys())
        self._job_views = views
        self._update_busy(views, changes)
        return views  # a new map: the next snapshot copies it before changing it

    def _unquiet(self, dirty: set[str]) -> set[str]:
        self._last_unquiet = self._busy | (dirty & self.jobs.keys())
        return set(self._last_unquiet)

    def _update_busy(self, views: dict[str, JobInfo], changes: JobViewChanges) -> None:
        """A view handed out again is as quiet as it was: only the new ones are looked at."""
        busy = self._busy
        busy.difference_update(changes.gone)
        for uid in changes.fresh:
            if views[uid].is_quiet():
                busy.discard(uid)
            else:
                busy.add(uid)

    def _missing_group(self, uid: str) -> str:
        ns, _, name = uid.partition("/")
        why = self.refused.get(f"PodGroup {ns}/{name}")
        if why:
            return f"PodGroup {uid} is malformed and was skipped: {why}"
        return f"PodGroup {uid} does not exist"


def _podgroup_inputs(pg: Any) -> tuple[Any, ...] | None:
    """The job uid `podgroup_to_job` gives a PodGroup, then every value it (and
    `apply_podgroup`) reads outside the status; None for a shape it would refuse or name otherwise."""
    if type(pg) is not dict:
        return None
    md, spec = pg.get("metadata"), pg.get("spec")
    if type(md) is not dict or not (spec is None or type(spec) is dict):
        return None
    name = md.get("name")
    if not name:
        return None
    ns = md.get("namespace")
    g = md.get
    return (
        f"{ns or 'default'}/{name}",
        name,
        ns,
        g("labels"),
        g("annotations"),
        g("ownerReferences"),
        g("creationTimestamp"),
        spec,
    )


# the compiled `add_listed_pod` when built (the twin above otherwise, or under VC_SCHEDULER_PURE)
_compiled_add_listed_pod = getattr(convert_impl, "add_listed_pod", None)
if _compiled_add_listed_pod is not None:
    ClusterState.add_listed_pod = _compiled_add_listed_pod  # type: ignore[method-assign]
# the compiled `move_task` when built, likewise
_compiled_move_task = getattr(convert_impl, "move_task", None)
if _compiled_move_task is not None:
    ClusterState.move_task = _compiled_move_task  # type: ignore[method-assign]
