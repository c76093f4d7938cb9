"""Generated HyperNodes over generated nodes: `--topology spine=4,leaf=8`.

The levels are listed from the top down, each `name=count` giving how many HyperNodes of that
level sit under each HyperNode of the level above (so `spine=4,leaf=8` is 4 spines of 8 leaves
each, 32 leaves). The last level is tier 1, the first tier N; each level's name is its `tierName`.
The nodes are dealt out to the leaves in contiguous blocks, as racks are filled; a leaf lists its
nodes by exactMatch and every upper level lists its children by name.
"""

from __future__ import annotations

from typing import Any


class TopologySpecError(ValueError):
    pass


def parse_topology_spec(text: str) -> list[tuple[str, int]]:
    levels: list[tuple[str, int]] = []
    for item in text.split(","):
        name, sep, count_text = item.strip().partition("=")
        if not sep or not name:
            raise TopologySpecError(f"--topology {text!r}: {item!r} is not name=count")
        try:
            count = int(count_text)
        except ValueError:
            raise TopologySpecError(
                f"--topology {text!r}: the count of {name!r} must be an integer"
            ) from None
        if count < 1:
            raise TopologySpecError(f"--topology {text!r}: the count of {name!r} must be at least 1")
        if name in (n for n, _ in levels):
            raise TopologySpecError(f"--topology {text!r}: level {name!r} is given twice")
        levels.append((name, count))
    if not levels:
        raise TopologySpecError("--topology: at least one level is needed, e.g. spine=4,leaf=8")
    return levels


def _hypernode(name: str, tier: int, tier_name: str, kind: str, members: list[str]) -> dict[str, Any]:
    return {
        "apiVersion": "topology.volcano.sh/v1alpha1",
        "kind": "HyperNode",
        "metadata": {"name": name},
        "spec": {
            "tier": tier,
            "tierName": tier_name,
            "members": [{"type": kind, "selector": {"exactMatch": {"name": m}}} for m in members],
        },
    }


def make_hypernodes(levels: list[tuple[str, int]], node_names: list[str]) -> list[dict[str, Any]]:
    """The HyperNodes of `levels` over `node_names` (in that order)."""
    out: list[dict[str, Any]] = []
    parents: list[str] = []  # names of the level above; [] at the top
    depth = len(levels)
    for i, (level, count) in enumerate(levels):
        tier = depth - i
        names: list[str] = []
        groups = [(p, count) for p in parents] if parents else [("", count)]
        children: dict[str, list[str]] = {}
        for parent, n in groups:
            for _ in range(n):
                name = f"{level}-{len(names)}"
                names.append(name)
                if parent:
                    children.setdefault(parent, []).append(name)
        for parent in parents:
            out.append(_hypernode(parent, tier + 1, levels[i - 1][0], "HyperNode", children[parent]))
        parents = names
    leaves = parents
    per, extra = divmod(len(node_names), len(leaves))
    start = 0
    for j, leaf in enumerate(leaves):
        size = per + (1 if j < extra else 0)
        out.append(_hypernode(leaf, 1, levels[-1][0], "Node", node_names[start : start + size]))
        start += size
    return out
