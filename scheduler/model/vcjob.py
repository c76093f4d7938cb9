"""Expand a `batch.volcano.sh/v1alpha1 Job` into its PodGroup and pods, as Volcano's controller does.

Shared by `simulate` (manifests) and the sandbox's job controller, so both produce the same names:
the PodGroup `<job>-<job uid>` with minMember = minAvailable, minTaskMember per task (its
minAvailable, else its replicas), queue, priority class and minResources (requests of the first
minAvailable pods); pods `<job>-<task>-<index>` annotated with the group, task spec and index.
`networkTopology` is copied to the PodGroup; a task's `partitionPolicy` labels its pods with their
partition (`volcano.sh/partition-id` = index / partitionSize) and becomes a `subGroupPolicy`.
"""

from __future__ import annotations

import copy
import uuid
from typing import Any

from scheduler.model.convert import ConvertError, network_topology, object_name
from scheduler.model.resources import QuantityError, Resource, format_quantity

JOB_NAME_KEY = "volcano.sh/job-name"
JOB_NAMESPACE_KEY = "volcano.sh/job-namespace"
JOB_VERSION_KEY = "volcano.sh/job-version"
QUEUE_NAME_KEY = "volcano.sh/queue-name"
TASK_SPEC_KEY = "volcano.sh/task-spec"
TASK_INDEX_KEY = "volcano.sh/task-index"
GROUP_NAME_KEY = "scheduling.k8s.io/group-name"
PARTITION_ID_KEY = "volcano.sh/partition-id"


def job_uid(job: dict[str, Any]) -> str:
    md = job.get("metadata") or {}
    if md.get("uid"):
        return str(md["uid"])
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"vcjob/{md.get('namespace') or 'default'}/{md.get('name')}"))


def podgroup_name(job: dict[str, Any]) -> str:
    return f"{(job.get('metadata') or {}).get('name')}-{job_uid(job)}"


def _pod_requests(template: dict[str, Any]) -> Resource:
    total = Resource()
    for c in ((template.get("spec") or {}).get("containers")) or []:
        res = (c or {}).get("resources") or {}
        req = dict(res.get("limits") or {})
        req.update(res.get("requests") or {})
        total.add(Resource.from_list(req))
    return total


