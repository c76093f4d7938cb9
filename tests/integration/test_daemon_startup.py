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


async def test_the_cache_is_frozen_without_a_full_collection_before_the_first_session(
    cluster: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the daemon process moves its new cache out of the collector's sight at the end of the
    # initial sync, without the full collection over it (seconds at 600,000 pods) that would
    # delay the first session and so the first bind
    cluster.job("ready", 2)
    seen: list[tuple[bool, int]] = []
    monkeypatch.setattr(daemon_module, "settle_gc", lambda collect=True: seen.append((collect, d.sessions)))
    d = Daemon(
        parse_args(["--kubeconfig", cluster.kubeconfig, "--leader-elect=false", "--schedule-period=100ms"])
    )
    d.manage_gc = True  # as the vc-scheduler process runs it
    try:
        cluster.daemons.append((d, asyncio.ensure_future(d.run())))
        await wait_for(lambda: len(cluster.bound()) == 2, 10, "both pods bound")
        assert seen == [(False, 0)]  # once, before the first session, no collection
    finally:
        gc.enable()  # the stand-in above does not turn the collector back on
