"""Decision hashes: proof that a change to the decision core changed no decision.

    python -m scheduler.sim.decisionhash [core|vgpu|ascend|floor|topology|capacity ...] [--scale 1.0]

Each cluster is scheduled session after session until a session binds nothing, and every bind
(pod, node, annotations without their timestamps) is hashed in order. Run it before and after a
change, compiled and with `VC_SCHEDULER_PURE=1`: equal lines mean every pod went to the same node
with the same device annotations, in the same order. The clusters:

- core: 2,000 nodes with 20,000 running pods, 40,000 pending pods in gangs of 8 over 4 queues, and
  600 one-pod jobs of mixed sizes, some too large for any node (Volcano's default tiers);
- vgpu / ascend: 4,000 / 3,000 one-pod jobs asking one vGPU / one Ascend 310P chip on 1,000
  nodes x 8 (the device benchmark's session, deviceshare under binpack);
- floor: the vGPU jobs without their device asks, the tiers without deviceshare;
- topology: 1,000 nodes under HyperNodes spine=4,leaf=8 and 9,600 pending pods in gangs of 64, every
  other job `hard` within tier 1 and the rest `soft` (network-topology-aware in the second tier);
- capacity: the core cluster's nodes and pods spread over a 3-level queue tree of 40 leaves whose
  deserved shares are a quarter of what the pending pods ask (capacity with enableHierarchy), so
  that queues are overused and jobs stay pending.

`--scale` shrinks every cluster (0.1: a tenth of the nodes and pods) for a quick look; the hashes
then differ from the full-size ones, so compare like with like.
"""

from __future__ import annotations

import argparse
import hashlib
import random
import sys
import time
from collections.abc import Callable, Sequence

from scheduler.conf import DEFAULT_CONF
from scheduler.framework.cycle import run_session
from scheduler.framework.session import SessionOptions
from scheduler.model.cluster import ClusterState
from scheduler.registry import parse
from scheduler.sim import bench, devicebench
from scheduler.sim.topologygen import make_hypernodes, parse_topology_spec

# the tiers of `bench --topology`
TOPOLOGY_CONF = bench.TOPOLOGY_CONF
KINDS = ("core", "vgpu", "ascend", "floor", "topology", "capacity")
MAX_SESSIONS = 30


def drive(state: ClusterState, conf: str, seed: int) -> tuple[int, str]:
    """Sessions until one binds nothing: (pods bound, hash of every bind in order)."""
    digest = hashlib.sha256()
    bound = 0
    rng = random.Random(seed)
    configuration = parse(conf)
    for _ in range(MAX_SESSIONS):
        res = run_session(state.snapshot(), configuration, SessionOptions(), rng=rng)
        for b in res.binds:
            # the bind and predicate times in device annotations are the clock's, not decisions
            kept = sorted((k, v) for k, v in (b.annotations or {}).items() if not k.endswith("time"))
            digest.update(f"{b.task.key}>{b.node}>{kept}\n".encode())
            state.assume_bound(b.task.key, b.node, b.annotations)
        bound += len(res.binds)
        if not res.binds:
            break
    return bound, digest.hexdigest()[:16]


def core_state(scale: float = 1.0) -> ClusterState:
    """Gangs of 8 that fill most of the nodes, then one-pod jobs of which some fit nowhere."""
    nodes, rng = max(10, round(2000 * scale)), random.Random(7)
    state = ClusterState()
    bench.gen_nodes(state, nodes)
    queues = bench.gen_queues(state, 4)
    bench.gen_running(state, round(20000 * scale), nodes, queues)
    bench.gen_pending_jobs(state, round(40000 * scale), 8, queues, rng)
    for j in range(round(600 * scale)):
        name, order = f"solo-{j:05d}", 100000 + j
        cpu = rng.choice(["250m", "1", "3", "200"])  # 200 CPUs: no node has them
        pod = bench._pod(name, "solo", name, cpu, "1Gi", idx=order)
        bench.add_gang(state, name, "solo", order, queues[j % len(queues)], "Inqueue", [pod])
    return state


def topology_state(scale: float = 1.0) -> ClusterState:
    """Gangs of 64 under a two-tier HyperNode tree, half of them bound to one leaf HyperNode."""
    nodes, rng = max(16, round(1000 * scale)), random.Random(11)
    state = ClusterState()
    bench.gen_nodes(state, nodes)
    for hn in make_hypernodes(parse_topology_spec("spine=4,leaf=8"), list(state.nodes)):
        state.apply_hypernode(hn)
    queues = bench.gen_queues(state, 4)
    shapes = [("500m", "1Gi"), ("1", "2Gi"), ("2", "4Gi"), ("4", "8Gi")]
    for j in range(max(2, round(150 * scale))):
        name, (cpu, mem) = f"topo-{j:04d}", rng.choice(shapes)
        topo = {"mode": "hard", "highestTierAllowed": 1} if j % 2 == 0 else {"mode": "soft"}
        pods = [bench._pod(f"{name}-{k}", "topo", name, cpu, mem, idx=j * 64 + k) for k in range(64)]
        bench.add_gang(state, name, "topo", j, queues[j % 4], "Inqueue", pods, topo)
    return state


def capacity_state(scale: float = 1.0) -> ClusterState:
    """A queue tree whose leaves deserve less than their jobs ask: capacity decides who waits."""
    nodes, rng = max(10, round(2000 * scale)), random.Random(13)
    state = ClusterState()
    bench.gen_nodes(state, nodes)
    # deserved shares sized for a quarter of the nodes: the pending pods ask for more
    leaves = bench.gen_queue_tree(state, 40, 3, max(1, nodes // 4))
    bench.gen_running(state, round(10000 * scale), nodes, leaves)
    bench.gen_pending_jobs(state, round(40000 * scale), 8, leaves, rng)
    return state


def run_kind(kind: str, scale: float = 1.0) -> tuple[int, str]:
    if kind == "core":
        return drive(core_state(scale), DEFAULT_CONF, 7)
    if kind == "topology":
        return drive(topology_state(scale), TOPOLOGY_CONF, 7)
    if kind == "capacity":
        return drive(capacity_state(scale), bench.CAPACITY_TREE_CONF, 7)
    nodes = max(10, round(1000 * scale))
    ascend = kind == "ascend"
    pods = round((3000 if ascend else 4000) * scale)
    state = devicebench._session_state(nodes, 8, pods, 1, ascend, device_asks=kind != "floor")
    conf = {
        "vgpu": devicebench.SESSION_CONF,
        "ascend": devicebench.ASCEND_SESSION_CONF,
        "floor": devicebench.FLOOR_SESSION_CONF,
    }[kind]
    return drive(state, conf, 1)


def main(argv: Sequence[str], out: Callable[[str], None] = print) -> int:
    p = argparse.ArgumentParser(
        prog="python -m scheduler.sim.decisionhash", description=__doc__.split("\n")[0]
    )
    p.add_argument("kinds", nargs="*", help=f"which clusters, of {', '.join(KINDS)} (default: all)")
    p.add_argument("--scale", type=float, default=1.0, help="shrink every cluster by this factor")
    args = p.parse_args(argv)
    if not 0 < args.scale <= 1:
        p.error("--scale must be in (0, 1]")
    if unknown := [k for k in args.kinds if k not in KINDS]:
        p.error(f"unknown cluster {', '.join(unknown)}: choose from {', '.join(KINDS)}")
    for kind in args.kinds or KINDS:
        t = time.perf_counter()
        bound, digest = run_kind(kind, args.scale)
        out(f"{kind}: {bound} binds {digest} ({time.perf_counter() - t:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
