"""The daemon's view of the cluster: a `ClusterState` fed by informers, plus what is in flight.

The informers deliver raw objects; this module turns each into the core's slim records and drops
the raw dict at once. A malformed object is logged once with its name and skipped (the previous
good version, if any, stays). Binds the session decided are *assumed* here before the Binding is
even sent, so the next cycle counts the capacity as used and never decides the same pod again:
an assumed pod stays assumed until the watch shows it with a node (or gone), until the bind
fails (rolled back), or until the API says someone else bound it (resynced from the API).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import structlog

from scheduler.model.cluster import ClusterOptions, ClusterState, convert_pod
from scheduler.model.convert import ConvertError, object_name
from scheduler.model.objects import TaskInfo, TaskStatus
from scheduler.model.podstatus import PodSeen, pod_seen, status_only_impl, with_bind_annotations
from scheduler.model.resources import QuantityError
from scheduler.model.snapshot import Snapshot

log = structlog.get_logger("vc-scheduler.cache")

# pods remembered for the status-only shortcut; past this, pods take the full conversion as before
SEEN_MAX = 50_000
BAD_INPUT = (ConvertError, QuantityError, TypeError, ValueError, AttributeError, KeyError)


@dataclass(slots=True)
class Assumed:
    uid: str
    node: str
    annotations: dict[str, str]
    since: float
    sent: bool = False  # the API accepted the Binding; waiting for the watch to show it


class _Handler:
    """Adapts a pair of functions to the informer's Handler protocol."""

    __slots__ = ("delete", "upsert", "upsert_listed")

    def __init__(
        self,
        upsert: Callable[[dict[str, Any]], None],
        delete: Callable[[str, dict[str, Any] | None], None],
        upsert_listed: Callable[[list[Any], list[str | None], Callable[[Any, Exception], None]], None]
        | None = None,
    ):
        self.upsert = upsert
        self.delete = delete
        # the objects of a first list, a run at a time (see Informer._deliver_fresh); None: one by one
        self.upsert_listed = upsert_listed


def _split(key: str) -> tuple[str, str]:
    ns, _, name = key.rpartition("/")
    return ns, name


