"""HAMi Ascend fit and score over flat chip arrays: the pure-Python twin of `native/npufit.pyx`.

The rules are those of `AscendLedger.fit` (spec 5.2) for nodes without network topology: the
usable chips are scanned in policy order (binpack: fullest memory first; spread: unused chips
first; ties by registration order), each container takes `nums` chips it fits on and that no
earlier container of the pod took, and the node score sums the chosen chips' policy scores.

Layout: node `i` owns chips `starts[i] .. starts[i+1]-1` of the per-chip arrays `count`, `devmem`,
`devcore`, `used`, `used_mem`, `used_cores` (int64); `usable[c]` is 0 for a chip the pod may not
use (health, UUID filters), evaluated by the caller. `node_flags[i]` has bit `TOPOLOGY` for nodes
fitted in Python (Ascend910 network placement) and bit `HAMI_CORE` when the node supports
hami-core vNPU. The request is a flat int64 array of `nums, mem, cores` per container;
`hami_core` is the pod's vNPU mode; `templates` are the chip kind's template memories in
configuration order, with `mem_allocatable` and `mem_capacity` for requests above them.

Outputs per node: `out_code[i]`, `out_score[i]` and `out_chips[(i-lo)*T : (i-lo+1)*T]` = the chosen
local chip indices in container order (T = chips asked). Tests prove both modules agree. The
best node of a scan is `fit.best_node`, shared with vGPU (the same FIT code).
"""

from __future__ import annotations

from typing import Any

FIT = 0
TOO_MANY_CHIPS = 1
NOT_FITTED = 2
NEEDS_PYTHON = 3
NO_HAMI_CORE = 4

TOPOLOGY = 1  # node_flags bit: Ascend910 network placement, fitted by the caller
HAMI_CORE = 2  # node_flags bit: the node supports hami-core vNPU

POLICY_NONE = 0
POLICY_BINPACK = 1
POLICY_SPREAD = 2
NO_MEMORY = -1  # demand() when the request exceeds the chip's capacity

IMPLEMENTATION = "python"


def chip_score(policy: int, devmem: int, used: int, used_mem: int) -> float:
    """A chip's policy score before charging (binpack: used memory share; spread: 100 if idle)."""
    if devmem == 0:
        return 0.0
    if policy == POLICY_BINPACK:
        return 100.0 * used_mem / devmem
    if policy == POLICY_SPREAD:
        return 100.0 if used == 0 else 0.0
    return 0.0


def demand(
    mem: int, devmem: int, hami_core: int, templates: Any, mem_allocatable: int, mem_capacity: int
) -> int:
    """Memory a container takes on a chip: the request (or the whole chip when 0), rounded up
    to the first template that holds it unless in hami-core mode; NO_MEMORY above capacity."""
    m = mem or devmem
    if hami_core:
        return m
    for t in templates:
        if m <= t:
            return t
    return mem_allocatable if m <= mem_capacity else NO_MEMORY


def chip_refuses(
    count: int,
    devmem: int,
    devcore: int,
    used: int,
    used_mem: int,
    used_cores: int,
    mem: int,
    cores: int,
    hami_core: int,
) -> bool:
    if count <= used or devmem - used_mem < mem:
        return True
    total = 100 if hami_core else devcore
    if total - used_cores < cores:
        return True
    if total == 100 and cores == 100 and used > 0:
        return True  # an exclusive request needs an idle chip
    return total != 0 and used_cores == total and cores == 0


def fit_nodes(
    starts: Any,
    node_flags: Any,
    count: Any,
    devmem: Any,
    devcore: Any,
    used: Any,
    used_mem: Any,
    used_cores: Any,
    usable: Any,
    req: Any,
    hami_core: int,
    policy: int,
    templates: Any,
    mem_allocatable: int,
    mem_capacity: int,
    lo: int,
    hi: int,
    out_code: Any,
    out_score: Any,
    out_chips: Any,
) -> int:
    """Evaluate nodes lo..hi-1; returns how many fit. Never touches the input state arrays."""
    n_req = len(req) // 3
    total = 0
    for k in range(n_req):
        total += req[3 * k]
    fitting = 0
    for i in range(lo, hi):
        out_score[i] = 0.0
        flags = node_flags[i]
        if flags & TOPOLOGY:
            out_code[i] = NEEDS_PYTHON
            continue
        if hami_core and not flags & HAMI_CORE:
            out_code[i] = NO_HAMI_CORE
            continue
        base = starts[i]
        n = starts[i + 1] - base
        if total > n:
            out_code[i] = TOO_MANY_CHIPS
            continue
        scores = [chip_score(policy, devmem[base + c], used[base + c], used_mem[base + c]) for c in range(n)]
        order = sorted((c for c in range(n) if usable[base + c]), key=lambda c: (-scores[c], c))
        taken: set[int] = set()
        code = FIT
        score = 0.0
        slot = (i - lo) * total
        for k in range(n_req):
            nums, mem, cores = req[3 * k], req[3 * k + 1], req[3 * k + 2]
            got = 0
            for c in order:
                if got == nums:
                    break
                if c in taken:
                    continue
                g = base + c
                d = demand(mem, devmem[g], hami_core, templates, mem_allocatable, mem_capacity)
                if d == NO_MEMORY or chip_refuses(
                    count[g], devmem[g], devcore[g], used[g], used_mem[g], used_cores[g], d, cores, hami_core
                ):
                    continue
                taken.add(c)
                score += scores[c]
                out_chips[slot] = c
                slot += 1
                got += 1
            if got < nums:
                code = NOT_FITTED
                break
        out_code[i] = code
        if code == FIT:
            out_score[i] = score
            fitting += 1
    return fitting
