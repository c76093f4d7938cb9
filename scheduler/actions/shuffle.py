"""shuffle: evict the running tasks the plugins' VictimTasks votes name (Volcano's shuffle action).

Every Running task is offered to the VictimTasks functions (the first tier with a non-empty answer
decides; the answers of its plugins are united) and each task named is evicted with reason
`shuffle`. Volcano's victim providers are the rescheduling and tdm plugins, which we do not have,
and pdb, which offers every labelled pod no PodDisruptionBudget protects: with `pdb` enabled (its
`enabledVictim` switch on, the default) shuffle evicts all such pods every cycle, as Volcano's does.
"""

from __future__ import annotations

from scheduler.framework.session import Session
from scheduler.model.objects import TaskStatus

REASON = "shuffle"


def shuffle(ssn: Session) -> None:
    running = [t for job in ssn.jobs.values() for t in job.tasks_in(TaskStatus.RUNNING)]
    for victim in ssn.victim_tasks(running):
        ssn.evict_committed(victim, REASON)