class SchedulerCache:
    def __init__(
        self,
        options: ClusterOptions | None = None,
        node_selector: dict[str, set[str]] | None = None,
        device_configmaps: tuple[str, ...] = ("kube-system/volcano-vgpu-device-config",),
    ) -> None:
        self.state = ClusterState(options)
        self.node_selector = node_selector or {}
        self.device_configmaps = set(device_configmaps)
        self.assumed: dict[str, Assumed] = {}
        # pods of ours not yet running -> what their last full conversion read outside status: the
        # watch echo of a Binding and the kubelet's reports then skip the full conversion
        self.seen: dict[str, PodSeen] = {}
        self.evicting: dict[str, str] = {}  # pod key -> uid of the pod we asked to delete
        self.podgroup_rv: dict[str, str] = {}  # "ns/name" -> resourceVersion
        # "ns/name" -> metadata.uid: events name it, as kubectl describe looks events up by uid
        self.podgroup_object_uid: dict[str, str] = {}
        self.queue_status: dict[str, dict[str, Any]] = {}
        self.skipped: dict[str, str] = {}  # object -> reason, to log each bad version once
        self.state.refused = self.skipped  # the session names a malformed PodGroup or Queue in conditions
        # called with the creation time of each new pod of ours waiting for a node ("Watched" latency)
        self.on_watched: Callable[[float], None] | None = None
        self.pods = _Handler(self.upsert_pod, self.delete_pod, self.upsert_listed_pods)
        self.nodes = _Handler(self.upsert_node, self.delete_node)
        self.podgroups = _Handler(self.upsert_podgroup, self.delete_podgroup)
        self.queues = _Handler(self.upsert_queue, self.delete_queue)
        self.hypernodes = _Handler(self.upsert_hypernode, self.delete_hypernode)
        self.priority_classes = _Handler(self.upsert_priority_class, self.delete_priority_class)
        self.namespaces = _Handler(self.upsert_namespace, self.delete_namespace)
        self.configmaps = _Handler(self.upsert_configmap, self.delete_configmap)
        self.resource_quotas = _Handler(self.upsert_resource_quota, self.delete_resource_quota)
        self.pdbs = _Handler(self.upsert_pdb, self.delete_pdb)

    # ---------------------------------------------------------------- bad input --
    def _bad(self, kind: str, obj: Any, exc: Exception) -> None:
        where = object_name({**obj, "kind": kind}) if isinstance(obj, dict) else kind
        reason = str(exc)
        if reason.startswith(where + ": "):
            reason = reason[len(where) + 2 :]
        if self.skipped.get(where) != reason:
            self.skipped[where] = reason
            log.warning("skipping malformed object", object=where, reason=reason)

    def _good(self, kind: str, obj: dict[str, Any]) -> None:
        if self.skipped:
            self.skipped.pop(object_name({**obj, "kind": kind}), None)

    # ---------------------------------------------------------------- pods --
    def upsert_pod(self, obj: dict[str, Any]) -> None:
        md = obj.get("metadata")
        if type(md) is dict and self.seen:
            key = f"{md.get('namespace') or 'default'}/{md.get('name')}"
            seen = self.seen.get(key)
            task = self.state.get_task(key) if seen is not None else None
            if seen is not None and task is not None:
                update = status_only_impl(obj, seen, task.node_name)
                if update is not None:
                    self.state.apply_pod_status(task, update)
                    if update.phase != "Pending":
                        del self.seen[key]  # running: no echo of ours is to come
                    if self.skipped:
                        self._good("Pod", obj)
                    if self.assumed or self.evicting:
                        self._pod_settled(key, task)
                    return
        known = len(self.state.tasks)
        try:
            task = self.state.apply_pod(obj)
        except BAD_INPUT as exc:
            self._bad("Pod", obj, exc)
            return
        self._good("Pod", obj)
        key = task.key
        ours = task.pod.scheduler_name in self.state.options.scheduler_names
        if (
            self.on_watched is not None
            and len(self.state.tasks) > known  # a pod we did not have (not an update)
            and not task.node_name
            and task.pod.creation
            and ours
        ):
            self.on_watched(task.pod.creation)
        seen = pod_seen(obj) if ours and task.pod.phase == "Pending" else None
        if seen is not None and (key in self.seen or len(self.seen) < SEEN_MAX):
            self.seen[key] = seen
        elif self.seen:
            self.seen.pop(key, None)
        if self.assumed or self.evicting:  # nothing in flight during an initial sync
            self._pod_settled(key, task)

    def upsert_listed_pods(
        self, objs: list[Any], keys: list[str | None], failed: Callable[[Any, Exception], None]
    ) -> None:
        """`upsert_pod` for each pod of a run of a first list, in order: the same state, the same
        logs and callbacks. `keys[i]` is `objs[i]`'s `namespace/name` when its namespace is a
        string (else None): the cache keeps that string. `failed(obj, exc)` is told of an error
        that is not the pod's (a handler bug), as the informer is by `upsert_pod` raising.

        Here the conversion and `ClusterState.add_listed_pod` are called straight, instead of
        through `upsert_pod` and `apply_pod` with their checks for what a first list does not
        have. A pod that may take the status-only shortcut (its key is in `seen`), and every pod
        while binds or evictions are in flight, go through `upsert_pod` itself."""
        if self.assumed or self.evicting:
            for obj in objs:
                try:
                    self.upsert_pod(obj)
                except Exception as exc:
                    failed(obj, exc)
            return
        state = self.state
        convert, add = convert_pod, state.add_listed_pod
        classes = state.priority_classes
        names = state.options.scheduler_names
        seen = self.seen
        for i in range(len(objs)):
            obj = objs[i]
            objs[i] = None  # freed once handled, while still in the processor's caches
            key = keys[i]
            if seen:
                # the informer's key is the one upsert_pod works out where it has one (a
                # namespace that is a non-empty string), without a second string per pod
                look = key if type(obj) is dict else None
                if look is None and type(obj) is dict:
                    md = obj.get("metadata")
                    if type(md) is dict:
                        look = f"{md.get('namespace') or 'default'}/{md.get('name')}"
                if look is not None and look in seen:
                    try:
                        self.upsert_pod(obj)
                    except Exception as exc:
                        failed(obj, exc)
                    continue
            try:
                task = convert(obj, classes)
                # the informer's key is the task's when the namespace is a string that is not
                # empty (the name is a string, or conversion refused the pod)
                new = add(task, key)
            except BAD_INPUT as exc:
                self._bad("Pod", obj, exc)
                continue
            try:
                if self.skipped:
                    self._good("Pod", obj)
                pod = task.pod
                # a pod of ours running on its node (most of a list) is neither watched nor seen
                if pod.scheduler_name in names and (not task.node_name or pod.phase == "Pending"):
                    self._listed_ours(obj, task, new)
                elif seen:
                    seen.pop(task.key if key is None else key, None)
            except Exception as exc:
                failed(obj, exc)

    def _listed_ours(self, obj: dict[str, Any], task: TaskInfo, new: bool) -> None:
        """`upsert_pod`'s steps after the conversion, for a pod of ours."""
        key = task.key
        if self.on_watched is not None and new and not task.node_name and task.pod.creation:
            self.on_watched(task.pod.creation)
        seen = pod_seen(obj) if task.pod.phase == "Pending" else None
        if seen is not None and (key in self.seen or len(self.seen) < SEEN_MAX):
            self.seen[key] = seen
        elif self.seen:
            self.seen.pop(key, None)

    def _pod_settled(self, key: str, task: TaskInfo) -> None:
        """What a new version of a pod means for the binds and evictions in flight."""
        a = self.assumed.get(key)
        if a is not None:
            if a.uid != task.uid or task.node_name:
                # confirmed (on whichever node the API says), or a new pod under the same name
                del self.assumed[key]
            else:
                # an event from before our Binding: keep counting the pod where we sent it
                self.state.assume_bound(key, a.node, a.annotations)
                seen = self.seen.get(key)
                if seen is not None:
                    self.seen[key] = with_bind_annotations(seen, a.annotations)
        ev = self.evicting.get(key)
        if ev is not None and (ev != task.uid or task.pod.deleting):
            del self.evicting[key]

    def delete_pod(self, key: str, obj: dict[str, Any] | None) -> None:
        ns, name = _split(key)
        self.state.remove_pod(ns, name)
        self.assumed.pop(key, None)
        self.evicting.pop(key, None)
        self.seen.pop(key, None)

    # ---------------------------------------------------------------- nodes --
    def _selected(self, obj: dict[str, Any]) -> bool:
        if not self.node_selector:
            return True
        labels = (obj.get("metadata") or {}).get("labels") or {}
        # Volcano caches a node when any one of the --node-selector pairs matches
        return any(labels.get(k) in vals for k, vals in self.node_selector.items())

    def upsert_node(self, obj: dict[str, Any]) -> None:
        try:
            if not self._selected(obj):
                name = str((obj.get("metadata") or {}).get("name") or "")
                if name in self.state.nodes:
                    self.state.remove_node(name)
                return
            self.state.apply_node(obj)
        except BAD_INPUT as exc:
            self._bad("Node", obj, exc)
            return
        self._good("Node", obj)

    def delete_node(self, key: str, obj: dict[str, Any] | None) -> None:
        self.state.remove_node(key)

    # ---------------------------------------------------------------- groups and queues --
    def upsert_podgroup(self, obj: dict[str, Any]) -> None:
        try:
            job = self.state.apply_podgroup(obj)
        except BAD_INPUT as exc:
            self._bad("PodGroup", obj, exc)
            return
        self._good("PodGroup", obj)
        md = obj.get("metadata") or {}
        self.podgroup_rv[job.uid] = str(md.get("resourceVersion") or "")
        self.podgroup_object_uid[job.uid] = str(md.get("uid") or "")

    def delete_podgroup(self, key: str, obj: dict[str, Any] | None) -> None:
        ns, name = _split(key)
        self.skipped.pop(f"PodGroup {key}", None)
        self.state.remove_podgroup(ns, name)
        self.podgroup_rv.pop(key, None)
        self.podgroup_object_uid.pop(key, None)

    def upsert_queue(self, obj: dict[str, Any]) -> None:
        try:
            q = self.state.apply_queue(obj)
        except BAD_INPUT as exc:
            self._bad("Queue", obj, exc)
            return
        self._good("Queue", obj)
        st = obj.get("status")
        self.queue_status[q.name] = dict(st) if isinstance(st, dict) else {}

    def delete_queue(self, key: str, obj: dict[str, Any] | None) -> None:
        self.skipped.pop(f"Queue {key}", None)
        self.state.remove_queue(key)
        self.queue_status.pop(key, None)

    # ---------------------------------------------------------------- topology --
    def upsert_hypernode(self, obj: dict[str, Any]) -> None:
        try:
            self.state.apply_hypernode(obj)
        except BAD_INPUT as exc:
            self._bad("HyperNode", obj, exc)
            # the HyperNode as it is now is unusable: its earlier version must not linger
            name = (obj.get("metadata") or {}).get("name") if isinstance(obj, dict) else None
            if name:
                self.state.remove_hypernode(str(name))
            return
        self._good("HyperNode", obj)

    def delete_hypernode(self, key: str, obj: dict[str, Any] | None) -> None:
        self.state.remove_hypernode(key)

    # ---------------------------------------------------------------- others --
    def upsert_priority_class(self, obj: dict[str, Any]) -> None:
        try:
            self.state.apply_priority_class(obj)
        except BAD_INPUT as exc:
            self._bad("PriorityClass", obj, exc)

    def delete_priority_class(self, key: str, obj: dict[str, Any] | None) -> None:
        self.state.remove_priority_class(key)

    def upsert_namespace(self, obj: dict[str, Any]) -> None:
        try:
            self.state.apply_namespace(obj)
        except BAD_INPUT as exc:
            self._bad("Namespace", obj, exc)

    def delete_namespace(self, key: str, obj: dict[str, Any] | None) -> None:
        self.state.remove_namespace(key)

    def upsert_configmap(self, obj: dict[str, Any]) -> None:
        md = obj.get("metadata") or {}
        if f"{md.get('namespace')}/{md.get('name')}" not in self.device_configmaps:
            return
        try:
            self.state.apply_configmap(obj)
        except BAD_INPUT as exc:
            self._bad("ConfigMap", obj, exc)

    def delete_configmap(self, key: str, obj: dict[str, Any] | None) -> None:
        if key in self.device_configmaps:
            ns, name = _split(key)
            self.state.remove_configmap(ns, name)

    def upsert_resource_quota(self, obj: dict[str, Any]) -> None:
        try:
            self.state.apply_resource_quota(obj)
        except BAD_INPUT as exc:
            self._bad("ResourceQuota", obj, exc)

    def delete_resource_quota(self, key: str, obj: dict[str, Any] | None) -> None:
        self.state.remove_resource_quota(*_split(key))

    def upsert_pdb(self, obj: dict[str, Any]) -> None:
        try:
            self.state.apply_pdb(obj)
        except BAD_INPUT as exc:
            self._bad("PodDisruptionBudget", obj, exc)

    def delete_pdb(self, key: str, obj: dict[str, Any] | None) -> None:
        self.state.remove_pdb(*_split(key))

    # ---------------------------------------------------------------- sessions --
    @property
    def generation(self) -> int:
        return self.state.generation

    def snapshot(self) -> Snapshot:
        return self.state.snapshot()

    def has_pending_work(self) -> bool:
        """Any of our pods still waiting for a node (a session may place them now)."""
        return self.state.has_pending_tasks()

    def is_real_podgroup(self, uid: str) -> bool:
        return uid in self.state.jobs and uid not in self.state.implicit_jobs

    # ---------------------------------------------------------------- binds --
    def assume(self, key: str, uid: str, node: str, annotations: dict[str, str]) -> bool:
        """Claim a pod for a bind. False when it is already claimed, bound, or not the same pod."""
        if key in self.assumed:
            return False
        state = self.state
        task = state.get_task(key)
        if task is None or task.uid != uid or task.node_name or task.status != TaskStatus.PENDING:
            return False
        self.assumed[key] = Assumed(uid, node, dict(annotations), time.monotonic())
        state.assume_task_bound(task, node, annotations)
        seen = self.seen.get(key)
        if seen is not None:
            self.seen[key] = with_bind_annotations(seen, annotations)
        return True

    def bind_sent(self, key: str) -> None:
        a = self.assumed.get(key)
        if a is not None:
            a.sent = True

    def bind_failed(self, key: str) -> None:
        """The Binding was refused: the pod is Pending again for the next session."""
        if self.assumed.pop(key, None) is not None:
            self.state.forget_bind(key)

    def resync_pod(self, key: str, obj: dict[str, Any] | None) -> None:
        """Replace what we assumed by what the API says (after a 409 or a lost answer)."""
        self.assumed.pop(key, None)
        if obj is None:
            ns, name = _split(key)
            self.state.remove_pod(ns, name)
            return
        self.upsert_pod(obj)

    def forget_assumed(self) -> int:
        """Fencing: drop every bind we claimed but the API has not accepted; the pods are Pending
        again until the watch says otherwise (a Binding on the wire may still land: the watch
        then shows it bound). Returns how many were forgotten."""
        unsent = [k for k, a in self.assumed.items() if not a.sent]
        for key in unsent:
            self.bind_failed(key)
        return len(unsent)

    def in_flight(self) -> int:
        return sum(1 for a in self.assumed.values() if not a.sent)
