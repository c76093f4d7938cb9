"""Finding feasible nodes for a task and choosing the best one (spec 6.2, predicate/prioritize).

The node list is scanned from a rotating offset that carries over between calls, and the scan
stops after `numNodesToFind` feasible nodes when the cluster is large, as Volcano does; this is
what keeps a 5,000-node session from checking every node for every pod.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable
from itertools import compress, repeat
from operator import attrgetter, eq, is_, is_not, or_
from typing import Any

from scheduler.framework.fiterrors import FitErrors
from scheduler.framework.noderows import ResourceRows
from scheduler.framework.nodewindow import FIT, REFUSED, UNKNOWN
from scheduler.framework.nodewindow_impl import window_impl
from scheduler.framework.session import (
    NOT_UNIFORM,
    BatchScoreSplit,
    BatchScoreUniform,
    Session,
    SessionOptions,
)
from scheduler.framework.status import Unfit
from scheduler.model.node import NodeInfo
from scheduler.model.objects import TaskInfo, TaskStatus
from scheduler.model.resfit_impl import resfit_impl
from scheduler.model.topology import CLUSTER_TOP

_name = attrgetter("name")
# annotations no predicate or score reads (the PodGroup's name and the like): left out of shape keys
_GROUP_PREFIX = "scheduling.k8s.io/"
_UNSET: Any = object()
# Session.carry's name for the verdicts kept from one session's allocate to the next
CARRY = "placement"

NodePredicate = Callable[[TaskInfo, NodeInfo], Unfit | list[str] | None]
# the same answers for several nodes at once, in their order
NodesPredicate = Callable[[TaskInfo, list[NodeInfo]], list[Unfit | list[str] | None]]
# a NodesPredicate that also writes the nodes' Idle fits (see allocate_predicate_many_idle)
NodesPredicateIdle = Callable[
    [TaskInfo, list[NodeInfo], list[int], bytearray, ResourceRows], list[Unfit | list[str] | None]
]


def _one_by_one(check: NodePredicate) -> NodesPredicate:
    def many(task: TaskInfo, nodes: list[NodeInfo]) -> list[Unfit | list[str] | None]:
        return [check(task, n) for n in nodes]

    return many


def num_feasible_nodes_to_find(ssn: Session, total: int) -> int:
    return feasible_sample_size(ssn.options, total)


def feasible_sample_size(opts: SessionOptions, total: int) -> int:
    """How many feasible nodes a pod's search stops at (Volcano's CalculateNumOfFeasibleNodesToFind):
    at least 100, an adaptive percentage of the cluster that falls to 5 % at 5,625 nodes and more."""
    if total <= opts.minimum_feasible_nodes or opts.percentage_nodes_to_find >= 100:
        return total
    pct = opts.percentage_nodes_to_find
    if pct <= 0:
        pct = max(opts.minimum_percentage_nodes_to_find, 50 - total // 125)
    return max(total * pct // 100, opts.minimum_feasible_nodes)


def resource_fit_reasons(task: TaskInfo, node: NodeInfo) -> list[str] | None:
    """Allocate's own resource check: InitResreq must fit FutureIdle; None when it does."""
    if task.init_resreq.fits_future(node.idle, node.releasing, node.pipelined):
        return None
    fi = node.future_idle()
    return [f"Insufficient {name}" for name in task.init_resreq.insufficient(fi)] or [
        "Insufficient resources"
    ]


def allocate_predicate(ssn: Session) -> NodePredicate:
    def check(task: TaskInfo, node: NodeInfo) -> Unfit | list[str] | None:
        short = resource_fit_reasons(task, node)
        if short is not None:
            return short
        return ssn.predicate(task, node)

    return check


def allocate_predicate_many(ssn: Session) -> NodesPredicate:
    """allocate_predicate for several nodes at once: the resource fit node by node, then the
    plugins over the nodes it passed (Session.predicate_many), answers in the nodes' order."""

    def check_many(task: TaskInfo, nodes: list[NodeInfo]) -> list[Unfit | list[str] | None]:
        return _after_resources(ssn, task, nodes, resfit_impl.misfits(task.init_resreq, nodes))

    return check_many


def allocate_predicate_many_idle(ssn: Session) -> NodesPredicateIdle:
    """allocate_predicate_many that also writes whether the task fits each node's Idle to
    codes[at[k]] (FIT or REFUSED) for the k-th node, read in the resource fit's own pass: the
    placement cache needs both answers of every node it asks. The k-th node is row at[k] of
    `rows`, which the resource fit reads instead of the nodes' Resources. Rows of the session's
    node list make `at` the nodes' positions there: the plugins are then asked by position
    (Session.predicate_at)."""

    def check_many(
        task: TaskInfo, nodes: list[NodeInfo], at: list[int], codes: bytearray, rows: ResourceRows
    ) -> list[Unfit | list[str] | None]:
        short = rows.misfits_idle(task.init_resreq, nodes, at, codes, FIT, REFUSED)
        by_position = rows.nodes is ssn.node_list
        if not short:
            # _after_resources' usual case without its frame (once per ask of a placement cache)
            if by_position:
                return ssn.predicate_at(task, at)  # type: ignore[return-value]
            return ssn.predicate_many(task, nodes)  # type: ignore[return-value]
        return _after_resources(ssn, task, nodes, short, at if by_position else None)

    return check_many


def _after_resources(
    ssn: Session, task: TaskInfo, nodes: list[NodeInfo], short: list[int], at: list[int] | None = None
) -> list[Unfit | list[str] | None]:
    """The answers of allocate's predicate given the places whose FutureIdle is short: their
    resource reasons, and the plugins' answers for the others (asked by position when `at`, the
    nodes' positions in the session's node list, is given)."""
    if not short:
        # every node has the room: the plugins answer for all (their list is the answer; no
        # typing.cast, a Python call per ask)
        return ssn.predicate_many(task, nodes)  # type: ignore[return-value]
    out: list[Unfit | list[str] | None] = [None] * len(nodes)
    for i in short:
        out[i] = resource_fit_reasons(task, nodes[i])
    idx = [i for i, r in enumerate(out) if r is None]
    if idx:
        if at is not None:
            got = ssn.predicate_at(task, [at[i] for i in idx])
        else:
            got = ssn.predicate_many(task, [nodes[i] for i in idx])
        for i, r in zip(idx, got, strict=True):
            out[i] = r
    return out


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


def select_best(
    ssn: Session, task: TaskInfo, nodes: list[NodeInfo], cache: PlacementCache | None = None
) -> NodeInfo | None:
    """Score, let a BestNodeFn decide, else the top score with a random tie-break."""
    if not nodes:
        return None
    if len(nodes) == 1:
        return nodes[0]
    if cache is not None:
        vals = cache.score_values(task, nodes)
    else:
        scores = score_nodes(ssn, task, nodes)
        vals = [scores[n.name] for n in nodes]
    return _pick(ssn, task, nodes, vals)


def _pick(ssn: Session, task: TaskInfo, nodes: list[NodeInfo], vals: list[float]) -> NodeInfo | None:
    """select_best's choice among `nodes` scored `vals` (aligned)."""
    if ssn.has("best_node"):
        by_score: dict[float, list[NodeInfo]] = {}
        for n, v in zip(nodes, vals, strict=True):
            by_score.setdefault(v, []).append(n)
        best = ssn.best_node(task, by_score)
        if best is not None:
            return best
    # The top-scoring nodes in candidate order, found with C-level passes (this runs per task).
    m = max(vals)
    if vals.count(m) == 1:
        top = [nodes[vals.index(m)]]
    else:
        top = list(compress(nodes, map(eq, vals, repeat(m))))
    if len(top) == 1 or ssn.options.deterministic:
        return min(top, key=lambda n: n.name) if ssn.options.deterministic else top[0]
    return ssn.rng.choice(top)


def prioritize(
    ssn: Session, task: TaskInfo, candidates: list[NodeInfo], cache: PlacementCache | None = None
) -> NodeInfo | None:
    """Prefer nodes where the task fits Idle now; only otherwise those where it fits FutureIdle."""
    if cache is not None:
        idle_fit = cache.idle_fit(task, candidates)
    else:
        req = task.init_resreq
        idle_fit = [n for n in candidates if req.less_equal(n.idle)]
    group = idle_fit or candidates
    return select_best(ssn, task, group, cache)


def _depends_on_other_pods(task: TaskInfo) -> bool:
    """Its answers on a node depend on pods elsewhere (inter-pod affinity, topology spread)."""
    pod = task.pod
    aff = pod.affinity
    return bool(pod.topology_spread or (aff and ("podAffinity" in aff or "podAntiAffinity" in aff)))


