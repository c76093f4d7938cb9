"""Per-queue quantities of the capacity plugin, flat or as a tree under `root`.

Flat (Volcano's default): every queue that has jobs gets deserved/capability/guarantee from its
spec and a real capability of (cluster - all guarantees) + its own guarantee, capped by its
capability. Hierarchical (`enableHierarchy`): every queue hangs under its `spec.parent` (or
`root`); a child inherits the parent's capability where it sets none, and its real capability is
what the parent's real capability leaves after its siblings' guarantees. Allocated, requested,
in-queue and elastic amounts of a leaf are also counted in each ancestor.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from scheduler.model.job import JobInfo
from scheduler.model.objects import ALLOCATED_STATUSES, PodGroupPhase, QueueInfo, TaskStatus
from scheduler.model.resources import Infinity, Resource
from scheduler.plugins.capacity.compare import INF, exceeded_part, less_partly, max_of, share

ROOT = "root"


@dataclass(slots=True)
class QueueAttr:
    name: str
    deserved: Resource
    capability: Resource
    guarantee: Resource
    real_capability: Resource = field(default_factory=Resource)
    allocated: Resource = field(default_factory=Resource)
    request: Resource = field(default_factory=Resource)
    inqueue: Resource = field(default_factory=Resource)
    elastic: Resource = field(default_factory=Resource)
    # root first, parent last; empty for root and in flat mode
    ancestors: list[str] = field(default_factory=list)
    # the ancestors then the queue (hierarchy only): where two leaves' lines part, read by the
    # queue order at every comparison, so made once with the tree's shape
    path: tuple[str, ...] = ()
    children: dict[str, QueueAttr] = field(default_factory=dict)
    share: float = 0.0
    weight: int = 1

    # the names the queue metrics use (volcano_queue_capacity_*, volcano_queue_real_capacity_*)
    @property
    def capacity(self) -> Resource:
        return self.capability

    @property
    def real_capacity(self) -> Resource:
        return self.real_capability

    def take_amounts(self, sums: list[Resource]) -> None:
        """Allocated, request, inqueue and elastic: copies of a queue's four kept sums, which
        later sessions build on and this session's events must not change."""
        allocated, request, inqueue, elastic = sums
        self.allocated, self.request = allocated.clone(), request.clone()
        self.inqueue, self.elastic = inqueue.clone(), elastic.clone()

    def update_share(self) -> None:
        self.share = share(self.allocated, self.deserved)

    def chain(self) -> list[str]:
        """Ancestors then the queue itself: every queue an allocation here is counted in."""
        return [*self.ancestors, self.name]


def _spec(q: QueueInfo) -> tuple[Resource, Resource | None, Resource]:
    deserved = q.deserved.clone() if q.deserved is not None else Resource()
    cap = q.capability.clone() if q.capability is not None and not q.capability.is_empty() else None
    return deserved, cap, q.guarantee.clone()


def deduct_gated(job: JobInfo, res: Resource) -> Resource:
    """`res` less what the job's scheduling-gated pods ask for: they cannot run yet, so what they
    would take is not held back from other jobs."""
    gated = Resource()
    # gated pods are Pending: a running job's other tasks need not be looked at
    for t in job.task_status_index.get(TaskStatus.PENDING, {}).values():
        if t.scheduling_gated:
            gated.add(t.resreq)
    if gated.is_empty():
        return res
    out = res.clone()
    out.milli_cpu = max(out.milli_cpu - gated.milli_cpu, 0.0)
    out.memory = max(out.memory - gated.memory, 0.0)
    for k, v in res.scalars.items():
        if k in gated.scalars:
            out.scalars[k] = max(v - gated.scalars[k], 0.0)
    return out


def inqueue_resource(job: JobInfo) -> Resource:
    """What an admitted job still reserves: its minResources less what its tasks already hold."""
    out = Resource()
    if job.min_resources is None:
        return out
    for name, want in job.min_resources.items():
        rest = want - job.allocated.get(name)
        if rest > 0:
            out.set(name, rest)
    return deduct_gated(job, out)


