"""nodeorder: kube-scheduler's score plugins with Volcano's argument names and weights (spec 7.7).

| argument                   | default | kube-scheduler scorer (see scheduler.plugins.k8s)        |
|----------------------------|---------|----------------------------------------------------------|
| `leastrequested.weight`    | 1       | NodeResourcesFit LeastAllocated (cpu 50, memory 50)      |
| `mostrequested.weight`     | 0       | NodeResourcesFit MostAllocated (cpu 1, memory 1)         |
| `balancedresource.weight`  | 1       | NodeResourcesBalancedAllocation (cpu, memory, gpu)       |
| `nodeaffinity.weight`      | 2       | NodeAffinity, preferred terms, normalised to max 100     |
| `podaffinity.weight`       | 2       | InterPodAffinity, preferred terms, min-max normalised    |
| `tainttoleration.weight`   | 3       | TaintToleration, PreferNoSchedule, normalised reversed   |
| `imagelocality.weight`     | 1       | ImageLocality: the model keeps no images, contributes 0  |
| `podtopologyspread.weight` | 2       | PodTopologySpread, ScheduleAnyway constraints            |

Every scorer gives each candidate node an integer on 0..100, normalised over the candidates the
way kube-scheduler does; the node's score is the sum of weight x score over the scorers whose
weight is not 0 (a weight of 0 switches the scorer off, as in Volcano). All scorers run as one
batch node-order function, since normalisation needs the whole candidate list; the per-node
resource scores need no normalisation and are computed in the same pass.
"""

from __future__ import annotations

from typing import Any

from scheduler.framework.arguments import Arguments
from scheduler.framework.plugin import Plugin
from scheduler.framework.session import BatchScoreSplit, Session
from scheduler.model.node import NodeInfo
from scheduler.model.objects import TaskInfo
from scheduler.model.resources import Resource
from scheduler.plugins.k8s.interpod import (
    normalize_min_max,
    pod_terms,
    preferred_raw_score,
    preferred_topology_scores,
)
from scheduler.plugins.k8s.nodeaffinity import preferred_score, preferred_terms
from scheduler.plugins.k8s.noderesources import (
    GPU,
    CpuMemoryMemo,
    resource_scores,
)
from scheduler.plugins.k8s.podindex import SessionPods, session_pods
from scheduler.plugins.k8s.spread import spread_scores
from scheduler.plugins.k8s.taints import count_intolerable_prefer_no_schedule, prefer_no_schedule_tolerations

LEAST_REQUESTED = "leastrequested.weight"
MOST_REQUESTED = "mostrequested.weight"
BALANCED_RESOURCE = "balancedresource.weight"
NODE_AFFINITY = "nodeaffinity.weight"
POD_AFFINITY = "podaffinity.weight"
TAINT_TOLERATION = "tainttoleration.weight"
IMAGE_LOCALITY = "imagelocality.weight"
POD_TOPOLOGY_SPREAD = "podtopologyspread.weight"

DEFAULT_WEIGHTS = {
    LEAST_REQUESTED: 1,
    MOST_REQUESTED: 0,
    BALANCED_RESOURCE: 1,
    NODE_AFFINITY: 2,
    POD_AFFINITY: 2,
    TAINT_TOLERATION: 3,
    IMAGE_LOCALITY: 1,
    POD_TOPOLOGY_SPREAD: 2,
}


