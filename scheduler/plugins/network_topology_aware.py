"""network-topology-aware: HyperNode search order, HyperNode bin packing and closeness scores.

Arguments (Volcano's names): `weight` (1), `hypernode.binpack.cpu` (1), `hypernode.binpack.memory`
(1), `hypernode.binpack.resources` (comma-separated extra resource names) with
`hypernode.binpack.resources.<name>` (1 each), `hypernode.binpack.normal-pod.enable` (true),
`hypernode.binpack.normal-pod.fading` (0.8), `hypernode.gradient.evict.max-hypernodes` (8).
Negative weights fall back to 1, a negative fading to 0.8.

What it registers:
- the HyperNode gradient: for a job or sub-job with a hard constraint of tier T, the HyperNodes
  under the search root (the given HyperNode, narrowed to the highest allowed ancestor of what the
  job already occupies) of tier <= T whose idle (or future idle) resources hold the job's minimum,
  grouped by tier, lowest first; allocate tries them tier by tier;
- the HyperNode order: bin packing of the sub-job's total request into each HyperNode
  ((used + request) / allocatable, weighted; 0 when it overflows), ties broken by how many of the
  sub-job's tasks already run there; x 100 x weight;
- the node order for constrained tasks: closeness of the node's leaf HyperNode to the HyperNode
  the job already occupies, (maxTier - tier(LCA)) / (maxTier - minTier); and for unconstrained
  pods (when normal-pod bin packing is on) the HyperNode bin packing of every tier holding the
  node, tier i weighted fading^(i-1), so that small pods fill the fullest switches first. With
  it the node order's uniform form: inside a HyperNode whose nodes share one leaf every node
  gets the same constrained score, which placement caches then need not compute node by node.
"""

from __future__ import annotations

from operator import attrgetter
from typing import Any

from scheduler.framework.arguments import Arguments
from scheduler.framework.plugin import Plugin
from scheduler.framework.session import NOT_UNIFORM, EventHandler, Session
from scheduler.model.node import NodeInfo
from scheduler.model.objects import TaskInfo
from scheduler.model.resources import CPU, EPSILON, MEMORY, Resource
from scheduler.model.subjob import SubJob
from scheduler.model.topology import CLUSTER_TOP, HyperNodeInfo, Topology

WEIGHT = "weight"
BINPACK_CPU = "hypernode.binpack.cpu"
BINPACK_MEMORY = "hypernode.binpack.memory"
BINPACK_RESOURCES = "hypernode.binpack.resources"
NORMAL_POD_ENABLE = "hypernode.binpack.normal-pod.enable"
NORMAL_POD_FADING = "hypernode.binpack.normal-pod.fading"
EVICT_MAX_HYPERNODES = "hypernode.gradient.evict.max-hypernodes"
MAX_NODE_SCORE = 100.0
PURPOSE_ALLOCATE = "allocate"
PURPOSE_EVICT = "evict"
_node_name = attrgetter("node_name")

# _single_leaf's answer for a HyperNode whose nodes are not all on one leaf
_MIXED = "\0mixed"


def _weight(arguments: Arguments, key: str) -> int:
    w = arguments.get_int(key, 1)
    return 1 if w < 0 else w


def reverse_and_cap(gradients: list[list[HyperNodeInfo]], limit: int) -> list[list[HyperNodeInfo]]:
    """Eviction's order: the widest domains first, at most `limit` HyperNodes (0: all, as given)."""
    if limit <= 0:
        return gradients
    out: list[list[HyperNodeInfo]] = []
    left = limit
    for group in reversed(gradients):
        if left == 0:
            break
        out.append(group[-left:] if len(group) > left else group)
        left -= len(out[-1])
    return out


class _Usage:
    __slots__ = ("allocatable", "future_idle", "idle", "used")

    def __init__(self) -> None:
        self.allocatable = Resource()
        self.used = Resource()
        self.idle = Resource()
        self.future_idle = Resource()


