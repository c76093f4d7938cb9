"""How fast the web view answers at scale: `python -m scheduler.web.loadcheck`.

Builds a cluster in memory (5,000 nodes, 150,000 running pods and pending gangs that fit nowhere
by default), runs one session with Volcano's default configuration, publishes it as the daemon
does, and times every endpoint over real HTTP: the first request after the session (which builds
the per-session aggregates) and the median of later ones. Also times sessions with and without the
web view in pairs (`--sessions` pairs, order alternating, medians and the per-pair difference), to
show whether the web view costs the session anything measurable.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import time
from collections.abc import Sequence
from typing import Any

from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from scheduler.daemon import settle_gc
from scheduler.framework.cycle import run_session_keep
from scheduler.framework.session import SessionOptions
from scheduler.model.cluster import ClusterState
from scheduler.registry import default_configuration
from scheduler.sim.bench import _pod, add_gang, gen_nodes, gen_queues, gen_running
from scheduler.web.explain import explain
from scheduler.web.routes import WebView
from scheduler.web.summary import SessionView, Summary

ENDPOINTS = (
    "/api/overview",
    "/api/queues",
    "/api/sessions",
    "/api/jobs?limit=50",
    "/api/jobs?phase=Pending&limit=50",
    "/api/nodes?limit=24",
    "/api/nodes?sort=cpu&limit=24",
    "/api/pending?limit=10",
    "/api/explain/pend-0/waiting-000000-0",
    # a running pod: the first click in its namespace indexes that namespace's 7,500 pods
    "/api/explain/run-0/running-000000-0",
)


def build(nodes: int, running: int, pending: int) -> ClusterState:
    state = ClusterState()
    gen_nodes(state, nodes)
    queues = gen_queues(state, 4)
    gen_running(state, running, nodes, queues)
    gang = 10
    for j in range(pending // gang):  # 64-CPU pods on 32-CPU nodes: they wait, with a reason
        name, ns = f"waiting-{j:06d}", f"pend-{j % 20}"
        pods = [_pod(f"{name}-{k}", ns, name, "64", "1Gi", idx=running + j * gang + k) for k in range(gang)]
        add_gang(state, name, ns, j, queues[j % len(queues)], "Inqueue", pods)
    return state


async def measure(summary: Summary, view: SessionView, rounds: int) -> dict[str, tuple[float, float]]:
    wv = WebView(summary, lambda ns, n: explain(summary.view, ns, n) if summary.view else None)
    app = web.Application()
    wv.add_routes(app)
    out: dict[str, tuple[float, float]] = {}
    async with TestClient(TestServer(app)) as client:
        for path in ENDPOINTS:
            view.derived.clear()  # as after a fresh session: per-session aggregates are rebuilt
            summary.publish(view)
            times = []
            for _ in range(rounds + 1):
                t0 = time.perf_counter()
                resp = await client.get(path)
                await resp.read()
                times.append((time.perf_counter() - t0) * 1000)
                assert resp.status == 200, (path, resp.status)
            out[path] = (times[0], statistics.median(times[1:]))
    return out


def publish(summary: Summary, number: int, state: ClusterState, conf: Any, snap: Any = None) -> None:
    """One session as the daemon runs it with the web view on: run, then publish its view."""
    snap = snap if snap is not None else state.snapshot()
    res, ssn = run_session_keep(snap, conf, SessionOptions(), random.Random(number))
    attrs = getattr(ssn.plugins.get("proportion"), "attrs", None)
    summary.publish(SessionView(number, res, ssn.node_list, ssn.queues, attrs))


def paired_sessions(
    state: ClusterState, conf: Any, summary: Summary, pairs: int
) -> tuple[list[float], list[float]]:
    """Wall time (ms) of sessions without and with the web view, in pairs on the same cluster.

    What stays alive through the next session is what the daemon keeps: without the web view the
    last session's result (`Daemon.last_result`), with it the published view (that result, the
    session's nodes and queues). The order inside a pair alternates so that a drift of the
    machine's load favours neither side.
    """
    off: list[float] = []
    on: list[float] = []
    held: list[Any] = [None]  # the last result, kept as the daemon keeps it with the web view off
    for i in range(pairs):
        for web_on in (False, True) if i % 2 == 0 else (True, False):
            if web_on:
                held[0] = None
                if summary.view is None:
                    publish(summary, -1, state, conf)  # untimed: the view the daemon would hold
            elif summary.view is not None:
                held[0] = summary.view.result
                summary.forget()
            snap = state.snapshot()
            t0 = time.perf_counter()
            if web_on:
                publish(summary, i + 1, state, conf, snap)
                on.append((time.perf_counter() - t0) * 1000)
            else:
                held[0] = run_session_keep(snap, conf, SessionOptions(), random.Random(i + 1))[0]
                off.append((time.perf_counter() - t0) * 1000)
            del snap
    return off, on


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m scheduler.web.loadcheck", description=__doc__)
    p.add_argument("--nodes", type=int, default=5000)
    p.add_argument("--running", type=int, default=150000)
    p.add_argument("--pending", type=int, default=1000)
    p.add_argument("--rounds", type=int, default=10)
    p.add_argument(
        "--sessions",
        type=int,
        default=5,
        help="pairs of sessions timed without and with the web view (medians are reported)",
    )
    args = p.parse_args(argv)
    t0 = time.perf_counter()
    state = build(args.nodes, args.running, args.pending)
    print(f"cluster: {args.nodes:,} nodes, {args.running:,} running, {args.pending:,} pending pods "
          f"({time.perf_counter() - t0:.1f} s to build)")  # fmt: skip
    # the daemon's collector settings after its initial sync: the cache frozen out of the
    # collector's sight, so collections during a session walk only what sessions allocate
    settle_gc()
    conf = default_configuration()
    summary = Summary()
    # a first session warms the caches (the first one of a process is the slow one): not timed
    publish(summary, 0, state, conf)
    off, on = paired_sessions(state, conf, summary, args.sessions)
    diffs = [b - a for a, b in zip(off, on, strict=True)]
    print(f"session: {statistics.median(off):,.0f} ms without the web view, "
          f"{statistics.median(on):,.0f} ms with publishing (medians of {len(off)} pairs, "
          f"order alternating); difference per pair: median {statistics.median(diffs):+,.0f} ms "
          f"({statistics.median(diffs) / statistics.median(off):+.1%}), "
          f"range {min(diffs):+,.0f} .. {max(diffs):+,.0f} ms")  # fmt: skip
    if summary.view is None:
        publish(summary, args.sessions + 1, state, conf)
    view = summary.view
    assert view is not None
    print(f"{'endpoint':<40} {'first ms':>9} {'later ms':>9}")
    for path, (first, later) in asyncio.run(measure(summary, view, args.rounds)).items():
        print(f"{path:<40} {first:>9.1f} {later:>9.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