def _shape_key(task: TaskInfo) -> tuple | None:
    """Tasks with equal keys get equal predicate answers and scores on an unchanged node.

    None for tasks whose answers depend on other nodes' pods (inter-pod affinity, spread).
    """
    if _depends_on_other_pods(task):
        return None
    pod = task.pod
    return (
        task.job,
        task.role,
        tuple(sorted(task.init_resreq.to_dict().items())),
        tuple(sorted(task.resreq.to_dict().items())),
        tuple(sorted(pod.node_selector.items())),
        repr(pod.affinity) if pod.affinity else "",
        repr(pod.tolerations) if pod.tolerations else "",
        tuple(pod.host_ports),
        repr([(c.limits, c.requests) for c in pod.containers]),
        tuple(sorted((k, v) for k, v in pod.annotations.items() if not k.startswith(_GROUP_PREFIX))),
        pod.node_name,
    )


def _kept_annotations(annotations: dict[str, str]) -> dict[str, str]:
    """The annotations a shape key holds: all but the PodGroup's (see _GROUP_PREFIX)."""
    if len(annotations) == 1:
        # a one-pod job's usual lone annotation, its group name: no comprehension's frame
        ((k, v),) = annotations.items()
        return {} if k.startswith(_GROUP_PREFIX) else {k: v}
    return {k: v for k, v in annotations.items() if not k.startswith(_GROUP_PREFIX)}


class _Scores:
    """Per-node scores of the shapes that score alike (Session.score_shape), emptied for a node
    when it changes. Pods that differ only in what no score reads (their device requests, under
    the default weights) share one: a node is scored once for all of them, not once per shape."""

    __slots__ = ("base", "final", "final_known", "keep_parts", "mixed", "parts", "seq")

    def __init__(self, seq: int) -> None:
        self.seq = seq
        # node -> (node-order sum, per-node parts of the batch functions), kept only once a
        # normalised part applied to these shapes (keep_parts): without one the final score is all
        # that is read, and at 20,000 nodes the tuples and their invalidation (_fresh) cost ~4 %
        self.parts: dict[str, tuple[float, tuple[int, ...]]] = {}
        self.keep_parts = False
        # node -> node-order sum, when some batch function cannot be split
        self.base: dict[str, float] = {}
        # the final score of each node when no normalised part applies, by node position, and
        # whether it is known (not asked since the node changed); sized when first needed
        # (PlacementCache._score_arrays). Their only record: a dict by name beside them cost a pop
        # per changed node and shape in _fresh, in cold memory at 20,000 nodes.
        self.final = array("d")
        self.final_known = bytearray()
        # node -> per-node parts of the split batch functions, when some other one has no split
        self.mixed: dict[str, tuple[int, ...]] = {}

    def forget(self) -> None:
        """Drop every known value (the arrays are sized again when next needed)."""
        for known in (self.mixed, self.parts, self.base):
            known.clear()
        self.final, self.final_known = array("d"), bytearray()


class _NodeValues:
    """Per-node values that depend on the task's shape but not on its job: verdicts, Idle fit,
    and (in `sc`, shared with the shapes that score alike) scores.

    Shared by the jobs whose pods have the same shape, and emptied for a node when it changes.
    """

    __slots__ = ("carryable", "codes", "fit_codes", "sc", "seq", "verdicts")

    def __init__(self, seq: int, carryable: bool = False, sc: _Scores | None = None) -> None:
        self.seq = seq
        # the shape's refusals may be kept for the next session (see _Carried)
        self.carryable = carryable
        # the shape's scores: its own, or those of every shape with the same score shape
        self.sc = sc if sc is not None else _Scores(seq)
        # node -> allocate's predicate answer (None: fits). A fit is kept here only while `codes`
        # is not sized (else its FIT code is its one record): the dict then holds the few
        # refusals, and a placement invalidates an entry of a small dict instead of a 20,000-node one
        self.verdicts: dict[str, Unfit | list[str] | None] = {}
        # the same answers as one code per node of the cache's list (nodewindow's UNKNOWN, FIT,
        # REFUSED), so that the scan window is found by reading bytes; sized at the first scan
        self.codes = bytearray()
        # whether the task's InitResreq fits each node's Idle, as FIT/REFUSED codes by node position
        # (UNKNOWN: not asked since the node changed); sized when first needed (_fit_array). The
        # only record of these answers: a dict by name beside it cost a pop per changed node and
        # shape in _fresh and a store per answer, at 20,000 nodes in cold memory.
        self.fit_codes = bytearray()

    def forget(self) -> None:
        """Drop every known value, the shared scores included (the arrays are sized again when
        next needed)."""
        self.verdicts.clear()
        self.codes, self.fit_codes = bytearray(), bytearray()
        self.sc.forget()


class _Entry:
    __slots__ = (
        "at",
        "cands",
        "complete",
        "errors",
        "fit_flags",
        "index",
        "members",
        "order",
        "ordered",
        "picked",
        "score_list",
        "seq",
        "start",
        "touched",
        "values",
    )

    def __init__(self, values: _NodeValues) -> None:
        self.seq = 0
        # where the scan that filled `errors` began (the rotating start)
        self.start = 0
        # The feasible nodes in order. Never changed in place: feasible() hands this very list
        # out, and best() recognises it by identity, so a change makes a new list. (A dict by name
        # cost a 1,000-entry build per job and a copy per pod at 20,000 nodes.)
        self.cands: list[NodeInfo] = []
        # name -> position in `cands`, built only when a membership question needs it
        self.members: dict[str, int] | None = None
        # (node, its position in `order`) of best()'s last choice: the next pod of the job finds
        # the one node that changed in between there, without indexing the whole list
        self.picked: tuple[NodeInfo, int] | None = None
        self.values = values
        self.errors = FitErrors()
        self.complete = False
        # The candidates as feasible() lists them, with their scores and Idle fits aligned, kept
        # up to date in place while the candidate list itself does not change (see best()).
        self.order: list[NodeInfo] | None = None
        self.index: dict[str, int] = {}
        self.score_list = array("d")
        self.fit_flags = bytearray()
        # candidates that changed since the aligned lists were last brought up to date
        self.touched: set[str] = set()
        # the candidates' positions in the cache's node list, in their order, while the candidate
        # list is the scan's (None once a node joined or left it)
        self.at: list[int] | _Run | None = None
        # whether `errors` names every node in the scan's order from `start` (a scan in which
        # every node refused, nothing popped since): the next session may then copy it as it is
        self.ordered = False


# at most this many unknown scores are computed node by node (_fill_split), more in one batch
_FEW_SCORES = 4

# best()'s in-place pick over a run did not decide (a NaN top, a BestNodeFn, a deterministic
# pick): best()'s lists decide then
_UNDECIDED = object()


class _Run:
    """The positions start, start + 1, ... (n of them) round the ring of `total` nodes: a scan
    window's positions when every node in it fits, as a sequence that is not listed (a list of
    1,000 ints per job window cost more than the compiled scan that found them)."""

    __slots__ = ("n", "start", "total")

    def __init__(self, start: int, n: int, total: int) -> None:
        self.start, self.n, self.total = start, n, total

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, k: int) -> int:
        if k < 0:
            k += self.n
        if not 0 <= k < self.n:
            raise IndexError(k)
        return (self.start + k) % self.total

    def positions(self, ks: list[int]) -> list[int]:
        """The items at indexes `ks` (in range), without a Python call per item: a cold window
        misses ~35 of them per pod."""
        start, total = self.start, self.total
        return [(start + k) % total for k in ks]


class _Shape:
    """One shape's refusals, and the errors of a scan in which every node refused it."""

    __slots__ = ("errors", "ordered", "redo", "start", "verdicts")

    def __init__(
        self,
        verdicts: dict[str, Any],
        errors: dict[str, list[str]] | None,
        start: int,
        redo: set[str],
        ordered: bool = False,
    ) -> None:
        self.verdicts = verdicts  # node -> refusal
        # node -> reasons, every node's (those in `redo` possibly out of date); None: not every node
        self.errors = errors
        self.start = start
        # the nodes the session changed: left out of `verdicts`, their `errors` not to be trusted
        self.redo = redo
        # `errors` is in the scan's order from `start` (see _Entry.ordered)
        self.ordered = ordered