def job_part(job: JobInfo) -> list[tuple[int, Resource]]:
    """What a job adds to its queue's allocated (0), request (1), inqueue (2) and elastic (3)."""
    # the job keeps both sums up to date: no walk over its tasks (150,000 of them at scale)
    part = [(0, job.allocated), (1, job.allocated)]
    pending = job.pending_request
    if pending.milli_cpu or pending.memory or pending.scalars:
        part.append((1, pending))
    phase = job.pod_group_status.phase
    if job.min_resources is not None:
        if phase == PodGroupPhase.INQUEUE:
            part.append((2, inqueue_resource(job)))
        elif phase == PodGroupPhase.RUNNING:
            held = sum(len(job.task_status_index.get(s, {})) for s in ALLOCATED_STATUSES)
            if held >= job.min_available:
                part.append((2, inqueue_resource(job)))
    if job.min_resources is None:
        part.append((3, job.allocated))  # nothing is the job's minimum: all it holds is elastic
    else:
        part.append((3, exceeded_part(job.allocated, job.min_resources)))
    return part


def _count_job(attr: QueueAttr, job: JobInfo) -> None:
    """Add a job's allocated, requested, admitted and elastic amounts to its queue."""
    sums = (attr.allocated, attr.request, attr.inqueue, attr.elastic)
    for i, r in job_part(job):
        sums[i].add(r)


def build_flat(
    queues: dict[str, QueueInfo],
    jobs: dict[str, JobInfo],
    total: Resource,
    sums: dict[str, list[Resource]] | None = None,
) -> dict[str, QueueAttr]:
    """Every queue that has a job, with its amounts: `sums` (queue -> the four sums of
    `job_part` over its jobs, in the order a walk over the jobs meets the queues) when the
    caller kept them, else a walk over `jobs`."""
    if sums is None:
        sums = {}
        for job in jobs.values():
            if job.queue in queues:
                s = sums.setdefault(job.queue, [Resource(), Resource(), Resource(), Resource()])
                for i, r in job_part(job):
                    s[i].add(r)
    total_guarantee = Resource()
    for q in queues.values():
        total_guarantee.add(q.guarantee)
    attrs: dict[str, QueueAttr] = {}
    for name, amounts in sums.items():
        q = queues[name]
        deserved, cap, guarantee = _spec(q)
        real = exceeded_part(total, total_guarantee).add(guarantee)
        if cap is None:
            cap = Resource()
        else:
            # a capability without cpu or memory leaves that dimension unlimited
            if cap.milli_cpu <= 0:
                cap.milli_cpu = INF
            if cap.memory <= 0:
                cap.memory = INF
            real.min_dimension(cap, Infinity.INFINITY)
        attr = QueueAttr(q.name, deserved, cap, guarantee, real, weight=q.weight)
        attr.take_amounts(amounts)
        attrs[name] = attr
    for attr in attrs.values():
        attr.deserved.min_dimension(attr.real_capability, Infinity.INFINITY)
        attr.deserved = max_of(attr.deserved, attr.guarantee)
        attr.update_share()
    return attrs


@dataclass(slots=True)
class Tree:
    attrs: dict[str, QueueAttr]
    # queue name -> why it is not in the tree (unknown parent, cycle); its jobs cannot run
    broken: dict[str, str]
    warnings: list[str]


def _parent_of(q: QueueInfo) -> str:
    return q.parent or ROOT


