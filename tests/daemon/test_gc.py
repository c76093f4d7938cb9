"""The daemon process collects once after the initial sync and freezes the cache out of the collector."""

from __future__ import annotations

import asyncio
import gc
import subprocess
import sys
from types import SimpleNamespace

import pytest

from scheduler.daemon import Daemon, parse_args
from scheduler.kube.informer import Backoff


@pytest.mark.parametrize("collect", [True, False])
def test_settle_gc_freezes_and_reenables(collect: bool) -> None:
    code = (
        "import gc\n"
        "from scheduler.daemon import settle_gc\n"
        "cache = [{'pod': i} for i in range(10000)]\n"
        "gc.disable()\n"
        "a = []; a.append(a); del a\n"  # one cycle of garbage: collected first, or frozen with the rest
        f"settle_gc(collect={collect})\n"
        "print(gc.isenabled(), gc.get_freeze_count() >= 10000, gc.get_threshold()[0], gc.collect())\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    assert out == ["True", "True", "20000", "0"]


def test_an_embedded_daemon_leaves_the_collector_alone() -> None:
    d = Daemon(parse_args(["--leader-elect=false"]))
    assert d.manage_gc is False  # only the vc-scheduler process entry point turns it on


async def test_a_slow_initial_sync_keeps_the_collector_off_until_a_list_fails() -> None:
    # past --resource-sync-timeout a sync that is only slow (600,000 pods on a slow host) keeps
    # the collector off; one whose lists fail and retry gets it back
    d = Daemon(parse_args(["--leader-elect=false", "--resource-sync-timeout=50ms"]))
    d.manage_gc = True
    pods = SimpleNamespace(synced=asyncio.Event(), backoff=Backoff(), resource=SimpleNamespace(kind="Pod"))
    d.informers = [pods]  # type: ignore[list-item]
    gc.disable()
    try:
        waiting = asyncio.ensure_future(d._wait_synced())
        await asyncio.sleep(0.3)
        assert not gc.isenabled() and not d.synced.is_set()
        pods.backoff.next_delay()  # the list failed and is retried
        await asyncio.sleep(1.3)
        assert gc.isenabled()
        pods.synced.set()
        await asyncio.wait_for(waiting, 3)
        assert d.synced.is_set()
    finally:
        gc.enable()


@pytest.mark.parametrize("manage_gc", [True, False])
def test_a_session_of_the_process_daemon_runs_with_the_collector_paused(
    manage_gc: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """vc-scheduler's own daemon pauses the collector from snapshot to close, as run_session does;
    an embedded one leaves it as it is. Either way it is on again after the session."""
    import scheduler.daemon as daemon_module

    d = Daemon(parse_args(["--leader-elect=false"]))
    d.reloader.load_initial(strict=False)
    d.manage_gc = manage_gc
    seen: list[bool] = []
    real = daemon_module.run_actions

    def spy(ssn, timings=None):  # type: ignore[no-untyped-def]
        seen.append(gc.isenabled())
        real(ssn, timings)

    monkeypatch.setattr(daemon_module, "run_actions", spy)
    gc.enable()
    assert d.run_once() is not None
    assert seen == [not manage_gc]
    assert gc.isenabled()


def test_the_session_loop_keeps_the_collector_off_until_a_turn_without_a_session(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Back-to-back sessions (a burst) run no collection between them; the first turn of the loop
    without a session, or COLLECTOR_DEFER_MAX_S, turns the collector on again, with what the
    sessions left alive frozen."""
    import scheduler.daemon as daemon_module

    d = Daemon(parse_args(["--leader-elect=false"]))
    d.reloader.load_initial(strict=False)
    d.manage_gc = True
    d._in_session_loop = True
    now = [1000.0]
    monkeypatch.setattr(daemon_module.time, "monotonic", lambda: now[0])
    gc.enable()
    try:
        assert d.run_once() is not None
        d._collector_on(idle=False)
        assert not gc.isenabled()  # another session follows: still off
        now[0] += 1.0
        assert d.run_once() is not None
        d._collector_on(idle=False)
        assert not gc.isenabled()
        survivors = [[i] for i in range(30_000)]  # what the sessions left alive
        frozen = gc.get_freeze_count()
        d._collector_on(idle=True)  # a turn without a session
        assert gc.isenabled()
        # ... joins the frozen cache: no young collection walks it when the collector comes back
        assert gc.get_freeze_count() >= frozen + len(survivors)
        assert gc.get_count()[0] < 1_000
        assert d.run_once() is not None  # off again from this session on
        now[0] += daemon_module.COLLECTOR_DEFER_MAX_S
        d._collector_on(idle=False)
        assert gc.isenabled()  # a steady stream of sessions still collects
        gc.disable()  # someone else's pause is left to them
        assert d.run_once() is not None
        d._collector_on(idle=True)
        assert not gc.isenabled()
    finally:
        gc.unfreeze()  # the rest of the test run collects as usual
        gc.enable()
