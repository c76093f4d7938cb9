"""One scheduling cycle: the snapshot, the plugins' callbacks and the rules that combine them.

Plugins register callbacks per extension point in `on_session_open`; the session keeps, per point,
one list per tier of the callbacks whose plugin has that point enabled. Every combination rule of
Volcano (spec section 4) is one of a handful of generic combinators below, instead of one
hand-written loop per point. The session also owns the in-session placement primitives the
Statement uses, and collects decisions (binds, evictions) for whoever runs it; it does no I/O.
"""

from __future__ import annotations

import functools
import random
import time
import uuid
from collections import Counter
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field
from operator import add, attrgetter
from typing import Any

from scheduler.conf import SchedulerConfiguration
from scheduler.framework.fiterrors import FitErrors
from scheduler.framework.nodesums import CARRY as NODE_TOTALS
from scheduler.framework.nodesums import node_totals, walk_totals
from scheduler.framework.status import AllocateError, Unfit, unresolvable
from scheduler.model.job import QUIET_PHASES, JobInfo
from scheduler.model.node import NodeInfo
from scheduler.model.objects import PodGroupStatus, PriorityClassInfo, QueueInfo, TaskInfo, TaskStatus
from scheduler.model.policy import PdbInfo, ResourceQuotaInfo
from scheduler.model.resources import Resource
from scheduler.model.snapshot import Snapshot
from scheduler.model.topology import HyperNodeInfo, Topology, build_topology

PERMIT = 1
ABSTAIN = 0
REJECT = -1

POINTS = (
    "job_order",
    "queue_order",
    "task_order",
    "victim_queue_order",
    "predicate",
    "pre_predicate",
    "node_order",
    "batch_node_order",
    "best_node",
    "job_ready",
    "job_pipelined",
    "job_enqueueable",
    "job_enqueued",
    "job_starving",
    "job_valid",
    "overused",
    "allocatable",
    "preemptive",
    "preemptable",
    "reclaimable",
    "unified_evictable",
    "victim_tasks",
    "target_job",
    "reserved_nodes",
    "hyper_node_order",
    "hyper_node_gradient",
)
# the members themselves: a member looked up on TaskStatus goes through EnumType's __getattr__
# hook (~900 instructions), and these are asked per placement
_PENDING, _ALLOCATED, _BINDING = TaskStatus.PENDING, TaskStatus.ALLOCATED, TaskStatus.BINDING
_RELEASING = TaskStatus.RELEASING
_job_of = attrgetter("job")
# PodGroup phases of jobs that nothing in a session can change unless they changed in the cluster
# Points without a switch in Volcano: always consulted.
_UNSWITCHED = frozenset({"job_valid", "victim_queue_order", "unified_evictable"})

# EvictionContext kinds: the gang-aware actions (their names are also the eviction reasons)
GANG_PREEMPT = "gangpreempt"
GANG_RECLAIM = "gangreclaim"


@dataclass(slots=True)
class Event:
    task: TaskInfo
    # True when an eviction is undone: the task returns to its node with its existing devices.
    restore: bool = False


@dataclass(slots=True)
class EventHandler:
    allocate: Callable[[Event], None] | None = None
    deallocate: Callable[[Event], None] | None = None


@dataclass(slots=True)
class BatchScoreSplit:
    """A batch node-order score as per_node(task, node) + rest(task, nodes)[node] (0 if absent).

    per_node may depend only on the task's shape and the node's own state (so it can be kept until
    the node changes); rest holds what needs the whole candidate list (normalised scores). Both
    must be integers so that the sum is exactly the batch function's result. per_nodes, when
    given, is per_node for several nodes at once (the same integers, in the nodes' order): the
    placement cache scores a cold window with it.
    """

    per_node: Callable[[TaskInfo, NodeInfo], int]
    rest: Callable[[TaskInfo, list[NodeInfo]], dict[str, int]]
    per_nodes: Callable[[TaskInfo, list[NodeInfo]], list[int]] | None = None
    # what per_node reads of the task (see Session.add_node_order_fn's `shape`)
    shape: Callable[[TaskInfo], Hashable | None] | None = None


# what a BatchScoreUniform answers when the nodes do not all get the same score from its function
NOT_UNIFORM: Any = object()

# Given the task, the nodes and a HyperNode whose nodes include all of them (the cluster top for
# the session's node list): the one score the batch function gives every node of any two or more of
# the nodes (a placement cache's candidates, or those of them the task fits idle; a single node is
# chosen whatever its score), None when it gives them none (an empty answer), else NOT_UNIFORM.
BatchScoreUniform = Callable[[TaskInfo, list[NodeInfo], str], Any]


@dataclass(slots=True)
class ValidateResult:
    passed: bool
    reason: str = ""
    message: str = ""


@dataclass(slots=True)
class Eviction:
    task: TaskInfo
    reason: str


@dataclass(frozen=True, slots=True)
class EvictionContext:
    """Who asks for victims in gang-aware eviction: the action (GANG_PREEMPT or GANG_RECLAIM),
    the starving job (not one task) and the HyperNode domain searched."""

    kind: str
    job: JobInfo
    hypernode: str


@dataclass(slots=True)
class SessionDecisions:
    """What the session decided; the daemon or the simulator carries it out."""

    binds: list[TaskInfo] = field(default_factory=list)
    evictions: list[Eviction] = field(default_factory=list)
    # (node name, annotation key, value) node locks requested by device plugins
    node_locks: list[tuple[str, str, str]] = field(default_factory=list)
    # PodGroup events: (job uid, type, reason, message)
    job_events: list[tuple[str, str, str, str]] = field(default_factory=list)


# a predicate's answers by node position (see Session.add_predicate_fn): the places, in the
# positions' order, of the nodes it may refuse; None to be asked through its many-node form
PredicateAt = Callable[[TaskInfo, list[int]], "list[int] | None"]


def _set_many(table: dict[str, Any], plugin: str, many: Callable[..., Any] | None) -> None:
    if many is not None:
        table[plugin] = many
    else:
        table.pop(plugin, None)


def _older_first(left_creation: float, left_uid: str, right_creation: float, right_uid: str) -> int:
    """Volcano's order when every plugin ties: the older object first, then the smaller uid."""
    if left_creation != right_creation:
        return -1 if left_creation < right_creation else 1
    return -1 if left_uid < right_uid else (1 if left_uid > right_uid else 0)


