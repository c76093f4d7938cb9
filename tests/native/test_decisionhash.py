"""Whole sessions decide the same with the compiled paths and with their pure twins.

The equivalence tests beside this one compare each compiled module with its twin on its own
inputs; this one runs `python -m scheduler.sim.decisionhash` (every bind of sessions run to
completion, hashed) once compiled and once with VC_SCHEDULER_PURE=1, on small clusters of each
kind: a twin that drifted anywhere in the decision core or the device paths changes a hash.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

from scheduler.sim import decisionhash

_LINE = re.compile(r"^(\w+): (\d+) binds ([0-9a-f]{16}) \(")


def _hashes(pure: bool) -> dict[str, tuple[int, str]]:
    env = {k: v for k, v in os.environ.items() if k != "VC_SCHEDULER_PURE"}
    if pure:
        env["VC_SCHEDULER_PURE"] = "1"
    out = subprocess.run(
        [sys.executable, "-m", "scheduler.sim.decisionhash", "--scale", "0.1"],
        env=env, capture_output=True, text=True, check=True, timeout=300,
    ).stdout  # fmt: skip
    found = {m[1]: (int(m[2]), m[3]) for m in map(_LINE.match, out.splitlines()) if m}
    return found


def test_compiled_and_pure_paths_bind_the_same_pods_to_the_same_nodes() -> None:
    compiled, pure = _hashes(pure=False), _hashes(pure=True)
    assert set(compiled) == set(decisionhash.KINDS)
    # every cluster places pods (a hash of nothing would prove nothing)
    assert all(bound > 0 for bound, _ in compiled.values())
    assert compiled == pure


def test_the_core_cluster_leaves_pods_that_fit_nowhere_pending() -> None:
    state = decisionhash.core_state(0.05)
    pending = sum(1 for t in state.tasks.values() if not t.node_name)
    bound, _ = decisionhash.drive(state, decisionhash.DEFAULT_CONF, 7)
    assert 0 < bound < pending  # the 200-CPU one-pod jobs (and gangs beyond capacity) stay pending


def test_the_capacity_cluster_leaves_jobs_of_overused_queues_pending() -> None:
    state = decisionhash.capacity_state(0.1)
    pending = sum(1 for t in state.tasks.values() if not t.node_name)
    bound, _ = decisionhash.drive(state, decisionhash.bench.CAPACITY_TREE_CONF, 7)
    assert 0 < bound < pending


def test_the_topology_cluster_keeps_hard_gangs_inside_one_leaf_hypernode() -> None:
    state = decisionhash.topology_state(0.1)
    decisionhash.drive(state, decisionhash.TOPOLOGY_CONF, 7)
    leaf_of = state.topology().leaf_of
    hard = [j for j in state.jobs.values() if int(j.name.rsplit("-", 1)[1]) % 2 == 0]
    placed = [j for j in hard if all(t.node_name for t in j.tasks.values())]
    assert placed
    for job in placed:
        assert len({leaf_of[t.node_name] for t in job.tasks.values()}) == 1, job.name