def expand_job(job: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    where = object_name(job)
    md = job.get("metadata") or {}
    spec = job.get("spec")
    if not isinstance(spec, dict):
        raise ConvertError(f"{where}: spec is required")
    name = md.get("name")
    if not name:
        raise ConvertError(f"{where}: metadata.name is required")
    ns = md.get("namespace") or "default"
    tasks = spec.get("tasks")
    if not isinstance(tasks, list) or not tasks:
        raise ConvertError(f"{where}: spec.tasks: Required value: a job needs at least one task")
    queue = spec.get("queue") or "default"
    scheduler_name = spec.get("schedulerName") or "volcano"
    pg_name = podgroup_name(job)
    total_replicas = 0
    min_task: dict[str, int] = {}
    pods: list[dict[str, Any]] = []
    per_pod_requests: list[tuple[int, Resource]] = []
    subgroups: list[dict[str, Any]] = []
    if spec.get("networkTopology") is not None:
        network_topology(spec["networkTopology"], where, "spec.networkTopology")
    for ti, task in enumerate(tasks):
        if not isinstance(task, dict) or not task.get("name"):
            raise ConvertError(f"{where}: spec.tasks[{ti}].name is required")
        try:
            replicas = int(task.get("replicas", 1))
        except (TypeError, ValueError):
            raise ConvertError(f"{where}: spec.tasks[{ti}].replicas must be an integer") from None
        if replicas < 0:
            raise ConvertError(f"{where}: spec.tasks[{ti}].replicas must be greater than or equal to 0")
        total_replicas += replicas
        tmin = task.get("minAvailable")
        partition = _partition_policy(task, replicas, where, f"spec.tasks[{ti}]")
        if tmin is None and partition is not None and partition["minPartitions"]:
            tmin = partition["minPartitions"] * partition["partitionSize"]
        min_task[task["name"]] = int(tmin) if tmin is not None else replicas
        if partition is not None:
            subgroups.append(_subgroup_policy(task["name"], partition))
        template = task.get("template") or {}
        if not isinstance(template, dict):
            raise ConvertError(f"{where}: spec.tasks[{ti}].template must be an object")
        try:
            req = _pod_requests(template)
        except QuantityError as exc:
            raise ConvertError(f"{where}: spec.tasks[{ti}].template: {exc}") from None
        for i in range(replicas):
            pod = copy.deepcopy(template)
            pmd = pod.setdefault("metadata", {})
            pmd["name"] = f"{name}-{task['name']}-{i}"
            pmd["namespace"] = ns
            ann = pmd.setdefault("annotations", {}) or {}
            pmd["annotations"] = ann
            ann.update(
                {
                    GROUP_NAME_KEY: pg_name,
                    JOB_NAME_KEY: name,
                    JOB_VERSION_KEY: "0",
                    QUEUE_NAME_KEY: queue,
                    TASK_SPEC_KEY: task["name"],
                    TASK_INDEX_KEY: str(i),
                }
            )
            labels = pmd.setdefault("labels", {}) or {}
            pmd["labels"] = labels
            labels.update(
                {
                    JOB_NAME_KEY: name,
                    JOB_NAMESPACE_KEY: ns,
                    QUEUE_NAME_KEY: queue,
                    TASK_SPEC_KEY: task["name"],
                    TASK_INDEX_KEY: str(i),
                }
            )
            if partition is not None:
                labels[PARTITION_ID_KEY] = str(i // partition["partitionSize"])
            pmd["ownerReferences"] = [
                {
                    "apiVersion": "batch.volcano.sh/v1alpha1",
                    "kind": "Job",
                    "name": name,
                    "uid": job_uid(job),
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ]
            pspec = pod.setdefault("spec", {})
            pspec.setdefault("schedulerName", scheduler_name)
            if spec.get("priorityClassName") and not pspec.get("priorityClassName"):
                pspec["priorityClassName"] = spec["priorityClassName"]
            pspec.setdefault("restartPolicy", "OnFailure")
            pod["apiVersion"] = "v1"
            pod["kind"] = "Pod"
            pods.append(pod)
            per_pod_requests.append((ti, req))
    min_available = spec.get("minAvailable")
    min_available = total_replicas if min_available is None else int(min_available)
    min_res = Resource()
    for _, req in per_pod_requests[:min_available]:
        min_res.add(req)
    pg: dict[str, Any] = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {
            "name": pg_name,
            "namespace": ns,
            "annotations": dict(md.get("annotations") or {}),
            "labels": dict(md.get("labels") or {}),
            "ownerReferences": [
                {
                    "apiVersion": "batch.volcano.sh/v1alpha1",
                    "kind": "Job",
                    "name": name,
                    "uid": job_uid(job),
                    "controller": True,
                }
            ],
        },
        "spec": {
            "minMember": min_available,
            "minTaskMember": min_task,
            "queue": queue,
            "minResources": {k: format_quantity(k, v) for k, v in min_res.items() if v > 0},
        },
        "status": {"phase": "Pending"},
    }
    if spec.get("priorityClassName"):
        pg["spec"]["priorityClassName"] = spec["priorityClassName"]
    if spec.get("networkTopology") is not None:
        pg["spec"]["networkTopology"] = copy.deepcopy(spec["networkTopology"])
    if subgroups:
        pg["spec"]["subGroupPolicy"] = subgroups
    return pg, pods


def _partition_policy(task: dict[str, Any], replicas: int, where: str, field: str) -> dict[str, Any] | None:
    """A task's `partitionPolicy`, validated as Volcano's Job webhook does."""
    raw = task.get("partitionPolicy")
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise ConvertError(f"{where}: {field}.partitionPolicy must be an object")
    out: dict[str, Any] = {}
    for key, low in (("totalPartitions", 1), ("partitionSize", 1), ("minPartitions", 0)):
        v = raw.get(key, 0 if low == 0 else None)
        if isinstance(v, bool) or not isinstance(v, int) or v < low:
            raise ConvertError(
                f"{where}: {field}.partitionPolicy.{key} must be an integer >= {low}, got {v!r}"
            )
        out[key] = v
    if out["totalPartitions"] * out["partitionSize"] != replicas:
        raise ConvertError(
            f"{where}: {field}.partitionPolicy: totalPartitions x partitionSize "
            f"({out['totalPartitions']} x {out['partitionSize']}) must equal replicas ({replicas})"
        )
    if out["minPartitions"] > out["totalPartitions"]:
        raise ConvertError(f"{where}: {field}.partitionPolicy.minPartitions must not exceed totalPartitions")
    if raw.get("networkTopology") is not None:
        network_topology(raw["networkTopology"], where, f"{field}.partitionPolicy.networkTopology")
        out["networkTopology"] = copy.deepcopy(raw["networkTopology"])
    return out


def _subgroup_policy(task_name: str, partition: dict[str, Any]) -> dict[str, Any]:
    """The PodGroup `subGroupPolicy` Volcano's Job controller writes for a partitioned task."""
    policy: dict[str, Any] = {
        "name": task_name,
        "subGroupSize": partition["partitionSize"],
        "minSubGroups": partition["minPartitions"],
        "labelSelector": {"matchLabels": {TASK_SPEC_KEY: task_name}},
        "matchLabelKeys": [PARTITION_ID_KEY],
    }
    if "networkTopology" in partition:
        policy["networkTopology"] = partition["networkTopology"]
    return policy
