"""The network topology: HyperNodes (`topology.volcano.sh/v1alpha1`) as a tree over the nodes.

A HyperNode is a performance domain (a switch): its members are nodes (by exact name, regex or
label selector) or other HyperNodes (by exact name). Tiers number the levels from the bottom up.
`build_topology` turns the HyperNode specs and the nodes into an immutable tree: each HyperNode's
parent, children and the real nodes under it. Above the real roots sits one virtual HyperNode,
`CLUSTER_TOP`, one tier higher than any real one, holding every node (as Volcano's session adds);
nodes that no HyperNode covers are reachable only through it.

Bad HyperNodes never stop the build: each problem is reported by name in `Topology.problems` and
the offending member (or HyperNode) is left out, so the rest of the topology still works.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

CLUSTER_TOP = "<cluster-top-hypernode>"

MEMBER_NODE = "Node"
MEMBER_HYPERNODE = "HyperNode"


@dataclass(frozen=True, slots=True)
class MemberSpec:
    kind: str  # MEMBER_NODE or MEMBER_HYPERNODE
    exact: str = ""
    regex: str = ""
    # (matchLabels items, matchExpressions as (key, operator, values)) of a labelMatch selector
    labels: tuple[tuple[str, str], ...] = ()
    expressions: tuple[tuple[str, str, tuple[str, ...]], ...] = ()
    has_label_selector: bool = False


@dataclass(frozen=True, slots=True)
class HyperNodeSpec:
    name: str
    tier: int
    tier_name: str = ""
    members: tuple[MemberSpec, ...] = ()


@dataclass(frozen=True, slots=True)
class NetworkTopologySpec:
    """A job's (or partition's) constraint: `hard` keeps it inside one HyperNode of tier <=
    `highest_tier` (or of the tier named `highest_tier_name`); `soft` only prefers closeness."""

    mode: str = "hard"
    highest_tier: int | None = None
    highest_tier_name: str = ""

    @property
    def hard(self) -> bool:
        return self.mode == "hard"


@dataclass(frozen=True, slots=True)
class SubGroupPolicy:
    """A PodGroup's `subGroupPolicy` entry: the pods it selects form partitions (one per value of
    `match_label_keys`), each a gang of `size` pods with its own network topology."""

    name: str
    size: int = 1
    min_subgroups: int = 0
    match_labels: tuple[tuple[str, str], ...] = ()
    match_label_keys: tuple[str, ...] = ()
    network_topology: NetworkTopologySpec | None = None


@dataclass(slots=True)
class HyperNodeInfo:
    name: str
    tier: int
    tier_name: str = ""
    parent: str = ""
    children: list[str] = field(default_factory=list)
    # the real nodes under this HyperNode (its own node members and its descendants'), sorted
    nodes: frozenset[str] = frozenset()


@dataclass(slots=True)
class Topology:
    hypernodes: dict[str, HyperNodeInfo] = field(default_factory=dict)
    # tier -> names of the HyperNodes of that tier (sorted), the cluster top included
    by_tier: dict[int, list[str]] = field(default_factory=dict)
    tiers: list[int] = field(default_factory=list)  # ascending, the cluster top's tier last
    tier_names: dict[str, int] = field(default_factory=dict)
    # node -> a HyperNode of the lowest tier holding it (Volcano's FindHyperNodeForNode)
    leaf_of: dict[str, str] = field(default_factory=dict)
    # node -> the lowest HyperNode of any tier holding it (its ancestors hold it too)
    lowest_of: dict[str, str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    @property
    def real(self) -> bool:
        """Whether any HyperNode exists besides the virtual cluster top."""
        return len(self.hypernodes) > 1

    @property
    def top(self) -> HyperNodeInfo:
        return self.hypernodes[CLUSTER_TOP]

    def ancestors(self, name: str) -> list[str]:
        """`name` and its ancestors, bottom up."""
        out: list[str] = []
        seen: set[str] = set()
        cur = name
        while cur and cur not in seen and cur in self.hypernodes:
            out.append(cur)
            seen.add(cur)
            cur = self.hypernodes[cur].parent
        return out

    def lca(self, a: str, b: str) -> str:
        """The lowest common ancestor of two HyperNodes; either may be '' (then the other)."""
        if not a:
            return b
        if not b:
            return a
        mine = set(self.ancestors(a))
        for x in self.ancestors(b):
            if x in mine:
                return x
        return ""

    def tier_of(self, name: str) -> int:
        hn = self.hypernodes.get(name)
        return hn.tier if hn is not None else 0


def compile_member_regex(pattern: str) -> re.Pattern[str]:
    """Go's regexp.MatchString semantics: an unanchored search."""
    return re.compile(pattern)


def _label_matches(member: MemberSpec, labels: Mapping[str, str]) -> bool:
    for k, v in member.labels:
        if labels.get(k) != v:
            return False
    for key, op, values in member.expressions:
        have = key in labels
        if op == "In" and not (have and labels[key] in values):
            return False
        if op == "NotIn" and have and labels[key] in values:
            return False
        if op == "Exists" and not have:
            return False
        if op == "DoesNotExist" and have:
            return False
    return True