def _broken_queues(queues: dict[str, QueueInfo]) -> dict[str, str]:
    """Queues whose chain of parents does not reach root, each with a message naming it."""
    broken: dict[str, str] = {}
    for name in queues:
        seen: list[str] = []
        cur = name
        while cur != ROOT:
            if cur in seen:
                cycle = " -> ".join([*seen[seen.index(cur) :], cur])
                broken[name] = f"queue {name!r}: its parents form a cycle ({cycle})"
                break
            seen.append(cur)
            q = queues.get(cur)
            parent = _parent_of(q) if q is not None else ROOT
            if parent != ROOT and parent not in queues:
                broken[name] = (
                    f"queue {name!r}: parent queue {parent!r} does not exist"
                    if cur == name
                    else f"queue {name!r}: ancestor {cur!r} has parent {parent!r}, which does not exist"
                )
                break
            cur = parent
    return broken


@dataclass(slots=True)
class TreeShape:
    """The settled queue tree before any job counts: deserved, capability, guarantee and real
    capability of every queue, its place in the tree, the broken queues and the warnings. It
    depends only on the queues' specs and the names of the cluster's scalar resources, so the
    next session reuses it while they stay the same (a snapshot keeps an unchanged queue's
    object). Its resources are shared by the sessions' attrs, which only read them."""

    queues: dict[str, QueueInfo]  # the specs it was built from
    scalar_names: frozenset[str]
    attrs: dict[str, QueueAttr]  # amounts empty, children empty
    broken: dict[str, str]
    broken_warnings: list[str]
    settle_warnings: list[str]

    def fits(self, queues: dict[str, QueueInfo], total: Resource) -> bool:
        if len(queues) != len(self.queues) or frozenset(total.scalars) != self.scalar_names:
            return False
        mine = self.queues
        return all(mine.get(name) is q for name, q in queues.items())


def tree_shape(queues: dict[str, QueueInfo], total: Resource) -> TreeShape:
    broken = _broken_queues(queues)
    attrs: dict[str, QueueAttr] = {}
    root_info = queues.get(ROOT)
    if root_info is not None:
        d, cap, g = _spec(root_info)
        attrs[ROOT] = QueueAttr(ROOT, d, cap or Resource(), g)
    else:
        # Volcano's controller always creates root; without it every queue still needs one above
        attrs[ROOT] = QueueAttr(ROOT, Resource(), Resource(), Resource())
    for name, q in queues.items():
        if name == ROOT or name in broken:
            continue
        d, cap, g = _spec(q)
        attrs[name] = QueueAttr(name, d, cap or Resource(), g, weight=q.weight)
    for name in [n for n in attrs if n != ROOT]:
        line: list[str] = []
        cur = _parent_of(queues[name])
        while True:
            line.append(cur)
            if cur == ROOT:
                break
            cur = _parent_of(queues[cur])
        attrs[name].ancestors = line[::-1]
        attrs[name].path = (*attrs[name].ancestors, name)
        attrs[line[0]].children[name] = attrs[name]
    root = attrs[ROOT]
    root.path = (ROOT,)
    if root.capability.is_empty():
        # root is not limited by the cluster's size: jobs may ask for more than exists today
        root.capability = Resource(INF, INF, {k: INF for k in total.scalars})
    root.real_capability = root.capability
    settle_warnings: list[str] = []
    _settle(root, settle_warnings)
    for attr in attrs.values():
        attr.children = {}  # each session links its own attrs
    return TreeShape(
        dict(queues), frozenset(total.scalars), attrs, broken, list(broken.values()), settle_warnings
    )


