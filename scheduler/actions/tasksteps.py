"""Steps of allocate's task loop shared by the flat search and the HyperNode search."""

from __future__ import annotations

from scheduler.framework.fiterrors import FitErrors
from scheduler.framework.placement import PlacementCache, prioritize
from scheduler.framework.session import Session
from scheduler.framework.statement import Statement
from scheduler.framework.status import AllocateError
from scheduler.model.job import JobInfo
from scheduler.model.node import NodeInfo
from scheduler.model.objects import QueueInfo, TaskInfo

OK = "ok"
SKIP = "skip"  # not placeable now; go on with the next task
STOP = "stop"  # pre-predicate failed and the gang needs every task: no point going on


def task_gate(
    ssn: Session,
    queue: QueueInfo,
    job: JobInfo,
    task: TaskInfo,
    failed_roles: set[str],
    nodes: list[NodeInfo],
    errors: FitErrors,
    go_on: bool,
) -> str:
    """The checks before searching nodes: queue quota, a role already failed, pre-predicates.
    Records the task's fit errors when it cannot go on; `go_on` says whether other tasks of the
    job are still worth trying after a pre-predicate failure."""
    if not ssn.allocatable(queue, task):
        why = ssn.denials.pop(task.uid, "")
        msg = f"queue {queue.name} resource quota insufficient" + (f": {why}" if why else "")
        ssn.record_fit_errors(job, task, FitErrors(msg))
        return SKIP
    if task.role and task.role in failed_roles:
        msg = f"Task {task.name} with role spec {task.role} has already predicated failed, skip"
        ssn.record_fit_errors(job, task, FitErrors(msg))
        return SKIP
    pre = ssn.pre_predicate(task)
    if pre is not None:
        for n in nodes:
            errors.set_node_error(n.name, pre.reason)
        ssn.record_fit_errors(job, task, errors)
        return SKIP if go_on else STOP
    return OK


def place_best(
    ssn: Session,
    stmt: Statement,
    task: TaskInfo,
    candidates: list,
    errors: FitErrors,
    cache: PlacementCache | None,
    from_cache: bool = False,
) -> bool:
    """Try the best node; if a device handler refuses it, drop it and try the next best."""
    # copied at the first refusal only: the placement cache hands out its own list
    remaining = candidates
    first = from_cache
    while remaining:
        # the cache answers for the very list its feasible() gave; after a refusal, prioritize
        best = (
            cache.best(task, remaining)
            if first and cache is not None
            else prioritize(ssn, task, remaining, cache)
        )
        first = False
        if best is None:
            return False
        try:
            if task.init_resreq.less_equal(best.idle):
                stmt.allocate(task, best)
            elif task.init_resreq.less_equal(best.future_idle()):
                stmt.pipeline(task, best)
            else:
                errors.set_node_error(best.name, "Insufficient resources")
                remaining = _without(remaining, best)
                continue
            return True
        except AllocateError as exc:
            errors.set_node_error(best.name, str(exc))
            remaining = _without(remaining, best)
    return False


def _without(nodes: list, node: NodeInfo) -> list:
    """A new list of `nodes` less `node` (the input may be the placement cache's own list)."""
    out = list(nodes)
    out.remove(node)
    return out
