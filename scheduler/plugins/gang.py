"""gang: a job runs only when at least minMember of its tasks can (spec 7.2).

Besides its votes it owns the PodGroup conditions written at session close: `Unschedulable` with
the "k/n tasks in gang unschedulable" message, or `Scheduled` once the gang is ready.
"""

from __future__ import annotations

from scheduler.framework.messages import job_fit_error
from scheduler.framework.plugin import Plugin
from scheduler.framework.session import PERMIT, REJECT, EvictionContext, Session, ValidateResult
from scheduler.model.job import JobInfo
from scheduler.model.objects import ALLOCATED_STATUSES, Condition, TaskInfo, TaskStatus

NOT_ENOUGH_PODS_OF_TASK = "NotEnoughPodsOfTask"
NOT_ENOUGH_TASKS = "NotEnoughTasks"
NOT_ENOUGH_RESOURCES = "NotEnoughResources"

# the members themselves: a member looked up on TaskStatus goes through EnumType's __getattr__
# hook (~900 instructions), and the close asks these of every job not ready
_PENDING, _PIPELINED, _RELEASING = TaskStatus.PENDING, TaskStatus.PIPELINED, TaskStatus.RELEASING
_SCHEDULED = (TaskStatus.RUNNING, TaskStatus.BOUND, TaskStatus.SUCCEEDED, TaskStatus.FAILED)


def set_condition(job: JobInfo, cond: Condition) -> None:
    conds = job.pod_group_status.conditions
    for i, c in enumerate(conds):
        if c.type == cond.type:
            conds[i] = cond
            return
    conds.append(cond)


class GangPlugin(Plugin):
    name = "gang"

    def __init__(self, arguments):  # type: ignore[no-untyped-def]
        super().__init__(arguments)
        self.unschedulable_jobs: dict[str, int] = {}

    def on_session_open(self, ssn: Session) -> None:
        def job_valid(job: JobInfo) -> ValidateResult | None:
            # the role check only for a job that names role minimums (it passes otherwise)
            if job.task_min_available and not job.check_task_valid():
                return ValidateResult(
                    False, NOT_ENOUGH_PODS_OF_TASK, "Not enough valid pods of each task for gang-scheduling"
                )
            valid = job.valid_task_num()
            if valid < job.min_available:
                return ValidateResult(
                    False,
                    NOT_ENOUGH_TASKS,
                    f"Not enough valid tasks for gang-scheduling, valid: {valid}, min: {job.min_available}",
                )
            return None

        def preemptable(_preemptor: TaskInfo, preemptees: list[TaskInfo]) -> tuple[list[TaskInfo], int]:
            remaining: dict[str, int] = {}
            victims: list[TaskInfo] = []
            for t in preemptees:
                job = ssn.jobs.get(t.job)
                if job is None:
                    continue
                if t.job not in remaining:
                    remaining[t.job] = job.ready_task_num()
                if remaining[t.job] > job.min_available:
                    remaining[t.job] -= 1
                    victims.append(t)
            return victims, PERMIT

        def job_order(left: JobInfo, right: JobInfo) -> int:
            lr, rr = left.is_ready(), right.is_ready()
            if lr == rr:
                return 0
            return 1 if lr else -1

        def job_ready(job: JobInfo) -> bool:
            return job.is_ready() and (not job.task_min_available or job.check_task_ready())

        def job_pipelined(job: JobInfo) -> int:
            if job.task_min_available and not job.check_task_pipelined():
                return REJECT
            return PERMIT if job.is_pipelined() else REJECT

        def job_starving(job: JobInfo) -> bool:
            return job.is_starving()

        def gang_evictable(_ctx: EvictionContext, candidates: list[TaskInfo]) -> tuple[list[TaskInfo], int]:
            # gangpreempt/gangreclaim keep gangs whole through their victim bundles
            return candidates, PERMIT

        ssn.add_job_valid_fn(self.name, job_valid)
        ssn.add_unified_evictable_fn(self.name, gang_evictable)
        ssn.add_preemptable_fn(self.name, preemptable)
        ssn.add_reclaimable_fn(self.name, preemptable)
        # jobs not yet ready first: False sorts before True
        ssn.add_job_order_fn(self.name, job_order, key=JobInfo.is_ready)
        ssn.add_job_ready_fn(self.name, job_ready)
        ssn.add_job_pipelined_fn(self.name, job_pipelined)
        ssn.add_job_starving_fn(self.name, job_starving)

    def on_session_close(self, ssn: Session) -> None:
        self.unschedulable_jobs.clear()
        # one condition for every ready job: conditions are replaced, never changed in place
        scheduled = Condition(
            "Scheduled",
            "True",
            "tasks in gang are ready to be scheduled",
            "",
            transition_id=ssn.uid,
        )
        for job in ssn.active_jobs():
            if not job.tasks:
                continue
            if not job.is_ready() and not _only_releasing(job):
                schedulable = job.ready_task_num() + sum(
                    1
                    for t in job.task_status_index.get(_PENDING, {}).values()
                    if t.last_tx is not None and t.last_tx[0] in ALLOCATED_STATUSES
                )
                unready = job.min_available - schedulable
                msg = f"{unready}/{len(job.tasks)} tasks in gang unschedulable: {job_fit_error(job)}"
                self.unschedulable_jobs[job.uid] = max(unready, 0)
                set_condition(
                    job,
                    Condition("Unschedulable", "True", NOT_ENOUGH_RESOURCES, msg, transition_id=ssn.uid),
                )
            else:
                set_condition(job, scheduled)


def _only_releasing(job: JobInfo) -> bool:
    """Not ready only because scheduled tasks are being released: no condition churn for that."""
    # a releasing task never placed (deleted while pending) holds no gang slot
    releasing = sum(1 for t in job.tasks_in(_RELEASING) if t.node_name)
    if not releasing or job.count(_PENDING, _PIPELINED):
        return False
    scheduled = job.count(*_SCHEDULED)
    return scheduled + releasing >= job.min_available
