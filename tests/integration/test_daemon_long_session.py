"""A session longer than the lease's renew deadline (a large backlog after a restart) must neither
lose the lease nor drop its decisions: the lease is renewed beside the session.

The API server runs on a thread of its own here, as a real one runs in another process: the
daemon's sessions block the daemon's loop, and they must not block the server too.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from scheduler import daemon as daemon_module
from tests.integration.conftest import FAST_LEASE, Cluster, seeded, wait_for

apiserver = pytest.importorskip("scheduler.sim.apiserver", reason="the sandbox API server is not available")


class ThreadedServer:
    """The sandbox API server on its own thread and loop."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="apiserver", daemon=True)
        self.thread.start()
        self.srv: Any = self.call(self._start())

    async def _start(self) -> Any:
        srv = apiserver.ApiServer(host="127.0.0.1", port=0)
        await srv.start()
        return srv

    def call(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(30)

    def stop(self) -> None:
        self.call(self.srv.stop())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


@pytest.fixture
def threaded(tmp_path: Path) -> Iterator[Cluster]:
    server = ThreadedServer()
    c = seeded(Cluster(server.srv, tmp_path))
    try:
        yield c
    finally:
        server.stop()


async def test_a_session_longer_than_the_renew_deadline_keeps_the_lease_and_binds(
    threaded: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = daemon_module.run_actions
    long_sessions = 0

    def slow_run_actions(ssn: Any, timings: dict[str, float]) -> None:
        # every session over pending pods computes for twice the renew deadline (1.5 s) without
        # yielding the loop, as a 20,000-pod backlog does at scale
        nonlocal long_sessions
        if any(t.node_name == "" for job in ssn.jobs.values() for t in job.tasks.values()):
            long_sessions += 1
            time.sleep(3.0)
        real(ssn, timings)

    monkeypatch.setattr(daemon_module, "run_actions", slow_run_actions)
    d = await threaded.start_daemon(*FAST_LEASE)
    await wait_for(lambda: d.is_leader, 5, "leader")
    assert d.elector is not None
    transitions = d.elector.transitions
    threaded.job("big", 3)
    await wait_for(lambda: len(threaded.bound()) == 3, 20, "the long session's binds")
    assert long_sessions == 1  # the first long session's decisions were sent, not dropped and redone
    assert d.fence.refused == 0
    lease = threaded.store.get("leases", "volcano-system", "volcano")
    assert lease["spec"]["holderIdentity"] == d.elector.identity
    assert d.elector.transitions == transitions  # never lost, never re-acquired
    assert await threaded.stop_daemon(d) == 0
    lease = threaded.store.get("leases", "volcano-system", "volcano")
    assert lease["spec"]["holderIdentity"] == ""  # released from the lease thread on shutdown
