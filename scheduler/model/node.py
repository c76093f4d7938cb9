"""NodeInfo: a node with Volcano's idle/used/releasing/pipelined accounting (spec 2.3).

The cluster keeps one live NodeInfo per node, updated as pods come and go. A session gets a
copy-on-write view: it shares the task map and the resource totals until the session places or
evicts something there, so opening a session on 5,000 nodes copies almost nothing. Even then
it copies only what a plain placement changes (the task map, idle and used); the affinity set,
the host ports and the releasing and pipelined totals follow when a task needs them.
"""

from __future__ import annotations

from operator import attrgetter
from typing import Any

from scheduler.model.objects import PodInfo, TaskInfo, TaskStatus
from scheduler.model.resources import Resource

# a member looked up on the enum class costs an attribute lookup through its metaclass (~0.15 us);
# add_task and remove_task run for every pod of an initial sync
_RELEASING, _PIPELINED = TaskStatus.RELEASING, TaskStatus.PIPELINED
# the statuses a node accounts apart from idle and used
_SPLIT = (_RELEASING, _PIPELINED)


def has_pod_affinity(pod: PodInfo) -> bool:
    """The pod carries a pod affinity or anti-affinity term (which other pods' placement reads)."""
    aff = pod.affinity
    return bool(aff) and ("podAffinity" in aff or "podAntiAffinity" in aff)


# a view's own version counts the changes its session made (none while it is shared)
_own_version = attrgetter("version")
_origin_version = attrgetter("_origin.version")


