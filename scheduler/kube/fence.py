"""Fencing: a replica writes only while it holds the lease by its own clock.

client-go's leader election stops acting when it cannot renew within the renew deadline; a
process that was paused (SIGSTOP, a long GC, a frozen VM) does not know it was paused, and on
resuming would send the decisions it made before — onto nodes a new leader has filled since.
So every write asks the fence first, and the fence answers from the monotonic clock alone:
writable while `last successful renew (its start) + renew deadline` has not passed.

Each stretch of continuous tenure is a *term*. A decision carries the term it was made in and is
sent only while that same term is still open: a pause longer than the renew deadline ends the
term (even if the renew that follows succeeds because no one else took the lease), so nothing
decided before a pause is ever sent after it. When the fence finds a term ended, it tells its
listeners once (the binder drops its queue, the cache forgets what it assumed).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import structlog

log = structlog.get_logger("vc-scheduler.fence")


class Lease(Protocol):
    """What the fence reads from the leader elector."""

    @property
    def is_leader(self) -> bool: ...

    last_renew: float  # now() when the last successful renew was *sent*
    # changes whenever the lease is acquired, or renewed after a gap of at least the renew
    # deadline since the previous successful renew: one value per stretch of continuous tenure
    tenure: int

    @property
    def renew_deadline(self) -> float: ...

    def now(self) -> float: ...


class Fence:
    """`term()` is the open term or None; `allows(term)` is True only while that term is open."""

    def __init__(self, lease: Lease | None) -> None:
        self.lease = lease
        self._term = 0
        self._open_tenure: int | None = None  # the lease tenure the open term belongs to
        self.on_closed: list[Callable[[str], None]] = []
        self.refused = 0  # writes refused, for logs and tests

    def _check(self) -> int | None:
        lease = self.lease
        if lease is None:  # no leader election: one writer by configuration
            return 0
        held = _held(lease)
        # the same term goes on only while the tenure does: the elector (which sees every renew,
        # even those made while a long session kept this thread from asking) starts a new one
        # after any renew gap that reached the deadline
        if held and self._open_tenure is not None and lease.tenure != self._open_tenure:
            self._close("the lease was renewed after a gap longer than the renew deadline")
        if not held:
            if self._open_tenure is not None:
                why = (
                    "not the leader" if not lease.is_leader else "lease not renewed within the renew deadline"
                )
                self._close(why)
            return None
        if self._open_tenure is None:
            self._term += 1
        self._open_tenure = lease.tenure
        return self._term

    def _close(self, why: str) -> None:
        self._open_tenure = None
        log.warning("fenced: writes stop until the lease is held again", reason=why, term=self._term)
        for fn in self.on_closed:
            fn(why)

    def still_open(self, term: int | None) -> bool:
        """Is `term` still open? Answered from the clock alone, without closing a term or telling
        anyone: what a thread other than the event loop's may ask (the loop closes terms)."""
        lease = self.lease
        if lease is None:
            return term in (None, 0)
        if self._open_tenure is None or (term is not None and term != self._term):
            return False
        # a new tenure (a renew after a gap of the deadline) ends the term too (see _check)
        return _held(lease) and lease.tenure == self._open_tenure

    def term(self) -> int | None:
        """The open term (decisions made now carry it), or None when this process may not write."""
        return self._check()

    def allows(self, term: int | None = None) -> bool:
        """May a write go now (of a decision made in `term`, if given)?"""
        now = self._check()
        ok = now is not None and (term is None or term == now)
        if not ok:
            self.refused += 1
        return ok


def _held(lease: Lease) -> bool:
    """We lead and the last renew, by our own clock, is younger than the renew deadline."""
    return lease.is_leader and lease.now() - lease.last_renew < lease.renew_deadline
