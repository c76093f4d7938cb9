"""vGPU fit and score over flat card arrays: the pure-Python twin of `native/gpufit.pyx`.

This is the hot path of vGPU scheduling (spec 3.4-3.6 for hami-core and MPS cards): for each node
in a range, scan its cards in policy order for every container of the pod, charge a working copy,
and report whether the pod fits, the node's device score and the chosen cards. Nodes flagged as
needing Python (MIG cards pick slices, see `mig.py`) are left to the caller.

Layout: node `i` owns cards `starts[i] .. starts[i+1]-1` of the per-card arrays `count`, `devmem`,
`used_num`, `used_mem`, `used_cores` (int64, e.g. `array('q')`); `usable[c]` is 0 for a card the
pod may not use (health, type and UUID filters, pod-group spread), evaluated by the caller. The
request is a flat int64 array of `nums, mem, pct, cores` per container asking for cards.

Outputs per node: `out_code[i]` (FIT, TOO_MANY_CARDS, NOT_FITTED, NEEDS_PYTHON), `out_score[i]`
(float), and `out_cards[(i-lo)*T : (i-lo+1)*T]` = the chosen local card indices in container order,
where T is the total number of cards asked. `fit_listed` is the same fit for listed nodes instead
of a range, node i's cards at out_cards[i*T : (i+1)*T]. The compiled module has exactly these
functions; tests prove both give identical answers on random inputs.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Any

from scheduler.plugins.deviceshare.annotations import (
    BIND_PHASE,
    BIND_PHASE_ALLOCATING,
    BIND_TIME,
    DEVICES_TO_ALLOCATE,
    REGISTER_INT_MAX,
    VGPU_IDS_NEW,
    VGPU_NODE,
    VGPU_REQUEST_TYPE,
    VGPU_TIME,
    pod_group_key,
)

FIT = 0
TOO_MANY_CARDS = 1
NOT_FITTED = 2
NEEDS_PYTHON = 3

POLICY_NONE = 0
POLICY_BINPACK = 1
POLICY_SPREAD = 2
PCT_UNSET = 101

IMPLEMENTATION = "python"


# One card chosen for one container; here rather than in vgpu.py because both the hami-core/MPS
# ledger (vgpu.py) and the MIG slice picker (mig.py) produce it.
@dataclass(frozen=True, slots=True)
class Pick:
    card: int  # local card index on the node
    device_id: str  # card UUID, or the MIG slice id
    mem: int  # memory demand written to the annotation (the request, not the slice size)
    cores: int


def card_refuses(
    count: int, devmem: int, used_num: int, used_mem: int, used_cores: int, demand: int, cores: int
) -> bool:
    """Spec 3.4 rules 2 and 4-7 for one card in its current (working) state."""
    return (
        used_num >= count
        or devmem - used_mem < demand
        or used_cores + cores > 100
        or (cores == 100 and used_num > 0)
        or (used_cores == 100 and cores == 0)
    )


def card_score(
    policy: int, count: int, devmem: int, num_before: int, mem_before: int, mem_after: int
) -> float:
    """A chosen card's contribution to the node score.

    binpack (upstream): 100 x used memory / card memory, after charging.
    spread (ours, spec 8): upstream scores 100 only for an unused card but after charging, so
    always 0; we score before charging, half by free sharing slots and half by free memory, so
    that emptier cards and nodes really win.
    """
    if policy == POLICY_BINPACK:
        return 100.0 * mem_after / devmem if devmem > 0 else 100.0
    if policy == POLICY_SPREAD:
        free_slots = 1.0 - num_before / count if count > 0 else 0.0
        free_mem = 1.0 - mem_before / devmem if devmem > 0 else 0.0
        return 50.0 * free_slots + 50.0 * free_mem
    return 0.0


def card_order(policy: int, n: int, used_num: list[int], used_mem: list[int]) -> list[int]:
    """Local card indices in scan order (spec 3.6), ties by ascending index."""
    if policy == POLICY_BINPACK:
        return sorted(range(n), key=lambda c: (-used_mem[c], c))
    if policy == POLICY_SPREAD:
        return sorted(range(n), key=lambda c: (used_num[c], c))
    return list(range(n - 1, -1, -1))


def fit_nodes(
    starts: Any,
    node_flags: Any,
    count: Any,
    devmem: Any,
    used_num: Any,
    used_mem: Any,
    used_cores: Any,
    usable: Any,
    req: Any,
    policy: int,
    lo: int,
    hi: int,
    out_code: Any,
    out_score: Any,
    out_cards: Any,
) -> int:
    """Evaluate nodes lo..hi-1; returns how many fit. Never touches the input state arrays."""
    total = 0
    for k in range(len(req) // 4):
        total += req[4 * k]
    fitting = 0
    for i in range(lo, hi):
        fitting += _fit_one(
            i, (i - lo) * total, starts, node_flags, count, devmem, used_num, used_mem, used_cores,
            usable, req, policy, out_code, out_score, out_cards,
        )  # fmt: skip
    return fitting


def _fit_one(
    i: int,
    slot: int,
    starts: Any,
    node_flags: Any,
    count: Any,
    devmem: Any,
    used_num: Any,
    used_mem: Any,
    used_cores: Any,
    usable: Any,
    req: Any,
    policy: int,
    out_code: Any,
    out_score: Any,
    out_cards: Any,
) -> int:
    """Node i's code and score, its chosen cards written from out_cards[slot]; 1 when it fits."""
    n_req = len(req) // 4
    out_score[i] = 0.0
    if node_flags[i] != 0:
        out_code[i] = NEEDS_PYTHON
        return 0
    base = starts[i]
    n = starts[i + 1] - base
    un = [used_num[base + c] for c in range(n)]
    um = [used_mem[base + c] for c in range(n)]
    uc = [used_cores[base + c] for c in range(n)]
    code = FIT
    score = 0.0
    for k in range(n_req):
        nums, mem, pct, cores = req[4 * k], req[4 * k + 1], req[4 * k + 2], req[4 * k + 3]
        if nums > n:
            code = TOO_MANY_CARDS
            break
        taken: list[int] = []
        for c in card_order(policy, n, un, um):
            if len(taken) == nums:
                break
            g = base + c
            if not usable[g] or c in taken:
                continue
            dm = devmem[g]
            demand = dm * pct // 100 if pct != PCT_UNSET else mem
            if card_refuses(count[g], dm, un[c], um[c], uc[c], demand, cores):
                continue
            score += card_score(policy, count[g], dm, un[c], um[c], um[c] + demand)
            un[c] += 1
            um[c] += demand
            uc[c] += cores
            taken.append(c)
            out_cards[slot] = c
            slot += 1
        if len(taken) < nums:
            code = NOT_FITTED
            break
    out_code[i] = code
    if code == FIT:
        out_score[i] = score
        return 1
    return 0


