"""Messages users read on PodGroups and pods, built exactly as Volcano words them (spec 3)."""

from __future__ import annotations

from scheduler.model.job import JobInfo
from scheduler.model.objects import ALLOCATED_STATUSES, TaskStatus


def job_fit_error(job: JobInfo) -> str:
    """The gang message body: readiness, a status histogram, pending reasons and the origin."""
    status = "pod group is ready" if job.is_ready() else "pod group is not ready"
    parts = [f"{len(tasks)} {st.label}" for st, tasks in job.task_status_index.items() if tasks]
    parts.append(f"{job.min_available} minAvailable")
    msg = f"{status}, {', '.join(sorted(parts))}"
    pending = job.task_status_index.get(TaskStatus.PENDING, {})
    if pending:
        reasons: dict[str, int] = {}
        for t in pending.values():
            r = (
                "Schedulable"
                if t.last_tx is not None and t.last_tx[0] in ALLOCATED_STATUSES
                else "Unschedulable"
            )
            reasons[r] = reasons.get(r, 0) + 1
        msg += "; Pending: " + ", ".join(sorted(f"{n} {r}" for r, n in reasons.items()))
    if job.fit_error:
        msg += f". Origin reason is: {job.fit_error}"
    else:
        for t in sorted(job.tasks.values(), key=lambda t: t.name):
            fe = job.nodes_fit_errors.get(t.uid)
            if fe:
                msg += f". Origin reason is {t.name}: {fe.message()}"  # type: ignore[attr-defined]
                break
    return msg