class _Known:
    """A kept shape's errors of every node, for a scan in which every node refuses again."""

    __slots__ = ("errors", "redo", "start")

    def __init__(self, errors: dict[str, list[str]], redo: set[str], start: int | None) -> None:
        self.errors = errors
        # the nodes whose kept errors may be out of date: the scan asked them again
        self.redo = redo
        # where the scan that ordered `errors` began (None: not in a scan's order)
        self.start = start

    def fill(self, errors: FitErrors, names: list[str], start: int, verdicts: dict[str, Any]) -> bool:
        """Set `errors` to what a scan from `start` where every node refused records (node by
        node, set_node_error of its verdict, in scan order): the kept errors, in that order, with
        those of the nodes in `redo` from their new verdicts. False when a node has no kept error."""
        if start == self.start:
            # in this very order already: copied at C level, no lookup per node
            errors.nodes = dict(self.errors)
        else:
            order = names[start:] + names[:start] if start else names
            got = list(map(self.errors.get, order))
            if any(map(is_, got, repeat(None))):  # by identity: no read of cold reason lists
                return False
            errors.nodes = dict(zip(order, got, strict=True))
        for name in self.redo:
            r = verdicts.get(name)
            if r is not None:
                errors.set_node_error(name, r.reason if isinstance(r, Unfit) else r)
        errors.forget()
        return True


class _Carried:
    """Allocate's refusals of shapes that fit nowhere, kept for the next session.

    A refusal holds while its node's view is handed out again unchanged (the same view object,
    showing the same version of the cluster's node) and everything else a predicate reads is as it
    was: the configuration, the session options, the HyperNode tree, namespaces' labels and
    ConfigMaps. Only shapes with no inter-pod terms, no device or other scalar requests and only
    refusals are kept: a node that fits is always asked again, so the plugins see every check that
    can lead to a placement."""

    __slots__ = (
        "changed",
        "conf",
        "configmaps",
        "index",
        "names",
        "namespaces",
        "options",
        "rows",
        "shapes",
        "stale",
        "topology",
        "unchanged",
        "versions",
        "views",
    )

    def __init__(
        self,
        ssn: Session,
        shapes: dict[tuple, _Shape],
        versions: list[int],
        rows: ResourceRows | None = None,
        names: list[str] | None = None,
    ) -> None:
        # the nodes' names in order (never changed in place), while the same nodes are in the
        # same places
        self.names = names
        # the nodes the session changed (their views are not handed out again)
        self.changed = set(ssn.node_changes)
        # the resource rows of the session's nodes, for the next session's cache to take (see
        # PlacementCache._resource_rows): rows of the nodes that did not change are still true
        self.rows = rows
        self.conf = ssn.conf
        self.options = ssn.options
        self.topology = ssn.topology
        # copies: the cluster changes its own maps in place
        self.namespaces = {k: dict(v) for k, v in ssn.namespaces.items()}
        self.configmaps = {k: dict(v) for k, v in ssn.configmaps.items()}
        self.shapes = shapes
        # the session's node views and the versions they showed (NodeInfo.view_versions): its
        # own list, which nothing changes, not a copy
        self.views = ssn.node_list
        self.versions = versions
        # node name -> position: the same object in the next session while no node joined or left
        self.index = ssn.node_index()
        # the next session's nodes whose views are the same and unchanged (True: all), see `check`;
        # or, when the nodes are the same ones in the same places, the few that are not (`stale`)
        self.unchanged: bool | set[str] = set()
        self.stale: set[str] | None = None

    def check(self, ssn: Session) -> bool:
        """Whether the refusals hold at all in `ssn`, and which nodes they hold for (`unchanged`)."""
        if not (
            self.conf is ssn.conf
            and self.topology is ssn.topology
            and self.options == ssn.options
            and self.namespaces == ssn.namespaces
            and self.configmaps == ssn.configmaps
        ):
            return False
        nodes = ssn.node_list
        versions = ssn.open_versions()
        if versions is None:
            return False
        if nodes == self.views and versions == self.versions:
            self.unchanged = True
            return True
        if ssn.node_index() is self.index and len(nodes) == len(self.views):
            # the same nodes in the same places: the positions that differ, compared by identity
            # (versions too, see nodesums._advance); only where the snapshot says a node or view
            # changed since the previous one, when it knows, else at every position at C level
            self.unchanged = False
            views, kept = self.views, self.versions
            at = ssn.node_changed_at()
            if at is None:
                differ = map(or_, map(is_not, nodes, views), map(is_not, versions, kept))
                at = list(compress(range(len(nodes)), differ))
            self.stale = {nodes[i].name for i in at if nodes[i] is not views[i] or versions[i] is not kept[i]}
            return True
        at = {v.name: (v, ver) for v, ver in zip(self.views, self.versions, strict=True)}
        self.unchanged = {
            n.name for n, ver in zip(nodes, versions, strict=True) if at.get(n.name, (None, -1)) == (n, ver)
        }
        return True


def _carryable(task: TaskInfo) -> bool:
    """Whether a shape's refusals may outlive the session (see _Carried)."""
    return not task.resreq.scalars and not task.init_resreq.scalars


