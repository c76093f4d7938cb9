"""Fencing: nothing is written once the lease is in doubt by our own clock, and nothing decided
before a pause is sent after it — even when the renew that follows the pause succeeds."""

from __future__ import annotations

from typing import Any

from scheduler.kube.binder import Binder
from scheduler.kube.cache import SchedulerCache
from scheduler.kube.fence import Fence
from scheduler.kube.status import EventRecorder, StatusWriter
from scheduler.metrics import SchedulerMetrics
from scheduler.model.objects import TaskStatus
from tests.daemon.fakes import FakeClient
from tests.daemon.test_cache_binder import cluster, decision


class FakeLease:
    """Renews as the elector does: a renew a renew deadline or more after the previous one
    starts a new tenure."""

    def __init__(self) -> None:
        self.t = 100.0
        self.is_leader = True
        self._last_renew = 100.0
        self.tenure = 1
        self.renew_deadline = 10.0

    @property
    def last_renew(self) -> float:
        return self._last_renew

    @last_renew.setter
    def last_renew(self, sent: float) -> None:
        if sent - self._last_renew >= self.renew_deadline:
            self.tenure += 1
        self._last_renew = sent

    def now(self) -> float:
        return self.t


def test_the_term_holds_while_renewals_come_in_time_and_ends_on_a_late_one() -> None:
    lease = FakeLease()
    fence = Fence(lease)
    closed: list[str] = []
    fence.on_closed.append(closed.append)
    term = fence.term()
    assert term is not None and fence.allows(term)
    for _ in range(5):  # renewals every 9 s: never a gap of the renew deadline
        lease.t += 9
        lease.last_renew = lease.t
        assert fence.allows(term)
    lease.t += 10.5  # no renewal for longer than the deadline: writes stop at once
    assert not fence.allows(term) and fence.term() is None and len(closed) == 1
    lease.last_renew = lease.t  # the renew after the pause succeeds (nobody took the lease)...
    new = fence.term()
    assert new is not None and new != term
    assert not fence.allows(term) and fence.allows(new)  # ...but old decisions stay unsent


def test_a_pause_no_one_observed_still_ends_the_term() -> None:
    # the process was stopped; the first thing to run after it is a renew that succeeds
    lease = FakeLease()
    fence = Fence(lease)
    term = fence.term()
    lease.t += 25
    lease.last_renew = lease.t
    assert not fence.allows(term)


def test_losing_the_lease_closes_the_fence() -> None:
    lease = FakeLease()
    fence = Fence(lease)
    term = fence.term()
    lease.is_leader = False
    assert not fence.allows(term) and fence.term() is None


async def test_binds_decided_before_a_pause_are_dropped_and_the_cache_forgets_them() -> None:
    c: SchedulerCache = cluster()
    client = FakeClient()
    lease = FakeLease()
    fence = Fence(lease)
    fence.on_closed.append(lambda _why: c.forget_assumed())
    rec = EventRecorder(client)  # type: ignore[arg-type]
    st = StatusWriter(client, c, rec)  # type: ignore[arg-type]
    b = Binder(client, c, st, rec, SchedulerMetrics(), fence=fence)  # type: ignore[arg-type]
    term = fence.term()
    d = decision(c)
    b._spawn = lambda coro: pending.append(coro)  # type: ignore[method-assign]
    pending: list[Any] = []
    assert b.submit([d], term=term) == 1  # claimed; the bind is queued behind the semaphore
    task = c.state.get_task("c1/p1")
    assert task is not None and task.status == TaskStatus.BOUND
    lease.t += 30  # SIGSTOP longer than the lease
    lease.last_renew = lease.t  # and a successful renew right after it
    for coro in pending:
        await coro
    assert client.binds == [] and b.fenced == 1
    task = c.state.get_task("c1/p1")
    assert task is not None and task.status == TaskStatus.PENDING and "c1/p1" not in c.assumed
    # a decision of the new term goes out
    assert b.submit([decision(c)], term=fence.term()) == 1
    for coro in pending[1:]:
        await coro
    assert len(client.binds) == 1


def test_a_decision_of_an_ended_term_is_not_even_claimed() -> None:
    c = cluster()
    lease = FakeLease()
    fence = Fence(lease)
    b = Binder(FakeClient(), c, None, None, SchedulerMetrics(), fence=fence)  # type: ignore[arg-type]
    term = fence.term()
    lease.t += 11
    assert b.submit([decision(c)], term=term) == 0 and not c.assumed


def test_renewals_made_while_the_fence_was_not_asked_keep_the_term() -> None:
    # a 30 s session: the lease thread renews every 2 s beside it, nothing asks the fence meanwhile
    lease = FakeLease()
    fence = Fence(lease)
    term = fence.term()
    for _ in range(15):
        lease.t += 2
        lease.last_renew = lease.t
    assert fence.allows(term) and fence.term() == term


def test_still_open_answers_by_the_clock_and_closes_nothing() -> None:
    # asked by the thread that sends binds during a session: only the loop's thread closes terms
    lease = FakeLease()
    fence = Fence(lease)
    closed: list[str] = []
    fence.on_closed.append(closed.append)
    term = fence.term()
    assert fence.still_open(term) and not fence.still_open((term or 0) + 1)
    lease.t += 11
    lease.last_renew = lease.t  # renewed after a gap of the deadline: a new tenure
    assert not fence.still_open(term) and closed == []
    assert not fence.allows(term) and len(closed) == 1
    lease2 = FakeLease()
    fence2 = Fence(lease2)
    term2 = fence2.term()
    lease2.t += lease2.renew_deadline  # not renewed in time
    assert not fence2.still_open(term2) and fence2.refused == 0
