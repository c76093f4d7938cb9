"""enqueue: move PodGroups from Pending to Inqueue when their queue and the cluster can admit them.

Spec 6.1. Queues are visited in queue order, re-evaluated after every admission, and each pending
job is tried once per cycle.
"""

from __future__ import annotations

from scheduler.actions.worklist import queue_worklist
from scheduler.framework.session import Session
from scheduler.model.job import JobInfo
from scheduler.model.objects import PodGroupPhase, TaskStatus


def enqueue(ssn: Session) -> None:
    for job in ssn.jobs.values():
        if job.schedule_start == 0.0:
            job.schedule_start = ssn.now
    queues, jobs_by_queue = queue_worklist(ssn, ssn.jobs.values(), JobInfo.is_pending)

    while not queues.empty():
        q = queues.pop()
        jobs = jobs_by_queue.get(q.name)
        if jobs is None or jobs.empty():
            continue
        job = jobs.pop()
        events_before = len(ssn.decisions.job_events)
        if job.min_resources is None or ssn.job_enqueueable(job):
            ssn.job_enqueued(job)
            job.pod_group_status.phase = PodGroupPhase.INQUEUE
        else:
            # Users read this on the pending pods: say why the gang was not admitted, and when a
            # pod asks for something no node can ever give, name that request first.
            why = [m for (uid, _t, _r, m) in ssn.decisions.job_events[events_before:] if uid == job.uid]
            job.fit_error = "job is not admitted (enqueue): " + (
                _invalid_request(ssn, job)
                or ("; ".join(why) if why else "its minResources do not fit the queue or the cluster")
            )
        queues.push(q)


def _invalid_request(ssn: Session, job: JobInfo) -> str:
    """The first pending pod's request that no node could ever satisfy (a failed pre-predicate
    that evictions cannot cure, e.g. vgpu-cores above 100), or ""."""
    for task in job.task_status_index.get(TaskStatus.PENDING, {}).values():
        unfit = ssn.pre_predicate(task)
        if unfit is not None and not unfit.resolvable:
            return unfit.reason if len(job.tasks) == 1 else f"pod {task.key}: {unfit.reason}"
    return ""
