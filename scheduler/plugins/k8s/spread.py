"""Pod topology spread, as kube-scheduler's PodTopologySpread filters (DoNotSchedule) and scores
(ScheduleAnyway).

A constraint counts, per domain (value of its topologyKey), the pods of the incoming pod's
namespace that its labelSelector (narrowed by matchLabelKeys) selects, skipping pods being
deleted. Only nodes that carry every constraint's topology key and pass the node inclusion
policies count: nodeAffinityPolicy Honor (the default) keeps nodes matching the pod's nodeSelector
and required node affinity, nodeTaintsPolicy Honor (default Ignore) keeps nodes without an
untolerated NoSchedule/NoExecute taint.

Filter, per constraint: a node without the topology key fails "node(s) didn't match pod topology
spread constraints (missing required label)" (unresolvable); otherwise
    skew = pods in the node's domain + (1 if the pod matches its own selector) - global minimum
must not exceed maxSkew, else "node(s) didn't match pod topology spread constraints"
(resolvable). The global minimum is the smallest domain count, or 0 while there are fewer
domains than minDomains.

Score, per candidate node (candidates lacking a key are ignored and score 0):
    raw = round(sum over constraints of count x log(domains + 2) + (maxSkew - 1))
where for `kubernetes.io/hostname` count is the node's own pods and domains the number of scored
candidates; then normalised as 100 x (max + min - raw) / max (100 for all when max is 0).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from scheduler.framework.status import Unfit
from scheduler.model.node import NodeInfo
from scheduler.model.objects import PodInfo
from scheduler.plugins.k8s.labels import Selector, compile_selector
from scheduler.plugins.k8s.nodeaffinity import RequiredNodeAffinity, required_node_affinity
from scheduler.plugins.k8s.podindex import SessionPods
from scheduler.plugins.k8s.taints import find_untolerated_taint

CONSTRAINTS_REASON = "node(s) didn't match pod topology spread constraints"
MISSING_LABEL_REASON = CONSTRAINTS_REASON + " (missing required label)"
CONSTRAINTS_UNFIT = Unfit(CONSTRAINTS_REASON, resolvable=True)
MISSING_LABEL_UNFIT = Unfit(MISSING_LABEL_REASON, resolvable=False)

DO_NOT_SCHEDULE = "DoNotSchedule"
SCHEDULE_ANYWAY = "ScheduleAnyway"
HOSTNAME = "kubernetes.io/hostname"


class Constraint:
    __slots__ = ("honor_affinity", "honor_taints", "max_skew", "min_domains", "selector", "topology_key")

    def __init__(self, raw: Mapping[str, Any], pod: PodInfo) -> None:
        self.topology_key = str(raw.get("topologyKey") or "")
        self.max_skew = _int(raw.get("maxSkew"), 1)
        self.min_domains = _int(raw.get("minDomains"), 1)
        sel: Selector = compile_selector(raw.get("labelSelector"))
        keys = raw.get("matchLabelKeys") or []
        if isinstance(keys, list) and keys:
            sel = sel.with_label_keys([str(k) for k in keys], pod.labels)
        self.selector = sel
        self.honor_affinity = (raw.get("nodeAffinityPolicy") or "Honor") == "Honor"
        self.honor_taints = (raw.get("nodeTaintsPolicy") or "Ignore") == "Honor"


def _int(v: Any, default: int) -> int:
    try:
        return int(v) if v is not None else default
    except (TypeError, ValueError):
        return default


def constraints_of(pod: PodInfo, when: str) -> list[Constraint]:
    return [
        Constraint(c, pod)
        for c in pod.topology_spread
        if isinstance(c, dict) and (c.get("whenUnsatisfiable") or DO_NOT_SCHEDULE) == when
    ]


class _Policy:
    """Which nodes a constraint counts (topology keys present + node inclusion policies)."""

    __slots__ = ("keys", "pod", "required")

    def __init__(self, pod: PodInfo, constraints: list[Constraint]) -> None:
        self.pod = pod
        self.keys = tuple({c.topology_key for c in constraints})
        self.required: RequiredNodeAffinity = required_node_affinity(pod.node_selector, pod.affinity)

    def has_keys(self, node: NodeInfo) -> bool:
        labels = node.labels
        return all(k in labels for k in self.keys)

    def includes(self, c: Constraint, node: NodeInfo) -> bool:
        if c.honor_affinity and not self.required.matches(node.name, node.labels):
            return False
        return not (c.honor_taints and find_untolerated_taint(node.taints, self.pod.tolerations) is not None)


class SpreadState:
    """DoNotSchedule domain counts of one incoming pod, as its pre-predicate sees the cluster."""

    __slots__ = ("_min", "constraints", "counts", "pod", "policy", "self_match", "sp")

    def __init__(self, sp: SessionPods, pod: PodInfo, constraints: list[Constraint]) -> None:
        self.sp = sp
        self.pod = pod
        self.constraints = constraints
        self.policy = _Policy(pod, constraints)
        self.self_match = [1 if c.selector.matches(pod.labels) else 0 for c in constraints]
        self.counts: list[dict[str, int]] = [{} for _ in constraints]
        self._min: list[int | None] = [None] * len(constraints)
        for node in sp.ssn.node_list:
            if not self.policy.has_keys(node):
                continue
            for i, c in enumerate(constraints):
                if self.policy.includes(c, node):
                    self.counts[i].setdefault(node.labels[c.topology_key], 0)
        nodes = sp.ssn.nodes
        for i, c in enumerate(constraints):
            counts = self.counts[i]
            for other, node_name in sp.in_namespace(pod.namespace, c.selector):
                if other.deleting or other.uid == pod.uid:
                    continue
                node = nodes[node_name]
                if self.policy.has_keys(node) and self.policy.includes(c, node):
                    v = node.labels[c.topology_key]
                    counts[v] = counts.get(v, 0) + 1

    def min_match(self, i: int) -> int | None:
        """The global minimum of constraint i (None: no domain at all, nothing to compare)."""
        counts = self.counts[i]
        if len(counts) < self.constraints[i].min_domains:
            return 0
        m = self._min[i]
        if m is None and counts:
            m = min(counts.values())
            self._min[i] = m
        return m

    def check(self, labels: Mapping[str, str]) -> Unfit | None:
        for i, c in enumerate(self.constraints):
            v = labels.get(c.topology_key)
            if v is None:
                return MISSING_LABEL_UNFIT
            lo = self.min_match(i)
            if lo is None:
                continue
            if self.counts[i].get(v, 0) + self.self_match[i] - lo > c.max_skew:
                return CONSTRAINTS_UNFIT
        return None


def _round(x: float) -> int:
    # Go's math.Round: halves away from zero (Python's round() would go to even)
    return math.floor(x + 0.5) if x >= 0 else -math.floor(-x + 0.5)


def spread_scores(sp: SessionPods, pod: PodInfo, nodes: list[NodeInfo]) -> dict[str, int]:
    """Normalised 0..100 ScheduleAnyway scores of the candidate nodes; {} when the pod has none."""
    constraints = constraints_of(pod, SCHEDULE_ANYWAY)
    if not constraints or not nodes:
        return {}
    policy = _Policy(pod, constraints)
    ignored = {n.name for n in nodes if not policy.has_keys(n)}
    pair_counts: list[dict[str, int]] = [{} for _ in constraints]
    for n in nodes:
        if n.name in ignored:
            continue
        for i, c in enumerate(constraints):
            if c.topology_key != HOSTNAME:
                pair_counts[i].setdefault(n.labels[c.topology_key], 0)
    scored = len(nodes) - len(ignored)
    weights = [
        math.log((scored if c.topology_key == HOSTNAME else len(pair_counts[i])) + 2)
        for i, c in enumerate(constraints)
    ]
    all_nodes = sp.ssn.nodes
    per_node: list[dict[str, int]] = [{} for _ in constraints]
    for i, c in enumerate(constraints):
        for other, node_name in sp.in_namespace(pod.namespace, c.selector):
            if other.deleting or other.uid == pod.uid:
                continue
            if c.topology_key == HOSTNAME:
                # the node's own pods, whatever the inclusion policies (as kube-scheduler's Score)
                per_node[i][node_name] = per_node[i].get(node_name, 0) + 1
                continue
            node = all_nodes[node_name]
            if not policy.has_keys(node) or not policy.includes(c, node):
                continue
            v = node.labels[c.topology_key]
            if v in pair_counts[i]:
                pair_counts[i][v] += 1
    raw: dict[str, int] = {}
    for n in nodes:
        if n.name in ignored:
            continue
        s = 0.0
        for i, c in enumerate(constraints):
            v = n.labels.get(c.topology_key)
            if v is None:
                continue
            cnt = per_node[i].get(n.name, 0) if c.topology_key == HOSTNAME else pair_counts[i].get(v, 0)
            s += cnt * weights[i] + (c.max_skew - 1)
        raw[n.name] = _round(s)
    out = dict.fromkeys(ignored, 0)
    if raw:
        lo, hi = min(raw.values()), max(max(raw.values()), 0)
        for name, s in raw.items():
            out[name] = 100 if hi == 0 else 100 * (hi + lo - s) // hi
    return out
