"""`vc-scheduler bench`: decisions per second and session latency on generated clusters.

Two measurements, both through the real path (Kubernetes dicts -> ClusterState -> snapshot ->
session): a backlog of pending gang jobs on an empty cluster (pods/s decided, per-session time),
and an idle session on a full cluster (nothing pending: what a scheduling period costs at scale).
Results are printed and, with --output, written as Markdown with the command that produced them.
"""

from __future__ import annotations

import argparse
import random
import resource
import statistics
import sys
import time
from collections.abc import Sequence
from typing import Any

from scheduler.conf import DEFAULT_CONF, SchedulerConfiguration
from scheduler.framework.cycle import run_session
from scheduler.framework.placement import feasible_sample_size
from scheduler.framework.session import SessionOptions
from scheduler.model.cluster import ClusterState
from scheduler.registry import default_configuration, load_file, parse
from scheduler.sim.report import SettledGC, load_average, load_sentence, replace_section
from scheduler.sim.topologygen import make_hypernodes, parse_topology_spec

NODE_CPU = 32
NODE_MEM_GI = 128


# running pods replaced before each of the idle rounds that measure a period with changes
IDLE_CHURN = 100


def gen_nodes(state: ClusterState, n: int, cpu: int = NODE_CPU, mem_gi: int = NODE_MEM_GI) -> None:
    for i in range(n):
        state.apply_node(
            {
                "kind": "Node",
                "metadata": {"name": f"node-{i:05d}", "labels": {"kubernetes.io/hostname": f"node-{i:05d}"}},
                "status": {
                    "allocatable": {"cpu": str(cpu), "memory": f"{mem_gi}Gi", "pods": "110"},
                    "capacity": {"cpu": str(cpu), "memory": f"{mem_gi}Gi", "pods": "110"},
                    "conditions": [{"type": "Ready", "status": "True"}],
                },
            }
        )


def gen_queues(state: ClusterState, queues: int, levels: int = 0, nodes: int = 0) -> list[str]:
    """`queues` flat queues weighted 1-3, or with `levels` > 0 a tree of that many levels under
    root whose `queues` leaves each deserve an equal part of the `nodes` generated nodes."""
    if levels > 0:
        return gen_queue_tree(state, queues, levels, nodes)
    names = [f"q{i}" for i in range(queues)]
    for i, name in enumerate(names):
        state.apply_queue(
            {
                "kind": "Queue",
                "metadata": {"name": name},
                "spec": {"weight": 1 + i % 3},
                "status": {"state": "Open"},
            }
        )
    state.apply_queue(
        {"kind": "Queue", "metadata": {"name": "default"}, "spec": {"weight": 1}, "status": {"state": "Open"}}
    )
    return names


