"""The session's placed pods as kube-scheduler's node infos see them, indexed for selector lookups.

Volcano's predicates plugin keeps a Kubernetes NodeInfo per node and moves pods in and out of it
from the session's allocate/deallocate events: a task placed (allocated or pipelined) in the
session counts, a task evicted in the session (now Releasing) no longer does, and undoing either
restores the previous state. `SessionPods` follows the same events, once per session however many
plugins ask for it, and offers what the affinity and spread rules need:

* the pods evicted in the session, per node (pod count and host ports must not count them);
* lazily, an index of the counted pods by namespace and by (namespace, label, value), plus the
  set of pods carrying pod (anti-)affinity, so that matching a selector reads the pods that can
  match instead of all 150,000;
* listeners, told of every pod added or removed, so that preempt's topology-aware dry run can
  replay its victims' removals into the preemptor's affinity state (Volcano's SimulateRemoveTask).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from scheduler.model.node import has_pod_affinity
from scheduler.model.objects import PodInfo, TaskInfo, TaskStatus

if TYPE_CHECKING:
    from scheduler.framework.session import Event, Session
    from scheduler.plugins.k8s.labels import Selector

# (pod, node name, +1 added / -1 removed)
Listener = Callable[[PodInfo, str, int], None]

_BY_SESSION: weakref.WeakKeyDictionary[Session, SessionPods] = weakref.WeakKeyDictionary()


def session_pods(ssn: Session) -> SessionPods:
    """The one tracker of this session (created, and its event handler registered, on first use)."""
    sp = _BY_SESSION.get(ssn)
    if sp is None:
        sp = SessionPods(ssn)
        _BY_SESSION[ssn] = sp
    return sp


def has_required_anti_affinity(pod: PodInfo) -> bool:
    aff = pod.affinity
    if not aff:
        return False
    anti = aff.get("podAntiAffinity")
    return isinstance(anti, dict) and bool(anti.get("requiredDuringSchedulingIgnoredDuringExecution"))


class SessionPods:
    def __init__(self, ssn: Session) -> None:
        from scheduler.framework.session import EventHandler

        self.ssn = ssn
        # uid -> node name of tasks evicted in this session
        self.evicted: dict[str, str] = {}
        # uid -> node name of tasks placed (allocated or pipelined) in this session
        self.placed: dict[str, str] = {}
        self.evicted_count: dict[str, int] = {}
        self.evicted_ports: dict[str, dict[tuple[str, str, int], int]] = {}
        self.listeners: list[Listener] = []
        # per-session memo of derived data (compiled terms of existing pods), by owner module
        self.memo: dict[str, Any] = {}
        self._placed_anti = 0
        self._built = False
        self.pods: dict[str, tuple[PodInfo, str]] = {}
        self.by_ns: dict[str, dict[str, None]] = {}
        self.by_label: dict[tuple[str, str, str], set[str]] = {}
        self._aff: dict[str, tuple[PodInfo, str]] | None = None
        ssn.add_event_handler(EventHandler(allocate=self._on_allocate, deallocate=self._on_deallocate))

    # ------------------------------------------------------------------ events --
    def _on_allocate(self, ev: Event) -> None:
        task = ev.task
        node = self.evicted.pop(task.uid, None)
        if node is not None:  # an eviction undone: the pod counts again
            self._count_eviction(task, node, -1)
        else:
            node = task.node_name
            if not node or task.uid in self.placed:
                return
            self.placed[task.uid] = node
            if has_required_anti_affinity(task.pod):
                self._placed_anti += 1
        self._add(task.pod, node)

    def _on_deallocate(self, ev: Event) -> None:
        # Only undo what is counted: a refused placement may deallocate before we saw it allocated.
        task = ev.task
        if task.status == TaskStatus.RELEASING:
            node = task.node_name
            if not node or task.uid in self.evicted:
                return
            self.evicted[task.uid] = node
            self._count_eviction(task, node, 1)
        else:
            node = self.placed.pop(task.uid, "")
            if not node:
                return
        self._remove(task.pod, node)

    def _count_eviction(self, task: TaskInfo, node: str, sign: int) -> None:
        self.evicted_count[node] = self.evicted_count.get(node, 0) + sign
        if task.pod.host_ports:
            ports = self.evicted_ports.setdefault(node, {})
            for p in task.pod.host_ports:
                ports[p] = ports.get(p, 0) + sign

    def pod_count(self, node_name: str, on_node: int) -> int:
        """Pods a node holds for the predicates: its tasks minus those evicted in the session."""
        return on_node - self.evicted_count.get(node_name, 0)

    # ------------------------------------------------------------------ index --
    def _add(self, pod: PodInfo, node: str) -> None:
        for fn in self.listeners:
            fn(pod, node, 1)
        if self._built:
            self._index(pod, node)
        if self._aff is not None and has_pod_affinity(pod):
            self._aff[pod.uid] = (pod, node)

    def _remove(self, pod: PodInfo, node: str) -> None:
        for fn in self.listeners:
            fn(pod, node, -1)
        if self._built:
            self._unindex(pod)
        if self._aff is not None:
            self._aff.pop(pod.uid, None)

    def _index(self, pod: PodInfo, node: str) -> None:
        uid = pod.uid
        self.pods[uid] = (pod, node)
        ns = pod.namespace
        self.by_ns.setdefault(ns, {})[uid] = None
        for k, v in pod.labels.items():
            self.by_label.setdefault((ns, k, v), set()).add(uid)

    def _unindex(self, pod: PodInfo) -> None:
        uid = pod.uid
        if self.pods.pop(uid, None) is None:
            return
        ns = pod.namespace
        self.by_ns.get(ns, {}).pop(uid, None)
        for k, v in pod.labels.items():
            s = self.by_label.get((ns, k, v))
            if s is not None:
                s.discard(uid)

    def _counted(self) -> Iterator[tuple[PodInfo, str]]:
        evicted = self.evicted
        for node in self.ssn.node_list:
            for uid, task in node.tasks.items():
                if uid not in evicted:
                    yield task.pod, node.name

    def build(self) -> None:
        """Index every counted pod by namespace and label (once; events keep it current)."""
        if self._built:
            return
        self._built = True
        for pod, node in self._counted():
            self._index(pod, node)

    def _affinity_map(self) -> dict[str, tuple[PodInfo, str]]:
        # Kept apart from the label index, and read only on the nodes that hold such pods (each
        # node keeps their uids): a session where nobody uses affinity never pays for indexing
        # labels nor for walking every pod of the cluster. In `_counted` order.
        if self._aff is None:
            evicted = self.evicted
            self._aff = {
                uid: (task.pod, node.name)
                for node in self.ssn.node_list
                if node.affinity_tasks
                for uid, task in node.tasks.items()
                if uid in node.affinity_tasks and uid not in evicted
            }
        return self._aff

    def has_required_anti(self) -> bool:
        """Whether some counted pod has required anti-affinity (which every pod must then respect)."""
        if self._aff is None and not self.ssn.has_required_anti_affinity and not self._placed_anti:
            return False
        aff = self._affinity_map()
        # asked once per pod (the predicates' inter-pod state): most sessions count no affinity
        # pod at all, answered without a generator over the empty map
        return bool(aff) and any(has_required_anti_affinity(p) for p, _ in aff.values())

    def has_affinity_pods(self) -> bool:
        """Whether some counted pod has a pod (anti-)affinity term (asked per task: no copy)."""
        return bool(self._affinity_map())

    def affinity_pods(self) -> list[tuple[PodInfo, str]]:
        """Counted pods with any pod (anti-)affinity term, and their nodes."""
        return list(self._affinity_map().values())

    def required_anti_affinity_pods(self) -> list[tuple[PodInfo, str]]:
        return [e for e in self._affinity_map().values() if has_required_anti_affinity(e[0])]

    def in_namespace(self, namespace: str, selector: Selector) -> Iterator[tuple[PodInfo, str]]:
        """Counted pods of `namespace` that `selector` matches, read through the label index."""
        self.build()
        if selector.nothing:
            return
        pods = self.pods
        uids: list[str]
        if selector.match_labels:
            best: set[str] | None = None
            for k, v in selector.match_labels:
                s = self.by_label.get((namespace, k, v))
                if not s:
                    return
                if best is None or len(s) < len(best):
                    best = s
            uids = list(best or ())
        else:
            uids = list(self.by_ns.get(namespace, ()))
        for uid in uids:
            entry = pods.get(uid)
            if entry is not None and selector.matches(entry[0].labels):
                yield entry

    def namespaces(self) -> list[str]:
        self.build()
        return [ns for ns, uids in self.by_ns.items() if uids]
