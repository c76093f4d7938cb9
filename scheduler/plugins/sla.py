"""sla: a job that has waited longer than its SLA waiting time goes first and is admitted.

The waiting time comes from the job's PodGroup annotation `volcano.sh/sla-waiting-time` (or
`sla-waiting-time`), else from the plugin argument `sla-waiting-time`; both are Go durations
(`1h30m`). Jobs are ordered by creation + waiting time, jobs without an SLA last; once that
deadline has passed, enqueue and pipelining vote to permit the job.
"""

from __future__ import annotations

from typing import ClassVar

from scheduler.framework.arguments import Arguments
from scheduler.framework.plugin import Plugin
from scheduler.framework.session import ABSTAIN, PERMIT, Session
from scheduler.model.duration import parse_duration
from scheduler.model.job import JobInfo

WAITING_TIME = "sla-waiting-time"


class SlaPlugin(Plugin):
    name: ClassVar[str] = "sla"

    def __init__(self, arguments: Arguments) -> None:
        super().__init__(arguments)
        self.waiting_time, _ = _global_waiting_time(arguments)

    @classmethod
    def validate(cls, arguments: Arguments) -> list[str] | None:
        cls(arguments)
        problem = _global_waiting_time(arguments)[1]
        return [problem] if problem else None

    def _deadline(self, job: JobInfo) -> float | None:
        wait = job.waiting_time if job.waiting_time is not None else self.waiting_time
        return None if wait is None else job.creation + wait

    def on_session_open(self, ssn: Session) -> None:
        def job_order(left: JobInfo, right: JobInfo) -> int:
            ld, rd = self._deadline(left), self._deadline(right)
            if ld is None:
                return 0 if rd is None else 1
            if rd is None:
                return -1
            if ld == rd:
                return 0
            return -1 if ld < rd else 1

        def overdue(job: JobInfo) -> int:
            deadline = self._deadline(job)
            if deadline is None or ssn.now < deadline:
                return ABSTAIN
            return PERMIT

        ssn.add_job_order_fn(self.name, job_order)
        ssn.add_job_enqueueable_fn(self.name, overdue)
        ssn.add_job_pipelined_fn(self.name, overdue)


def _global_waiting_time(arguments: Arguments) -> tuple[float | None, str]:
    """The argument in seconds, or None with why it is ignored (Volcano ignores a bad one too)."""
    raw = arguments.raw(WAITING_TIME)
    if raw is None:
        return None, ""
    where = f"argument {WAITING_TIME!r}"
    try:
        seconds = parse_duration(str(raw))
    except ValueError as exc:
        return None, f"{where}: {exc}; it is ignored"
    if seconds <= 0:
        return None, f"{where}: must be a positive duration, got {raw!r}; it is ignored"
    return seconds, ""