class PlacementCache:
    """Feasible nodes and node-order scores per task shape, kept fresh from the session's change log.

    The pods of a job are usually identical: the predicate scan and the scoring are done once per
    shape, and afterwards only the nodes that changed since (a placement, an eviction, a discard)
    are checked and scored again. Decisions are the ones a fresh scan of the same sample gives.
    """

    def __init__(
        self,
        ssn: Session,
        check: NodePredicate,
        nodes: list[NodeInfo] | None = None,
        check_many: NodesPredicate | None = None,
        check_many_idle: NodesPredicateIdle | None = None,
        domain: str | None = None,
    ) -> None:
        self.ssn = ssn
        self.check = check
        self.check_many = check_many or _one_by_one(check)
        # check_many that also gives the nodes' Idle fits, when the caller has one (allocate's)
        self.check_many_idle = check_many_idle
        self._names: list[str] | None = None
        # the nodes searched: the session's, or those under one HyperNode (network topology)
        self.nodes = ssn.node_list if nodes is None else nodes
        # a HyperNode whose nodes include all of `nodes` ("": none known), for BatchScoreUniform
        self.domain = domain if domain is not None else CLUSTER_TOP if nodes is None else ""
        # node name -> position in `nodes`, where its answer code sits (_NodeValues.codes); the
        # session's own for its node list (the cluster keeps it while no node joins or leaves)
        self._index = ssn.node_index() if nodes is None else {n.name: i for i, n in enumerate(self.nodes)}
        # the change log's entries as positions in `nodes` (-1: not in the list), converted once
        # each: every shape forgets the same changed nodes, and a name lookup in the 20,000-entry
        # index per entry and shape was ~3 % of a session (see _changed_at)
        self._log_at: list[int] = []
        # the nodes' resources as rows for the resource fit (check_many_idle), built when first asked
        self._rows: ResourceRows | None = None
        self.entries: dict[tuple, _Entry] = {}
        self.values: dict[tuple, _NodeValues] = {}
        # score shape (Session.score_shape) -> the scores the shapes with it share
        self.shared_scores: dict[tuple, _Scores] = {}
        # Another pod's required anti-affinity can be hit by any placement in its topology domain.
        self.enabled = not ssn.has_required_anti_affinity
        self.splits = ssn.batch_node_order_splits()
        # when some batch function has no split, the others' per-node parts are still kept
        self.plan = ssn.batch_node_order_plan() if self.splits is None else []
        # The splits the kept final scores are made of: all the batch functions', or, when the
        # others only ever add one score to every node (network-topology-aware's inside a leaf
        # HyperNode), theirs alone; best() then adds those uniform scores where they provably
        # change no choice (_order_kept). None: no final score is kept (score_values' unsplit path).
        self.kept: list[BatchScoreSplit] | None = self.splits
        self.uniforms: list[BatchScoreUniform] = []
        if self.splits is None:
            offsets = ssn.batch_node_order_offsets()
            if offsets is not None:
                self.kept, self.uniforms = offsets
        self._last: tuple[TaskInfo | None, tuple | None] = (None, None)
        # (node count, numNodesToFind for it): the options are fixed while a cache lives (one
        # action's run), and the sample size was worked out again for every scan
        self._want = (-1, 0)
        # (task, its entry) of feasible()'s last answer from an entry, for best()
        self._handed: tuple[TaskInfo | None, _Entry | None] = (None, None)
        # identities of a pod template's shared objects -> (those objects, annotations, shape key
        # without its leading job and role)
        self._shape_keys: dict[tuple, tuple[tuple, dict[str, str], tuple]] = {}
        # the whole cluster's cache keeps refusals between sessions (see carry_over)
        self.carrying = nodes is None and self.enabled and ssn.options.carry_placement
        self.carried: _Carried | None = None
        if self.carrying:
            got = ssn.carried(CARRY)
            if got is not None and got[2].check(ssn):
                self.carried = got[2]
                if got[2].unchanged is True or got[2].unchanged is False:
                    self._names = got[2].names  # the same names in the same places

    def _key(self, task: TaskInfo) -> tuple | None:
        """The task's shape key; asked several times per task in a row, so the last one is kept."""
        last_task, last_key = self._last
        if task is last_task:
            return last_key
        key = self._memo_key(task) if self.enabled else None
        self._last = (task, key)
        return key

    def _memo_key(self, task: TaskInfo) -> tuple | None:
        """_shape_key, built once per pod template: pods of one template share (by identity) the
        request, selector, affinity, toleration, port and container objects that convert interns,
        and building the key (sorting, repr) cost ~20 us per task. Node name and annotations are
        per pod, so they are compared by value; job and role are not in the identity, so that the
        one-pod jobs of a template find its entry too. The entry keeps the shared objects alive so
        their ids cannot be reused by others while this cache lives (one allocate run)."""
        if _depends_on_other_pods(task):
            return None
        pod = task.pod
        init, req = task.init_resreq, task.resreq
        sel, aff, tol, ports, cons = (
            pod.node_selector,
            pod.affinity,
            pod.tolerations,
            pod.host_ports,
            pod.containers,
        )
        # convert interns only non-empty values: every empty one reads the same, so 0 stands for
        # it (written out: a comprehension is a frame per task)
        ident = (
            pod.node_name,
            id(init) if init else 0,
            id(req) if req else 0,
            id(sel) if sel else 0,
            id(aff) if aff else 0,
            id(tol) if tol else 0,
            id(ports) if ports else 0,
            id(cons) if cons else 0,
        )
        # the annotations the key holds: one-pod jobs differ in their group name, and only there
        anns = _kept_annotations(pod.annotations)
        hit = self._shape_keys.get(ident)
        if hit is not None and hit[1] == anns:
            # job and role lead the key; the rest is the template's, shared by the jobs using it
            return (task.job, task.role, *hit[2])
        key = _shape_key(task)
        if key is not None:
            self._shape_keys[ident] = ((init, req, sel, aff, tol, ports, cons), anns, key[2:])
        return key

    def _values(self, task: TaskInfo) -> _NodeValues | None:
        key = self._key(task)
        entry = self.entries.get(key) if key is not None else None
        if entry is None:
            return None
        return self._fresh(entry.values, task)

    def _fresh(self, vals: _NodeValues, task: TaskInfo | None) -> _NodeValues:
        """Bring the shared values up to the change log: what was known of a changed node is
        forgotten, and recomputed only when a later lookup needs it. A placement changes one node
        but most shapes do not look at it again before it changes once more (the scan window
        rotates), so computing eagerly wasted most of the plugin calls."""
        log = self.ssn.node_changes
        end = len(log)
        sc = vals.sc
        if sc.seq != end:  # shared: another shape may have brought it up to date already
            if vals.seq == sc.seq and end - sc.seq == 1:
                # the usual case (once per pod): the one node the last placement changed,
                # forgotten by both without building the tuples _forget_changed takes
                name = log[-1]
                for known in (sc.mixed, sc.parts, sc.base, vals.verdicts):
                    if known:
                        known.pop(name, None)
                i = self._last_changed_at(log)
                if i >= 0:
                    for code in (sc.final_known, vals.codes, vals.fit_codes):
                        if code:
                            code[i] = UNKNOWN
                sc.seq = vals.seq = end
                return vals
            if vals.seq == sc.seq:
                # the usual case (once per pod): both behind by the same changes, forgotten in
                # one pass that finds the changed positions once
                self._forget_changed(
                    log,
                    sc.seq,
                    (sc.mixed, sc.parts, sc.base, vals.verdicts),
                    (sc.final_known, vals.codes, vals.fit_codes),
                )
                sc.seq = vals.seq = end
                return vals
            self._forget_changed(log, sc.seq, (sc.mixed, sc.parts, sc.base), (sc.final_known,))
            sc.seq = end
        if vals.seq == end:
            return vals
        self._forget_changed(log, vals.seq, (vals.verdicts,), (vals.codes, vals.fit_codes))
        vals.seq = len(log)
        return vals

    def _forget_changed(
        self, log: list[str], seq: int, dicts: tuple[dict[str, Any], ...], codes: tuple[bytearray, ...]
    ) -> None:
        """Drop what `dicts` and `codes` know of the nodes changed since `seq` in the change log."""
        if len(log) - seq == 1:
            # the usual case, once per pod: the one node the last placement changed, forgotten
            # without the passes below (a compiled call per code array cost more than the stores)
            name = log[-1]
            for known in dicts:
                if known:
                    known.pop(name, None)
            at = self._changed_at(log, seq)
            if at:
                i = at[0]
                for code in codes:
                    if code:
                        code[i] = UNKNOWN
            return
        if any(dicts):  # most configurations leave them empty all session
            changed = set(log[seq:])
            for known in dicts:
                if known:
                    pop = known.pop
                    for name in changed:
                        pop(name, None)
        if any(codes):
            at = self._changed_at(log, seq)
            forget = window_impl.forget
            for code in codes:
                if code:
                    forget(code, at)

    def _last_changed_at(self, log: list[str]) -> int:
        """The position in `nodes` of the log's last entry (-1: not in the list): one lookup, for
        the usual one change since a shape's last ask (_changed_at converts the log's entries
        for the shapes that are further behind)."""
        return self._index.get(log[-1], -1)

    def _changed_at(self, log: list[str], seq: int) -> list[int]:
        """The positions in `nodes` of the log's entries from `seq` on (repeats kept: forgetting
        a node twice is forgetting it once), nodes outside the list left out."""
        log_at = self._log_at
        behind = len(log) - len(log_at)
        if behind == 1:  # the usual case: one placement since the last call
            log_at.append(self._index.get(log[-1], -1))
        elif behind > 0:
            log_at.extend(map(self._index.get, log[len(log_at) :], repeat(-1)))
        if len(log) - seq == 1:
            i = log_at[seq]
            return [i] if i >= 0 else []
        at = log_at[seq:]
        # a shape asked again after other shapes' placements forgets dozens of entries, usually
        # all of them nodes of the list (vGPU pods of 32 sizes): filtered only when one is not
        return at if -1 not in at else [i for i in at if i >= 0]

    def _shared_scores(self, task: TaskInfo, seq: int) -> _Scores:
        """The scores of the task's shape: those of every shape with its score shape, or its own
        when a scoring function tells nothing of what it reads."""
        skey = self.ssn.score_shape(task)
        if skey is None:
            return _Scores(seq)
        sc = self.shared_scores.get(skey)
        if sc is None:
            sc = self.shared_scores[skey] = _Scores(seq)
        return sc

    def _score_arrays(self, sc: _Scores) -> tuple[array, bytearray]:
        """The final scores and their known flags, sized to the cache's nodes (a shared one may
        be sized already)."""
        total = len(self.nodes)
        if len(sc.final_known) != total:
            sc.final = array("d", bytes(8 * total))
            sc.final_known = bytearray(total)
        return sc.final, sc.final_known

    def _fit_array(self, vals: _NodeValues) -> bytearray:
        """The shape's Idle-fit codes, sized to the cache's nodes (all UNKNOWN when new)."""
        codes = vals.fit_codes
        if len(codes) != len(self.nodes):
            codes = vals.fit_codes = bytearray(len(self.nodes))
        return codes

    def _fit_at(self, task: TaskInfo, codes: bytearray, node: NodeInfo, i: int | None) -> bool:
        """Whether the task fits the node's Idle, from its code at position `i` (None: a node
        outside the cache's list, asked and not kept), computed and kept when unknown."""
        c = codes[i] if i is not None else UNKNOWN
        if c != UNKNOWN:
            return c == FIT
        f = task.init_resreq.less_equal(node.idle)
        if i is not None:
            codes[i] = FIT if f else REFUSED
        return f

    def _fits_at(self, task: TaskInfo, codes: bytearray, nodes: list[NodeInfo], at: list[int]) -> list[bool]:
        """_fit_at for several nodes of the cache's list (positions `at`), computed in one call."""
        got: list[bool] = resfit_impl.idle_fits(task.init_resreq, nodes)
        for i, f in zip(at, got, strict=True):
            codes[i] = FIT if f else REFUSED
        return got

    def _keep_scores(self, sc: _Scores, names: list[str], finals: list[float]) -> None:
        """Keep final scores just computed (nodes outside the cache's list are not kept)."""
        final, known = self._score_arrays(sc)
        index = self._index
        for name, v in zip(names, finals, strict=True):
            i = index.get(name)
            if i is not None:
                final[i] = v
                known[i] = 1

    def _codes(self, vals: _NodeValues) -> bytearray:
        """The shape's answer codes, built from its verdicts when first needed."""
        codes = vals.codes
        if len(codes) != len(self.nodes):
            if not vals.verdicts:
                # a shape met for the first time knows nothing: every code UNKNOWN (0), without a
                # lookup per node (each new shape paid ~1,000 of them)
                codes = vals.codes = bytearray(len(self.nodes))
                return codes
            got = map(vals.verdicts.get, self._node_names(), repeat(_UNSET))
            codes = vals.codes = bytearray(
                UNKNOWN if r is _UNSET else FIT if r is None else REFUSED for r in got
            )
        return codes

    def _fill_split_many(self, vals: _NodeValues, task: TaskInfo, nodes: list[NodeInfo]) -> list[float]:
        """_fill_split for several nodes, the node-order sums asked at once; their final scores."""
        splits = self.kept
        assert splits is not None
        bases = self.ssn.node_order_scores(task, nodes)
        cols = [
            sp.per_nodes(task, nodes) if sp.per_nodes is not None else [sp.per_node(task, n) for n in nodes]
            for sp in splits
        ]
        names = list(map(_name, nodes))
        sc = vals.sc
        keep = sc.keep_parts
        if len(cols) == 1:
            # one split (nodeorder's): what _combine adds, base + (0.0 + part), in one pass
            col = cols[0]
            out = [b + (0.0 + p) for b, p in zip(bases, col, strict=True)]
            if keep:
                sc.parts.update(zip(names, zip(bases, [(p,) for p in col], strict=True), strict=True))
        else:
            pers = list(zip(*cols, strict=True)) if cols else [()] * len(nodes)
            out = [_combine(b, per, None, "") for b, per in zip(bases, pers, strict=True)]
            if keep:
                sc.parts.update(zip(names, zip(bases, pers, strict=True), strict=True))
        self._keep_scores(sc, names, out)
        return out

    def _fill_split(self, vals: _NodeValues, task: TaskInfo, node: NodeInfo) -> float:
        """One node's final score, computed and kept: the node a job's last pod went to, asked
        again for its next pod (so this runs once per pod, and is kept lean)."""
        splits = self.kept
        assert splits is not None
        b = self.ssn.node_order_score(task, node)
        sc = vals.sc
        name = node.name
        if len(splits) == 1 and not sc.keep_parts:
            # nodeorder's alone, the default: what _combine adds, base + (0.0 + part), inline;
            # its many-node form when it has one (the same integer, a call less than per_node's)
            sp = splits[0]
            many = sp.per_nodes
            v = b + (0.0 + (sp.per_node(task, node) if many is None else many(task, [node])[0]))
        else:
            per = tuple(sp.per_node(task, node) for sp in splits)
            if sc.keep_parts:
                sc.parts[name] = (b, per)
            v = _combine(b, per, None, name)
        i = self._index.get(name)
        if i is not None:  # as _keep_scores keeps it
            known = sc.final_known
            if len(known) != len(self.nodes):
                self._score_arrays(sc)
                known = sc.final_known
            sc.final[i] = v
            known[i] = 1
        return v

    def _cached_check(self, vals: _NodeValues, task: TaskInfo, node: NodeInfo) -> Unfit | list[str] | None:
        """allocate's predicate, answered from the shape's verdicts while the node is unchanged
        (a method, not a closure made per refresh: a gang's next pod refreshes one node)."""
        verdicts = vals.verdicts
        name = node.name
        if name in verdicts:
            return verdicts[name]
        codes = vals.codes
        i = self._index.get(name) if codes else None
        if i is not None and codes[i] == FIT:
            return None
        r = self.check(task, node)
        if i is None:
            verdicts[name] = r
        else:
            codes[i] = FIT if r is None else REFUSED
            if r is not None:
                verdicts[name] = r
        return r

    def feasible(self, task: TaskInfo, errors: FitErrors) -> list[NodeInfo]:
        key = self._key(task)
        if key is None:
            return predicate_nodes(self.ssn, task, self.nodes, self.check, errors)
        entry = self.entries.get(key)
        if entry is None or (not entry.cands and not entry.complete):
            entry = self._scan(task, key)
            self.entries[key] = entry
        else:
            self._refresh(task, entry)
        self._handed = (task, entry)
        errors.nodes.update(entry.errors.nodes)
        errors.forget()
        # not a copy: callers do not change it, and the entry replaces rather than changes it
        return entry.cands

    def _scan(self, task: TaskInfo, key: tuple) -> _Entry:
        ssn = self.ssn
        # job and role change neither predicates nor scores: the rest of the key is shared by jobs
        vkey = key[2:]
        values = self.values.get(vkey)
        known: _Known | None = None
        if values is None:
            carryable = self.carrying and _carryable(task)
            seq = len(ssn.node_changes)
            values = self.values[vkey] = _NodeValues(seq, carryable, self._shared_scores(task, seq))
            kept = self.carried.shapes.get(vkey) if carryable and self.carried is not None else None
            if kept is not None:
                known = self._from_carried(values, kept)
        self._fresh(values, task)
        entry = _Entry(values)
        entry.start = ssn.predicate_round_robin % len(self.nodes) if self.nodes else 0
        found, entry.at = self._scan_window(task, values, entry.errors, known)
        # every node examined: a rescan could not find more
        entry.complete = len(found) + len(entry.errors.nodes) >= len(self.nodes)
        # every node refused: the errors were recorded in the scan's order from its start
        entry.ordered = not found and len(entry.errors.nodes) == len(self.nodes)
        entry.cands = found
        entry.seq = len(ssn.node_changes)
        return entry

    def _from_carried(self, values: _NodeValues, kept: _Shape) -> _Known | None:
        """Seed the shape's verdicts with the last session's refusals that still hold, so that the
        scan asks only the other nodes. When the kept refusals covered every node, every node's
        answer is seeded (its refusal, or unknown where it changed) and the kept errors are
        returned: if every node still refuses, the scan's errors are those, redone only for the
        nodes it asked (see _scan_window), not worded again node by node. Nodes this session
        already changed are not seeded: their views are no longer unchanged."""
        carried = self.carried
        assert carried is not None
        unchanged = carried.unchanged
        ssn = self.ssn
        changed = set(ssn.node_changes)
        verdicts = values.verdicts
        if unchanged is True or unchanged is False:
            # the same nodes in the same places: only those that changed since are not seeded
            redo = changed | kept.redo
            if unchanged is False and carried.stale:
                redo |= carried.stale
            errors = kept.errors
            if (
                errors is not None
                and len(errors) == len(self.nodes)
                and self._seed_every_node(values, kept, redo)
            ):
                return _Known(errors, redo, kept.start if kept.ordered else None)
            verdicts.update((n, v) for n, v in kept.verdicts.items() if n not in redo)
        else:
            verdicts.update((n, v) for n, v in kept.verdicts.items() if n in unchanged and n not in changed)
        values.codes = bytearray()  # rebuilt from the seeded verdicts at the scan
        return None

    def _seed_every_node(self, values: _NodeValues, kept: _Shape, redo: set[str]) -> bool:
        """Every node's answer code from the kept refusals (REFUSED), UNKNOWN for the nodes in
        `redo`, in C-level passes; False (nothing seeded) when some other node has no kept refusal."""
        index = self._index
        verdicts = dict(kept.verdicts)
        at: list[int] = []
        for name in redo:
            verdicts.pop(name, None)
            i = index.get(name)
            if i is not None:
                at.append(i)
        total = len(self.nodes)
        # the kept names are node names (same nodes, same places) and not in `redo`: disjoint
        # from `at`'s, so the two cover every node exactly when their sizes add up
        if len(verdicts) + len(at) != total:
            return False
        codes = bytearray([REFUSED]) * total
        window_impl.forget(codes, at)
        values.verdicts = verdicts
        values.codes = codes
        return True

    def carry_over(self) -> None:
        """Keep, for the next session, the refusals of the shapes that fit nowhere when scanned.

        Nothing is kept from a session where a plugin failed: the failure must be met again."""
        ssn = self.ssn
        if not self.carrying or ssn.plugin_errors:
            return
        versions = ssn.closing_versions()
        if versions is None:
            return
        changed = set(ssn.node_changes)
        total = len(self.nodes)
        shapes: dict[tuple, _Shape] = {}
        for key, entry in self.entries.items():
            vkey = key[2:]
            if entry.cands or not entry.complete or vkey in shapes or not entry.values.carryable:
                continue
            vals = self._fresh(entry.values, None)
            refused = dict(vals.verdicts)  # at C level: usually a refusal of every node
            for name in changed:
                refused.pop(name, None)
            if any(map(is_, refused.values(), repeat(None))):
                refused = {n: v for n, v in refused.items() if v is not None}
            # the errors of a scan where every node refused: true of the nodes that did not change
            # since (those that did are redone from `changed`)
            whole = entry.errors.nodes if len(entry.errors.nodes) == total else None
            shapes[vkey] = _Shape(refused, whole, entry.start, changed, whole is not None and entry.ordered)
        # the rows go to the next session's cache, which changes them: not this one's any more
        # (those of the last session, brought up to date, when this one asked none)
        rows, self._rows = self._rows or self._kept_rows(), None
        ssn.carry(CARRY, _Carried(ssn, shapes, versions, rows, self._names))

    def _scan_nodes(self, task: TaskInfo, vals: _NodeValues, errors: FitErrors) -> list[NodeInfo]:
        return self._scan_window(task, vals, errors)[0]

    def _scan_window(
        self, task: TaskInfo, vals: _NodeValues, errors: FitErrors, known: _Known | None = None
    ) -> tuple[list[NodeInfo], list[int] | _Run]:
        """The feasible nodes and their positions in the cache's node list: predicate_nodes over the cache's nodes, reading the shape's known answers: the same
        rotating start, the same stop after numNodesToFind, the same errors, and the predicate
        asked of exactly the nodes predicate_nodes asks (those before the stop). `known`: errors
        kept from the last session, used when every node refuses.

        The window is found by the compiled scans of nodewindow over the answer codes; unknown
        answers are asked in runs that certainly lie before the stop (`to_ask`), so that a batch
        predicate can answer a cold window at once."""
        ssn = self.ssn
        nodes = self.nodes
        total = len(nodes)
        if total == 0:
            return [], []
        want = self._want
        if want[0] != total:
            want = self._want = (total, num_feasible_nodes_to_find(ssn, total))
        want = want[1]
        start = ssn.predicate_round_robin % total
        codes = self._codes(vals)
        scan = window_impl
        pos = found = 0
        while True:
            pos, found, done = scan.window_stop(codes, start, want, pos, found)
            if done:
                break
            self._ask(task, vals, scan.to_ask(codes, start, pos, want - found))
        if found == pos:
            # every node of the window fits (the usual case): the candidates are a run of the
            # ring, sliced at C level, and their positions a _Run
            end = start + pos
            feasible = nodes[start:end] if end <= total else nodes[start:] + nodes[: end - total]
            ssn.predicate_round_robin = end % total
            return feasible, _Run(start, pos, total)
        feasible, at, refused = scan.window_nodes(codes, start, pos, nodes)
        if refused:
            names = self._node_names()
            verdicts = vals.verdicts
            if known is None or len(refused) != total or not known.fill(errors, names, start, verdicts):
                for i in refused:
                    r = verdicts[names[i]]
                    errors.set_node_error(names[i], r.reason if isinstance(r, Unfit) else r)
        ssn.predicate_round_robin = (start + pos) % total
        return feasible, at

    def _node_names(self) -> list[str]:
        names = self._names
        if names is None or len(names) != len(self.nodes):
            names = self._names = list(map(_name, self.nodes))
        return names

    def _resource_rows(self, task: TaskInfo | None = None) -> ResourceRows:
        """The rows of the cache's nodes, brought up to the change log (built when first needed,
        or taken from the last session's cache: building them read every node, ~3.5 ms a session
        at 5,000 nodes). Built with the columns of the scalars `task` asks: the check that follows
        would otherwise build them all again for its first scalar request (a vGPU session's)."""
        rows = self._rows
        log = self.ssn.node_changes
        if rows is None:
            rows = self._kept_rows()
            if rows is None:
                keys = list(task.init_resreq.scalars) if task is not None else None
                rows = ResourceRows(self.nodes, len(log), keys)
            self._rows = rows
        elif rows.seq != len(log):
            # the changed rows are marked stale and written by the compiled pass before the check
            # that follows (ResourceRows.misfits_idle), not by a call of their own per ask
            if len(log) - rows.seq == 1:
                # the usual case, one placement since the last ask: its row alone, no list built
                i = self._index.get(log[-1], -1)
                if i >= 0:
                    rows.stale.append(i)
            else:
                # a node the log names again (a floor shape asks the rows after several
                # placements, a third of them repeats) is written once
                rows.stale.extend(set(self._changed_at(log, rows.seq)))
            rows.seq = len(log)
        return rows

    def _kept_rows(self) -> ResourceRows | None:
        """The last session's rows, when they were kept over the same nodes in the same places,
        with the rows of every node that may differ written again: those whose view or version
        differs (_Carried.check), those the last session changed and those this one changed so
        far. Taken: the carried object no longer offers them."""
        carried = self.carried
        if (
            carried is None
            or carried.rows is None
            or not (carried.unchanged is True or carried.unchanged is False)
        ):
            return None
        rows, carried.rows = carried.rows, None
        if len(rows.nodes) != len(self.nodes):
            return None
        redo = carried.changed | set(self.ssn.node_changes)
        if carried.unchanged is False and carried.stale:
            redo |= carried.stale
        index = self._index
        rows.nodes = self.nodes
        rows.refresh(sorted(i for i in map(index.get, redo) if i is not None))
        rows.seq = len(self.ssn.node_changes)
        return rows

    def _ask(self, task: TaskInfo, vals: _NodeValues, idx: list[int]) -> None:
        """Ask the predicate about the nodes at `idx` (in scan order) and keep the answers."""
        if len(idx) == 1 and self.check_many_idle is not None:
            self._ask_one(task, vals, idx[0])
            return
        # the nodes gathered and the answers written by compiled passes over the positions: a
        # vGPU shape re-asks the ~60 nodes changed since its last window, scattered over the
        # ring, and a Python loop per node was a fifth of the ask's own cost
        scan = window_impl
        asked = scan.take(self.nodes, idx)
        if self.check_many_idle is not None:
            # the Idle fits best() gathers for the window's candidates, known from the same pass
            got = self.check_many_idle(task, asked, idx, self._fit_array(vals), self._resource_rows(task))
        else:
            got = self.check_many(task, asked)
        refused = scan.settle(vals.codes, idx, got)
        if refused:
            names, verdicts = self._node_names(), vals.verdicts
            for k in refused:
                verdicts[names[idx[k]]] = got[k]

    def _ask_one(self, task: TaskInfo, vals: _NodeValues, i: int) -> None:
        """_ask for the one node at `i`, the usual ask (the node a pod took since the shape's last
        window): the one-node forms of what check_many_idle answers, the predicate (`check`) and
        the Idle fit (as _fit_at computes it), without the batch's lists and resource rows, whose
        fixed cost was most of a one-pod job's ask."""
        node = self.nodes[i]
        self._fit_array(vals)[i] = FIT if task.init_resreq.less_equal(node.idle) else REFUSED
        r = self.check(task, node)
        if r is None:
            vals.codes[i] = FIT
        else:
            vals.verdicts[node.name] = r
            vals.codes[i] = REFUSED

    def _refresh(self, task: TaskInfo, entry: _Entry) -> None:
        log = self.ssn.node_changes
        end = len(log)
        if entry.seq == end:
            return
        # a gang's next pod: the one node its last pod went to, without a set of one name
        changed = (log[-1],) if end - entry.seq == 1 else set(log[entry.seq :])
        entry.seq = end
        vals = self._fresh(entry.values, task)
        nodes = self.ssn.nodes
        for name in changed:
            node = nodes.get(name)
            if node is None:
                continue
            member = self._is_candidate(entry, name)
            if not member and name not in entry.errors.nodes:
                continue  # outside this shape's sample
            r = self._cached_check(vals, task, node)
            if r is None:
                if member:
                    entry.touched.add(name)
                else:
                    entry.order = entry.at = None  # appended: the candidate list changes
                    entry.cands = [*entry.cands, node]
                    if entry.members is not None:
                        entry.members[name] = len(entry.cands) - 1
                if entry.errors.nodes.pop(name, None) is not None:
                    entry.ordered = False  # if it is refused again, it goes last
                entry.errors.forget()
            else:
                if member:
                    entry.order = entry.at = None
                    entry.cands = [n for n in entry.cands if n.name != name]
                    entry.members = entry.picked = None
                if name not in entry.errors.nodes:
                    entry.ordered = False
                entry.errors.set_node_error(name, r.reason if isinstance(r, Unfit) else r)

    @staticmethod
    def _is_candidate(entry: _Entry, name: str) -> bool:
        """Whether `name` is among the entry's feasible nodes; usually the node its last choice
        went to, known without building the name index."""
        picked = entry.picked
        if picked is not None:
            node, i = picked
            cands = entry.cands
            if node.name == name and i < len(cands) and cands[i] is node:
                return True
        members = entry.members
        if members is None:
            members = entry.members = {n.name: i for i, n in enumerate(entry.cands)}
        return name in members

    def best(self, task: TaskInfo, candidates: list[NodeInfo]) -> NodeInfo | None:
        """prioritize(ssn, task, candidates, self) for the list feasible() just returned.

        Between two pods of a job only the node the first went to changes, so the candidates'
        scores and Idle fits are kept as lists aligned with the candidate list and updated in
        place; the choice is then a few C-level passes. Falls back to prioritize whenever the
        candidate list changed or a normalised score applies (it depends on the whole list)."""
        handed = self._handed
        if handed[0] is task:
            # the entry feasible() just gave this task (best() follows it): its key is not hashed
            # again, a pass over a dozen nested tuples
            entry: _Entry | None = handed[1]
        else:
            key = self._key(task)
            entry = self.entries.get(key) if key is not None else None
        splits = self.kept
        if entry is None or splits is None:
            return prioritize(self.ssn, task, candidates, self)
        vals = self._fresh(entry.values, task)
        for sp in splits:  # any(), without a generator per pod
            if sp.rest(task, candidates):
                return prioritize(self.ssn, task, candidates, self)
        offsets = self._uniform_scores(task, candidates) if self.uniforms else _NO_OFFSETS
        if offsets is None:
            return prioritize(self.ssn, task, candidates, self)
        run = entry.at
        if (
            type(run) is _Run
            and candidates is entry.cands
            and len(candidates) == run.n
            and self._last_pending(task)
        ):
            picked = self._best_in_run(task, vals, entry, run, offsets)
            if picked is not _UNDECIDED:
                # not typing.cast: that is a Python call per pod
                return picked  # type: ignore[return-value]
        order = entry.order
        if (
            order is None
            or len(order) != len(candidates)
            or order[0] is not candidates[0]
            or order[-1] is not candidates[-1]
        ):
            # the entry's own list is never changed in place; another list may be (place_best)
            order = entry.order = candidates if candidates is entry.cands else list(candidates)
            entry.index = {}  # built when a candidate changes and the last choice does not tell
            at = entry.at
            nodes = self.nodes
            if (
                at is not None
                and len(at) == len(order)
                and nodes[at[0]] is order[0]
                and nodes[at[-1]] is order[-1]
            ):
                entry.fit_flags, entry.score_list = self._gathered(task, vals, order, at)
                # needed for this gather only (a later rebuild follows a change of the candidate
                # list, which drops it anyway); a job's entry lives all session at 28+ bytes a position
                entry.at = None
            else:
                entry.fit_flags = bytearray(self._fit_flags(task, vals, order))
                entry.score_list = array(
                    "d",
                    self.score_values(task, order)
                    if self.splits is not None
                    else self._final_scores(vals, task, order),
                )
            entry.touched.clear()
        elif entry.touched:
            score_list, fit_flags = entry.score_list, entry.fit_flags
            codes, index = self._fit_array(vals), self._index
            final, known = self._score_arrays(vals.sc)
            for name in entry.touched:
                i = self._position(entry, order, name)
                node = order[i]
                j = index.get(name)
                fit_flags[i] = self._fit_at(task, codes, node, j)
                score_list[i] = final[j] if j is not None and known[j] else self._fill_split(vals, task, node)
            entry.touched.clear()
        flags, scores = entry.fit_flags, entry.score_list
        ssn = self.ssn
        # The nodes fitting Idle if some do (else all), their top score and its ties in candidate
        # order: one compiled pass over the aligned arrays. A NaN top, or a BestNodeFn, is left
        # to _pick over Python lists.
        top = None if ssn.has("best_node") else window_impl.top_ties(scores, flags)
        if offsets and (top is None or not _order_kept(top[2], offsets)):
            # the kept scores alone may not choose as their sums with the uniform ones would
            return prioritize(ssn, task, candidates, self)
        if top is None:
            nfit = len(flags) - flags.count(0)
            if nfit == len(order) or nfit == 0:
                group, gvals = order, scores.tolist()
            else:
                group = list(compress(order, flags))
                gvals = list(compress(scores, flags))
            if len(group) == 1:
                return group[0]
            return _pick(ssn, task, group, gvals)
        count, first, m, only = top
        if count == 0:
            return None
        if count == 1:
            i = first
        elif ssn.options.deterministic:
            return min([order[i] for i in window_impl.top_indices(scores, flags)], key=_name)
        else:
            # choice draws from the length alone and reads one item: choosing the k-th of the
            # ties draws the same node as choosing among the tied nodes (a range is indexed in C)
            i = int(window_impl.nth_tie(scores, flags, m, only, ssn.rng.choice(range(count))))
        node = order[i]
        entry.picked = (node, i)
        return node

    def _last_pending(self, task: TaskInfo) -> bool:
        """Whether `task` is its job's last pending task: its entry is then not asked again for
        another pod, and the window's aligned arrays (which a gang's later pods update in place
        at the one node that changed, cheaper than a pass over the whole window) are not needed."""
        job = self.ssn.jobs.get(task.job)
        if job is None:
            return False
        pending = job.task_status_index.get(TaskStatus.PENDING)
        return pending is not None and len(pending) <= 1

    def _best_in_run(
        self, task: TaskInfo, vals: _NodeValues, entry: _Entry, run: _Run, offsets: list[float]
    ) -> object:
        """best() for a window where every node fits (the candidates are the run of the ring):
        the choice read in place from the shape's per-node arrays, the unknown Idle fits and
        scores computed first and kept (as _gathered computes them), without gathering the run
        into arrays of its own: a one-pod job's entry is asked once. (Were the entry asked again,
        the nodes changed in between are unknown in the shape's arrays, which _fresh forgot, and
        are recomputed as the touched path recomputes them.) _UNDECIDED when the top is NaN, a
        BestNodeFn applies, the pick is deterministic or the uniform scores `offsets` might change
        the choice: best()'s lists decide then."""
        ssn = self.ssn
        if ssn.options.deterministic or ssn.has("best_node"):
            return _UNDECIDED
        nodes = self.nodes
        total = len(nodes)
        # the shape's arrays, sized here only when new (as _fit_array and _score_arrays size them)
        codes = vals.fit_codes
        if len(codes) != total:
            codes = self._fit_array(vals)
        sc = vals.sc
        known = sc.final_known
        if len(known) != total:
            self._score_arrays(sc)
            known = sc.final_known
        start, n = run.start, run.n
        fit_missing, score_missing = window_impl.run_missing(codes, known, start, n)
        if fit_missing:
            self._fits_at(task, codes, list(map(nodes.__getitem__, fit_missing)), fit_missing)
        if len(score_missing) <= _FEW_SCORES:
            # the usual case, the nodes changed since the shape's last window: one by one, cheaper
            # than the batch call's fixed cost; both give the same floats (see _gathered)
            for i in score_missing:
                self._fill_split(vals, task, nodes[i])
        else:
            self._fill_split_many(vals, task, [nodes[i] for i in score_missing])
        entry.touched.clear()
        final = sc.final
        top = window_impl.run_top(final, codes, start, n)
        if top is None or (offsets and not _order_kept(top[2], offsets)):
            return _UNDECIDED
        count, first, m, only = top
        if count == 0:
            return None
        if count == 1:
            k = first
        else:
            k = int(window_impl.run_nth_tie(final, codes, start, n, m, only, ssn.rng.choice(range(count))))
        node = entry.cands[k]
        entry.picked = (node, k)
        return node

    def _uniform_scores(self, task: TaskInfo, nodes: list[NodeInfo]) -> list[float] | None:
        """The scores the batch functions without a split add to every node of `nodes`, in tier
        order (those that add none left out); None when one of them does not add one score to all
        (or fails: its own call then decides, and reports, as before)."""
        out: list[float] = []
        for form in self.uniforms:
            try:
                c = form(task, nodes, self.domain)
            except Exception:
                return None
            if c is NOT_UNIFORM:
                return None
            if c is not None:
                out.append(c)
        return out

    @staticmethod
    def _position(entry: _Entry, order: list[NodeInfo], name: str) -> int:
        """Where candidate `name` sits in `order`: the last choice's position when it is that
        node (the usual case, a job's next pod), else from the name index, built once."""
        picked = entry.picked
        if picked is not None:
            node, i = picked
            if node.name == name and i < len(order) and order[i] is node:
                return i
        if not entry.index:
            entry.index = dict(zip(map(_name, order), range(len(order)), strict=True))
        return entry.index[name]

    def _gathered(
        self, task: TaskInfo, vals: _NodeValues, order: list[NodeInfo], at: list[int] | _Run
    ) -> tuple[bytearray, array]:
        """The Idle-fit flags and scores of the candidates at positions `at`, read from the shape's
        arrays; the unknown ones computed as _fit_flags and score_values compute them (Idle fits
        first, then the scores of the missing nodes in one call), and kept."""
        final, known = self._score_arrays(vals.sc)
        n = len(order)
        flags = bytearray(n)
        codes = self._fit_array(vals)
        run = at.start if isinstance(at, _Run) else None
        if run is not None:
            missing = window_impl.gather_flags_run(codes, run, flags)
        else:
            missing = window_impl.gather_flags(codes, at, flags)
        if missing:
            where = at.positions(missing) if isinstance(at, _Run) else [at[k] for k in missing]
            got = self._fits_at(task, codes, [order[k] for k in missing], where)
            for k, f in zip(missing, got, strict=True):
                flags[k] = f
        scores = array("d", bytes(8 * n))
        if run is not None:
            missing = window_impl.gather_scores_run(final, known, run, scores)
        else:
            missing = window_impl.gather_scores(final, known, at, scores)
        if len(missing) == 1:
            # the usual case (the node the last pod went to): the one-node form, half the cost of
            # the batch call; both give the same floats (as best()'s touched path relies on)
            k = missing[0]
            scores[k] = self._fill_split(vals, task, order[k])
        elif missing:
            got_scores = self._fill_split_many(vals, task, [order[k] for k in missing])
            for k, v in zip(missing, got_scores, strict=True):
                scores[k] = v
        return flags, scores

    def idle_fit(self, task: TaskInfo, nodes: list[NodeInfo]) -> list[NodeInfo]:
        """The nodes where the task's InitResreq fits Idle, in the given order."""
        vals = self._values(task)
        if vals is None:
            req = task.init_resreq
            return [n for n in nodes if req.less_equal(n.idle)]
        return list(compress(nodes, self._fit_flags(task, vals, nodes)))

    def _fit_flags(self, task: TaskInfo, vals: _NodeValues, nodes: list[NodeInfo]) -> bytearray:
        """Whether the task's InitResreq fits each node's Idle (1 or 0), from the shape's known
        answers: one compiled pass over the nodes' codes, the unknown ones computed in one call."""
        codes = self._fit_array(vals)
        flags = bytearray(len(nodes))
        at = list(map(self._index.get, map(_name, nodes)))
        if None in at:  # a node outside the cache's list (not expected): asked one by one
            for k, (node, i) in enumerate(zip(nodes, at, strict=True)):
                flags[k] = self._fit_at(task, codes, node, i)
            return flags
        missing = window_impl.gather_flags(codes, at, flags)  # type: ignore[arg-type]
        if missing:
            got = self._fits_at(task, codes, [nodes[k] for k in missing], [at[k] for k in missing])  # type: ignore[misc]
            for k, f in zip(missing, got, strict=True):
                flags[k] = f
        return flags

    def score_values(self, task: TaskInfo, nodes: list[NodeInfo]) -> list[float]:
        """The nodes' scores, in the given order: what score_nodes gives, from the cache."""
        vals = self._values(task)
        if vals is None:
            scores = score_nodes(self.ssn, task, nodes)
            return [scores[n.name] for n in nodes]
        splits = self.splits
        if splits is None:
            scores = self._scores_unsplit(vals, task, nodes)
            return [scores[n.name] for n in nodes]
        # Per node: the node-order sum and each batch function's per-node part are kept until the
        # node changes; only the normalised parts are computed per call, and usually are empty.
        rests = [sp.rest(task, nodes) for sp in splits]
        sc = vals.sc
        parts = sc.parts
        if not any(rests):
            return self._final_scores(vals, task, nodes)
        # from now on these shapes keep their parts; those of nodes scored before are computed
        # again below (the same values: their nodes are unchanged, or _fresh would have dropped them)
        sc.keep_parts = True
        out: list[float] = []
        for n in nodes:
            name = n.name
            got = parts.get(name)
            if got is None:
                self._fill_split(vals, task, n)
                got = parts[name]
            out.append(_combine(got[0], got[1], rests, name))
        return out

    def _final_scores(self, vals: _NodeValues, task: TaskInfo, nodes: list[NodeInfo]) -> list[float]:
        """The nodes' final scores (no normalised part applies), in order: one compiled pass over
        the kept arrays, the unknown ones computed in one call and kept."""
        final, known = self._score_arrays(vals.sc)
        at = list(map(self._index.get, map(_name, nodes)))
        if None in at:  # a node outside the cache's list (not expected): all computed afresh
            return self._fill_split_many(vals, task, nodes)
        out = array("d", bytes(8 * len(nodes)))
        missing = window_impl.gather_scores(final, known, at, out)  # type: ignore[arg-type]
        if missing:
            got = self._fill_split_many(vals, task, [nodes[k] for k in missing])
            for k, v in zip(missing, got, strict=True):
                out[k] = v
        return out.tolist()

    def scores(self, task: TaskInfo, nodes: list[NodeInfo]) -> dict[str, float]:
        return dict(zip(map(_name, nodes), self.score_values(task, nodes), strict=True))

    def _scores_unsplit(self, vals: _NodeValues, task: TaskInfo, nodes: list[NodeInfo]) -> dict[str, float]:
        base = vals.sc.base
        missing = [n for n in nodes if n.name not in base]
        for n in missing:
            base[n.name] = self.ssn.node_order_score(task, n)
        out = {n.name: base[n.name] for n in nodes}
        if self.plan:
            return self._add_mixed(vals, task, nodes, out)
        if self.ssn.has("batch_node_order"):
            for name, s in self.ssn.batch_node_order_scores(task, nodes).items():
                if name in out:
                    out[name] += s
        return out

    def _add_mixed(
        self, vals: _NodeValues, task: TaskInfo, nodes: list[NodeInfo], out: dict[str, float]
    ) -> dict[str, float]:
        """out + the batch total, the split functions' per-node parts read from the cache and the
        others called, added in tier order as batch_node_order_scores adds them (same floats)."""
        splits = [sp for sp, _ in self.plan if sp is not None]
        mixed = vals.sc.mixed
        for n in nodes:
            if n.name not in mixed:
                mixed[n.name] = tuple(sp.per_node(task, n) for sp in splits)
        names = [n.name for n in nodes]
        totals = [0.0] * len(names)
        k = 0
        for sp, fn in self.plan:
            if sp is None:
                r = fn(task, nodes)
                totals = [
                    t if (v := r.get(nm)) is None else t + v for t, nm in zip(totals, names, strict=True)
                ]
            else:
                rest = sp.rest(task, nodes)
                per = [mixed[nm][k] for nm in names]
                totals = [t + (p + rest.get(nm, 0)) for t, p, nm in zip(totals, per, names, strict=True)]
                k += 1
        for nm, t in zip(names, totals, strict=True):
            out[nm] += t
        return out


