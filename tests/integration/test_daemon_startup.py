"""After a restart the first session runs as soon as the initial sync is done, not a period later."""

from __future__ import annotations

import time

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
