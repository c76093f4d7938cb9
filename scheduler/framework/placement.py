"""Finding feasible nodes for a task and choosing the best one (spec 6.2, predicate/prioritize).

The node list is scanned from a rotating offset that carries over between calls, and the scan
stops after `numNodesToFind` feasible nodes when the cluster is large, as Volcano does; this is
what keeps a 5,000-node session from checking every node for every pod.
"""

from __future__ import annotations

from collections.abc import Callable

from scheduler.framework.fiterrors import FitErrors
from scheduler.framework.session import Session
from scheduler.framework.status import Unfit
from scheduler.model.objects import NodeInfo, TaskInfo

NodePredicate = Callable[[TaskInfo, NodeInfo], Unfit | list[str] | None]


def num_feasible_nodes_to_find(ssn: Session, total: int) -> int:
    opts = ssn.options
    if total <= opts.minimum_feasible_nodes or opts.percentage_nodes_to_find >= 100:
        return total
    pct = opts.percentage_nodes_to_find
    if pct <= 0:
        pct = max(opts.minimum_percentage_nodes_to_find, 50 - total // 125)
    return max(total * pct // 100, opts.minimum_feasible_nodes)


def resource_fit_reasons(task: TaskInfo, node: NodeInfo) -> list[str] | None:
    """Allocate's own resource check: InitResreq must fit FutureIdle; None when it does."""
    fi = node.future_idle()
    if task.init_resreq.less_equal(fi):
        return None
    return [f"Insufficient {name}" for name in task.init_resreq.insufficient(fi)] or ["Insufficient resources"]


def allocate_predicate(ssn: Session) -> NodePredicate:
    def check(task: TaskInfo, node: NodeInfo) -> Unfit | list[str] | None:
        short = resource_fit_reasons(task, node)
        if short is not None:
            return short
        return ssn.predicate(task, node)

    return check


def predicate_nodes(
    ssn: Session,
    task: TaskInfo,
    nodes: list[NodeInfo],
    check: NodePredicate,
    errors: FitErrors,
    *,
    sample: bool = True,
    accept: Callable[[Unfit], bool] | None = None,
) -> list[NodeInfo]:
    """Feasible nodes for `task`; every rejection is recorded in `errors` under the node's name.

    `accept` lets preempt/reclaim keep nodes whose failure evictions could cure.
    """
    total = len(nodes)
    if total == 0:
        return []
    want = num_feasible_nodes_to_find(ssn, total) if sample else total
    start = ssn.predicate_round_robin % total
    feasible: list[NodeInfo] = []
    processed = 0
    for i in range(total):
        node = nodes[(start + i) % total]
        processed += 1
        r = check(task, node)
        if r is None or (accept is not None and isinstance(r, Unfit) and accept(r)):
            feasible.append(node)
            if len(feasible) >= want:
                break
        elif isinstance(r, Unfit):
            errors.set_node_error(node.name, r.reason)
        else:
            errors.set_node_error(node.name, r)
    ssn.predicate_round_robin = (start + processed) % total
    return feasible


def score_nodes(ssn: Session, task: TaskInfo, nodes: list[NodeInfo]) -> dict[str, float]:
    scores = {n.name: ssn.node_order_score(task, n) for n in nodes}
    if ssn.has("batch_node_order"):
        for name, s in ssn.batch_node_order_scores(task, nodes).items():
            if name in scores:
                scores[name] += s
    return scores


def select_best(ssn: Session, task: TaskInfo, nodes: list[NodeInfo]) -> NodeInfo | None:
    """Score, let a BestNodeFn decide, else the top score with a random tie-break."""
    if not nodes:
        return None
    if len(nodes) == 1:
        return nodes[0]
    scores = score_nodes(ssn, task, nodes)
    by_score: dict[float, list[NodeInfo]] = {}
    for n in nodes:
        by_score.setdefault(scores[n.name], []).append(n)
    best = ssn.best_node(task, by_score) if ssn.has("best_node") else None
    if best is not None:
        return best
    top = by_score[max(by_score)]
    if len(top) == 1 or ssn.options.deterministic:
        return min(top, key=lambda n: n.name) if ssn.options.deterministic else top[0]
    return ssn.rng.choice(top)


def prioritize(ssn: Session, task: TaskInfo, candidates: list[NodeInfo]) -> NodeInfo | None:
    """Prefer nodes where the task fits Idle now; only otherwise those where it fits FutureIdle."""
    idle_fit = [n for n in candidates if task.init_resreq.less_equal(n.idle)]
    group = idle_fit or candidates
    return select_best(ssn, task, group)