class Session:
    def __init__(
        self,
        snapshot: Snapshot,
        conf: SchedulerConfiguration,
        *,
        rng: random.Random | None = None,
        now: float | None = None,
        options: SessionOptions | None = None,
    ) -> None:
        self.uid = str(uuid.uuid4())
        self.conf = conf
        self.options = options or SessionOptions()
        self.now = time.time() if now is None else now
        self.rng = rng or random.Random()
        # task uid -> why a plugin's allocatable vote refused it, with numbers (for the pod's message)
        self.denials: dict[str, str] = {}
        self.jobs: dict[str, JobInfo] = snapshot.jobs
        self.nodes: dict[str, NodeInfo] = snapshot.nodes
        self.node_list: list[NodeInfo] = (
            snapshot.node_list if snapshot.node_list is not None else list(snapshot.nodes.values())
        )
        # what the snapshot knew of the nodes without a walk (see node_index, open_versions)
        self._node_index = snapshot.node_index
        self._node_versions = snapshot.node_versions
        self._node_changed_at = snapshot.node_changed_at
        self._has_taints = snapshot.has_taints
        self._queues_with_jobs = snapshot.queues_with_jobs
        # NodeInfo.views_owned as the session opens: unchanged means no view was made private since
        self._views_owned_at_open = NodeInfo.views_owned
        self.queues: dict[str, QueueInfo] = snapshot.queues
        self.priority_classes: dict[str, PriorityClassInfo] = snapshot.priority_classes
        self.configmaps: dict[str, dict[str, str]] = snapshot.configmaps
        self.namespaces: dict[str, dict[str, str]] = snapshot.namespaces
        self.resource_quotas: list[ResourceQuotaInfo] = snapshot.resource_quotas
        self.pdbs: list[PdbInfo] = snapshot.pdbs
        self.has_required_anti_affinity = snapshot.has_required_anti_affinity
        self.topology: Topology = snapshot.topology or build_topology(
            (), {n.name: n.labels for n in self.node_list}
        )
        self._hypernode_nodes: dict[str, list[NodeInfo]] = {}
        # task uid -> the HyperNode its (sub-)job already occupies while the task is being placed
        self.task_job_hypernode: dict[str, str] = {}
        # task uid -> its sub-job, for jobs with a network topology or partitions
        self.task_subjob: dict[str, Any] = {}
        # job uid -> the HyperNode allocate placed it in this session (the simulate table shows it)
        self.job_hypernodes: dict[str, str] = {}
        self._dirty_jobs = snapshot.dirty_jobs
        self._job_changes = snapshot.job_changes
        # the cluster's allocatable and used totals as the session opens, kept between sessions
        # and redone only for the nodes that changed (framework/nodesums)
        prev = self.carried(NODE_TOTALS)
        self.total_resource, self._open_used, kept = node_totals(
            self.node_list, prev[2] if prev is not None else None, self.open_versions(), self._node_changed_at
        )
        if kept is not None:
            self.carry(NODE_TOTALS, kept)
        self._busy_jobs = snapshot.busy_jobs
        self._job_position = snapshot.job_position
        # Tasks are shared with the cluster until the session changes them: uid -> private copy.
        self._owned: dict[str, TaskInfo] = {}
        # unquiet_jobs' last answer: (owned count, jobs map, its size, the jobs) - read-only
        self._unquiet: tuple[int, dict[str, JobInfo], int, list[JobInfo]] | None = None
        self.plugins: dict[str, Any] = {}
        self.event_handlers: list[EventHandler] = []
        self._tiered: dict[str, list[list[tuple[str, Callable[..., Any]]]]] = {}
        # the same callbacks in tier order, flattened, for the points asked in heap comparisons
        self._job_order: tuple[Callable[..., Any], ...] = ()
        # plugin -> its job order as a sort key (see add_job_order_fn); the keys in _job_order's order
        self._job_order_keys: dict[str, Callable[[JobInfo], Any]] = {}
        self._job_key_fns: tuple[Callable[[JobInfo], Any], ...] | None = None
        self._task_order: tuple[Callable[..., Any], ...] = ()
        # the same for task order (see add_task_order_fn)
        self._task_order_keys: dict[str, Callable[[TaskInfo], Any]] = {}
        self._task_key_fns: tuple[Callable[[TaskInfo], Any], ...] | None = None
        self._queue_order: tuple[Callable[..., Any], ...] = ()
        self._job_ready: tuple[Callable[..., Any], ...] = ()
        self._allocatable: tuple[Callable[..., Any], ...] = ()
        self._overused: tuple[Callable[..., Any], ...] = ()
        self._job_valid: tuple[Callable[..., Any], ...] = ()
        self._registered: dict[str, dict[str, Callable[..., Any]]] = {p: {} for p in POINTS}
        self._batch_splits: dict[str, BatchScoreSplit] = {}
        # plugin -> its batch node-order function's uniform form (see add_batch_node_order_fn)
        self._batch_uniform: dict[str, BatchScoreUniform] = {}
        # plugin -> the many-node form of its predicate / node-order function (see predicate_many)
        self._predicate_many: dict[str, Callable[[TaskInfo, list[NodeInfo]], list[Unfit | None]]] = {}
        self._node_order_many: dict[str, Callable[[TaskInfo, list[NodeInfo]], list[float]]] = {}
        # plugin -> (its many-node predicate form, the same by node position): see predicate_at
        self._predicate_at: dict[str, tuple[Callable[..., Any], PredicateAt]] = {}
        # plugin -> what its node-order function reads of a task (see add_node_order_fn)
        self._node_order_shape: dict[str, Callable[[TaskInfo], Hashable | None]] = {}
        self.decisions = SessionDecisions()
        self.node_locks = self.decisions.node_locks
        # told of each bind as it is committed, while the session goes on deciding: a caller may
        # send it at once (Volcano dispatches a job's binds when its statement commits)
        self.on_dispatch: Callable[[TaskInfo], None] | None = None
        self.warnings: list[str] = []
        # exceptions raised by a plugin for one node or one job, contained to it (see `contain`)
        self.plugin_errors: list[PluginError] = []
        self.node_warnings: list[tuple[str, str]] = []  # (node, why) for a Warning event on it
        # pending pods left out of the session (no PodGroup, unknown queue) and why
        self.unscheduled: list[tuple[TaskInfo, str]] = []
        # Per-session "predicate error cache" and role-failure bookkeeping used by allocate.
        self.predicate_round_robin = 0
        # Names of nodes whose accounting changed, in order: lets placement caches recheck only those.
        self.node_changes: list[str] = []
        # task uid -> node, for preemptors pipelined where evictions were made for them
        self.nominated: dict[str, str] = {}
        # Volcano's eviction metrics count events, not sessions: the victims the plugins allowed on
        # the last node preempt looked at (None: preempt looked at none), one attempt per node tried
        # with valid victims, one transaction per committed statement that evicts (by action)
        self.last_preemption_victims: int | None = None
        self.preemption_attempts = 0
        self.eviction_transactions: Counter[str] = Counter()
        # True while preempt's topology-aware dry run takes victims off a node. Volcano tells a
        # plugin about those removals (SimulateRemoveTask) only when its enablePreemptable or
        # enabledAllocatable switch is on; see `follows_dry_run`.
        self.victim_dry_run = False
        self.plugin_open_ms: dict[str, float] = {}
        self.plugin_close_ms: dict[str, float] = {}

    # ------------------------------------------------------------------ plugin registration --
    def _add(self, point: str, plugin: str, fn: Callable[..., Any]) -> None:
        self._registered[point][plugin] = fn

    def add_job_order_fn(
        self, plugin: str, fn: Callable[[JobInfo, JobInfo], int], key: Callable[[JobInfo], Any] | None = None
    ) -> None:
        """`key`, when given, is the same order as a sort key: fn(a, b) is 0 exactly when
        key(a) == key(b) and negative exactly when key(a) < key(b), for as long as no task of
        either job changes (None: this job's key cannot say it, e.g. a NaN share)."""
        self._add("job_order", plugin, fn)
        _set_many(self._job_order_keys, plugin, key)

    def add_queue_order_fn(self, plugin: str, fn: Callable[[QueueInfo, QueueInfo], int]) -> None:
        self._add("queue_order", plugin, fn)

    def add_victim_queue_order_fn(
        self, plugin: str, fn: Callable[[QueueInfo, QueueInfo, QueueInfo], int]
    ) -> None:
        self._add("victim_queue_order", plugin, fn)

    def add_task_order_fn(
        self,
        plugin: str,
        fn: Callable[[TaskInfo, TaskInfo], int],
        key: Callable[[TaskInfo], Any] | None = None,
    ) -> None:
        """`key`, when given, is the same order as a sort key (as for add_job_order_fn), for
        tasks that do not change while queued (None: this task's key cannot say it)."""
        self._add("task_order", plugin, fn)
        _set_many(self._task_order_keys, plugin, key)

    def add_predicate_fn(
        self,
        plugin: str,
        fn: Callable[[TaskInfo, NodeInfo], Unfit | None],
        many: Callable[[TaskInfo, list[NodeInfo]], list[Unfit | None]] | None = None,
        at: PredicateAt | None = None,
    ) -> None:
        """`many`, when given, answers what `fn` answers for each of a list of nodes, in order,
        with no side effect a second asking would notice (predicate_many may ask again).

        `at`, given with `many`, names the nodes by their positions in node_list: it returns the
        places (indexes into the positions, in order) of the nodes `fn` may refuse, every other
        node passing, or None to have `many` answer. It is asked only while `many` is the
        plugin's many form, so that replacing or dropping that form replaces this one too."""
        self._add("predicate", plugin, fn)
        _set_many(self._predicate_many, plugin, many)
        _set_many(self._predicate_at, plugin, (many, at) if many is not None and at is not None else None)

    def add_pre_predicate_fn(self, plugin: str, fn: Callable[[TaskInfo], Unfit | None]) -> None:
        self._add("pre_predicate", plugin, fn)

    def add_node_order_fn(
        self,
        plugin: str,
        fn: Callable[[TaskInfo, NodeInfo], float],
        many: Callable[[TaskInfo, list[NodeInfo]], list[float]] | None = None,
        shape: Callable[[TaskInfo], Hashable | None] | None = None,
    ) -> None:
        """`many`: the scores `fn` gives each of a list of nodes, in order (see add_predicate_fn).

        `shape`, when given, tells what `fn` reads of a task: two tasks with equal shapes (not
        None) get equal scores on every node in the same state, so that placement caches score
        a node once for the pods that differ only in what no score reads (see score_shape)."""
        self._add("node_order", plugin, fn)
        _set_many(self._node_order_many, plugin, many)
        _set_many(self._node_order_shape, plugin, shape)

    def add_batch_node_order_fn(
        self,
        plugin: str,
        fn: Callable[[TaskInfo, list[NodeInfo]], dict[str, float]],
        split: BatchScoreSplit | None = None,
        uniform: BatchScoreUniform | None = None,
    ) -> None:
        """`split`, when given, computes exactly what `fn` does in two parts, so that placement
        caches can keep the per-node part across calls and only redo the normalised part.

        `uniform`, for a function without a split, tells when `fn` gives every node of a list the
        same score (or none): placement caches then choose from the other scores, which they keep,
        where the added constant provably changes no order (PlacementCache.best)."""
        self._add("batch_node_order", plugin, fn)
        if split is not None:
            self._batch_splits[plugin] = split
        else:
            self._batch_splits.pop(plugin, None)
        if uniform is not None and split is None:
            self._batch_uniform[plugin] = uniform
        else:
            self._batch_uniform.pop(plugin, None)

    def add_best_node_fn(
        self, plugin: str, fn: Callable[[TaskInfo, dict[float, list[NodeInfo]]], NodeInfo | None]
    ) -> None:
        self._add("best_node", plugin, fn)

    def add_job_ready_fn(self, plugin: str, fn: Callable[[JobInfo], bool]) -> None:
        self._add("job_ready", plugin, fn)

    def add_job_pipelined_fn(self, plugin: str, fn: Callable[[JobInfo], int]) -> None:
        self._add("job_pipelined", plugin, fn)

    def add_job_enqueueable_fn(self, plugin: str, fn: Callable[[JobInfo], int]) -> None:
        self._add("job_enqueueable", plugin, fn)

    def add_job_enqueued_fn(self, plugin: str, fn: Callable[[JobInfo], None]) -> None:
        self._add("job_enqueued", plugin, fn)

    def add_job_starving_fn(self, plugin: str, fn: Callable[[JobInfo], bool]) -> None:
        self._add("job_starving", plugin, fn)

    def add_job_valid_fn(self, plugin: str, fn: Callable[[JobInfo], ValidateResult | None]) -> None:
        self._add("job_valid", plugin, fn)

    def add_overused_fn(self, plugin: str, fn: Callable[[QueueInfo], bool]) -> None:
        self._add("overused", plugin, fn)

    def add_allocatable_fn(self, plugin: str, fn: Callable[[QueueInfo, TaskInfo], bool]) -> None:
        self._add("allocatable", plugin, fn)

    def add_preemptive_fn(self, plugin: str, fn: Callable[[QueueInfo, TaskInfo], bool]) -> None:
        self._add("preemptive", plugin, fn)

    def add_preemptable_fn(
        self, plugin: str, fn: Callable[[TaskInfo, list[TaskInfo]], tuple[list[TaskInfo], int]]
    ) -> None:
        self._add("preemptable", plugin, fn)

    def add_reclaimable_fn(
        self, plugin: str, fn: Callable[[TaskInfo, list[TaskInfo]], tuple[list[TaskInfo], int]]
    ) -> None:
        self._add("reclaimable", plugin, fn)

    def add_unified_evictable_fn(
        self, plugin: str, fn: Callable[[EvictionContext, list[TaskInfo]], tuple[list[TaskInfo], int]]
    ) -> None:
        """Victim filter of gangpreempt/gangreclaim (Volcano's UnifiedEvictableFn). Like Volcano,
        consulted whatever the plugin's enablePreemptable/enableReclaimable switches say."""
        self._add("unified_evictable", plugin, fn)

    def add_victim_tasks_fn(self, plugin: str, fn: Callable[[list[TaskInfo]], list[TaskInfo]]) -> None:
        self._add("victim_tasks", plugin, fn)

    def add_target_job_fn(self, plugin: str, fn: Callable[[list[JobInfo]], JobInfo | None]) -> None:
        self._add("target_job", plugin, fn)

    def add_reserved_nodes_fn(self, plugin: str, fn: Callable[[], None]) -> None:
        self._add("reserved_nodes", plugin, fn)

    def add_hyper_node_order_fn(self, plugin: str, fn: Callable[[Any, list[str]], dict[str, float]]) -> None:
        self._add("hyper_node_order", plugin, fn)

    def add_hyper_node_gradient_fn(
        self, plugin: str, fn: Callable[[Any, HyperNodeInfo, str], list[list[HyperNodeInfo]]]
    ) -> None:
        self._add("hyper_node_gradient", plugin, fn)

    def add_event_handler(self, handler: EventHandler) -> None:
        self.event_handlers.append(handler)

    # ------------------------------------------------------------------ state kept between sessions --
    def node_index(self) -> dict[str, int]:
        """Node name -> its position in `node_list` (read-only: it may be the cluster's own)."""
        index = self._node_index
        if index is None or len(index) != len(self.node_list):
            index = self._node_index = {n.name: i for i, n in enumerate(self.node_list)}
        return index

    def node_changed_at(self) -> list[int] | None:
        """The positions in `node_list` whose view or version may differ from the previous
        snapshot's (the one the last session opened on); None when the snapshot does not know."""
        return self._node_changed_at

    def open_versions(self) -> list[int] | None:
        """NodeInfo.view_versions of `node_list` as long as no view was made private since the
        session opened (else as view_versions answers now): from the snapshot when it knows them."""
        versions = self._node_versions
        if (
            versions is not None
            and NodeInfo.views_owned == self._views_owned_at_open
            and len(versions) == len(self.node_list)
        ):
            return versions
        return NodeInfo.view_versions(self.node_list)

    def closing_versions(self) -> list[int] | None:
        """NodeInfo.view_versions(node_list, changed_ok=True): the snapshot's versions with -1 for
        the views this session made private, when the nodes it changed account for every view
        made private since it opened (a count kept by NodeInfo); else by a walk over the views."""
        versions = self._node_versions
        index = self._node_index
        made = NodeInfo.views_owned - self._views_owned_at_open
        if versions is not None and index is not None and len(versions) == len(self.node_list) == len(index):
            nodes = self.node_list
            private = [
                i for i in map(index.get, set(self.node_changes)) if i is not None and nodes[i].version
            ]
            if len(private) == made:
                if not made:
                    return versions
                out = list(versions)
                for i in private:
                    out[i] = -1
                return out
        return NodeInfo.view_versions(self.node_list, changed_ok=True)

    def any_node_taints(self) -> bool:
        """Some node has a taint."""
        if self._has_taints is None:
            self._has_taints = any(n.taints for n in self.node_list)
        return self._has_taints

    def carried(self, plugin: str) -> tuple[set[str], set[str], Any] | None:
        """(fresh, gone, state): what `plugin` kept from the previous snapshot's session, with the
        jobs whose view is new and those that are gone since. None when there is nothing to build
        on (no previous session of this plugin, a snapshot skipped, or jobs left out this time):
        the plugin then computes from scratch."""
        ch = self._job_changes
        if ch is None:
            return None
        kept = ch.carry.get(plugin)
        if kept is None or kept[0] != ch.serial - 1:
            return None
        return ch.fresh, ch.gone, kept[1]

    def carry(self, plugin: str, state: Any) -> None:
        """Keep `state`, computed over every job of this snapshot as it opened, for the next session."""
        ch = self._job_changes
        if ch is not None:
            ch.carry[plugin] = (ch.serial, state)

    def finish_registration(self) -> None:
        """Freeze the per-point, per-tier callback lists from the configured tiers and switches."""
        for point in POINTS:
            registered = self._registered[point]
            tiers: list[list[tuple[str, Callable[..., Any]]]] = []
            for tier in self.conf.tiers:
                fns = []
                for opt in tier.plugins:
                    fn = registered.get(opt.name)
                    if fn is None:
                        continue
                    if point not in _UNSWITCHED and not opt.enabled(point):
                        continue
                    fns.append((opt.name, fn))
                tiers.append(fns)
            self._tiered[point] = tiers
        # a generator per comparison cost ~1 us; allocate compares jobs and tasks millions of times,
        # and asks job_ready and allocatable for every task
        self._job_order = tuple(self._fns("job_order"))
        keys = self._job_order_keys
        named = [name for tier in self._tiered["job_order"] for name, _ in tier]
        self._job_key_fns = tuple(keys[n] for n in named) if all(n in keys for n in named) else None
        self._task_order = tuple(self._fns("task_order"))
        keys_t = self._task_order_keys
        named_t = [name for tier in self._tiered["task_order"] for name, _ in tier]
        self._task_key_fns = tuple(keys_t[n] for n in named_t) if all(n in keys_t for n in named_t) else None
        self._queue_order = tuple(self._fns("queue_order"))
        self._job_ready = tuple(self._fns("job_ready"))
        self._allocatable = tuple(self._fns("allocatable"))
        self._overused = tuple(self._fns("overused"))
        self._job_valid = tuple(self._fns("job_valid"))

    def hierarchy_enabled(self, plugin: str) -> bool:
        """Whether the configuration turns on `enableHierarchy` for that plugin."""
        return any(
            opt.name == plugin and "hierarchy" in opt.enabled_extra
            for tier in self.conf.tiers
            for opt in tier.plugins
        )

    def follows_dry_run(self, plugin: str) -> bool:
        """Whether `plugin` sees the victims a dry run takes off (Volcano's gate of
        SimulateAddTask/SimulateRemoveTask: the plugin's preemptable or allocatable switch)."""
        return any(
            opt.name == plugin and (opt.enabled("preemptable") or opt.enabled("allocatable"))
            for tier in self.conf.tiers
            for opt in tier.plugins
        )

    def has(self, point: str) -> bool:
        return any(self._tiered.get(point, []))

    def _fns(self, point: str) -> Iterable[Callable[..., Any]]:
        for tier in self._tiered[point]:
            for _, fn in tier:
                yield fn

    # ------------------------------------------------------------------ order combinators --
    def _first_nonzero(self, point: str, left: Any, right: Any) -> int:
        for fn in self._fns(point):
            r = fn(left, right)
            if r != 0:
                return -1 if r < 0 else 1
        return 0

    def job_compare(self, left: JobInfo, right: JobInfo) -> int:
        for fn in self._job_order:
            r = fn(left, right)
            if r != 0:
                return -1 if r < 0 else 1
        return _older_first(left.creation, left.uid, right.creation, right.uid)

    def job_order_key(self) -> Callable[[JobInfo], tuple | None] | None:
        """job_compare as a sort key, when every job order plugin gives one (else None): the
        plugins' keys in tier order, then creation and uid (_older_first). A key holds while no
        task of its job changes; None for a job one of the keys cannot order (a NaN)."""
        fns = self._job_key_fns
        if fns is None:
            return None

        def key(job: JobInfo) -> tuple | None:
            # a loop, not a comprehension: no frame of its own (a key per job allocate queues)
            parts = []
            for fn in fns:
                parts.append(fn(job))
            c = job.creation
            if None in parts or c != c:
                return None
            parts.append(c)
            parts.append(job.uid)
            return tuple(parts)

        return key

    def task_order_keys(self, tasks: list[TaskInfo]) -> list[tuple] | None:
        """task_compare as sort keys of `tasks` (one job's pending tasks, unchanged while queued),
        in their order, when every task order plugin gives a key and the keys order them all as
        task_compare does; else None. task_compare compares indexes only between two tasks that
        both have one, so the index is part of the key when every task has one or none does (a
        mix is left to task_compare); a NaN creation time or a plugin key of None is left to it too."""
        fns = self._task_key_fns
        if fns is None:
            return None
        indexed = sum(1 for t in tasks if t.index is not None)
        if 0 < indexed < len(tasks):
            return None
        out: list[tuple] = []
        for t in tasks:
            parts = [fn(t) for fn in fns]
            c = t.pod.creation
            if None in parts or c != c:
                return None
            if indexed:
                parts.append(t.index)
            parts.append(c)
            parts.append(t.uid)
            out.append(tuple(parts))
        return out

    def queue_compare(self, left: QueueInfo, right: QueueInfo) -> int:
        for fn in self._queue_order:
            r = fn(left, right)
            if r != 0:
                return -1 if r < 0 else 1
        return _older_first(left.creation, left.uid, right.creation, right.uid)

    def task_compare(self, left: TaskInfo, right: TaskInfo) -> int:
        for fn in self._task_order:
            r = fn(left, right)
            if r != 0:
                return -1 if r < 0 else 1
        if left.index is not None and right.index is not None and left.index != right.index:
            return -1 if left.index < right.index else 1
        return _older_first(left.pod.creation, left.uid, right.pod.creation, right.uid)

    def victim_queue_compare(self, left: QueueInfo, right: QueueInfo, preemptor: QueueInfo) -> int:
        for fn in self._fns("victim_queue_order"):
            r = fn(left, right, preemptor)
            if r != 0:
                return -1 if r < 0 else 1
        return -self.queue_compare(left, right)

    @functools.cached_property
    def job_key(self) -> Callable[[JobInfo], Any]:
        return functools.cmp_to_key(self.job_compare)

    @functools.cached_property
    def queue_key(self) -> Callable[[QueueInfo], Any]:
        return functools.cmp_to_key(self.queue_compare)

    @functools.cached_property
    def task_key(self) -> Callable[[TaskInfo], Any]:
        return functools.cmp_to_key(self.task_compare)

    # ------------------------------------------------------------------ predicate / scores --
    # A plugin that raises for one task or node (a bug on odd input) costs that task or node, not
    # the session: the exception becomes an Unfit naming the plugin, and is recorded for the log
    # and the metric. Python's try costs nothing when nothing is raised.
    def pre_predicate(self, task: TaskInfo) -> Unfit | None:
        for tier in self._tiered["pre_predicate"]:
            for plugin, fn in tier:
                try:
                    r = fn(task)
                except Exception as exc:
                    return self.contain(plugin, f"pod {task.key}", exc)
                if r is not None:
                    return r
        return None

    def predicate(self, task: TaskInfo, node: NodeInfo) -> Unfit | None:
        for tier in self._tiered["predicate"]:
            for plugin, fn in tier:
                try:
                    r = fn(task, node)
                except Exception as exc:
                    return self.contain(plugin, f"node {node.name}", exc, task.key)
                if r is not None:
                    return r
        return None

    def node_order_score(self, task: TaskInfo, node: NodeInfo) -> float:
        score = 0.0
        for tier in self._tiered["node_order"]:
            for plugin, fn in tier:
                try:
                    score += fn(task, node)
                except Exception as exc:  # the node keeps the other plugins' scores
                    self.contain(plugin, f"node {node.name}", exc, task.key)
        return score

    def predicate_many(self, task: TaskInfo, nodes: list[NodeInfo]) -> list[Unfit | None]:
        """[predicate(task, n) for n in nodes], asked plugin by plugin over the nodes no earlier
        plugin refused, through the plugins' many-node forms where they have one. When a plugin
        raises, the nodes are asked again one by one, so that the failure is contained to its node
        and recorded as predicate would record it."""
        # Every plugin passes every node in the usual ask of a placement cache: that path keeps
        # no list of the nodes still to ask (a ~1,000-ask session runs it ~2,000 times).
        many = self._predicate_many
        asked = 0
        try:
            for tier in self._tiered["predicate"]:
                for plugin, fn in tier:
                    batch = many.get(plugin)
                    got = batch(task, nodes) if batch is not None else [fn(task, n) for n in nodes]
                    if got.count(None) != len(got):
                        return self._predicate_refused(task, nodes, got, asked + 1)
                    asked += 1
        except Exception:
            return [self.predicate(task, n) for n in nodes]
        return [None] * len(nodes)

    def predicate_at(self, task: TaskInfo, at: list[int]) -> list[Unfit | None]:
        """predicate_many(task, [node_list[i] for i in at]), the plugins with a form by node
        position (add_predicate_fn's `at`) asked by position: when they refuse nothing (a
        placement cache's usual ask) no node list is gathered and no answer is made per node;
        the nodes such a form may refuse are asked of the plugin's one-node function, which gives
        their answers. A plugin that raises sends the nodes down predicate's one-by-one path, as
        predicate_many does."""
        nodes = self.node_list
        many, by_at = self._predicate_many, self._predicate_at
        todo = at  # the positions every plugin so far passed
        where: list[int] | None = None  # their places in `at` (None: todo is `at`)
        out: list[Unfit | None] | None = None
        try:
            for tier in self._tiered["predicate"]:
                for plugin, fn in tier:
                    batch = many.get(plugin)
                    form = by_at.get(plugin)
                    places = form[1](task, todo) if form is not None and form[0] is batch else None
                    if places is None:
                        sub = [nodes[i] for i in todo]
                        got = batch(task, sub) if batch is not None else [fn(task, n) for n in sub]
                        if got.count(None) == len(got):
                            continue
                        refused = [(k, r) for k, r in enumerate(got) if r is not None]
                    elif not places:
                        continue
                    else:
                        refused = [(k, r) for k in places if (r := fn(task, nodes[todo[k]])) is not None]
                        if not refused:
                            continue
                    if out is None:
                        out = [None] * len(at)
                    for k, r in refused:
                        out[k if where is None else where[k]] = r
                    gone = {k for k, _ in refused}
                    keep = [k for k in range(len(todo)) if k not in gone]
                    todo = [todo[k] for k in keep]
                    where = keep if where is None else [where[k] for k in keep]
                    if not todo:
                        return out
        except Exception:
            return [self.predicate(task, nodes[i]) for i in at]
        return out if out is not None else [None] * len(at)

    def _predicate_refused(
        self, task: TaskInfo, nodes: list[NodeInfo], got: list[Unfit | None], asked: int
    ) -> list[Unfit | None]:
        """predicate_many's answers once the first `asked` plugins have answered and the last of
        them (`got`) refused some node: the later plugins are asked about the nodes left."""
        out: list[Unfit | None] = [None] * len(nodes)
        todo = []
        for i, r in enumerate(got):
            if r is None:
                todo.append(i)
            else:
                out[i] = r
        many = self._predicate_many
        try:
            plugins = [pf for tier in self._tiered["predicate"] for pf in tier]
            for plugin, fn in plugins[asked:]:
                if not todo:
                    return out
                sub = [nodes[i] for i in todo]
                batch = many.get(plugin)
                got = batch(task, sub) if batch is not None else [fn(task, n) for n in sub]
                if got.count(None) != len(got):
                    keep = []
                    for i, r in zip(todo, got, strict=True):
                        if r is None:
                            keep.append(i)
                        else:
                            out[i] = r
                    todo = keep
        except Exception:
            return [self.predicate(task, n) for n in nodes]
        return out

    def node_order_scores(self, task: TaskInfo, nodes: list[NodeInfo]) -> list[float]:
        """[node_order_score(task, n) for n in nodes]: each node's sum is added up in the same
        plugin order, so the floats are the same; a plugin that raises sends every node down
        the one-by-one path (see predicate_many)."""
        scores = [0.0] * len(nodes)
        many = self._node_order_many
        try:
            for tier in self._tiered["node_order"]:
                for plugin, fn in tier:
                    batch = many.get(plugin)
                    got = batch(task, nodes) if batch is not None else [fn(task, n) for n in nodes]
                    scores = list(map(add, scores, got))
        except Exception:
            return [self.node_order_score(task, n) for n in nodes]
        return scores

    def contain(self, plugin: str, where: str, exc: Exception, pod: str = "") -> Unfit:
        """Record a plugin's exception for one node, pod or job; the answer for that one is Unfit."""
        err = PluginError(plugin, where, f"{type(exc).__name__}: {exc}", pod)
        self.plugin_errors.append(err)
        return unresolvable(f"plugin {plugin} failed on {where}: {err.error}")

    def batch_node_order_scores(self, task: TaskInfo, nodes: list[NodeInfo]) -> dict[str, float]:
        total: dict[str, float] = {}
        for fn in self._fns("batch_node_order"):
            for name, s in fn(task, nodes).items():
                total[name] = total.get(name, 0.0) + s
        return total

    def batch_node_order_splits(self) -> list[BatchScoreSplit] | None:
        """The enabled batch node-order functions as splits, in tier order; None when one has none."""
        out: list[BatchScoreSplit] = []
        for tier in self._tiered["batch_node_order"]:
            for plugin, _ in tier:
                split = self._batch_splits.get(plugin)
                if split is None:
                    return None
                out.append(split)
        return out

    def batch_node_order_offsets(self) -> tuple[list[BatchScoreSplit], list[BatchScoreUniform]] | None:
        """The enabled batch node-order functions as (the splits, then the uniform forms of the
        others), when every function without a split has a uniform form, every split comes before
        them in tier order, at least one has no split, and no node-order function is enabled; else
        None. A node's score is then its kept split total (an integer: 0.0 plus the node-order sum
        of no function) plus each uniform score in turn, which is what PlacementCache.best needs to
        prove that the uniform scores change no order."""
        if self.has("node_order"):
            return None
        splits: list[BatchScoreSplit] = []
        uniforms: list[BatchScoreUniform] = []
        for tier in self._tiered["batch_node_order"]:
            for plugin, _ in tier:
                split = self._batch_splits.get(plugin)
                if split is not None:
                    if uniforms:
                        return None
                    splits.append(split)
                    continue
                form = self._batch_uniform.get(plugin)
                if form is None:
                    return None
                uniforms.append(form)
        return (splits, uniforms) if uniforms else None

    def score_shape(self, task: TaskInfo) -> tuple[Hashable, ...] | None:
        """What the scores a placement cache keeps read of `task`: the shapes of every enabled
        node-order function and of every batch split's per-node part, in tier order. Tasks with
        equal score shapes get the same kept scores on a node in the same state. None when some
        function tells nothing, or nothing for this task. (Batch functions without a split are
        called for every candidate list and kept nowhere: they need no shape.)"""
        try:
            return self._score_shape(task)
        except Exception:  # a plugin's bug on odd input: that task's scores are simply not shared
            return None

    def _score_shape(self, task: TaskInfo) -> tuple[Hashable, ...] | None:
        out: list[Hashable] = []
        for tier in self._tiered["node_order"]:
            for plugin, _ in tier:
                fn = self._node_order_shape.get(plugin)
                got = fn(task) if fn is not None else None
                if got is None:
                    return None
                out.append(got)
        for tier in self._tiered["batch_node_order"]:
            for plugin, _ in tier:
                split = self._batch_splits.get(plugin)
                if split is None:
                    continue
                got = split.shape(task) if split.shape is not None else None
                if got is None:
                    return None
                out.append(got)
        return tuple(out)

    def batch_node_order_plan(self) -> list[tuple[BatchScoreSplit | None, Callable[..., Any]]]:
        """Every enabled batch node-order function in tier order, with its split when it has one."""
        return [
            (self._batch_splits.get(plugin), fn)
            for tier in self._tiered["batch_node_order"]
            for plugin, fn in tier
        ]

    def best_node(self, task: TaskInfo, scores: dict[float, list[NodeInfo]]) -> NodeInfo | None:
        for fn in self._fns("best_node"):
            n = fn(task, scores)
            if n is not None:
                return n
        return None

    # ------------------------------------------------------------------ topology --
    def hypernode_nodes(self, name: str) -> list[NodeInfo]:
        """The session's nodes under a HyperNode, in session node order."""
        got = self._hypernode_nodes.get(name)
        if got is None:
            hn = self.topology.hypernodes.get(name)
            if hn is None:
                got = []
            elif len(hn.nodes) == len(self.node_list):
                got = self.node_list
            else:
                members = hn.nodes
                got = [n for n in self.node_list if n.name in members]
            self._hypernode_nodes[name] = got
        return got

    def hypernode_gradient(self, unit: Any, start: HyperNodeInfo, purpose: str) -> list[list[HyperNodeInfo]]:
        """The HyperNodes to try for a job or sub-job, grouped tier by tier (the first plugin
        that registered the point decides); without one, only `start` itself."""
        for fn in self._fns("hyper_node_gradient"):
            return fn(unit, start, purpose)
        return [[start]]

    def hypernode_scores(self, unit: Any, names: list[str]) -> dict[str, float]:
        total = dict.fromkeys(names, 0.0)
        for fn in self._fns("hyper_node_order"):
            for name, s in fn(unit, names).items():
                if name in total:
                    total[name] += s
        return total

    # ------------------------------------------------------------------ job votes --
    # The votes allocate asks once or more per job are plain loops over frozen tuples: a
    # generator (two, through _fns) per question cost ~1 % of a session of one-pod jobs.
    def job_ready(self, job: JobInfo) -> bool:
        for fn in self._job_ready:  # noqa: SIM110 - no generator (see above)
            if not fn(job):
                return False
        return True

    def _vote(self, point: str, job: JobInfo) -> bool:
        for tier in self._tiered[point]:
            permitted = False
            for _, fn in tier:
                r = fn(job)
                if r < 0:
                    return False
                if r > 0:
                    permitted = True
            if permitted:
                return True
        return True

    def job_pipelined(self, job: JobInfo) -> bool:
        return self._vote("job_pipelined", job)

    def job_enqueueable(self, job: JobInfo) -> bool:
        return self._vote("job_enqueueable", job)

    def job_enqueued(self, job: JobInfo) -> None:
        for fn in self._fns("job_enqueued"):
            fn(job)

    def job_starving(self, job: JobInfo) -> bool:
        for tier in self._tiered["job_starving"]:
            if not tier:
                continue
            return all(fn(job) for _, fn in tier)
        return False

    def job_valid(self, job: JobInfo) -> ValidateResult | None:
        for fn in self._job_valid:
            r = fn(job)
            if r is not None and not r.passed:
                return r
        return None

    def overused(self, queue: QueueInfo) -> bool:
        for fn in self._overused:  # noqa: SIM110 - no generator (see above)
            if fn(queue):
                return True
        return False

    def allocatable(self, queue: QueueInfo, task: TaskInfo) -> bool:
        for fn in self._allocatable:  # noqa: SIM110 - no generator (see above)
            if not fn(queue, task):
                return False
        return True

    def preemptive(self, queue: QueueInfo, task: TaskInfo) -> bool:
        return all(fn(queue, task) for fn in self._fns("preemptive"))

    def _evictable(self, point: str, asker: Any, candidates: list[TaskInfo]) -> list[TaskInfo]:
        """Tier by tier: the intersection of the votes of the first tier whose plugins vote;
        a plugin voting with no victims ends its tier undecided. As in Volcano, where an empty
        list is nil, an empty intersection counts as no vote yet: the next plugin of the tier
        starts afresh, and a tier left with none hands the question to the next tier."""
        for tier in self._tiered[point]:
            victims: list[TaskInfo] | None = None
            for _, fn in tier:
                got, vote = fn(asker, candidates)
                if vote == ABSTAIN:
                    continue
                if not got:
                    victims = None
                    break
                if victims is None:
                    victims = list(got)
                else:
                    keep = {t.uid for t in got}
                    victims = [t for t in victims if t.uid in keep] or None
            if victims is not None:
                return victims
        return []

    def preemptable(self, preemptor: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo]:
        return self._evictable("preemptable", preemptor, candidates)

    def reclaimable(self, preemptor: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo]:
        return self._evictable("reclaimable", preemptor, candidates)

    def unified_evictable(self, ctx: EvictionContext, candidates: list[TaskInfo]) -> list[TaskInfo]:
        return self._evictable("unified_evictable", ctx, candidates)

    def victim_tasks(self, tasks: list[TaskInfo]) -> list[TaskInfo]:
        for tier in self._tiered["victim_tasks"]:
            union: dict[str, TaskInfo] = {}
            for _, fn in tier:
                for t in fn(tasks):
                    union[t.uid] = t
            if union:
                return list(union.values())
        return []

    # ------------------------------------------------------------------ placement primitives --
    def _fire_allocate(self, task: TaskInfo, restore: bool = False) -> None:
        ev = Event(task, restore)
        for h in self.event_handlers:
            if h.allocate is not None:
                h.allocate(ev)

    def _fire_deallocate(self, task: TaskInfo) -> None:
        ev = Event(task)
        for h in self.event_handlers:
            if h.deallocate is not None:
                h.deallocate(ev)

    def old_status(self, uid: str) -> PodGroupStatus | None:
        """The PodGroup status as the cluster has it, which the session's result is compared with."""
        job = self.jobs.get(uid)
        return None if job is None else job.base_status

    def unquiet_jobs(self) -> Iterable[JobInfo]:
        """The jobs, in `jobs` order, that were not quiet (`JobInfo.is_quiet`) or had changed when
        the session opened, and those whose tasks the session changed since: every job with a
        pending or pipelined task, or whose status may change, is among them. The snapshot knows
        the first ones, so an idle period on 15,000 quiet running jobs does not walk them all;
        without that knowledge, every job."""
        busy, position = self._busy_jobs, self._job_position
        if busy is None or position is None:
            return self.jobs.values()
        jobs = self.jobs
        # The owned tasks only grow, so the same count means the same jobs: allocate, backfill,
        # enqueue and the close (twice) asked for the same sorted list, five walks of every job.
        owned = len(self._owned)
        memo = self._unquiet
        if memo is not None and memo[0] == owned and memo[1] is jobs and memo[2] == len(jobs):
            return memo[3]
        # C-level passes: a generator and two comprehensions stepped through every job in Python
        uids = set(map(_job_of, self._owned.values()))
        uids.update(busy)
        got = list(map(jobs.__getitem__, sorted(filter(jobs.__contains__, uids), key=position.__getitem__)))
        self._unquiet = (owned, jobs, len(jobs), got)
        return got

    def queues_in_job_order(self) -> list[QueueInfo]:
        """The queues that have a job, in the order their first job comes in `jobs` (the order
        in which a walk over the jobs meets them); the walk stops once every queue is met."""
        out: list[QueueInfo] = []
        seen: set[str] = set()
        queues = self.queues
        # every queue, or as many as the snapshot says have a job (a queue without any made this
        # walk go over every job each period)
        every = len(queues) if self._queues_with_jobs is None else min(len(queues), self._queues_with_jobs)
        if every == 0:
            return out
        for job in self.jobs.values():
            name = job.queue
            if name in seen:
                continue
            seen.add(name)
            q = queues.get(name)
            if q is not None:
                out.append(q)
                if len(out) == every:
                    break
        return out

    def active_jobs(self) -> list[JobInfo]:
        """Jobs whose status may change in this session: changed in the cluster since the last
        snapshot, changed by this session, or with work left. The others keep their status, so
        closing a session on 15,000 quiet running jobs costs next to nothing."""
        dirty = self._dirty_jobs
        if dirty is None:
            return list(self.jobs.values())
        # is_pending() is "no PodGroup, or phase '' / Pending": the phase part is already covered
        # by the quiet-phase test, so only pg_exists is read.
        pending = TaskStatus.PENDING
        return [
            job
            for job in self.unquiet_jobs()
            if job.uid in dirty
            or not job._shared
            or not job.pg_exists
            or job.pod_group_status.phase not in QUIET_PHASES
            or job.task_status_index.get(pending)
        ]

    def used_total(self) -> Resource:
        """Resource() + every node's used, what a walk over the nodes in order gives now: the
        total taken as the session opened while no node has changed since (a copy, the caller's
        to change)."""
        if not self.node_changes:
            return self._open_used.clone()
        return walk_totals(self.node_list)[1]

    def own(self, task: TaskInfo) -> TaskInfo:
        """The session-private copy of a task, made on first change (copy-on-write)."""
        mine = self._owned.get(task.uid)
        if mine is not None:
            return mine
        mine = task.clone()
        self._owned[task.uid] = mine
        job = self.jobs.get(task.job)
        if job is not None:
            job.replace_task(task, mine)
        if task.node_name:
            node = self.nodes.get(task.node_name)
            if node is not None:
                node.replace_task(task, mine)
        return mine

    def place(self, task: TaskInfo, node: NodeInfo, status: TaskStatus) -> TaskInfo:
        """Put a pending task on a node as Allocated or Pipelined; roll back if a handler refuses.

        Returns the session's own copy of the task, which is what changed.
        """
        mine = self._owned.get(task.uid)
        if mine is not None:
            task = mine
            job = self.jobs[task.job]
            job.update_task_status(task, status)
        else:
            # own() and the status change in one step: the job swaps in the copy as it moves it
            # (most placements are of a task the session has not changed yet)
            if task.node_name:
                return self.place(self.own(task), node, status)
            mine = task.clone()
            self._owned[task.uid] = mine
            job = self.jobs[task.job]
            job.replace_and_update(task, mine, status)
            task = mine
        task.node_name = node.name
        node.add_task(task)
        self.node_changes.append(node.name)
        # _fire_allocate written out: a call less per placement. A refusal does not stop the
        # round: as in Volcano, every handler is told of the allocation and then every handler of
        # its undoing, so that none is told of an undoing without the allocation before it.
        ev = Event(task, False)
        refused: AllocateError | None = None
        for h in self.event_handlers:
            if h.allocate is not None:
                try:
                    h.allocate(ev)
                except AllocateError as exc:
                    if refused is None:
                        refused = exc
        if refused is not None:
            self._fire_deallocate(task)
            node.remove_task(task)
            job.update_task_status(task, _PENDING)
            task.node_name = ""
            raise refused
        return task

    def unplace(self, task: TaskInfo) -> None:
        """Undo `place`: the task goes back to Pending, remembering where it had been put."""
        task = self.own(task)
        job = self.jobs[task.job]
        node = self.nodes.get(task.node_name)
        task.last_tx = (task.status, task.node_name)
        self._fire_deallocate(task)
        if node is not None:
            node.remove_task(task)
            self.node_changes.append(node.name)
        job.update_task_status(task, _PENDING)
        task.node_name = ""

    def mark_releasing(self, task: TaskInfo) -> tuple[TaskInfo, TaskStatus]:
        """Evict in-session: the task keeps its node but its resources become releasing."""
        task = self.own(task)
        job = self.jobs[task.job]
        node = self.nodes[task.node_name]
        old = task.status
        node.remove_task(task)
        job.update_task_status(task, _RELEASING)
        node.add_task(task)
        self.node_changes.append(node.name)
        self._fire_deallocate(task)
        return task, old

    def unmark_releasing(self, task: TaskInfo, status: TaskStatus) -> None:
        task = self.own(task)
        job = self.jobs[task.job]
        node = self.nodes[task.node_name]
        node.remove_task(task)
        job.update_task_status(task, status)
        node.add_task(task)
        self.node_changes.append(node.name)
        self._fire_allocate(task, restore=True)

    def dispatch(self, task: TaskInfo) -> None:
        """Commit an Allocated task: it will be bound (the binder takes it from here)."""
        mine = self._owned.get(task.uid)
        task = mine if mine is not None else self.own(task)
        job = self.jobs[task.job]
        node = self.nodes[task.node_name]
        old = task.status
        job.update_task_status(task, _BINDING)
        node.restatus(task, old)
        self.decisions.binds.append(task)
        if self.on_dispatch is not None:
            self.on_dispatch(task)

    def evict_committed(self, task: TaskInfo, reason: str) -> None:
        self.decisions.evictions.append(Eviction(task, reason))
        job = self.jobs.get(task.job)
        if job is not None:
            self.decisions.job_events.append((job.uid, "Normal", "Evict", reason))

    def allocate_and_maybe_dispatch(self, task: TaskInfo, node: NodeInfo) -> None:
        """Backfill's direct allocation: place, then bind every Allocated task once the job is ready."""
        task = self.place(task, node, _ALLOCATED)
        job = self.jobs[task.job]
        if self.job_ready(job):
            for t in job.tasks_in(_ALLOCATED):
                self.dispatch(t)

    # ------------------------------------------------------------------ fit errors --
    def record_fit_errors(self, job: JobInfo, task: TaskInfo, errors: FitErrors) -> None:
        job.nodes_fit_errors[task.uid] = errors  # type: ignore[assignment]

    def warn(self, message: str) -> None:
        self.warnings.append(message)

    def warn_node(self, node: str, message: str) -> None:
        """A node whose input is unusable: logged once, and the daemon puts it on the node as an Event."""
        self.warnings.append(message)
        self.node_warnings.append((node, message))


@dataclass(frozen=True, slots=True)
class PluginError:
    """An exception a plugin raised for one node, pod or job, contained to it."""

    plugin: str
    where: str  # "node n1", "pod ns/name", "job ns/name"
    error: str
    pod: str = ""  # the pod being placed when the error was about a node

    def __str__(self) -> str:
        return (
            f"plugin {self.plugin} failed on {self.where}"
            + (f" (pod {self.pod})" if self.pod else "")
            + f": {self.error}"
        )


@dataclass(slots=True)
class SessionOptions:
    """Daemon flags that shape a session (spec 1.3)."""

    minimum_feasible_nodes: int = 100
    minimum_percentage_nodes_to_find: int = 5
    percentage_nodes_to_find: int = 0
    scheduler_name: str = "volcano"
    default_queue: str = "default"
    # When True, ties between best nodes go to the first in node order instead of a random one,
    # so that simulations and tests are reproducible.
    deterministic: bool = False
    # allocate keeps its refusals of pods that fit nowhere for the next session, where they hold
    # for nodes that did not change (framework/placement.py); off only to compare decisions
    carry_placement: bool = True