def _node_members(
    hn: HyperNodeSpec, member: MemberSpec, node_labels: Mapping[str, Mapping[str, str]], problems: list[str]
) -> set[str]:
    if member.exact:
        return {member.exact}
    if member.regex:
        try:
            rx = compile_member_regex(member.regex)
        except re.error as exc:
            problems.append(f"HyperNode {hn.name}: invalid regexMatch pattern {member.regex!r}: {exc}")
            return set()
        return {n for n in node_labels if rx.search(n)}
    if member.has_label_selector:
        if not member.labels and not member.expressions:
            return set()  # an empty labelMatch selects nothing, as Volcano
        return {n for n, labels in node_labels.items() if _label_matches(member, labels)}
    return set()


def _cycle_edges(by_name: Mapping[str, HyperNodeSpec], problems: list[str]) -> set[tuple[str, str]]:
    """The membership edges that close a cycle (each cycle reported once, by its names)."""
    children = {
        n: [m.exact for m in s.members if m.kind == MEMBER_HYPERNODE and m.exact in by_name]
        for n, s in by_name.items()
    }
    cut: set[tuple[str, str]] = set()
    state: dict[str, int] = {}  # 1 on the DFS stack, 2 done
    for root in by_name:
        if state.get(root):
            continue
        path: list[str] = [root]
        stack = [(root, iter(children[root]))]
        state[root] = 1
        while stack:
            node, it = stack[-1]
            child = next(it, None)
            if child is None:
                state[node] = 2
                stack.pop()
                path.pop()
                continue
            st = state.get(child, 0)
            if st == 1:
                loop = [*path[path.index(child) :], child]
                problems.append(f"HyperNode cycle: {' -> '.join(loop)}; member {child} of {node} ignored")
                cut.add((node, child))
            elif st == 0:
                state[child] = 1
                path.append(child)
                stack.append((child, iter(children[child])))
    return cut


def build_topology(specs: Iterable[HyperNodeSpec], node_labels: Mapping[str, Mapping[str, str]]) -> Topology:
    """The tree for these HyperNodes over these nodes (node name -> labels, in session order)."""
    problems: list[str] = []
    by_name: dict[str, HyperNodeSpec] = {}
    for spec in sorted(specs, key=lambda s: s.name):
        by_name[spec.name] = spec
    infos = {n: HyperNodeInfo(n, s.tier, s.tier_name) for n, s in by_name.items()}

    cut = _cycle_edges(by_name, problems)
    # parent links: a HyperNode member belongs to one parent only, and lies in a lower tier
    direct_nodes: dict[str, set[str]] = {}
    for name, spec in by_name.items():
        own: set[str] = set()
        for m in spec.members:
            if m.kind == MEMBER_HYPERNODE:
                child = m.exact
                if not child:
                    problems.append(f"HyperNode {name}: a HyperNode member needs exactMatch.name")
                    continue
                if (name, child) in cut:
                    continue
                c = infos.get(child)
                if c is None:
                    continue  # not created yet: Volcano waits for it too
                if c.tier >= spec.tier:
                    problems.append(
                        f"HyperNode {name} (tier {spec.tier}): member HyperNode {child} has tier {c.tier}, "
                        "which is not below it; member ignored"
                    )
                    continue
                if c.parent and c.parent != name:
                    problems.append(
                        f"HyperNode {child} is a member of both {c.parent} and {name}; kept under {c.parent}"
                    )
                    continue
                c.parent = name
                if child not in infos[name].children:
                    infos[name].children.append(child)
            else:
                own |= _node_members(spec, m, node_labels, problems)
        direct_nodes[name] = {n for n in own if n in node_labels}

    order = sorted(infos.values(), key=lambda h: (h.tier, h.name))
    claimed: dict[tuple[int, str], str] = {}  # (tier, node) -> HyperNode that holds it
    for hn in order:
        nodes = set(direct_nodes.get(hn.name, ()))
        for child in hn.children:
            nodes |= infos[child].nodes
        for n in sorted(nodes):
            other = claimed.get((hn.tier, n))
            if other is not None and other != hn.name:
                problems.append(
                    f"node {n} is a member of both HyperNode {other} and HyperNode {hn.name} (tier {hn.tier}); "
                    f"kept in {other}"
                )
                nodes.discard(n)
            else:
                claimed[(hn.tier, n)] = hn.name
        hn.nodes = frozenset(nodes)
        hn.children.sort()

    tiers_present = sorted({h.tier for h in infos.values()})
    for lower, upper in itertools.pairwise(tiers_present):
        if upper - lower > 1:
            names = ", ".join(sorted(h.name for h in infos.values() if h.tier == upper))
            problems.append(
                f"tier gap: no HyperNode of tier {lower + 1} between tiers {lower} and {upper} ({names})"
            )

    top_tier = (max(tiers_present) + 1) if tiers_present else 1
    top = HyperNodeInfo(CLUSTER_TOP, top_tier, nodes=frozenset(node_labels))
    for hn in order:
        if not hn.parent:
            hn.parent = CLUSTER_TOP
            top.children.append(hn.name)
    infos[CLUSTER_TOP] = top

    topo = Topology(hypernodes=infos, problems=problems)
    for hn in infos.values():
        topo.by_tier.setdefault(hn.tier, []).append(hn.name)
        if hn.tier_name:
            topo.tier_names[hn.tier_name] = hn.tier
    for names in topo.by_tier.values():
        names.sort()
    topo.tiers = sorted(topo.by_tier)
    lowest = topo.tiers[0]
    for name in topo.by_tier[lowest]:
        for n in infos[name].nodes:
            topo.leaf_of.setdefault(n, name)
    for hn in order:
        for n in hn.nodes:
            topo.lowest_of.setdefault(n, hn.name)
    return topo