def fit_listed(
    starts: Any,
    node_flags: Any,
    count: Any,
    devmem: Any,
    used_num: Any,
    used_mem: Any,
    used_cores: Any,
    usable: Any,
    req: Any,
    policy: int,
    nodes: Any,
    out_code: Any,
    out_score: Any,
    out_cards: Any,
) -> int:
    """`fit_nodes` for the nodes listed in `nodes` (ledger indices, any order) instead of a range:
    their entries of out_code and out_score are written, and node i's chosen cards from
    out_cards[i * T] on, where fit_nodes over all nodes writes them. It brings a whole-table scan
    up to date after a few nodes changed, in one call."""
    total = 0
    for k in range(len(req) // 4):
        total += req[4 * k]
    for i in nodes:
        if not 0 <= i < min(len(starts) - 1, len(out_code), len(out_score)):
            raise IndexError(f"node {i} out of range")
        if (i + 1) * total > len(out_cards) or len(out_cards) == 0:
            raise IndexError(f"no room for node {i}'s cards")
    fitting = 0
    for i in nodes:
        fitting += _fit_one(
            i, i * total, starts, node_flags, count, devmem, used_num, used_mem, used_cores, usable, req,
            policy, out_code, out_score, out_cards,
        )  # fmt: skip
    return fitting


def refresh_nodes(
    nodes: list[Any],
    at_of: dict[Any, int] | None,
    starts: Any,
    node_flags: Any,
    count: Any,
    devmem: Any,
    used_num: Any,
    used_mem: Any,
    used_cores: Any,
    usable: Any,
    req: Any,
    policy: int,
    node_ver: Any,
    fitted_ver: Any,
    out_code: Any,
    out_score: Any,
    out_cards: Any,
) -> int:
    """Bring a kept whole-table answer up to date at some nodes and count their misfits.

    The nodes are `at_of[n]` for each n of `nodes` (with `at_of` None, `nodes` are the positions
    themselves); -1, nothing written, when one is not in `at_of`. A node whose `node_ver` entry
    differs from its `fitted_ver` entry changed since its answer was written: it is fitted again
    (as fit_listed writes it) and `fitted_ver` takes its version. Returns how many of the nodes
    (counted as often as listed) have a code other than FIT. One call per pod's candidate list:
    the per-node Python steps of finding what changed were most of the vGPU predicate."""
    at = list(nodes) if at_of is None else list(map(at_of.get, nodes))
    if None in at:
        return -1
    n_nodes = len(starts) - 1
    for i in at:
        if not 0 <= operator.index(i) < n_nodes:
            raise IndexError(f"node {i} out of range")
    total = 0
    for k in range(len(req) // 4):
        total += req[4 * k]
    misfits = 0
    for i in at:
        if fitted_ver[i] != node_ver[i]:
            _fit_one(
                i, i * total, starts, node_flags, count, devmem, used_num, used_mem, used_cores, usable,
                req, policy, out_code, out_score, out_cards,
            )  # fmt: skip
            fitted_ver[i] = node_ver[i]
        if out_code[i] != FIT:
            misfits += 1
    return misfits


def refresh_rows(
    at: list[int],
    rows: Any,
    starts: Any,
    node_flags: Any,
    count: Any,
    devmem: Any,
    used_num: Any,
    used_mem: Any,
    used_cores: Any,
    usable: Any,
    req: Any,
    policy: int,
    node_ver: Any,
    fitted_ver: Any,
    out_code: Any,
    out_score: Any,
    out_cards: Any,
) -> list[int]:
    """refresh_nodes for nodes named by their positions in a node list: node p's row of the table
    is rows[p] (-1: it has none). The stale rows among them are fitted again as refresh_nodes fits
    them; returns the places k in `at` (in order, repeats kept) of the nodes that do not fit or
    have no row, whose answers the caller asks node by node. A position outside `rows`, or a row
    outside the table, is an IndexError before anything is written. The placement cache asks by
    position: no dict lookup per node, and no list of answers when every node fits."""
    n_nodes = len(starts) - 1
    got = []
    for p in at:
        if not 0 <= operator.index(p) < len(rows):
            raise IndexError(f"position {p} out of range")
        i = rows[p]
        if not -1 <= i < n_nodes:
            raise IndexError(f"node {i} out of range")
        got.append(i)
    total = 0
    for k in range(len(req) // 4):
        total += req[4 * k]
    out: list[int] = []
    for k, i in enumerate(got):
        if i < 0:
            out.append(k)
            continue
        if fitted_ver[i] != node_ver[i]:
            _fit_one(
                i, i * total, starts, node_flags, count, devmem, used_num, used_mem, used_cores, usable,
                req, policy, out_code, out_score, out_cards,
            )  # fmt: skip
            fitted_ver[i] = node_ver[i]
        if out_code[i] != FIT:
            out.append(k)
    return out


def charge_kept(
    out_code: Any,
    fitted_ver: Any,
    out_cards: Any,
    total: int,
    node_flags: Any,
    node_ver: Any,
    devmem: Any,
    used_num: Any,
    used_mem: Any,
    used_cores: Any,
    i: int,
    base: int,
    mem: int,
    pct: int,
    cores: int,
) -> tuple[int, int] | None:
    """Charge node i's kept one-card answer of a scan: (its local card, the memory charged), or
    None, nothing changed, when the scan holds no current fitting answer there.

    The scan (out_code, fitted_ver, out_cards with `total` cards a node) answers node i while
    fitted_ver[i] == node_ver[i], the node is not left to Python (node_flags) and it fits. Its
    first chosen card c (global base + c) then takes one more pod, the container's demand
    (`pct` percent of the card's memory, or `mem` when pct is PCT_UNSET) and `cores`, and node
    i's version moves on (the scan's answer there is stale from now on). One call for the usual
    pod's commit: finding the kept card and charging it were most of the plugin's allocation."""
    n_nodes = min(len(node_flags), len(node_ver), len(out_code), len(fitted_ver))
    if not 0 <= operator.index(i) < n_nodes:
        raise IndexError(f"node {i} out of range")
    if node_flags[i] or out_code[i] != FIT or fitted_ver[i] != node_ver[i]:
        return None
    if total < 1 or len(out_cards) < (i + 1) * total:
        raise IndexError(f"no cards of node {i}")
    c = out_cards[i * total]
    g = base + c
    if not 0 <= g < min(len(devmem), len(used_num), len(used_mem), len(used_cores)):
        raise IndexError(f"card {g} out of range")
    demand = devmem[g] * pct // 100 if pct != PCT_UNSET else mem
    used_num[g] += 1
    used_mem[g] += demand
    used_cores[g] += cores
    node_ver[i] += 1
    return c, demand


def commit_one(
    out_code: Any,
    fitted_ver: Any,
    out_cards: Any,
    total: int,
    node_flags: Any,
    node_ver: Any,
    devmem: Any,
    used_num: Any,
    used_mem: Any,
    used_cores: Any,
    i: int,
    base: int,
    mem: int,
    pct: int,
    cores: int,
    pods: dict[str, Any],
    uid: str,
    namespace: str,
    pod_annotations: Any,
    group_cards: dict[str, dict[int, int]],
    uuids: list[str],
    charge_class: Any,
    bind: dict[str, str],
    node_name: str,
    now: str,
    usage: dict[str, Any],
) -> str | None:
    """The whole commit of the usual one-card pod in one call: charge_kept, then the pod recorded
    as the node's ledger records it (its pod-group key's hold on the card, `pods[uid]` = (that
    key, [charge_class(card, demand, cores, None)])), then its bind annotations written in their
    wire order and its usage kept for the session's close (`usage[uid]`, when in the decoder's
    range). Returns the `vgpu-ids-new` value, or None, nothing changed (no current fitting answer
    for node i). The caller moves the ledger's own version on."""
    got = charge_kept(
        out_code, fitted_ver, out_cards, total, node_flags, node_ver, devmem, used_num, used_mem,
        used_cores, i, base, mem, pct, cores,
    )  # fmt: skip
    if got is None:
        return None
    c, demand = got
    group = pod_group_key(namespace, pod_annotations)
    if group and (demand or cores):
        g = base + c
        held = group_cards.get(group)
        if held is None:
            group_cards[group] = {g: 1}
        else:
            held[g] = held.get(g, 0) + 1
    pods[uid] = (group, [charge_class(c, demand, cores, None)])
    if not 0 <= c < len(uuids):
        raise IndexError(f"card {c} of {len(uuids)}")
    ids = f"{uuids[c]},{VGPU_REQUEST_TYPE},{demand},{cores}:"
    if 0 <= demand <= REGISTER_INT_MAX and 0 <= cores <= REGISTER_INT_MAX:
        usage[uid] = (ids, (demand, cores))
    # key by key, in the order the annotations are written in
    bind[VGPU_NODE] = node_name
    bind[VGPU_TIME] = now
    bind[VGPU_IDS_NEW] = ids
    bind[DEVICES_TO_ALLOCATE] = ids
    bind[BIND_PHASE] = BIND_PHASE_ALLOCATING
    bind[BIND_TIME] = now
    return ids


def best_node(out_code: Any, out_score: Any, lo: int, hi: int) -> int:
    """Index of the fitting node with the highest score in lo..hi-1 (ties: lowest index), or -1."""
    best, top = -1, 0.0
    for i in range(lo, hi):
        if out_code[i] == FIT and (best < 0 or out_score[i] > top):
            best, top = i, out_score[i]
    return best