def build_tree(
    queues: dict[str, QueueInfo],
    jobs: dict[str, JobInfo],
    total: Resource,
    sums: dict[str, list[Resource]] | None = None,
    shape: TreeShape | None = None,
) -> tuple[Tree, TreeShape]:
    """The queue tree with its amounts, and the shape it was built on (`shape` when it still
    fits the queues). The amounts come from `sums` (queue -> the four sums of `job_part` over
    its jobs, kept by the caller between sessions and not changed here) when given, else from a
    walk over `jobs`. Jobs of a queue that has children are not counted, each with a warning."""
    if shape is None or not shape.fits(queues, total):
        shape = tree_shape(queues, total)
    attrs: dict[str, QueueAttr] = {}
    for name, s in shape.attrs.items():
        attrs[name] = QueueAttr(
            name,
            s.deserved,
            s.capability,
            s.guarantee,
            s.real_capability,
            ancestors=s.ancestors,
            path=s.path,
            weight=s.weight,
        )
    for name, attr in attrs.items():
        if attr.ancestors:  # children in the order tree_shape linked them
            attrs[attr.ancestors[-1]].children[name] = attr
    warnings = list(shape.broken_warnings)
    if sums is None:
        for job in jobs.values():
            attr = attrs.get(job.queue)
            if attr is None:
                continue
            if attr.children:
                warnings.append(_not_in_leaf(attr, job))
                continue
            _count_job(attr, job)
    else:
        inner = False
        for name, amounts in sums.items():
            attr = attrs.get(name)
            if attr is None:
                continue
            if attr.children:
                inner = True
                continue
            attr.take_amounts(amounts)
        if inner:
            # rare (a misconfiguration): the warnings name each job, in job order as the walk does
            for job in jobs.values():
                attr = attrs.get(job.queue)
                if attr is not None and attr.children:
                    warnings.append(_not_in_leaf(attr, job))
    # a leaf's totals count in every ancestor: added once per leaf, not once per job
    for attr in list(attrs.values()):
        if attr.children or attr.name == ROOT:
            continue
        for anc in attr.ancestors:
            a = attrs[anc]
            a.allocated.add(attr.allocated)
            a.request.add(attr.request)
            a.inqueue.add(attr.inqueue)
            a.elastic.add(attr.elastic)
    warnings += shape.settle_warnings
    for attr in attrs.values():
        attr.update_share()
    return Tree(attrs, shape.broken, warnings), shape


def _not_in_leaf(attr: QueueAttr, job: JobInfo) -> str:
    return f"queue {attr.name!r} has child queues: job {job.namespace}/{job.name} must be in a leaf queue"


def _exceeds(child: Resource, parent: Resource) -> bool:
    """Some dimension of `child` above `parent` (a scalar the parent does not limit never is)."""
    if child.milli_cpu > parent.milli_cpu or child.memory > parent.memory:
        return True
    return any(v > parent.scalars[k] for k, v in child.scalars.items() if k in parent.scalars)


def _settle(parent: QueueAttr, warnings: list[str]) -> None:
    """Fill the children's deserved, capability and real capability from the parent, top down."""
    total_deserved, total_guarantee = Resource(), Resource()
    for child in parent.children.values():
        child.deserved = max_of(child.deserved, child.guarantee)
        total_deserved.add(child.deserved)
        total_guarantee.add(child.guarantee)
        cap = child.capability
        if cap.milli_cpu <= 0:
            cap.milli_cpu = parent.capability.milli_cpu
        if cap.memory <= 0:
            cap.memory = parent.capability.memory
        for k, v in parent.capability.scalars.items():
            cap.scalars.setdefault(k, v)
        if _exceeds(cap, parent.capability):
            warnings.append(
                f"queue {child.name!r}: capability {cap} exceeds its parent {parent.name!r}'s "
                f"{parent.capability}; the parent's limit applies"
            )
    if parent.name == ROOT:
        parent.guarantee = total_guarantee
        parent.deserved = total_deserved
    for child in parent.children.values():
        real = exceeded_part(parent.real_capability, total_guarantee).add(child.guarantee)
        real.min_dimension(child.capability, Infinity.INFINITY)
        child.real_capability = real
    if parent.children and less_partly(parent.deserved, total_deserved):
        warnings.append(
            f"queue {parent.name!r}: its children's deserved add up to {total_deserved}, "
            f"more than its own deserved {parent.deserved}"
        )
    if parent.children and less_partly(parent.guarantee, total_guarantee):
        warnings.append(
            f"queue {parent.name!r}: its children's guarantees add up to {total_guarantee}, "
            f"more than its own guarantee {parent.guarantee}; not all can be met at once"
        )
    for child in parent.children.values():
        _settle(child, warnings)
