"""After a restart the first session runs as soon as the initial sync is done, not a period later."""

from __future__ import annotations

import asyncio
import gc
import time

import pytest

from scheduler import daemon as daemon_module
from scheduler.daemon import Daemon, parse_args
from tests.integration.conftest import Cluster, wait_for


async def test_first_session_runs_right_after_the_initial_sync(cluster: Cluster) -> None:
    cluster.job("ready", 2)
    t0 = time.monotonic()
    # a long period: with the old loop the first bind came one full period after the start
    d = await cluster.start_daemon("--leader-elect=false", "--schedule-period=20s")
    await wait_for(lambda: len(cluster.bound()) == 2, 5, "both pods bound")
    assert time.monotonic() - t0 < 10
    assert d.sessions >= 1


async def test_with_leader_election_the_first_session_also_runs_at_once(cluster: Cluster) -> None:
    from tests.integration.conftest import FAST_LEASE

    cluster.job("led", 1)
    t0 = time.monotonic()
    await cluster.start_daemon(*FAST_LEASE, "--schedule-period=20s")
    await wait_for(lambda: len(cluster.bound()) == 1, 8, "the pod bound by the new leader")
    assert time.monotonic() - t0 < 10


async def test_the_collection_after_the_initial_sync_waits_for_the_first_bindings(
    cluster: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the daemon process collects once over its new cache (seconds at 600,000 pods): after the
    # first session's Bindings went out, not between the sync and the first session
    cluster.job("ready", 2)
    seen: list[tuple[int, int]] = []
    monkeypatch.setattr(
        daemon_module, "settle_gc", lambda: seen.append((d.sessions, len(cluster.binding_requests())))
    )
    d = Daemon(
        parse_args(["--kubeconfig", cluster.kubeconfig, "--leader-elect=false", "--schedule-period=100ms"])
    )
    d.manage_gc = True  # as the vc-scheduler process runs it
    try:
        cluster.daemons.append((d, asyncio.ensure_future(d.run())))
        await wait_for(lambda: seen, 10, "the collection after the initial sync")
        sessions, bindings = seen[0]
        assert sessions >= 1 and bindings >= 1
        await asyncio.sleep(0.5)
        assert len(seen) == 1  # once
    finally:
        gc.enable()  # the stand-in above does not turn the collector back on
