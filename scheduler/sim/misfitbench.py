"""The daemon's idle period in the decision core: the bench's idle cluster plus one pod that fits
no node (as `python -m scheduler.sim.daemonbench` keeps one), allocate timed per session.

    python -m scheduler.sim.misfitbench --nodes 5000 --rounds 20 [--no-carry]

`--no-carry` turns off the refusals allocate keeps between sessions (framework/placement.py), so
that two runs compare the re-check of the misfit against every node with its carried answer.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Sequence

from scheduler.framework.cycle import run_session
from scheduler.framework.session import SessionOptions
from scheduler.model.cluster import ClusterState
from scheduler.registry import default_configuration
from scheduler.sim.bench import NODE_CPU, SettledGC, add_gang, gen_nodes, gen_queues, gen_running, pct


def misfit_pod(ns: str, group: str) -> dict:
    """A pod asking for more CPU than any generated node has."""
    return {
        "kind": "Pod",
        "metadata": {
            "name": f"{group}-0",
            "namespace": ns,
            "uid": f"{ns}-{group}-0",
            "annotations": {"scheduling.k8s.io/group-name": group},
        },
        "spec": {
            "schedulerName": "volcano",
            "containers": [{"name": "main", "resources": {"requests": {"cpu": str(NODE_CPU * 10)}}}],
        },
        "status": {"phase": "Pending"},
    }


def main(argv: Sequence[str]) -> int:
    p = argparse.ArgumentParser(prog="python -m scheduler.sim.misfitbench", description=__doc__)
    p.add_argument("--nodes", type=int, default=5000)
    p.add_argument("--running-per-node", type=int, default=30)
    p.add_argument("--queues", type=int, default=4)
    p.add_argument("--rounds", type=int, default=20)
    p.add_argument("--no-carry", action="store_true", help="re-check the misfit on every node each session")
    args = p.parse_args(argv)
    state = ClusterState()
    gen_nodes(state, args.nodes)
    qnames = gen_queues(state, args.queues)
    gen_running(state, args.nodes * args.running_per_node, args.nodes, qnames)
    add_gang(state, "misfit", "pending", 0, qnames[0], "Inqueue", [misfit_pod("pending", "misfit")])
    conf = default_configuration()
    opts = SessionOptions(carry_placement=not args.no_carry)
    alloc_ms: list[float] = []
    total_ms: list[float] = []
    with SettledGC():
        run_session(state.snapshot(), conf, opts)  # the first session sees every job as new
        for _ in range(args.rounds):
            t0 = time.perf_counter()
            res = run_session(state.snapshot(), conf, opts)
            total_ms.append((time.perf_counter() - t0) * 1000)
            alloc_ms.append(res.action_ms.get("allocate", 0.0))
    print(
        f"misfitbench nodes={args.nodes} carry={not args.no_carry} rounds={args.rounds}: "
        f"allocate median {statistics.median(alloc_ms):.1f} ms (p90 {pct(alloc_ms, 90):.1f}), "
        f"snapshot+session median {statistics.median(total_ms):.1f} ms"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