def gen_queue_tree(state: ClusterState, leaves: int, levels: int, nodes: int) -> list[str]:
    """Levels of about leaves**(k/levels) queues each; a parent deserves what its children do."""
    sizes = [max(1, round(leaves ** (k / levels))) for k in range(1, levels)] + [leaves]
    per_leaf_cpu = NODE_CPU * nodes * 1000 // leaves
    per_leaf_mem = NODE_MEM_GI * nodes * 1024 // leaves
    parents = ["root"]
    tree: list[tuple[str, str]] = []  # (name, parent), parents first
    for depth, size in enumerate(sizes):
        names = [f"l{depth + 1}-{i}" if depth + 1 < levels else f"q{i}" for i in range(size)]
        for i, name in enumerate(names):
            tree.append((name, parents[i * len(parents) // size]))
        parents = names
    under: dict[str, int] = {name: 1 for name in parents}
    for name, parent in reversed(tree):
        under[parent] = under.get(parent, 0) + under.get(name, 0)
    state.apply_queue(
        {"kind": "Queue", "metadata": {"name": "root"}, "spec": {}, "status": {"state": "Open"}}
    )
    for name, parent in tree:
        n = under[name]
        state.apply_queue(
            {
                "kind": "Queue",
                "metadata": {"name": name},
                "spec": {
                    "parent": parent,
                    "deserved": {"cpu": f"{per_leaf_cpu * n}m", "memory": f"{per_leaf_mem * n}Mi"},
                },
                "status": {"state": "Open"},
            }
        )
    return parents


def _pod(
    name: str, ns: str, group: str, cpu: str, mem: str, node: str = "", phase: str = "Pending", idx: int = 0
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "schedulerName": "volcano",
        "containers": [{"name": "main", "resources": {"requests": {"cpu": cpu, "memory": mem}}}],
    }
    if node:
        spec["nodeName"] = node
    return {
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": ns,
            "uid": f"{ns}-{name}",
            "creationTimestamp": float(idx),
            "annotations": {"scheduling.k8s.io/group-name": group, "volcano.sh/task-spec": "worker"},
        },
        "spec": spec,
        "status": {"phase": phase},
    }


def add_gang(
    state: ClusterState,
    name: str,
    ns: str,
    order: int,
    queue: str,
    phase: str,
    pods: list[dict[str, Any]],
    network_topology: dict[str, Any] | None = None,
) -> None:
    """One PodGroup whose minMember is all its pods (created `order` seconds in), then the pods."""
    state.apply_podgroup(
        {
            "kind": "PodGroup",
            "metadata": {"name": name, "namespace": ns, "creationTimestamp": float(order)},
            "spec": {
                "minMember": len(pods),
                "queue": queue,
                **({"networkTopology": network_topology} if network_topology else {}),
            },
            "status": {"phase": phase},
        }
    )
    for pod in pods:
        state.apply_pod(pod)


def gen_pending_jobs(
    state: ClusterState,
    pods: int,
    gang: int,
    queues: list[str],
    rng: random.Random,
    network_topology: dict[str, Any] | None = None,
) -> int:
    jobs = pods // gang
    shapes = [("500m", "1Gi"), ("1", "2Gi"), ("2", "4Gi"), ("4", "8Gi")]
    for j in range(jobs):
        ns = f"team-{j % 20}"
        name = f"job-{j:06d}"
        cpu, mem = rng.choice(shapes)
        pods = [_pod(f"{name}-{k}", ns, name, cpu, mem, idx=j * gang + k) for k in range(gang)]
        add_gang(state, name, ns, j, queues[j % len(queues)], "Inqueue", pods, network_topology)
    return jobs * gang


def gen_running(state: ClusterState, pods: int, nodes: int, queues: list[str]) -> None:
    per_job = 10
    for j in range(pods // per_job):
        ns = f"run-{j % 20}"
        name = f"running-{j:06d}"
        first = j * per_job
        pods = [
            _pod(
                f"{name}-{k}",
                ns,
                name,
                "100m",
                "256Mi",
                node=f"node-{(first + k) % nodes:05d}",
                phase="Running",
                idx=first + k,
            )
            for k in range(per_job)
        ]
        add_gang(state, name, ns, j, queues[j % len(queues)], "Running", pods)


def _progress(enabled: bool, text: str, end: str = "\n") -> None:
    """A progress line on stderr; a rewritten line (`\\r`) only on a terminal, whole lines in a log."""
    if not enabled:
        return
    if not sys.stderr.isatty():
        text = text.lstrip("\r")
        if not text:
            return  # the newline that ends a run of rewritten lines
        end = "\n"
    print(text, end=end, file=sys.stderr, flush=True)


def conf_summary(conf: SchedulerConfiguration) -> str:
    """actions and tiers of the configuration, as one line (what `--conf` or the default gave)."""
    tiers = " | ".join(", ".join(p.name for p in t.plugins) for t in conf.tiers)
    return f"actions: {', '.join(conf.actions)}; tiers: {tiers}"


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def pct(values: list[float], p: float) -> float:
    if not values:
        return 0.0
    s = sorted(values)
    k = min(len(s) - 1, max(0, round(p / 100 * (len(s) - 1))))
    return s[k]


def bench_backlog(
    nodes: int,
    pods: int,
    gang: int,
    queues: int,
    conf: SchedulerConfiguration,
    max_cycles: int,
    progress: bool,
    queue_levels: int = 0,
    topology: str | None = None,
    network_topology: dict[str, Any] | None = None,
) -> dict[str, Any]:
    rng = random.Random(7)
    state = ClusterState()
    _progress(progress, f"backlog: generating {nodes:,} nodes and {pods:,} pending pods ...")
    gen_nodes(state, nodes)
    if topology:
        for hn in make_hypernodes(parse_topology_spec(topology), list(state.nodes)):
            state.apply_hypernode(hn)
    qnames = gen_queues(state, queues, queue_levels, nodes)
    total = gen_pending_jobs(state, pods, gang, qnames, rng, network_topology)
    with SettledGC():
        return _run_backlog(state, nodes, total, gang, queues, conf, max_cycles, progress, rng)


def _run_backlog(
    state: ClusterState,
    nodes: int,
    total: int,
    gang: int,
    queues: int,
    conf: SchedulerConfiguration,
    max_cycles: int,
    progress: bool,
    rng: random.Random,
) -> dict[str, Any]:
    bound = 0
    session_ms: list[float] = []
    snapshot_ms: list[float] = []
    t_start = time.perf_counter()
    for cycle in range(max_cycles):
        t0 = time.perf_counter()
        snap = state.snapshot()
        t1 = time.perf_counter()
        res = run_session(snap, conf, SessionOptions(), rng=rng)
        snapshot_ms.append((t1 - t0) * 1000)
        session_ms.append(res.total_ms)
        for b in res.binds:
            state.assume_bound(b.task.key, b.node, b.annotations)
        bound += len(res.binds)
        if progress:
            elapsed = time.perf_counter() - t_start
            _progress(
                True,
                f"\rcycle {cycle + 1}: {bound}/{total} pods bound, {bound / elapsed:,.0f} pods/s, "
                f"last session {res.total_ms:,.0f} ms",
                end="",
            )
        if not res.binds:
            break
    elapsed = time.perf_counter() - t_start
    _progress(progress, "")
    decide_s = sum(session_ms) / 1000
    return {
        "nodes": nodes,
        "pods": total,
        "gang": gang,
        "queues": queues,
        "bound": bound,
        "cycles": len(session_ms),
        "wall_s": elapsed,
        "pods_per_s_sessions": bound / decide_s if decide_s else 0.0,
        "pods_per_s_wall": bound / elapsed if elapsed else 0.0,
        "sampled": feasible_sample_size(SessionOptions(), nodes),  # nodes a pod's search looks for
        "session_ms_p50": pct(session_ms, 50),
        "session_ms_p90": pct(session_ms, 90),
        "session_ms_p99": pct(session_ms, 99),
        "session_ms_max": max(session_ms, default=0.0),
        "snapshot_ms_p50": pct(snapshot_ms, 50),
    }


def bench_idle(
    nodes: int,
    running: int,
    queues: int,
    conf: SchedulerConfiguration,
    rounds: int,
    progress: bool = False,
    queue_levels: int = 0,
) -> dict[str, Any]:
    state = ClusterState()
    _progress(progress, f"idle: generating {nodes:,} nodes and {running:,} running pods ...")
    gen_nodes(state, nodes)
    qnames = gen_queues(state, queues, queue_levels, nodes)
    gen_running(state, running, nodes, qnames)
    with SettledGC():
        return _run_idle(state, nodes, running, conf, rounds, progress)


def _run_idle(
    state: ClusterState, nodes: int, running: int, conf: SchedulerConfiguration, rounds: int, progress: bool
) -> dict[str, Any]:
    snap_ms: list[float] = []
    session_ms: list[float] = []
    # The first session after the initial list sees every job as changed; the steady state is
    # what every later period costs when nothing happens, which is what is measured.
    first = run_session(state.snapshot(), conf, SessionOptions())
    for r in range(rounds):
        t0 = time.perf_counter()
        snap = state.snapshot()
        t1 = time.perf_counter()
        res = run_session(snap, conf, SessionOptions())
        snap_ms.append((t1 - t0) * 1000)
        session_ms.append(res.total_ms)
        _progress(
            progress,
            f"\ridle round {r + 1}/{rounds}: snapshot {snap_ms[-1]:,.1f} ms, session {res.total_ms:,.1f} ms",
            end="",
        )
    _progress(progress and rounds > 0, "")
    churn = _churn_rounds(state, conf, rounds, IDLE_CHURN, progress)
    return {
        "nodes": nodes,
        "running": running,
        "snapshot_ms_median": statistics.median(snap_ms),
        "session_ms_median": statistics.median(session_ms),
        "total_ms_median": statistics.median([a + b for a, b in zip(snap_ms, session_ms, strict=True)]),
        "session_ms_p90": pct(session_ms, 90),
        "rounds": rounds,
        "first_session_ms": first.total_ms,
        "churn_pods": IDLE_CHURN,
        "churn_total_ms_median": churn,
    }


def _churn_rounds(
    state: ClusterState, conf: SchedulerConfiguration, rounds: int, pods: int, progress: bool
) -> float:
    """The median period (snapshot + session) when `pods` running pods were replaced before each
    one: removed, and as many started on other nodes in the same jobs (a rollout's churn). With
    nothing pending there is still nothing to place: what is measured is what the changes cost."""
    rng = random.Random(17)
    names = sorted(state.nodes)
    totals: list[float] = []
    for r in range(rounds):
        running = [t for t in state.tasks.values() if t.node_name]
        for t in rng.sample(running, min(pods, len(running))):
            state.remove_pod(t.namespace, t.name)
            group = t.job.split("/", 1)[1]
            new = _pod(
                f"{t.name}-r{r}", t.namespace, group, "100m", "256Mi", node=rng.choice(names), phase="Running"
            )
            state.apply_pod(new)
        t0 = time.perf_counter()
        run_session(state.snapshot(), conf, SessionOptions())
        totals.append((time.perf_counter() - t0) * 1000)
        _progress(
            progress, f"\ridle round with {pods} pods replaced {r + 1}/{rounds}: {totals[-1]:,.1f} ms", end=""
        )
    _progress(progress and rounds > 0, "")
    return statistics.median(totals) if totals else 0.0


# The goals (pods/s decided at 5,000 nodes; an idle period at 5,000 nodes / 150,000 pods)
SECTION = "## Decision core (`vc-scheduler bench`)"
GOAL_PODS_PER_S = 5000.0
GOAL_IDLE_MS = 50.0
# kube-scheduler's CI threshold for scheduling throughput at 5,000 nodes, for scale
KUBE_SCHEDULER_REFERENCE = "680-810 pods/s"


def goals(backlog: dict[str, Any] | None, idle: dict[str, Any] | None) -> list[tuple[str, str, bool | None]]:
    """(goal, measured, reached) rows; reached is None when the run did not measure it at scale."""
    rows: list[tuple[str, str, bool | None]] = []
    if backlog:
        b = backlog
        at_scale = b["nodes"] >= 5000
        rows.append(
            (
                f">= {GOAL_PODS_PER_S:,.0f} pods/s decided at 5,000 nodes",
                f"{b['pods_per_s_sessions']:,.0f} pods/s at {b['nodes']:,} nodes",
                (b["pods_per_s_sessions"] >= GOAL_PODS_PER_S) if at_scale else None,
            )
        )
    if idle:
        i = idle
        at_scale = i["nodes"] >= 5000 and i["running"] >= 150000
        rows.append(
            (
                f"idle period (snapshot + session) <= {GOAL_IDLE_MS:,.0f} ms at 5,000 nodes / 150,000 pods",
                f"{i['total_ms_median']:,.1f} ms ({i['snapshot_ms_median']:,.1f} + {i['session_ms_median']:,.1f})",
                (i["total_ms_median"] <= GOAL_IDLE_MS) if at_scale else None,
            )
        )
    return rows


def render_markdown(
    cmd: str,
    backlog: dict[str, Any] | None,
    idle: dict[str, Any] | None,
    conf_name: str,
    conf_line: str = "",
    load_before: str = "unknown",
) -> str:
    lines = [
        SECTION,
        "",
        f"Command: `{cmd}`  ",
        f"{load_sentence(load_before, load_average())}  ",
        f"Configuration: {conf_name} ({conf_line})",
        "",
        "Both measurements go through the real path: Kubernetes objects -> cluster state -> snapshot -> "
        "session (open, actions, close). pods/s counts the sessions' time only; the wall figure adds "
        "the snapshots. After generating each cluster the garbage collector is set as the daemon "
        "sets it after its initial sync (collect, freeze, young threshold 20,000).",
        "",
    ]
    if backlog:
        b = backlog
        lines += [
            f"Backlog: {b['pods']:,} pending pods in gang jobs of {b['gang']} across {b['queues']} queues, "
            f"{b['nodes']:,} nodes (32 CPU / 128 Gi each), cluster otherwise empty.",
            "",
            "| measure | value |",
            "|---|---|",
            f"| pods bound | {b['bound']:,} in {b['cycles']} sessions |",
            f"| pods/s decided (session time only) | {b['pods_per_s_sessions']:,.0f} |",
            f"| pods/s wall (incl. snapshots) | {b['pods_per_s_wall']:,.0f} |",
            f"| session time p50 / p90 / p99 | {b['session_ms_p50']:,.0f} / {b['session_ms_p90']:,.0f} / {b['session_ms_p99']:,.0f} ms |",
            f"| snapshot time p50 | {b['snapshot_ms_p50']:,.0f} ms |",
            "",
            "Every pending job fits, so the first session decides the whole backlog and the next one "
            "finds nothing left: the session percentiles are over those few sessions.",
            "",
        ]
    if idle:
        i = idle
        lines += [
            f"Idle session: {i['nodes']:,} nodes, {i['running']:,} running pods (jobs of 10), nothing pending; "
            f"{i['rounds']} rounds after a first session.",
            "",
            "| measure | median |",
            "|---|---|",
            f"| snapshot | {i['snapshot_ms_median']:,.1f} ms |",
            f"| session (open, actions, close) | {i['session_ms_median']:,.1f} ms (p90 {i['session_ms_p90']:,.1f} ms) |",
            f"| total per period | {i['total_ms_median']:,.1f} ms |",
            f"| total per period with {i['churn_pods']:,} running pods replaced before it (removed, started on other nodes) | {i['churn_total_ms_median']:,.1f} ms |",
            f"| first session after the initial list (every job changed) | {i['first_session_ms']:,.0f} ms |",
            "",
        ]
    rows = goals(backlog, idle)
    if rows:
        lines += ["| goal | measured | reached |", "|---|---|---|"]
        for goal, measured, ok in rows:
            verdict = "not measured at that scale" if ok is None else ("reached" if ok else "not reached")
            lines.append(f"| {goal} | {measured} | {verdict} |")
        lines += [
            "",
            f"For scale: kube-scheduler's CI threshold at 5,000 nodes is {KUBE_SCHEDULER_REFERENCE}.",
            "",
        ]
    lines.append(f"Peak RSS of the benchmark process: {peak_rss_mb():,.0f} MB")
    return "\n".join(lines) + "\n"


# Volcano's default tiers with capacity (hierarchical) in proportion's place
CAPACITY_TREE_CONF = DEFAULT_CONF.replace(
    "  - name: proportion\n", "  - name: capacity\n    enableHierarchy: true\n"
)
QUEUE_TREE = "## Decision core with capacity and hierarchical queues (`vc-scheduler bench --queue-levels`)"


def main(argv: Sequence[str]) -> int:
    if "--devices" in argv and "--instructions" in argv:  # one device session's instruction count
        from scheduler.sim.icount import main as icount_main

        return icount_main([a for a in argv if a not in ("--devices", "--instructions")])
    if "--devices" in argv:  # the device hot-path micro-benchmark
        from scheduler.sim.devicebench import main as devices_main

        return devices_main([a for a in argv if a != "--devices"])
    load_before = load_average()
    p = argparse.ArgumentParser(prog="vc-scheduler bench", description="Benchmark the decision core.")
    p.add_argument(
        "--devices",
        action="store_true",
        help="benchmark the device-sharing hot path instead (compiled vs Python); "
        "see vc-scheduler bench --devices --help",
    )
    p.add_argument("--nodes", type=int, default=5000)
    p.add_argument("--pods", type=int, default=50000, help="pending pods (in gang jobs)")
    p.add_argument("--gang", type=int, default=10, help="pods per gang job")
    p.add_argument("--queues", type=int, default=4, help="queues (with --queue-levels: leaf queues)")
    p.add_argument(
        "--queue-levels",
        type=int,
        default=0,
        help="a queue tree of this many levels under root (capacity with enableHierarchy), "
        "measured against the same cluster with flat proportion queues",
    )
    p.add_argument(
        "--running",
        type=int,
        default=None,
        help="running pods for the idle-session measurement (default 30 per node: 150,000 at 5,000 nodes)",
    )
    p.add_argument("--cycles", type=int, default=50, help="at most this many sessions for the backlog")
    p.add_argument("--idle-rounds", type=int, default=5)
    p.add_argument("--conf", help="scheduler configuration (default: Volcano's default)")
    p.add_argument("--skip-idle", action="store_true")
    p.add_argument("--skip-backlog", action="store_true")
    p.add_argument("--output", help="write the Markdown results to this file (replacing its bench section)")
    p.add_argument("--quiet", action="store_true")
    p.add_argument(
        "--topology",
        metavar="LEVELS",
        help="network topology run: HyperNodes over the nodes (e.g. spine=4,leaf=8), the backlog's jobs "
        "constrained by --job-topology, against the same backlog without HyperNodes or constraints",
    )
    p.add_argument(
        "--job-topology",
        default="hard:1",
        metavar="MODE:TIER",
        help="the jobs' networkTopology (default hard:1)",
    )
    args = p.parse_args(argv)
    if args.running is None:
        args.running = 30 * args.nodes
    if args.topology:
        return topology_main(args, argv, load_before)
    if args.queue_levels > 0:
        return _main_queue_tree(args, argv, load_before)
    conf = load_file(args.conf) if args.conf else default_configuration()
    backlog, idle = _measure(args, conf, 0)
    for goal, measured, ok in goals(backlog, idle):
        verdict = "not measured at that scale" if ok is None else ("reached" if ok else "NOT reached")
        print(f"goal {goal}: {measured} -> {verdict}")
    if args.output:
        cmd = "vc-scheduler bench " + " ".join(argv)
        conf_name = args.conf or "Volcano's default"
        replace_section(
            args.output,
            SECTION,
            render_markdown(cmd, backlog, idle, conf_name, conf_summary(conf), load_before),
        )
    return 0


TOPOLOGY_SECTION = "## Network topology (`vc-scheduler bench --topology`)"


# Volcano's default configuration with the network-topology-aware plugin in its second tier
TOPOLOGY_CONF = DEFAULT_CONF.rstrip("\n") + "\n  - name: network-topology-aware\n"


def topology_conf() -> SchedulerConfiguration:
    """TOPOLOGY_CONF, parsed."""
    return parse(TOPOLOGY_CONF, "<default + network-topology-aware>")


def topology_main(args: argparse.Namespace, argv: Sequence[str], load_before: str) -> int:
    mode, _, tier = args.job_topology.partition(":")
    nt: dict[str, Any] | None = None if mode == "none" else {"mode": mode}
    if tier and nt is not None:
        nt["highestTierAllowed"] = int(tier)
    conf = load_file(args.conf) if args.conf else topology_conf()
    runs: dict[str, dict[str, Any]] = {}
    for label, topo, constraint in (("with topology", args.topology, nt), ("without topology", None, None)):
        _progress(not args.quiet, f"{label}:")
        runs[label] = bench_backlog(
            args.nodes,
            args.pods,
            args.gang,
            args.queues,
            conf,
            args.cycles,
            not args.quiet,
            topology=topo,
            network_topology=constraint,
        )
        b = runs[label]
        print(
            f"{label}: {b['bound']:,}/{b['pods']:,} bound in {b['cycles']} sessions; "
            f"{b['pods_per_s_sessions']:,.0f} pods/s (sessions); session p50 {b['session_ms_p50']:,.0f} ms"
        )
    with_t, without = runs["with topology"], runs["without topology"]
    ratio = (
        without["pods_per_s_sessions"] / with_t["pods_per_s_sessions"]
        if with_t["pods_per_s_sessions"]
        else 0.0
    )
    print(f"slowdown with topology: {ratio:.2f}x (goal: within 2x)")
    if args.output:
        cmd = "vc-scheduler bench " + " ".join(argv)
        lines = [
            TOPOLOGY_SECTION,
            "",
            f"Command: `{cmd}`  ",
            f"{load_sentence(load_before, load_average())}  ",
            f"Configuration: {args.conf or 'default + network-topology-aware'} ({conf_summary(conf)})",
            "",
            f"{with_t['pods']:,} pending pods in gang jobs of {args.gang} on {args.nodes:,} nodes (32 CPU / "
            f"128 Gi each) under HyperNodes `{args.topology}`, every job with `networkTopology` "
            f"`{nt}`; against the same backlog with no HyperNodes and no constraint.",
            "",
            "| run | pods bound | sessions | pods/s decided | time deciding | longest session |",
            "|---|---|---|---|---|---|",
        ]
        for label, b in runs.items():
            decide_s = b["bound"] / b["pods_per_s_sessions"] if b["pods_per_s_sessions"] else 0.0
            lines.append(
                f"| {label} | {b['bound']:,} | {b['cycles']} | {b['pods_per_s_sessions']:,.0f} | "
                f"{decide_s:,.1f} s | {b['session_ms_max'] / 1000:,.1f} s |"
            )
        lines += [
            "",
            "The first session decides the whole backlog (every job fits); the next one finds nothing left.",
        ]
        verdict = "reached" if ratio <= 2.0 else "not reached"
        lines += ["", f"Slowdown with topology: {ratio:.2f}x (goal: within 2x): {verdict}."]
        replace_section(args.output, TOPOLOGY_SECTION, "\n".join(lines) + "\n")
    return 0


def _measure(
    args: argparse.Namespace, conf: SchedulerConfiguration, levels: int
) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    backlog = None
    if not args.skip_backlog:
        backlog = bench_backlog(
            args.nodes, args.pods, args.gang, args.queues, conf, args.cycles, not args.quiet, levels
        )
        print(
            f"backlog: {backlog['bound']:,}/{backlog['pods']:,} bound in {backlog['cycles']} sessions; "
            f"{backlog['pods_per_s_sessions']:,.0f} pods/s (sessions), {backlog['pods_per_s_wall']:,.0f} pods/s (wall); "
            f"session p50 {backlog['session_ms_p50']:,.0f} ms p99 {backlog['session_ms_p99']:,.0f} ms"
        )
    idle = None
    if not args.skip_idle:
        idle = bench_idle(
            args.nodes, args.running, args.queues, conf, args.idle_rounds, not args.quiet, levels
        )
        print(
            f"idle: {idle['nodes']:,} nodes / {idle['running']:,} running pods: snapshot {idle['snapshot_ms_median']:,.1f} ms, "
            f"session {idle['session_ms_median']:,.1f} ms (medians)"
        )
    print(f"peak RSS {peak_rss_mb():,.0f} MB")
    return backlog, idle


def _main_queue_tree(args: argparse.Namespace, argv: Sequence[str], load_before: str) -> int:
    """capacity over a queue tree, then proportion over as many flat queues, on the same cluster."""
    tree_conf = load_file(args.conf) if args.conf else parse(CAPACITY_TREE_CONF, "<capacity tree>")
    flat_conf = default_configuration()
    print(f"capacity, {args.queue_levels}-level tree, {args.queues} leaf queues:")
    tree = _measure(args, tree_conf, args.queue_levels)
    print(f"proportion, {args.queues} flat queues:")
    flat = _measure(args, flat_conf, 0)
    rows = tree_ratios(tree, flat)
    for what, ratio, ok in rows:
        print(f"{what}: {ratio} -> {'within 2x' if ok else 'NOT within 2x'}")
    if args.output:
        cmd = "vc-scheduler bench " + " ".join(argv)
        replace_section(
            args.output,
            QUEUE_TREE,
            render_tree_markdown(
                cmd, args.queue_levels, tree, flat, conf_summary(tree_conf), rows, load_before
            ),
        )
    return 0


def tree_ratios(
    tree: tuple[dict[str, Any] | None, dict[str, Any] | None],
    flat: tuple[dict[str, Any] | None, dict[str, Any] | None],
) -> list[tuple[str, str, bool]]:
    """(measure, capacity vs proportion, within 2x) for what both runs measured."""
    rows: list[tuple[str, str, bool]] = []
    (tb, ti), (fb, fi) = tree, flat
    if tb and fb and tb["pods_per_s_sessions"]:
        r = fb["pods_per_s_sessions"] / tb["pods_per_s_sessions"]
        rows.append(("backlog pods/s, proportion / capacity", f"{r:.2f}x", r <= 2.0))
    if ti and fi and fi["total_ms_median"]:
        r = ti["total_ms_median"] / fi["total_ms_median"]
        rows.append(("idle period, capacity / proportion", f"{r:.2f}x", r <= 2.0))
    return rows


def render_tree_markdown(
    cmd: str,
    levels: int,
    tree: tuple[dict[str, Any] | None, dict[str, Any] | None],
    flat: tuple[dict[str, Any] | None, dict[str, Any] | None],
    conf_line: str,
    rows: list[tuple[str, str, bool]],
    load_before: str = "unknown",
) -> str:
    lines = [
        QUEUE_TREE,
        "",
        f"Command: `{cmd}`  ",
        f"{load_sentence(load_before, load_average())}  ",
        f"Configuration: capacity with enableHierarchy ({conf_line}), against Volcano's default "
        "(proportion) on the same cluster with as many flat queues.",
        "",
        f"The queue tree has {levels} levels under root; each leaf deserves an equal part of the "
        "cluster and each parent the sum of its children. Jobs are spread over the leaves (flat "
        "queues for proportion) round robin; otherwise the measurements are those of the section above.",
        "",
        "| measure | capacity, queue tree | proportion, flat queues |",
        "|---|---|---|",
    ]
    (tb, ti), (fb, fi) = tree, flat
    if tb and fb:
        lines += [
            f"| backlog: pods bound | {tb['bound']:,} in {tb['cycles']} sessions | {fb['bound']:,} in {fb['cycles']} sessions |",
            f"| backlog: pods/s decided | {tb['pods_per_s_sessions']:,.0f} | {fb['pods_per_s_sessions']:,.0f} |",
            f"| backlog: session p50 | {tb['session_ms_p50']:,.0f} ms | {fb['session_ms_p50']:,.0f} ms |",
        ]
    if ti and fi:
        lines += [
            f"| idle period (snapshot + session), median | {ti['total_ms_median']:,.1f} ms | {fi['total_ms_median']:,.1f} ms |",
        ]
    lines.append("")
    if rows:
        lines += ["| ratio | value | within 2x |", "|---|---|---|"]
        lines += [f"| {what} | {ratio} | {'yes' if ok else 'no'} |" for what, ratio, ok in rows]
        lines.append("")
    lines.append(f"Peak RSS of the benchmark process: {peak_rss_mb():,.0f} MB")
    return "\n".join(lines) + "\n"
