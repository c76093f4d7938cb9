"""priority: order jobs and tasks by priority; lower-priority work may be preempted (spec 7.1)."""

from __future__ import annotations

from scheduler.framework.plugin import Plugin
from scheduler.framework.session import GANG_RECLAIM, PERMIT, EvictionContext, Session
from scheduler.model.job import JobInfo
from scheduler.model.objects import TaskInfo


def _minus_priority(job: JobInfo | TaskInfo) -> int:
    return -job.priority


class PriorityPlugin(Plugin):
    name = "priority"

    def on_session_open(self, ssn: Session) -> None:
        def task_order(left: TaskInfo, right: TaskInfo) -> int:
            if left.priority == right.priority:
                return 0
            return -1 if left.priority > right.priority else 1

        def job_order(left: JobInfo, right: JobInfo) -> int:
            if left.priority == right.priority:
                return 0
            return -1 if left.priority > right.priority else 1

        def preemptable(preemptor: TaskInfo, preemptees: list[TaskInfo]) -> tuple[list[TaskInfo], int]:
            pjob = ssn.jobs.get(preemptor.job)
            if pjob is None:
                return [], PERMIT
            victims: list[TaskInfo] = []
            for t in preemptees:
                if t.job != preemptor.job:
                    vjob = ssn.jobs.get(t.job)
                    if vjob is not None and vjob.priority < pjob.priority:
                        victims.append(t)
                elif t.priority < preemptor.priority:
                    victims.append(t)
            return victims, PERMIT

        def gang_evictable(ctx: EvictionContext, candidates: list[TaskInfo]) -> tuple[list[TaskInfo], int]:
            if ctx.kind == GANG_RECLAIM:
                return candidates, PERMIT  # reclaim is about queue shares, not priority
            victims = []
            for t in candidates:
                vjob = ssn.jobs.get(t.job)
                if vjob is not None and vjob.priority < ctx.job.priority:
                    victims.append(t)
            return victims, PERMIT

        def job_starving(job: JobInfo) -> bool:
            return job.ready_task_num() + job.waiting_task_num() < len(job.tasks)

        # higher priority first, for tasks as for jobs
        ssn.add_task_order_fn(self.name, task_order, key=_minus_priority)
        # higher priority first: the negated priority, smaller first
        ssn.add_job_order_fn(self.name, job_order, key=_minus_priority)
        ssn.add_preemptable_fn(self.name, preemptable)
        ssn.add_unified_evictable_fn(self.name, gang_evictable)
        ssn.add_job_starving_fn(self.name, job_starving)
