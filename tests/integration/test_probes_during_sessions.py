"""Probes and scrapes answer while a session holds the daemon's loop (scheduler/server.py).

A session is plain computation on the daemon's event loop; at 20,000 nodes a backlog's session
runs for many seconds. The HTTP server has its own thread so that a kubelet's probe or a
Prometheus scrape is not queued behind it. The sessions here are made long by a wrapper that
blocks the loop, as a real long session does, and the requests come from a plain thread (the
test's own loop is the daemon's, blocked too).
"""

from __future__ import annotations

import asyncio
import threading
import time
import urllib.request
from typing import Any

import aiohttp

from scheduler.daemon import Daemon
from tests.integration.conftest import Cluster, wait_for

BLOCK_S = 2.0


def _long_sessions(d: Daemon, started: threading.Event) -> None:
    """Every session from now on holds the loop for BLOCK_S before it decides."""
    original = d.run_once

    def slow() -> Any:
        started.set()
        time.sleep(BLOCK_S)
        return original()

    d.run_once = slow  # type: ignore[method-assign]


def _fetch_during(base: str, paths: list[str], started: threading.Event) -> dict[str, tuple[int, float, str]]:
    """GET each path once a session has begun: status, seconds to the answer, body."""
    answers: dict[str, tuple[int, float, str]] = {}

    def run() -> None:
        started.wait(10)
        for path in paths:
            t0 = time.monotonic()
            with urllib.request.urlopen(base + path, timeout=BLOCK_S) as r:
                answers[path] = (r.status, time.monotonic() - t0, r.read().decode())

    t = threading.Thread(target=run)
    t.start()
    t.join(15)
    return answers


async def test_probes_and_metrics_answer_while_a_session_blocks_the_loop(cluster: Cluster) -> None:
    cluster.job("m", 2)
    d = await cluster.start_daemon("--leader-elect=false")
    await wait_for(lambda: len(cluster.bound()) == 2, 10, "pods bound")
    started = threading.Event()
    cluster.job("late", 1)  # keeps sessions coming
    _long_sessions(d, started)
    base = f"http://127.0.0.1:{d.ports[0]}"
    answers = await asyncio.to_thread(_fetch_during, base, ["/healthz", "/readyz", "/metrics"], started)
    assert set(answers) == {"/healthz", "/readyz", "/metrics"}
    for path, (status, seconds, _body) in answers.items():
        assert status == 200, path
        # a session of BLOCK_S was running: an answer from the daemon's loop would wait for it
        assert seconds < BLOCK_S / 2, (path, seconds)
    assert "volcano_e2e_scheduling_latency_milliseconds_count" in answers["/metrics"][2]
    assert "leader" in answers["/readyz"][2]


async def test_web_view_answers_from_the_daemon_loop_and_streams_sessions(cluster: Cluster) -> None:
    cluster.job("w", 2)
    d = await cluster.start_daemon("--leader-elect=false", "--enable-web")
    await wait_for(lambda: len(cluster.bound()) == 2, 10, "pods bound")
    base = f"http://127.0.0.1:{d.ports[0]}"

    async with aiohttp.ClientSession() as s:
        async with s.get(f"{base}/api/overview") as r:
            assert r.status == 200
            overview = await r.json()
        assert overview  # computed on the daemon's loop from the last session
        async with s.get(f"{base}/api/events") as r:
            first = await asyncio.wait_for(r.content.readuntil(b"\n\n"), 5)
            assert first.startswith(b"event: session")
            before = d.sessions
            cluster.job("w2", 1)  # a new session, announced across the threads
            nxt = await asyncio.wait_for(r.content.readuntil(b"\n\n"), 5)
            n = int(nxt.decode().split("data: ")[1])
            assert n > 0 and d.sessions > before
