"""The daemon leaves no reference cycles behind, even through API errors, closed watches and a bad
config: the process daemon freezes what its sessions leave alive instead of walking it with the
cyclic collector (scheduler/daemon.py, Daemon._collector_on), so a cycle it made would never be
freed."""

from __future__ import annotations

import asyncio
import gc
import types
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.conftest import Cluster, wait_for

SCHEDULER = str(Path(__file__).resolve().parents[2] / "scheduler")
# the sandbox API server and its controllers run in this process too; their garbage is not the daemon's
SANDBOX = str(Path(SCHEDULER) / "sim")


def _ours(obj: object) -> str | None:
    """What names `obj` as made by the daemon's code: a class of the scheduler package (not the
    sandbox), or a frame or function of its code."""
    if isinstance(obj, types.FrameType):
        path = obj.f_code.co_filename
        return f"frame {obj.f_code.co_name} ({path})" if _daemon_file(path) else None
    if isinstance(obj, types.FunctionType):
        path = obj.__code__.co_filename
        return f"function {obj.__qualname__}" if _daemon_file(path) else None
    module = getattr(type(obj), "__module__", "") or ""
    if module.startswith("scheduler.") and not module.startswith("scheduler.sim"):
        return f"{module}.{type(obj).__qualname__}"
    return None


def _daemon_file(path: str) -> bool:
    return path.startswith(SCHEDULER) and not path.startswith(SANDBOX)


@pytest.fixture
def saved_garbage() -> Iterator[list[object]]:
    """From here on, every object the collector finds unreachable is kept in gc.garbage."""
    gc.collect()
    gc.garbage.clear()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        yield gc.garbage
    finally:
        gc.set_debug(0)
        gc.garbage.clear()


async def test_bursts_errors_and_reconnects_leave_no_cycles(
    cluster: Cluster, saved_garbage: list[object]
) -> None:
    d = await cluster.start_daemon("--leader-elect=false")
    # bursts of gangs, bound (the three nodes hold 48 pods of 1Gi)
    for wave in range(3):
        for j in range(6):
            cluster.job(f"w{wave}-g{j}", 2, cpu="100m")
    await wait_for(lambda: len(cluster.bound()) == 36, 20, "36 pods bound")
    # half of every request fails (bindings, statuses, events, lists): retried and failed writes
    # with their exceptions; the faulty wave is bound through them
    cluster.srv.faults.rng.seed(7)
    cluster.srv.set_faults(error_rate=0.5, error_codes=[500, 503])
    for j in range(5):
        cluster.job(f"faulty-{j}", 2, cpu="100m")
    await wait_for(lambda: len(cluster.bound()) == 46, 30, "the faulty wave bound through the errors")
    # watches end every 0.3 s (re-lists, resumed watches) and a bad config arrives (kept out)
    cluster.srv.set_faults(error_rate=0, close_watches_every=0.3)
    cluster.configmap("actions: [not, a, string")
    await asyncio.sleep(1.5)
    cluster.srv.set_faults(close_watches_every=0)
    assert cluster.srv.faults.injected > 20
    # churn: bound pods deleted, their jobs gone
    for wave in range(3):
        for j in range(6):
            for i in range(2):
                cluster.store.delete("pods", "default", f"w{wave}-g{j}-{i}", grace_period_seconds=0)
    await wait_for(lambda: len(cluster.bound()) == 10, 10, "the deleted pods gone")
    await asyncio.sleep(0.5)  # sessions see the deletions
    assert d.sessions > 10

    gc.collect()
    cycles = Counter(name for obj in saved_garbage if (name := _ours(obj)) is not None)
    assert not cycles, f"the daemon left reference cycles: {cycles.most_common(15)}"


def test_the_audit_sees_a_cycle_of_the_daemon_s_objects(saved_garbage: list[object]) -> None:
    """The check above can fail: a resource list that holds itself is found."""
    from scheduler.model.resources import Resource

    r = Resource()
    r.scalars["self"] = r  # type: ignore[assignment]
    # the compiled class or its pure twin, whichever this build runs
    name = f"{type(r).__module__}.{type(r).__qualname__}"
    del r
    gc.collect()
    assert name in {_ours(o) for o in saved_garbage}
