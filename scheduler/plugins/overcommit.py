"""overcommit: admit jobs while their minResources fit the cluster times a factor (spec 7.9)."""

from __future__ import annotations

from scheduler.framework.arguments import ArgumentError, Arguments
from scheduler.framework.plugin import Plugin
from scheduler.framework.session import PERMIT, REJECT, Session
from scheduler.framework.shortfall import explain_sum
from scheduler.model.job import JobInfo
from scheduler.model.objects import PodGroupPhase
from scheduler.model.resources import Resource
from scheduler.plugins.queuesums import queue_sums

FACTOR_KEY = "overcommit-factor"
DEFAULT_FACTOR = 1.2


def _whole_cluster(_job: JobInfo) -> str:
    return ""


def _admitted(job: JobInfo) -> list[tuple[int, Resource]]:
    """What an admitted job holds back: all its minResources while Inqueue, the rest once running."""
    if job.min_resources is None:
        return []
    phase = job.pod_group_status.phase
    if phase == PodGroupPhase.INQUEUE:
        return [(0, job.min_resources)]
    if phase == PodGroupPhase.RUNNING and job.ready_task_num() >= job.min_available:
        return [(0, job.min_resources.clone().sub(job.allocated).clip_at_zero())]
    return []


class OvercommitPlugin(Plugin):
    name = "overcommit"

    def __init__(self, arguments: Arguments) -> None:
        super().__init__(arguments)
        factor = arguments.get_float(FACTOR_KEY, DEFAULT_FACTOR)
        # Volcano replaces factors below 1 with the default rather than refusing them.
        self.factor = factor if factor >= 1.0 else DEFAULT_FACTOR

    @classmethod
    def validate(cls, arguments: Arguments) -> None:
        f = arguments.get_float(FACTOR_KEY, DEFAULT_FACTOR)
        if f != f:  # NaN
            raise ArgumentError(f"plugin 'overcommit' argument {FACTOR_KEY!r}: must be a number")

    def on_session_open(self, ssn: Session) -> None:
        ceiling = ssn.total_resource.clone().multi(self.factor)
        used = ssn.used_total()
        idle = ceiling.clone().sub(used)
        # one sum over every job, kept between sessions like the queues' sums
        summed = queue_sums(ssn, self.name, 1, _admitted, _whole_cluster).get("")
        inqueue = Resource() if summed is None else summed[0].clone()

        def job_enqueueable(job: JobInfo) -> int:
            if job.min_resources is None:
                return PERMIT
            want = inqueue.clone().add(job.min_resources)
            if want.less_equal_with_dimension(idle, job.min_resources):
                return PERMIT
            detail = explain_sum(
                job.min_resources,
                [("minResources", job.min_resources), ("inqueue", inqueue), ("used", used)],
                (f"{self.factor:g} x cluster =", ceiling),
            )
            msg = f"resource in cluster is overused: {detail}"
            ssn.decisions.job_events.append((job.uid, "Normal", "Unschedulable", msg))
            return REJECT

        def job_enqueued(job: JobInfo) -> None:
            if job.min_resources is not None:
                inqueue.add(job.min_resources)

        ssn.add_job_enqueueable_fn(self.name, job_enqueueable)
        ssn.add_job_enqueued_fn(self.name, job_enqueued)