def default_normalize(raw: dict[str, int], reverse: bool = False) -> dict[str, int]:
    """kube-scheduler's DefaultNormalizeScore: 100 x s / max (integer); reversed: 100 - that."""
    hi = max(raw.values(), default=0)
    if hi == 0:
        return dict.fromkeys(raw, 100 if reverse else 0)
    return {n: (100 - 100 * s // hi) if reverse else 100 * s // hi for n, s in raw.items()}


class NodeOrderPlugin(Plugin):
    name = "nodeorder"

    def __init__(self, arguments: Arguments) -> None:
        super().__init__(arguments)
        self.weights = {key: arguments.get_int(key, default) for key, default in DEFAULT_WEIGHTS.items()}
        self.taint_constant = False
        self._memo = CpuMemoryMemo()
        # per_nodes' plan for the last request seen (the request object, its weights, the
        # fallback computation and the scores implementation): a gang's pods share one interned
        # request, and the plan was rebuilt for every node a placement changed
        self._plan: tuple[Resource, tuple[int, int, int, int], Any, Any] | None = None

    def on_session_open(self, ssn: Session) -> None:
        w = self.weights
        # ImageLocality is left out: without images on nodes its score is 0 everywhere.
        active = {k: v for k, v in w.items() if v != 0 and k != IMAGE_LOCALITY}
        if not active:
            return
        sp = session_pods(ssn)
        self._plan = None  # the weights read the session's taints
        # Without any taint in the cluster every node's TaintToleration raw score is 0, which
        # normalises (reversed) to 100 on every node whatever the candidates: a per-node constant.
        self.taint_constant = not ssn.any_node_taints()

        def batch(task: TaskInfo, nodes: list[NodeInfo]) -> dict[str, float]:
            return self.scores(sp, task, nodes)

        def rest(task: TaskInfo, nodes: list[NodeInfo]) -> dict[str, int]:
            return self.normalized(sp, task, nodes)

        ssn.add_batch_node_order_fn(
            self.name, batch, BatchScoreSplit(self.per_node, rest, self.per_nodes, self.shape)
        )

    def scores(self, sp: SessionPods, task: TaskInfo, nodes: list[NodeInfo]) -> dict[str, float]:
        """Sum of weight x score over the active scorers: per-node part plus the normalised part."""
        per_node = self.per_node
        total = {n.name: float(per_node(task, n)) for n in nodes}
        for name, s in self.normalized(sp, task, nodes).items():
            total[name] += s
        return total

    @staticmethod
    def shape(task: TaskInfo) -> tuple[float, float] | None:
        """What per_node reads of the task: its cpu and memory requests, unless it asks for
        whole GPUs (then the GPU joins the balanced fractions: None)."""
        req = task.resreq
        if req.scalars.get(GPU, 0.0) != 0:
            return None
        return req.milli_cpu, req.memory

    def per_node(self, task: TaskInfo, node: NodeInfo) -> int:
        """The scores that need no normalisation: they depend on the task and this node only,
        and, unless the task asks for whole GPUs, on their cpu and memory only."""
        # the same memo slot and score as per_nodes gives (the compiled scores, see below)
        return self.per_nodes(task, [node])[0]

    def per_nodes(self, task: TaskInfo, nodes: list[NodeInfo]) -> list[int]:
        """per_node for each node, in order: the task's weights read once, and each node's score
        computed (or found in the memo) without a chain of calls per node."""
        req = task.resreq
        plan = self._plan
        if plan is None or plan[0] is not req:
            if req.scalars.get(GPU, 0.0) != 0:
                return [self._per_node(task, n) for n in nodes]
            plan = self._plan = self._plan_for(req)
        _, (wl, wm, wb, taint), compute, impl = plan
        return impl.scores(self._memo.slots, nodes, req.milli_cpu, req.memory, wl, wm, wb, taint, compute)  # type: ignore[no-any-return]

    def _plan_for(self, req: Resource) -> tuple[Resource, tuple[int, int, int, int], Any, Any]:
        """per_nodes' weights, fallback computation and scores implementation for a request
        without GPU (the request kept in the plan: it is recognised by identity)."""
        weights = self._task_weights(req)
        wl, wm, wb, taint = weights
        if wl or wm or wb:

            def compute(node: NodeInfo) -> int:
                s = resource_scores(node, req, wl, wm, wb)
                return s + taint if taint else s

        else:

            def compute(node: NodeInfo) -> int:
                return taint

        return req, weights, compute, self._memo.implementation(weights)

    def _task_weights(self, req: Resource) -> tuple[int, int, int, int]:
        """The least/most-requested and balanced weights for this request, and the per-node
        TaintToleration constant (0 when it does not apply)."""
        w = self.weights
        wl, wm, wb = w[LEAST_REQUESTED], w[MOST_REQUESTED], w[BALANCED_RESOURCE]
        # requests_none_of(req) over cpu, memory and the GPU, read inline: this runs per node score
        if wb and req.milli_cpu == 0 and req.memory == 0 and req.scalars.get(GPU, 0.0) == 0:
            wb = 0
        taint = 100 * w[TAINT_TOLERATION] if w[TAINT_TOLERATION] and self.taint_constant else 0
        return wl, wm, wb, taint

    def _per_node(self, task: TaskInfo, node: NodeInfo) -> int:
        req = task.resreq
        wl, wm, wb, taint = self._task_weights(req)
        s = resource_scores(node, req, wl, wm, wb) if wl or wm or wb else 0
        return s + taint if taint else s

    def normalized(self, sp: SessionPods, task: TaskInfo, nodes: list[NodeInfo]) -> dict[str, int]:
        """The scores normalised over the candidate list (empty when none applies to the task)."""
        w = self.weights
        pod = task.pod
        total: dict[str, int] = {}
        if not nodes:
            return total
        # Asked once per pod by the placement cache: most pods have no affinity or spread, the
        # taints are a constant, and no pod's terms can score them; then every part below is empty.
        if (
            not pod.affinity
            and not pod.topology_spread
            and (self.taint_constant or not w[TAINT_TOLERATION])
            and not (w[POD_AFFINITY] and sp.has_affinity_pods())
        ):
            return total
        if w[NODE_AFFINITY]:
            terms = preferred_terms(pod.affinity)
            if terms:
                raw = {n.name: preferred_score(terms, n.name, n.labels) for n in nodes}
                self._add(total, default_normalize(raw), w[NODE_AFFINITY])
        if w[TAINT_TOLERATION] and not self.taint_constant:
            tolerations = prefer_no_schedule_tolerations(pod.tolerations)
            raw = {
                n.name: count_intolerable_prefer_no_schedule(n.taints, tolerations) if n.taints else 0
                for n in nodes
            }
            self._add(total, default_normalize(raw, reverse=True), w[TAINT_TOLERATION])
        if w[POD_AFFINITY]:
            self._add(total, self._pod_affinity(sp, task, nodes), w[POD_AFFINITY])
        if w[POD_TOPOLOGY_SPREAD] and pod.topology_spread:
            self._add(total, spread_scores(sp, pod, nodes), w[POD_TOPOLOGY_SPREAD])
        return total

    @staticmethod
    def _add(total: dict[str, int], scores: dict[str, int], weight: int) -> None:
        for name, s in scores.items():
            total[name] = total.get(name, 0) + s * weight

    @staticmethod
    def _pod_affinity(sp: SessionPods, task: TaskInfo, nodes: list[NodeInfo]) -> dict[str, int]:
        terms = pod_terms(sp, task.pod)
        # Nothing to score unless the pod has preferred terms or some pod has any affinity.
        if not (terms.preferred_affinity or terms.preferred_anti) and not sp.has_affinity_pods():
            return {}
        topo = preferred_topology_scores(sp, task.pod)
        if not topo:
            return {}
        return normalize_min_max({n.name: preferred_raw_score(topo, n.labels) for n in nodes})
