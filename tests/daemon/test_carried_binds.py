"""A batch's unsent binds carried beside the next session (Binder.carry_into): they leave while the
event loop is held, each pod is bound once, what the sender did not send goes back to the loop,
and a term that ended stops them as it stops every write.

The sandbox API server runs on its own thread (tests/daemon/test_early_binds.py's fixtures)."""

from __future__ import annotations

import asyncio

from scheduler.daemon import Daemon, parse_args
from scheduler.kube.binder import Binder
from scheduler.kube.client import KubeClient
from scheduler.kube.earlybind import SENT, UNSENT, CommitSender
from scheduler.kube.fence import Fence
from tests.daemon.test_early_binds import (
    NS,
    ServerThread,
    _binder,
    _cluster,
    _decide,
    _hold_loop_until,
    client,
    server,
)
from tests.daemon.test_fence import FakeLease

__all__ = ["client", "server"]  # the fixtures, imported for pytest


async def _batch_started(b: Binder) -> None:
    """Let the batch just submitted reach its workers (as the pacer's wait lets it)."""
    for _ in range(5):
        await asyncio.sleep(0)


async def test_a_batch_carried_beside_the_next_session_binds_each_pod_once(
    server: ServerThread, client: KubeClient
) -> None:
    names = [f"p{i}" for i in range(12)]
    cache = _cluster(server, [*names, "own"])
    b = _binder(cache, client)
    b.concurrency = 1  # one bind on the loop's wire; the rest wait in the batch's queue
    assert b.submit([_decide(cache, n) for n in names], term=0) == len(names)
    await _batch_started(b)
    await b.prepare_early()
    sender = b.commit_sender(0, not_before=float("inf"))
    assert sender is not None
    carried = b.carry_into(sender, 0)
    assert carried == len(names) - 1
    own = _decide(cache, "own")
    sender.hand(own)  # this session's commit goes with them, whatever `not_before` said
    # the loop is held as by a session: only the sender's thread writes these Bindings
    sent_names = [*names[1:], "own"]
    assert _hold_loop_until(lambda: all(server.bindings(n) for n in sent_names))
    early = sender.finish()
    assert [e.outcome for e in early] == [SENT] * (carried + 1)
    # the carried binds are not this session's: only its own is settled here, and skipped by submit
    assert b.settle_early(early, 0) == {f"{NS}/own"}
    assert b.submit([own], term=0) == 0
    assert await b.drain(5)
    assert all(server.bindings(n) == [201] for n in [*names, "own"])
    assert b.bound == len(names) + 1 and b.carried == carried and b.early == 1
    assert all(cache.state.get_task(f"{NS}/{n}").node_name == "n1" for n in names)  # type: ignore[union-attr]


async def test_carried_binds_of_a_term_that_ended_are_never_sent(
    server: ServerThread, client: KubeClient
) -> None:
    names = ["p1", "p2", "p3"]
    cache = _cluster(server, names)
    lease = FakeLease()
    fence = Fence(lease)
    b = _binder(cache, client, fence)
    term = fence.term()
    b.concurrency = 1
    assert b.submit([_decide(cache, n) for n in names], term=term) == 3
    await _batch_started(b)
    await b.prepare_early()
    sender = b.commit_sender(term)
    assert sender is not None
    lease.t += lease.renew_deadline + 1  # the term is over before the sender's first send
    assert b.carry_into(sender, term) == 2
    _hold_loop_until(lambda: bool(server.bindings("p2") or server.bindings("p3")), 0.3)
    early = sender.finish()
    assert [e.outcome for e in early] == [UNSENT, UNSENT]
    b.settle_early(early, term)  # back to the loop, where the fence refuses them too
    assert await b.drain(5)
    assert server.bindings("p2") == [] and server.bindings("p3") == []
    assert b.fenced >= 2
    assert all(not cache.state.get_task(f"{NS}/{n}").node_name for n in ("p2", "p3"))  # type: ignore[union-attr]


async def test_a_sender_pipelines_more_binds_than_a_batch_and_all_are_answered(
    server: ServerThread, client: KubeClient
) -> None:
    names = [f"p{i}" for i in range(3 * CommitSender.PIPELINE + 1)]
    cache = _cluster(server, names)
    b = _binder(cache, client)
    await b.prepare_early()
    sender = b.commit_sender(0)
    assert sender is not None
    for n in names:
        sender.hand(_decide(cache, n))
    assert _hold_loop_until(lambda: all(server.bindings(n) for n in names))
    early = sender.finish()
    assert [e.outcome for e in early] == [SENT] * len(names)
    assert b.settle_early(early, 0) == {f"{NS}/{n}" for n in names}
    assert all(server.bindings(n) == [201] for n in names) and b.bound == len(names)


async def test_the_next_session_waits_for_bindings_only_when_no_sender_can_carry_them(
    client: KubeClient,
) -> None:
    d = Daemon(parse_args(["--leader-elect=false"]), client)
    d.reloader.load_initial(strict=False)
    d._wire_writers()
    assert d.binder is not None
    assert d._bindings_settled() is d.binder.settled  # run_once callers without a sender
    d.send_during_session = True
    assert d._bindings_settled() is None
    d.binder.dry_run = True
    assert d._bindings_settled() is d.binder.settled