class NetworkTopologyAwarePlugin(Plugin):
    name = "network-topology-aware"

    def __init__(self, arguments: Arguments) -> None:
        super().__init__(arguments)
        self.weight = _weight(arguments, WEIGHT)
        self.resource_weights: dict[str, int] = {CPU: _weight(arguments, BINPACK_CPU)}
        self.resource_weights[MEMORY] = _weight(arguments, BINPACK_MEMORY)
        for res in arguments.get_str(BINPACK_RESOURCES, "").split(","):
            res = res.strip()
            if res and res not in (CPU, MEMORY):
                self.resource_weights[res] = _weight(arguments, f"{BINPACK_RESOURCES}.{res}")
        self.normal_pod_enable = arguments.get_bool(NORMAL_POD_ENABLE, True)
        fading = arguments.get_float(NORMAL_POD_FADING, 0.8)
        self.fading = 0.8 if fading < 0 else fading
        evict_max = arguments.get_int(EVICT_MAX_HYPERNODES, 8)
        self.evict_max = 8 if evict_max <= 0 else evict_max
        self.usage: dict[str, _Usage] = {}
        # node -> the usage records of the HyperNodes holding it (each record its own sums: the
        # order they are updated in does not matter); a placement updates those, not a search of all
        self.node_usages: dict[str, list[_Usage]] = {}
        self.min_tier = 0
        self.max_tier = 0
        self.topo: Topology | None = None
        self.ssn: Session | None = None
        # HyperNode -> the leaf all its session nodes are on (see _single_leaf)
        self.single_leaf: dict[str, str] = {}

    # ------------------------------------------------------------------ session --
    def on_session_open(self, ssn: Session) -> None:
        self.ssn = ssn
        topo = self.topo = ssn.topology
        self.min_tier, self.max_tier = topo.tiers[0], topo.tiers[-1]
        node_usages = self.node_usages

        # Only HyperNodes something asked about have a usage record (see _usage); the others
        # are computed from the nodes' current state when first needed.
        def on_allocate(ev: Any) -> None:
            for u in node_usages.get(ev.task.node_name, ()):
                u.used.add(ev.task.resreq)

        def on_deallocate(ev: Any) -> None:
            for u in node_usages.get(ev.task.node_name, ()):
                u.used.sub(ev.task.resreq)

        ssn.add_event_handler(EventHandler(allocate=on_allocate, deallocate=on_deallocate))
        ssn.add_hyper_node_gradient_fn(self.name, self.gradient)
        ssn.add_hyper_node_order_fn(self.name, lambda unit, names: self.hypernode_order(ssn, unit, names))
        constrained = any(j.network_topology is not None or j.subgroup_policies for j in ssn.jobs.values())
        if topo.real and (self.normal_pod_enable or constrained):
            # Without HyperNodes every node scores the same, and with normal-pod bin packing off
            # only constrained pods are scored: registering nothing otherwise keeps the placement
            # cache's per-node scores (its fast path) for ordinary pods.
            ssn.add_batch_node_order_fn(
                self.name,
                lambda task, nodes: self.batch_node_order(ssn, task, nodes),
                uniform=lambda task, nodes, domain: self.uniform_score(ssn, task, nodes, domain),
            )

    # ------------------------------------------------------------------ gradient --
    def gradient(self, unit: Any, start: HyperNodeInfo, purpose: str) -> list[list[HyperNodeInfo]]:
        result = self.eligible_gradient(unit, start, purpose)
        return reverse_and_cap(result, self.evict_max) if purpose == PURPOSE_EVICT else result

    def eligible_gradient(self, unit: Any, start: HyperNodeInfo, purpose: str) -> list[list[HyperNodeInfo]]:
        """The HyperNodes under `start` the unit may use, by tier, lowest tier first."""
        tier = unit.hard_tier
        if tier is None:
            return [[start]]
        topo = self.topo
        assert topo is not None
        root = self._search_root(topo, start, tier, unit.allocated_hypernode)
        if root is None:
            return []
        need: Resource = unit.min_request(self.ssn)
        by_tier: dict[int, list[HyperNodeInfo]] = {}
        queue = [root]
        i = 0
        while i < len(queue):
            hn = queue[i]
            i += 1
            if self._eligible(hn, tier, unit.allocated_hypernode, need, purpose):
                by_tier.setdefault(hn.tier, []).append(hn)
            queue.extend(topo.hypernodes[c] for c in hn.children)
        return [by_tier[t] for t in sorted(by_tier)]

    def _usage(self, name: str) -> _Usage:
        """The HyperNode's resources, summed over its nodes the first time they are asked for
        (so a session without constrained jobs sums nothing) and kept current by the events."""
        u = self.usage.get(name)
        if u is None:
            u = self.usage[name] = _Usage()
            assert self.ssn is not None and self.topo is not None
            hn = self.topo.hypernodes.get(name)
            for node_name in hn.nodes if hn is not None else ():
                self.node_usages.setdefault(node_name, []).append(u)
            for node in self.ssn.hypernode_nodes(name):
                u.allocatable.add(node.allocatable)
                u.used.add(node.used)
                u.idle.add(node.idle)
                u.future_idle.add(node.future_idle())
        return u

    def _eligible(self, hn: HyperNodeInfo, tier: int, allocated: str, need: Resource, purpose: str) -> bool:
        if hn.tier > tier:
            return False
        if allocated:
            return True  # partly running: no resource pre-filter
        u = self._usage(hn.name)
        if purpose == PURPOSE_EVICT:
            return need.less_equal(u.allocatable)
        return need.less_equal(u.idle) or need.less_equal(u.future_idle)

    @staticmethod
    def _search_root(topo: Topology, start: HyperNodeInfo, tier: int, allocated: str) -> HyperNodeInfo | None:
        """`start`, narrowed to the highest ancestor of tier <= `tier` of what the job occupies;
        None when the two do not overlap."""
        if not allocated:
            return start
        highest = ""
        for anc in topo.ancestors(allocated):
            if topo.hypernodes[anc].tier > tier:
                break
            highest = anc
        if not highest:
            return None
        lca = topo.lca(start.name, highest)
        if lca == highest:
            return start
        if lca == start.name:
            return topo.hypernodes[highest]
        return None

    # ------------------------------------------------------------------ HyperNode order --
    def _binpack(self, name: str, request: dict[str, float]) -> float:
        u = self._usage(name)
        total = 0.0
        weights = 0
        for res, req in request.items():
            w = self.resource_weights.get(res)
            if w is None:
                continue
            alloc = u.allocatable.get(res)
            used = u.used.get(res)
            if used + req > alloc:
                return 0.0
            total += w * (used + req) / alloc
            weights += w
        return total / weights if weights > 0 else 0.0

    def hypernode_order(self, ssn: Session, unit: Any, names: list[str]) -> dict[str, float]:
        request: dict[str, float] = {}
        tasks = unit.all_tasks(ssn)
        for t in tasks:
            for res, v in t.resreq.items():
                if v >= EPSILON and res in self.resource_weights:
                    request[res] = request.get(res, 0.0) + v
        scores = {n: self._binpack(n, request) for n in names}
        if len(scores) > 1:
            top = max(scores.values())
            tied = [n for n, s in scores.items() if s == top]
            if len(tied) > 1 and tasks:
                for n in tied:
                    members = self.topo.hypernodes[n].nodes if self.topo else frozenset()
                    scores[n] += sum(1 for t in tasks if t.node_name in members) / len(tasks)
        scale = MAX_NODE_SCORE * self.weight
        return {n: s * scale for n, s in scores.items()}

    # ------------------------------------------------------------------ node order --
    def batch_node_order(self, ssn: Session, task: TaskInfo, nodes: list[NodeInfo]) -> dict[str, float]:
        allocated = ssn.task_job_hypernode.get(task.uid)
        if allocated is None:
            return self._normal_pod_scores(task, nodes)
        if not allocated:
            return {}
        topo = self.topo
        assert topo is not None
        scale = MAX_NODE_SCORE * self.weight
        # every score depends on the node's leaf only: work per leaf, then map the nodes
        leaf_of = topo.leaf_of
        leaves = [leaf_of.get(n.name, "") for n in nodes]
        count: dict[str, int] = {}
        for leaf in leaves:
            count[leaf] = count.get(leaf, 0) + 1
        value = {leaf: self._closeness(topo, leaf, allocated) for leaf in count}
        top = max(value.values(), default=0.0)
        tied = sum(n for leaf, n in count.items() if value[leaf] == top)
        final = dict(value)
        if tied > 1:
            unit = ssn.task_subjob.get(task.uid)
            tasks = unit.all_tasks(ssn) if unit is not None else []
            if tasks:
                per_leaf: dict[str, int] = {}
                for t in tasks:
                    if t.node_name:
                        leaf = leaf_of.get(t.node_name, "")
                        per_leaf[leaf] = per_leaf.get(leaf, 0) + 1
                for leaf, v in value.items():
                    if v == top:
                        final[leaf] = v + per_leaf.get(leaf, 0) / len(tasks)
        scaled = {leaf: v * scale for leaf, v in final.items()}
        return dict(zip([n.name for n in nodes], map(scaled.__getitem__, leaves), strict=True))

    def uniform_score(self, ssn: Session, task: TaskInfo, nodes: list[NodeInfo], domain: str) -> Any:
        """What batch_node_order gives every node of any two or more of `nodes` (all under HyperNode
        `domain`), when that is one score (None: no score): for a constrained task searched inside
        a HyperNode whose nodes are all on one leaf (a leaf HyperNode, hard tier 1), every node
        ties on that leaf's closeness and the tie-break; else NOT_UNIFORM. Placement caches keep
        the other scores and choose by them when this constant cannot change the choice; a
        single node is chosen whatever its score, so the tie-break (two or more tied) is taken."""
        allocated = ssn.task_job_hypernode.get(task.uid)
        if allocated is None:
            return NOT_UNIFORM if self.normal_pod_enable else None
        if not allocated:
            return None
        leaf = self._single_leaf(ssn, domain)
        if leaf == _MIXED:
            return NOT_UNIFORM
        topo = self.topo
        assert topo is not None
        value = self._closeness(topo, leaf, allocated)
        unit = ssn.task_subjob.get(task.uid)
        if unit is not None:
            # batch_node_order's tie-break: the share of the unit's tasks on the leaf (a sub-job's
            # tasks read by uid here, without the list all_tasks builds per call)
            leaf_of = topo.leaf_of
            if isinstance(unit, SubJob):
                # in C-level passes (this runs per pod): filter(None) drops the uids the job lacks
                # (a task is always true), and a leaf is never None, so a task without a node or a
                # node without a leaf does not count for a real leaf
                job = ssn.jobs[unit.job].tasks
                names = list(map(_node_name, filter(None, map(job.get, unit.task_uids))))
                count = len(names)
                if leaf:
                    here = list(map(leaf_of.get, names)).count(leaf)
                else:
                    here = sum(1 for n in names if n and leaf_of.get(n, "") == leaf)
            else:
                tasks = unit.all_tasks(ssn)
                count = len(tasks)
                here = sum(1 for t in tasks if t.node_name and leaf_of.get(t.node_name, "") == leaf)
            if count:
                value = value + here / count
        return value * (MAX_NODE_SCORE * self.weight)

    def _single_leaf(self, ssn: Session, domain: str) -> str:
        """The leaf (as batch_node_order reads it, "" for none) every session node under HyperNode
        `domain` is on; _MIXED when they are not all on one, or the HyperNode is unknown."""
        got = self.single_leaf.get(domain)
        if got is None:
            leaves = (
                {self.topo.leaf_of.get(n.name, "") for n in ssn.hypernode_nodes(domain)}
                if self.topo
                else set()
            )
            got = self.single_leaf[domain] = leaves.pop() if len(leaves) == 1 and domain else _MIXED
        return got

    def _closeness(self, topo: Topology, leaf: str, allocated: str) -> float:
        if not leaf or not allocated:
            return 0.0
        if leaf == allocated:
            return 1.0
        lca = topo.lca(leaf, allocated)
        if not lca:
            return 0.0
        tier = topo.hypernodes[lca].tier
        if self.min_tier == self.max_tier:
            return 1.0
        if self.min_tier <= tier <= self.max_tier:
            return (self.max_tier - tier) / (self.max_tier - self.min_tier)
        return 0.0

    def _normal_pod_scores(self, task: TaskInfo, nodes: list[NodeInfo]) -> dict[str, float]:
        if not self.normal_pod_enable:
            return {}
        topo = self.topo
        assert topo is not None
        tier_weights = {t: self.fading ** (t - 1) for t in range(self.min_tier, self.max_tier + 1)}
        total_weight = sum(tier_weights.values())
        if total_weight <= 0:
            return {}
        request = {r: v for r, v in task.resreq.items() if v >= EPSILON and r in self.resource_weights}
        cache: dict[str, float] = {}
        scale = MAX_NODE_SCORE * self.weight
        # a node's score depends only on the HyperNodes above it: one value per lowest HyperNode
        lowest_of = topo.lowest_of
        lowests = [lowest_of.get(n.name, CLUSTER_TOP) for n in nodes]
        value: dict[str, float] = {}
        for lowest in set(lowests):
            by_tier = {topo.hypernodes[h].tier: h for h in topo.ancestors(lowest)}
            total = 0.0
            for t, w in tier_weights.items():
                h = by_tier.get(t)
                if h is None:
                    sc = 1.0  # no HyperNode at this tier: such nodes are preferred, as Volcano
                else:
                    sc = cache.get(h)
                    if sc is None:
                        sc = cache[h] = self._binpack(h, request)
                total += w * sc
            value[lowest] = total / total_weight * scale
        return dict(zip([n.name for n in nodes], map(value.__getitem__, lowests), strict=True))
