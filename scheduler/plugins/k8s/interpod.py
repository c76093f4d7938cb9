"""Inter-pod affinity and anti-affinity, as kube-scheduler's InterPodAffinity filters and scores.

A term selects pods by label selector within its namespaces: the listed `namespaces`, plus those
whose labels `namespaceSelector` matches; with neither, the namespace of the pod owning the term.
Its `topologyKey` names the node label whose value makes the domain.

Filter (required terms), per node, in kube-scheduler's order and with its resolvability:
1. affinity: every term's topology label must exist on the node and its domain must hold a pod
   that matches ALL of the pod's affinity terms; unless no such pod exists anywhere and the pod
   matches its own terms (the first pod of a group that wants to be together):
   "node(s) didn't match pod affinity rules", unresolvable (evicting cannot create a pod);
2. anti-affinity: no domain of the node may hold a pod matching one of the pod's anti terms:
   "node(s) didn't match pod anti-affinity rules", resolvable;
3. existing pods' anti-affinity: no pod in the node's domains may have a required anti term
   matching this pod: "node(s) didn't satisfy existing pods anti-affinity rules", resolvable.
The counts per (topology key, value) are computed once per task (`InterPodState`) and follow
later placements and evictions through `update`.

Score (preferred terms): +weight for each pod matching one of the pod's preferred affinity terms,
-weight for its anti terms, and symmetrically for existing pods' preferred terms matching the
pod, credited to every node of the domain; then normalised min-max to 0..100. Volcano builds the
plugin with empty arguments, so the hard-affinity symmetric weight is 0 and is not applied.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from scheduler.framework.status import Unfit
from scheduler.model.objects import PodInfo
from scheduler.plugins.k8s.labels import Selector, compile_selector
from scheduler.plugins.k8s.nodeaffinity import weighted_entries
from scheduler.plugins.k8s.podindex import SessionPods

AFFINITY_REASON = "node(s) didn't match pod affinity rules"
ANTI_AFFINITY_REASON = "node(s) didn't match pod anti-affinity rules"
EXISTING_ANTI_AFFINITY_REASON = "node(s) didn't satisfy existing pods anti-affinity rules"

AFFINITY_UNFIT = Unfit(AFFINITY_REASON, resolvable=False)
ANTI_AFFINITY_UNFIT = Unfit(ANTI_AFFINITY_REASON, resolvable=True)
EXISTING_ANTI_AFFINITY_UNFIT = Unfit(EXISTING_ANTI_AFFINITY_REASON, resolvable=True)

Pair = tuple[str, str]


class AffinityTerm:
    __slots__ = ("namespaces", "ns_selector", "selector", "topology_key", "weight")

    def __init__(
        self,
        namespaces: frozenset[str],
        ns_selector: Selector | None,
        selector: Selector,
        topology_key: str,
        weight: int = 0,
    ) -> None:
        self.namespaces = namespaces
        self.ns_selector = ns_selector
        self.selector = selector
        self.topology_key = topology_key
        self.weight = weight

    def selects_namespace(self, namespace: str, ns_labels: Mapping[str, str]) -> bool:
        return namespace in self.namespaces or (
            self.ns_selector is not None and self.ns_selector.matches(ns_labels)
        )

    def matches(self, pod: PodInfo, ns_labels: Mapping[str, str]) -> bool:
        return self.selects_namespace(pod.namespace, ns_labels) and self.selector.matches(pod.labels)


class PodTerms:
    """The four term lists of one pod, compiled."""

    __slots__ = ("affinity", "anti", "preferred_affinity", "preferred_anti")

    def __init__(self, pod: PodInfo) -> None:
        aff = pod.affinity or {}
        pa = aff.get("podAffinity") if isinstance(aff.get("podAffinity"), dict) else {}
        paa = aff.get("podAntiAffinity") if isinstance(aff.get("podAntiAffinity"), dict) else {}
        self.affinity = _required(pod, pa)
        self.anti = _required(pod, paa)
        self.preferred_affinity = _preferred(pod, pa)
        self.preferred_anti = _preferred(pod, paa)


# the terms of a pod without affinity, shared (read-only: tuples, so a mutation would fail loudly)
NO_TERMS = PodTerms.__new__(PodTerms)
NO_TERMS.affinity = NO_TERMS.anti = NO_TERMS.preferred_affinity = NO_TERMS.preferred_anti = ()  # type: ignore[assignment]


def _term(pod: PodInfo, raw: Any, weight: int = 0) -> AffinityTerm | None:
    if not isinstance(raw, dict):
        return None
    names = raw.get("namespaces") or []
    raw_ns_sel = raw.get("namespaceSelector")
    namespaces = frozenset(str(n) for n in names) if isinstance(names, list) else frozenset()
    if not namespaces and raw_ns_sel is None:
        namespaces = frozenset({pod.namespace})
    ns_sel = compile_selector(raw_ns_sel) if raw_ns_sel is not None else None
    return AffinityTerm(
        namespaces,
        ns_sel,
        compile_selector(raw.get("labelSelector")),
        str(raw.get("topologyKey") or ""),
        weight,
    )


def _required(pod: PodInfo, section: Mapping[str, Any]) -> list[AffinityTerm]:
    raw = section.get("requiredDuringSchedulingIgnoredDuringExecution") or []
    terms = [_term(pod, t) for t in raw] if isinstance(raw, list) else []
    return [t for t in terms if t is not None]


def _preferred(pod: PodInfo, section: Mapping[str, Any]) -> list[AffinityTerm]:
    out: list[AffinityTerm] = []
    for weight, w in weighted_entries(section):
        t = _term(pod, w.get("podAffinityTerm"), weight)
        if t is not None and weight != 0:
            out.append(t)
    return out


def pod_terms(sp: SessionPods, pod: PodInfo) -> PodTerms:
    """Compiled terms of a pod, memoised per session (existing pods are read for every task)."""
    if not pod.affinity:
        return NO_TERMS  # most pods: nothing to compile, nothing to remember per pod
    cache: dict[str, PodTerms] = sp.memo.setdefault("interpod.terms", {})
    t = cache.get(pod.uid)
    if t is None:
        t = PodTerms(pod)
        cache[pod.uid] = t
    return t


def pods_matching(sp: SessionPods, term: AffinityTerm) -> Iterator[tuple[PodInfo, str]]:
    """Counted pods the term selects, read through the namespace/label index."""
    ns_map = sp.ssn.namespaces
    if term.ns_selector is None:
        namespaces: Iterator[str] | list[str] = sorted(term.namespaces)
    else:
        namespaces = [ns for ns in sp.namespaces() if term.selects_namespace(ns, ns_map.get(ns, {}))]
    for ns in namespaces:
        yield from sp.in_namespace(ns, term.selector)


def _bump(counts: dict[Pair, int], pair: Pair, delta: int) -> None:
    # Zero entries are dropped: "no matching pod anywhere" is read as an empty map.
    n = counts.get(pair, 0) + delta
    if n:
        counts[pair] = n
    else:
        counts.pop(pair, None)


class InterPodState:
    """Required (anti-)affinity counts of one incoming pod, per topology pair."""

    __slots__ = (
        "affinity_counts",
        "anti_counts",
        "existing_anti_counts",
        "existing_keys",
        "matches_self",
        "ns_labels",
        "pod",
        "sp",
        "terms",
    )

    def __init__(self, sp: SessionPods, pod: PodInfo, terms: PodTerms) -> None:
        self.sp = sp
        self.pod = pod
        self.terms = terms
        self.ns_labels = sp.ssn.namespaces.get(pod.namespace, {})
        self.affinity_counts: dict[Pair, int] = {}
        self.anti_counts: dict[Pair, int] = {}
        self.existing_anti_counts: dict[Pair, int] = {}
        self.existing_keys: set[str] = set()
        self.matches_self = bool(terms.affinity) and all(
            t.matches(pod, self.ns_labels) for t in terms.affinity
        )
        nodes = sp.ssn.nodes
        if terms.affinity:
            first, rest = terms.affinity[0], terms.affinity[1:]
            for other, node_name in pods_matching(sp, first):
                if other.uid == pod.uid or not self._matches_all(other, rest):
                    continue
                self._count(self.affinity_counts, terms.affinity, nodes[node_name].labels, 1)
        for term in terms.anti:
            for other, node_name in pods_matching(sp, term):
                if other.uid != pod.uid:
                    self._count(self.anti_counts, (term,), nodes[node_name].labels, 1)
        for other, node_name in sp.required_anti_affinity_pods():
            if other.uid != pod.uid:
                self._count_existing(other, nodes[node_name].labels, 1)

    @staticmethod
    def needed(sp: SessionPods, terms: PodTerms) -> bool:
        """False when the filter has nothing to check (kube-scheduler's PreFilter Skip)."""
        return bool(terms.affinity or terms.anti) or sp.has_required_anti()

    def _matches_all(self, other: PodInfo, terms: list[AffinityTerm] | tuple[AffinityTerm, ...]) -> bool:
        ns_labels = self.sp.ssn.namespaces.get(other.namespace, {})
        return all(t.matches(other, ns_labels) for t in terms)

    @staticmethod
    def _count(counts: dict[Pair, int], terms: Any, labels: Mapping[str, str], delta: int) -> None:
        for t in terms:
            v = labels.get(t.topology_key)
            if v is not None:
                _bump(counts, (t.topology_key, v), delta)

    def _count_existing(self, other: PodInfo, labels: Mapping[str, str], delta: int) -> None:
        for t in pod_terms(self.sp, other).anti:
            if t.matches(self.pod, self.ns_labels):
                v = labels.get(t.topology_key)
                if v is not None:
                    _bump(self.existing_anti_counts, (t.topology_key, v), delta)
                    self.existing_keys.add(t.topology_key)

    def update(self, other: PodInfo, node_name: str, delta: int) -> None:
        """Account a pod added to (+1) or removed from (-1) a node after the state was built."""
        if other.uid == self.pod.uid:
            return
        node = self.sp.ssn.nodes.get(node_name)
        if node is None:
            return
        labels = node.labels
        terms = self.terms
        if terms.affinity and self._matches_all(other, terms.affinity):
            self._count(self.affinity_counts, terms.affinity, labels, delta)
        if terms.anti:
            ns_labels = self.sp.ssn.namespaces.get(other.namespace, {})
            self._count(
                self.anti_counts, [t for t in terms.anti if t.matches(other, ns_labels)], labels, delta
            )
        if other.affinity and "podAntiAffinity" in other.affinity:
            self._count_existing(other, labels, delta)

    def check(self, labels: Mapping[str, str]) -> Unfit | None:
        terms = self.terms
        if terms.affinity:
            counts = self.affinity_counts
            pods_exist = True
            for t in terms.affinity:
                v = labels.get(t.topology_key)
                if v is None:
                    return AFFINITY_UNFIT
                if counts.get((t.topology_key, v), 0) <= 0:
                    pods_exist = False
            if not pods_exist and not (not counts and self.matches_self):
                return AFFINITY_UNFIT
        if self.anti_counts:
            for t in terms.anti:
                v = labels.get(t.topology_key)
                if v is not None and self.anti_counts.get((t.topology_key, v), 0) > 0:
                    return ANTI_AFFINITY_UNFIT
        if self.existing_anti_counts:
            for key in self.existing_keys:
                v = labels.get(key)
                if v is not None and self.existing_anti_counts.get((key, v), 0) > 0:
                    return EXISTING_ANTI_AFFINITY_UNFIT
        return None


# ---------------------------------------------------------------------------------- scoring --
def preferred_topology_scores(sp: SessionPods, pod: PodInfo) -> dict[str, dict[str, int]]:
    """topology key -> value -> summed weights (kube-scheduler's preScoreState.topologyScore)."""
    terms = pod_terms(sp, pod)
    ns_map = sp.ssn.namespaces
    nodes = sp.ssn.nodes
    own_ns_labels = ns_map.get(pod.namespace, {})
    scores: dict[str, dict[str, int]] = {}

    def credit(key: str, labels: Mapping[str, str], delta: int) -> None:
        v = labels.get(key)
        if v is not None:
            per = scores.setdefault(key, {})
            per[v] = per.get(v, 0) + delta

    for sign, lst in ((1, terms.preferred_affinity), (-1, terms.preferred_anti)):
        for t in lst:
            for other, node_name in pods_matching(sp, t):
                if other.uid != pod.uid:
                    credit(t.topology_key, nodes[node_name].labels, sign * t.weight)
    for other, node_name in sp.affinity_pods():
        if other.uid == pod.uid:
            continue
        ot = pod_terms(sp, other)
        labels = nodes[node_name].labels
        for t in ot.preferred_affinity:
            if t.matches(pod, own_ns_labels):
                credit(t.topology_key, labels, t.weight)
        for t in ot.preferred_anti:
            if t.matches(pod, own_ns_labels):
                credit(t.topology_key, labels, -t.weight)
    return scores


def preferred_raw_score(topology_scores: Mapping[str, Mapping[str, int]], labels: Mapping[str, str]) -> int:
    score = 0
    for key, per in topology_scores.items():
        v = labels.get(key)
        if v is not None:
            score += per.get(v, 0)
    return score


def normalize_min_max(raw: dict[str, int]) -> dict[str, int]:
    """InterPodAffinity's NormalizeScore: 100 x (s - min) / (max - min), truncated; 0 when flat."""
    if not raw:
        return {}
    lo, hi = min(raw.values()), max(raw.values())
    diff = hi - lo
    return {n: int(100 * ((s - lo) / diff)) if diff > 0 else 0 for n, s in raw.items()}