_NO_OFFSETS: list[float] = []
# below this every integer is a float and so is the next one down
_EXACT_INTS = float(2**52)


def _order_kept(top: float, offsets: list[float]) -> bool:
    """Whether adding `offsets` one after the other (each sum rounded, as the batch total adds
    them) to every kept score leaves exactly the nodes at the kept top score `top` at the top.

    The kept scores are integers (split parts are, and no node-order function adds a float), so a
    score below `top` is at most top - 1. Rounding never reverses an order: the nodes at `top`
    stay tied, and every other node ends at most where top - 1 ends. When that is still below
    where `top` ends, the same nodes tie at the top, in the same candidate order, and the choice
    among them draws the same node; else (sums so large that rounding could join a runner-up to
    the top) the caller scores the nodes in full."""
    if not (-_EXACT_INTS < top < _EXACT_INTS) or not top.is_integer():
        return False
    hi, lo = top, top - 1.0
    for c in offsets:
        hi += c
        lo += c
    return lo < hi


def _combine(base: float, per: tuple[int, ...], rests: list[dict[str, int]] | None, name: str) -> float:
    """base + the batch total, added in the order score_nodes adds them (same float result)."""
    if not per:
        return base
    total = 0.0
    if rests is None:
        for p in per:
            total += p
    else:
        for p, r in zip(per, rests, strict=True):
            total += p + r.get(name, 0)
    return base + total
