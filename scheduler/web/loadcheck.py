"""How fast the web view answers at scale: `python -m scheduler.web.loadcheck`.

Builds a cluster in memory (5,000 nodes, 150,000 running pods and pending gangs that fit nowhere
by default), runs one session with Volcano's default configuration, publishes it as the daemon
does, and times every endpoint over real HTTP: the first request after the session (which builds
the per-session aggregates) and the median of later ones. Also times the session with and without
publishing, to show the web view costs the session nothing measurable.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import time
from collections.abc import Sequence

from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

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
            summary.publish(view)  # a fresh session: per-session aggregates are rebuilt
            times = []
            for _ in range(rounds + 1):
                t0 = time.perf_counter()
                resp = await client.get(path)
                await resp.read()
                times.append((time.perf_counter() - t0) * 1000)
                assert resp.status == 200, (path, resp.status)
            out[path] = (times[0], statistics.median(times[1:]))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m scheduler.web.loadcheck", description=__doc__)
    p.add_argument("--nodes", type=int, default=5000)
    p.add_argument("--running", type=int, default=150000)
    p.add_argument("--pending", type=int, default=1000)
    p.add_argument("--rounds", type=int, default=10)
    p.add_argument("--sessions", type=int, default=2, help="sessions timed with and without publishing")
    args = p.parse_args(argv)
    t0 = time.perf_counter()
    state = build(args.nodes, args.running, args.pending)
    print(f"cluster: {args.nodes:,} nodes, {args.running:,} running, {args.pending:,} pending pods "
          f"({time.perf_counter() - t0:.1f} s to build)")  # fmt: skip
    conf = default_configuration()
    plain, published = [], []
    summary = Summary()
    view = None
    for i in range(args.sessions):
        res, ssn = run_session_keep(state.snapshot(), conf, SessionOptions(), random.Random(i))
        plain.append(res.total_ms)
        t1 = time.perf_counter()
        res, ssn = run_session_keep(state.snapshot(), conf, SessionOptions(), random.Random(i))
        attrs = getattr(ssn.plugins.get("proportion"), "attrs", None)
        view = SessionView(i + 1, res, ssn.node_list, ssn.queues, attrs)
        summary.publish(view)
        published.append((time.perf_counter() - t1) * 1000)
    assert view is not None
    print(f"session: {statistics.median(plain):,.0f} ms without the web view, "
          f"{statistics.median(published):,.0f} ms with publishing (medians of {args.sessions})")  # fmt: skip
    print(f"{'endpoint':<40} {'first ms':>9} {'later ms':>9}")
    for path, (first, later) in asyncio.run(measure(summary, view, args.rounds)).items():
        print(f"{path:<40} {first:>9.1f} {later:>9.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