class NodeInfo:
    # views made private by sessions (`_own`), ever, in this process: a session that finds it
    # unchanged knows that no view changed, without looking at every node
    views_owned = 0

    __slots__ = (
        "_lent",
        "_origin",
        "_shared",
        "_touched",
        "affinity_tasks",
        "allocatable",
        "annotations",
        "capability",
        "devices",
        "idle",
        "labels",
        "max_task_num",
        "name",
        "pipelined",
        "raw_capacity",
        "releasing",
        "taints",
        "tasks",
        "unschedulable",
        "used",
        "used_ports",
        "version",
    )

    def __init__(
        self,
        name: str,
        allocatable: Resource,
        capability: Resource | None = None,
        labels: dict[str, str] | None = None,
        annotations: dict[str, str] | None = None,
        taints: list[dict[str, Any]] | None = None,
        unschedulable: bool = False,
    ) -> None:
        self.name = name
        self.allocatable = allocatable
        self.capability = capability if capability is not None else allocatable.clone()
        self.idle = allocatable.clone()
        self.used = Resource()
        self.releasing = Resource()
        self.pipelined = Resource()
        self.labels = labels or {}
        self.annotations = annotations or {}
        self.taints = taints or []
        self.unschedulable = unschedulable
        self.max_task_num = int(allocatable.pods) if allocatable.pods > 0 else 0
        self.tasks: dict[str, TaskInfo] = {}
        # uids of the tasks here whose pod has a pod (anti-)affinity term: the inter-pod affinity
        # checks look only at these nodes instead of every pod of the cluster each session
        self.affinity_tasks: set[str] = set()
        # host port usage: (protocol, hostIP, port) -> count
        self.used_ports: dict[tuple[str, str, int], int] = {}
        # device kind -> ledger (deviceshare); always private to a session
        self.devices: dict[str, Any] = {}
        self.raw_capacity: dict[str, Any] = {}
        self._shared = False
        # affinity_tasks, used_ports, releasing and pipelined still the origin's (see `_own`)
        self._lent = False
        # the cluster's node this is a session view of (None: not a view)
        self._origin: NodeInfo | None = None
        # a view's note to the cluster that its session changed it (see `session_view`)
        self._touched: set[str] | None = None
        # bumped whenever a task is accounted, taken off or swapped here (see `view_token`)
        self.version = 0

    def session_view(self, touched: set[str] | None = None) -> NodeInfo:
        """A copy-on-write view for one session. A view that its session changes (makes private,
        or gives device ledgers) adds its name to `touched`: the cluster looks again only at
        those views, and at the nodes that changed, when it hands the views out next time."""
        n = NodeInfo.__new__(NodeInfo)
        n.name = self.name
        n.allocatable = self.allocatable
        n.capability = self.capability
        n.idle = self.idle
        n.used = self.used
        n.releasing = self.releasing
        n.pipelined = self.pipelined
        n.labels = self.labels
        n.annotations = self.annotations
        n.taints = self.taints
        n.unschedulable = self.unschedulable
        n.max_task_num = self.max_task_num
        n.tasks = self.tasks
        n.affinity_tasks = self.affinity_tasks
        n.used_ports = self.used_ports
        n.devices = {}
        n.raw_capacity = self.raw_capacity
        n._shared = True
        n._lent = False
        n._origin = self
        n._touched = touched
        n.version = 0
        return n

    def reuse_for(self, origin: NodeInfo) -> bool:
        """Make this view of `origin` what a fresh `origin.session_view()` would be, and say True;
        False when a session changed it. Its task map and totals are still `origin`'s own while
        no session wrote on them (they follow the cluster's changes by themselves); the device
        ledgers are rebuilt by every session, so they are emptied here."""
        if not (self._origin is origin and self._shared):
            return False
        if self.devices:
            self.devices = {}
        return True

    def view_token(self) -> tuple[NodeInfo, int] | None:
        """What this view shows, as a value that differs once anything on it changed: the cluster
        node it follows and that node's version. None when a session changed the view (it is then
        private and never handed out again)."""
        origin = self._origin
        if origin is None or not self._shared:
            return None
        return origin, origin.version

    @staticmethod
    def view_versions(views: list[NodeInfo], changed_ok: bool = False) -> list[int] | None:
        """view_token's version for each view, in C-level passes (this runs over every node each
        period). A view its session changed gets -1 when `changed_ok`, else the answer is None;
        None too when some node is no view."""
        try:
            versions = list(map(_origin_version, views))
        except AttributeError:  # no origin
            return None
        if any(map(_own_version, views)):
            if not changed_ok:
                return None
            versions = [v if not n.version else -1 for v, n in zip(versions, views, strict=True)]
        return versions

    def set_device(self, kind: str, ledger: Any) -> None:
        """Keep a device ledger on this session's view (emptied before the view is handed out again)."""
        self.devices[kind] = ledger
        if self._touched is not None:
            self._touched.add(self.name)

    def _own(self) -> None:
        """Make the view private for a change. The task map, idle and used change with every
        task, so they are copied now; the affinity set, the port counts and the releasing and
        pipelined totals change only for a task that has an affinity term, host ports or one of
        those two statuses (few of a burst's placements), so they stay the origin's until
        `_own_rest` copies them before such a change."""
        NodeInfo.views_owned += 1
        if self._touched is not None:
            self._touched.add(self.name)
        self.version += 1
        self.tasks = dict(self.tasks)
        self.idle = self.idle.clone()
        self.used = self.used.clone()
        self._shared = False
        self._lent = True

    def _own_rest(self) -> None:
        """Copy what `_own` left shared with the origin, before it changes."""
        self.affinity_tasks = set(self.affinity_tasks)
        self.used_ports = dict(self.used_ports)
        self.releasing = self.releasing.clone()
        self.pipelined = self.pipelined.clone()
        self._lent = False

    def future_idle(self) -> Resource:
        return self.idle.clone().add(self.releasing).sub(self.pipelined)

    def add_task(self, task: TaskInfo) -> None:
        """Account a task on this node by its status."""
        if self._shared:
            self._own()
        if task.uid in self.tasks:
            raise ValueError(f"task {task.key} already on node {self.name}")
        self.version += 1
        req = task.resreq
        st = task.status
        pod = task.pod
        if self._lent and (st in _SPLIT or pod.host_ports or (pod.affinity and has_pod_affinity(pod))):
            self._own_rest()
        if st == _RELEASING:
            self.idle.sub(req)
            self.releasing.add(req)
            self.used.add(req)
        elif st == _PIPELINED:
            self.pipelined.add(req)
        else:
            self.idle.pass_on(req, self.used)
        self.tasks[task.uid] = task
        if pod.affinity and has_pod_affinity(pod):
            self.affinity_tasks.add(task.uid)
        for p in pod.host_ports:
            self.used_ports[p] = self.used_ports.get(p, 0) + 1

    def remove_task(self, task: TaskInfo) -> None:
        if self._shared:
            self._own()
        t = self.tasks.pop(task.uid, None)
        if t is None:
            return
        self.version += 1
        req = t.resreq
        st = t.status
        if self._lent and (st in _SPLIT or t.pod.host_ports or t.uid in self.affinity_tasks):
            self._own_rest()
        self.affinity_tasks.discard(t.uid)
        if st == _RELEASING:
            self.idle.add(req)
            self.releasing.sub(req)
            self.used.sub(req)
        elif st == _PIPELINED:
            self.pipelined.sub(req)
        else:
            self.idle.add(req)
            self.used.sub(req)
        for p in t.pod.host_ports:
            n = self.used_ports.get(p, 0) - 1
            if n <= 0:
                self.used_ports.pop(p, None)
            else:
                self.used_ports[p] = n

    def restatus(self, task: TaskInfo, old: TaskStatus) -> None:
        """What remove_task (the task under status `old`) then add_task (under its status now)
        leave, for a task whose status the caller has just changed: one call for a commit's
        Allocated -> Binding. When this view is private, holds this very task, and both statuses
        take idle and used (neither Releasing nor Pipelined), the two calls' steps are taken
        here: the same four sums per dimension in the same order (so the same floats), the version moved
        twice, the task's entry (and its ports) moved to the end. Otherwise the two calls."""
        status = task.status
        uid = task.uid
        tasks = self.tasks
        if self._shared or tasks.get(uid) is not task or old in _SPLIT or status in _SPLIT:
            task.status = old
            self.remove_task(task)
            task.status = status
            self.add_task(task)
            return
        del tasks[uid]
        tasks[uid] = task
        self.version += 2
        pod = task.pod
        if self._lent and (
            pod.host_ports or uid in self.affinity_tasks or (pod.affinity and has_pod_affinity(pod))
        ):
            self._own_rest()
        affinity = self.affinity_tasks
        affinity.discard(uid)
        if pod.affinity and has_pod_affinity(pod):
            affinity.add(uid)
        req = task.resreq
        # idle.add(req) then .sub(req), used.sub(req) then .add(req): a pass each, same floats
        self.idle.add_sub(req, req)
        self.used.sub_add(req, req)
        if pod.host_ports:
            ports = self.used_ports
            for p in pod.host_ports:
                n = ports.get(p, 0) - 1
                if n <= 0:
                    ports.pop(p, None)
                else:
                    ports[p] = n
            for p in pod.host_ports:
                ports[p] = ports.get(p, 0) + 1

    def replace_task(self, old: TaskInfo, new: TaskInfo) -> None:
        """Swap a task object for its session-private copy (same uid and status: no accounting)."""
        if self._shared:
            self._own()
        if old.uid in self.tasks:
            self.version += 1
            self.tasks[new.uid] = new

    def update_task(self, task: TaskInfo, status: TaskStatus) -> None:
        self.remove_task(task)
        task.status = status
        self.add_task(task)

    def pod_count(self) -> int:
        return len(self.tasks)

    def with_tasks_of(self, other: NodeInfo) -> NodeInfo:
        """This (freshly converted) node taking over `other`'s tasks, re-accounted."""
        for t in other.tasks.values():
            self.add_task(t)
        return self

    def __repr__(self) -> str:
        return f"<Node {self.name} idle={self.idle!r}>"
