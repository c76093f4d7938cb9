"""The cluster as the scheduler knows it, and the per-cycle snapshot taken from it.

Fed by the informers (daemon) or by manifests (simulate); both call the same `apply_*` and
`remove_*` methods with plain Kubernetes dicts. Malformed objects are refused with a
`ConvertError` naming them; the state keeps everything else. Pods of other schedulers still
occupy their nodes; pods of ours without a PodGroup get a one-pod gang, as Volcano's PodGroup
controller would give them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from scheduler.model.convert import (
    GROUP_NAME_ANNOTATION,
    QUEUE_NAME_ANNOTATION,
    ConvertError,
    node_is_ready,
    node_to_info,
    pod_to_task,
    podgroup_to_job,
    priority_class_to_info,
    queue_to_info,
)
from scheduler.model.objects import (
    ON_NODE_STATUSES,
    JobInfo,
    NodeInfo,
    PriorityClassInfo,
    QueueInfo,
    TaskInfo,
    TaskStatus,
)
from scheduler.model.snapshot import Snapshot


def implicit_group_name(task: TaskInfo) -> str:
    """Volcano's controller names a bare pod's group after its controlling owner (else the pod)."""
    return f"podgroup-{task.pod.owner_uid or task.uid}"


@dataclass(slots=True)
class ClusterOptions:
    scheduler_names: tuple[str, ...] = ("volcano",)
    default_queue: str = "default"


class ClusterState:
    def __init__(self, options: ClusterOptions | None = None) -> None:
        self.options = options or ClusterOptions()
        self.nodes: dict[str, NodeInfo] = {}
        self.unready_nodes: set[str] = set()
        self.tasks: dict[str, TaskInfo] = {}  # every pod we know, by uid
        self.pod_keys: dict[str, str] = {}  # "ns/name" -> uid
        self.podgroups: dict[str, JobInfo] = {}  # real PodGroups, by "ns/name"
        self.queues: dict[str, QueueInfo] = {}
        self.priority_classes: dict[str, PriorityClassInfo] = {}
        self.configmaps: dict[str, dict[str, str]] = {}
        self.namespaces: dict[str, dict[str, str]] = {}
        # bumped on every change, so a caller can tell that nothing happened since the last cycle
        self.generation = 0

    # ------------------------------------------------------------------ objects in --
    def _ours(self, task: TaskInfo) -> bool:
        return task.pod.scheduler_name in self.options.scheduler_names

    def apply_pod(self, pod: dict[str, Any]) -> TaskInfo:
        task = pod_to_task(pod, self.priority_classes)
        if not task.job and self._ours(task):
            task.job = f"{task.namespace}/{implicit_group_name(task)}"
        old_uid = self.pod_keys.get(task.key)
        if old_uid is not None and old_uid != task.uid:
            self.tasks.pop(old_uid, None)
        self.tasks[task.uid] = task
        self.pod_keys[task.key] = task.uid
        self.generation += 1
        return task

    def remove_pod(self, namespace: str, name: str) -> TaskInfo | None:
        uid = self.pod_keys.pop(f"{namespace}/{name}", None)
        self.generation += 1
        return self.tasks.pop(uid, None) if uid else None

    def get_task(self, key: str) -> TaskInfo | None:
        uid = self.pod_keys.get(key)
        return self.tasks.get(uid) if uid else None

    def apply_node(self, node: dict[str, Any]) -> NodeInfo:
        info = node_to_info(node)
        self.generation += 1
        if node_is_ready(node):
            self.nodes[info.name] = info
            self.unready_nodes.discard(info.name)
        else:
            self.nodes.pop(info.name, None)
            self.unready_nodes.add(info.name)
        return info

    def remove_node(self, name: str) -> None:
        self.nodes.pop(name, None)
        self.unready_nodes.discard(name)
        self.generation += 1

    def apply_podgroup(self, pg: dict[str, Any]) -> JobInfo:
        job = podgroup_to_job(pg, self.options.default_queue)
        self.podgroups[job.uid] = job
        self.generation += 1
        return job

    def remove_podgroup(self, namespace: str, name: str) -> None:
        self.podgroups.pop(f"{namespace}/{name}", None)
        self.generation += 1

    def apply_queue(self, q: dict[str, Any]) -> QueueInfo:
        info = queue_to_info(q)
        self.queues[info.name] = info
        self.generation += 1
        return info

    def remove_queue(self, name: str) -> None:
        self.queues.pop(name, None)
        self.generation += 1

    def apply_priority_class(self, pc: dict[str, Any]) -> PriorityClassInfo:
        info = priority_class_to_info(pc)
        self.priority_classes[info.name] = info
        self.generation += 1
        return info

    def remove_priority_class(self, name: str) -> None:
        self.priority_classes.pop(name, None)
        self.generation += 1

    def apply_configmap(self, cm: dict[str, Any]) -> None:
        md = cm.get("metadata") or {}
        data = cm.get("data") or {}
        if not isinstance(data, dict):
            raise ConvertError(f"ConfigMap {md.get('namespace')}/{md.get('name')}: data must be an object")
        self.configmaps[f"{md.get('namespace') or 'default'}/{md.get('name')}"] = {
            str(k): str(v) for k, v in data.items()
        }
        self.generation += 1

    def remove_configmap(self, namespace: str, name: str) -> None:
        self.configmaps.pop(f"{namespace}/{name}", None)
        self.generation += 1

    def apply_namespace(self, ns: dict[str, Any]) -> None:
        md = ns.get("metadata") or {}
        self.namespaces[str(md.get("name"))] = {str(k): str(v) for k, v in (md.get("labels") or {}).items()}
        self.generation += 1

    # ------------------------------------------------------------------ snapshot --
    def _implicit_job(self, task: TaskInfo) -> JobInfo:
        queue = task.pod.annotations.get(QUEUE_NAME_ANNOTATION) or self.options.default_queue
        return JobInfo(
            uid=task.job,
            name=task.job.split("/", 1)[1],
            namespace=task.namespace,
            queue=queue,
            min_available=1,
            min_resources=task.resreq.clone(),
            priority_class_name=task.pod.priority_class_name,
            creation=task.pod.creation,
        )

    def snapshot(self) -> Snapshot:
        """A deep-enough copy the session may mutate: cloned nodes, jobs and tasks."""
        nodes = {name: n.clone_empty() for name, n in self.nodes.items()}
        jobs: dict[str, JobInfo] = {}
        for uid, pg in self.podgroups.items():
            j = pg.clone()
            jobs[uid] = j
        for task in self.tasks.values():
            t = task.clone()
            if t.job and self._ours(task):
                job = jobs.get(t.job)
                if job is None and task.pod.annotations.get(GROUP_NAME_ANNOTATION) is None:
                    job = self._implicit_job(task)
                    jobs[job.uid] = job
                if job is not None:
                    job.add_task(t)
            if t.node_name and t.status in ON_NODE_STATUSES:
                node = nodes.get(t.node_name)
                if node is not None:
                    node.add_task(t)
        return Snapshot(
            nodes=nodes,
            jobs=jobs,
            queues={k: v for k, v in self.queues.items()},
            priority_classes=dict(self.priority_classes),
            configmaps=self.configmaps,
            namespaces=self.namespaces,
        )

    # ------------------------------------------------------------------ decisions back in --
    def assume_bound(self, key: str, node: str, annotations: dict[str, str]) -> None:
        """Record a bind we issued before the watch confirms it, so the next cycle counts it."""
        task = self.get_task(key)
        if task is None:
            return
        task.pod.annotations.update(annotations)
        task.pod.node_name = node
        task.node_name = node
        task.status = TaskStatus.BOUND
        self.generation += 1
