"""The Volcano controllers the sandbox stands in for.

- Volcano Job controller: a `batch.volcano.sh/v1alpha1 Job` gets its PodGroup and pods (names,
  annotations and minMember as Volcano's controller writes them, see `model.vcjob`); its
  lifecycle policies act on what its pods do (evicted, failed, task completed) and its status
  carries the phase and the counters `kubectl get vcjob` shows (see `JobController`).
- PodGroup controller: a pod of ours without a group annotation gets `podgroup-<owner uid>`
  (minMember 1) and the annotation, as Volcano's controller manager does.
- HyperNode controller: each HyperNode's `status.nodeCount`.
- The `default` and `root` queues always exist, as in a normal Volcano install.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from datetime import UTC, datetime
from typing import Any

from scheduler.model.cluster import implicit_group_name
from scheduler.model.convert import (
    GROUP_NAME_ANNOTATION,
    QUEUE_NAME_ANNOTATION,
    ConvertError,
    hypernode_to_spec,
    pod_to_task,
)
from scheduler.model.resources import QuantityError, format_quantity
from scheduler.model.topology import build_topology
from scheduler.model.vcjob import JOB_NAME_KEY, JOB_VERSION_KEY, TASK_SPEC_KEY, expand_job, job_uid
from scheduler.sim.reconcile_queue import ReconcileQueue
from scheduler.sim.restclient import HYPERNODES, NODES, PODGROUPS, PODS, QUEUES, VCJOBS, ApiError, RestClient

log = logging.getLogger(__name__)


async def ensure_default_queues(client: RestClient) -> None:
    for name, spec in (
        ("root", {"weight": 1}),
        ("default", {"weight": 1, "reclaimable": True, "parent": "root"}),
    ):
        q = {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "Queue",
            "metadata": {"name": name},
            "spec": spec,
        }
        try:
            await client.create(QUEUES, q)
            await client.patch(QUEUES, name, {"status": {"state": "Open"}}, sub="status")
        except ApiError as exc:
            if exc.status != 409:
                raise


FINISHED = ("Succeeded", "Failed")
TERMINAL = ("Completed", "Failed", "Aborted", "Terminated")
# the phase a killing action passes through, and where it ends once the pods are gone
ENDING = {"Completing": "Completed", "Aborting": "Aborted", "Terminating": "Terminated"}
KILL_ACTIONS = {"AbortJob": "Aborting", "TerminateJob": "Terminating", "CompleteJob": "Completing"}
DEFAULT_MAX_RETRY = 3


def _pod_phase(pod: dict[str, Any]) -> str:
    return str((pod.get("status") or {}).get("phase") or "Pending")


def _terminating(pod: dict[str, Any]) -> bool:
    return bool((pod.get("metadata") or {}).get("deletionTimestamp"))


def policy_action(job: dict[str, Any], event: str, task: str | None) -> str:
    """The action the job's lifecycle policies give `event` (task policies first), else SyncJob."""
    spec = job.get("spec") or {}
    task_policies = next(
        (t.get("policies") or [] for t in spec.get("tasks") or [] if task and t.get("name") == task), []
    )
    for policies in (task_policies, spec.get("policies") or []):
        for p in policies:
            if not isinstance(p, dict):
                continue
            events = list(p.get("events") or []) + ([p["event"]] if p.get("event") else [])
            if event in events or "*" in events:
                return str(p.get("action") or "SyncJob")
    return "SyncJob"


class JobController:
    """Volcano's Job controller: children, lifecycle policies, phase and status counters.

    Pod events are derived from what the pods do: a pod deleted by someone else before it
    finished is `PodEvicted` (a preemption or reclaim), a pod turning Failed is `PodFailed`, all
    pods of a task Succeeded is `TaskCompleted`. The job's and its tasks' `policies` map them to
    an action (`RestartJob`, `RestartTask`, `RestartPod`, `AbortJob`, `TerminateJob`,
    `CompleteJob`); without a matching policy the job is synced, which recreates missing pods.
    `RestartJob` kills every pod, counts a retry and recreates them; at `maxRetry` (default 3)
    retries the job Fails. `minSuccess` succeeded pods complete the job.
    """

    def __init__(self, client: RestClient, scheduler_names: tuple[str, ...] = ("volcano",)) -> None:
        self.client = client
        self.scheduler_names = scheduler_names
        self.jobs: dict[str, dict[str, Any]] = {}
        self.pods: dict[str, dict[str, dict[str, Any]]] = {}  # job key -> pod name -> pod
        self.events: dict[str, list[tuple[str, str | None, str]]] = {}  # job key -> (event, task, pod)
        self.killing: set[str] = set()  # uids of pods this controller deleted
        self._created: set[str] = set()
        self._queue: ReconcileQueue[None] = ReconcileQueue(0.02)  # one pass for a burst of pod events

    async def run(self) -> None:
        await asyncio.gather(self._watch_jobs(), self._watch_pods(), self._loop())

    def _mark(self, key: str) -> None:
        self._queue.mark(key, None)

    async def _watch_jobs(self) -> None:
        async for kind, job in self.client.watch(VCJOBS):
            md = job.get("metadata") or {}
            key = f"{md.get('namespace')}/{md.get('name')}"
            if kind == "DELETED":
                self.jobs.pop(key, None)
                self._created.discard(key)
                self.events.pop(key, None)
                await self._delete_children(job)
                continue
            self.jobs[key] = job
            self._mark(key)

    async def _loop(self) -> None:
        while True:
            for key in await self._queue.batch():
                job = self.jobs.get(key)
                if job is None:
                    continue
                try:
                    if key not in self._created:
                        self._created.add(key)
                        await self._create_children(job)
                    else:
                        await self._sync(key, job)
                except ApiError as exc:
                    log.warning("Volcano Job %s: %s", key, exc)
                except Exception:  # one malformed job must not stop the controller
                    log.exception("Volcano Job %s: sync failed", key)

    async def _create_children(self, job: dict[str, Any]) -> None:
        md = job["metadata"]
        try:
            pg, pods = expand_job(job)
        except (ConvertError, QuantityError) as exc:
            log.warning("Volcano Job %s/%s cannot be expanded: %s", md.get("namespace"), md.get("name"), exc)
            await self._set_status(job, {"state": {"phase": "Failed", "message": str(exc)}})
            return
        pg["metadata"]["ownerReferences"] = [
            {**r, "uid": job_uid(job)} for r in pg["metadata"].get("ownerReferences", [])
        ]
        await self._create(job, pg, PODGROUPS)
        await self._create_pods(job, pods)
        await self._set_status(job, {"state": {"phase": "Pending"}, **self._counters(job, {})})

    async def _create_pods(self, job: dict[str, Any], pods: list[dict[str, Any]]) -> None:
        key = _job_key(job)
        version = str(int((job.get("status") or {}).get("version") or 0))
        for pod in pods:
            pod["metadata"]["ownerReferences"] = [
                {**r, "uid": job_uid(job)} for r in pod["metadata"]["ownerReferences"]
            ]
            pod["metadata"]["annotations"][JOB_VERSION_KEY] = version
            created = await self._create(job, pod, PODS)
            if created is not None:
                self.pods.setdefault(key, {})[created["metadata"]["name"]] = created

    async def _create(self, job: dict[str, Any], obj: dict[str, Any], res: Any) -> dict[str, Any] | None:
        try:
            return await self.client.create(res, obj, job["metadata"].get("namespace"))
        except ApiError as exc:
            if exc.status != 409:
                log.warning(
                    "Volcano Job %s: cannot create %s: %s", _job_key(job), obj["metadata"]["name"], exc
                )
            return None

    async def _delete_children(self, job: dict[str, Any]) -> None:
        md = job.get("metadata") or {}
        ns = md.get("namespace")
        listed = await self.client.list(PODS, ns, labelSelector=f"{JOB_NAME_KEY}={md.get('name')}")
        for p in listed.get("items") or []:
            with contextlib.suppress(ApiError):
                await self.client.delete(PODS, p["metadata"]["name"], ns)
        with contextlib.suppress(ApiError):
            await self.client.delete(PODGROUPS, f"{md.get('name')}-{job_uid(job)}", ns)

    async def _watch_pods(self) -> None:
        async for kind, pod in self.client.watch(PODS, labelSelector=JOB_NAME_KEY):
            md = pod.get("metadata") or {}
            key = f"{md.get('namespace')}/{(md.get('labels') or {}).get(JOB_NAME_KEY)}"
            pods = self.pods.setdefault(key, {})
            name = str(md.get("name"))
            old = pods.get(name)
            if old is not None and (old.get("metadata") or {}).get("uid") != md.get("uid"):
                old = None  # a recreated pod of the same name
            event = self._pod_event(kind, old, pod)
            if kind == "DELETED":
                if old is not None:  # not a newer pod of the same name
                    pods.pop(name, None)
                self.killing.discard(str(md.get("uid")))
            else:
                pods[name] = pod
            if event is not None:
                task = (md.get("labels") or {}).get(TASK_SPEC_KEY)
                self.events.setdefault(key, []).append((event, task, name))
            if key in self.jobs:
                self._mark(key)

    def _pod_event(self, kind: str, old: dict[str, Any] | None, pod: dict[str, Any]) -> str | None:
        uid = str((pod.get("metadata") or {}).get("uid"))
        before = _pod_phase(old) if old is not None else "Pending"
        if uid in self.killing or before in FINISHED:
            return None
        gone = kind == "DELETED" or _terminating(pod)
        if gone and (old is None or not _terminating(old)) and _pod_phase(pod) not in FINISHED:
            return "PodEvicted"
        if _pod_phase(pod) == "Failed":
            return "PodFailed"
        if _pod_phase(pod) == "Succeeded":
            return "PodSucceeded"
        return None

    # ---- the state machine ----

    async def _sync(self, key: str, job: dict[str, Any]) -> None:
        status = job.get("status") or {}
        phase = str((status.get("state") or {}).get("phase") or "Pending")
        spec = job.get("spec") or {}
        retries = int(status.get("retryCount") or 0)
        version = int(status.get("version") or 0)
        pods = self.pods.setdefault(key, {})
        for event, task, pod_name in self.events.pop(key, []):
            if phase in TERMINAL:
                break
            if event == "PodSucceeded":
                if not self._task_completed(job, pods, task):
                    continue
                event = "TaskCompleted"
            action = policy_action(job, event, task)
            if action in ("RestartJob", "RestartTask", "RestartPod"):
                victims = [
                    p
                    for p in pods.values()
                    if action == "RestartJob"
                    or (
                        action == "RestartTask"
                        and (p["metadata"].get("labels") or {}).get(TASK_SPEC_KEY) == task
                    )
                    or (action == "RestartPod" and p["metadata"]["name"] == pod_name)
                ]
                await self._kill(key, victims)
                retries += 1
                version += 1
                phase = "Restarting"
                log.info("Volcano Job %s: %s on %s (retry %d)", key, action, event, retries)
            elif action in KILL_ACTIONS:
                phase = KILL_ACTIONS[action]
        max_retry = int(spec.get("maxRetry") or DEFAULT_MAX_RETRY)
        if phase == "Restarting" and retries >= max_retry:
            phase = "Failed"
        if phase in ENDING or phase == "Failed":
            await self._kill(key, [p for p in pods.values() if _pod_phase(p) not in FINISHED])
            if phase in ENDING and not any(
                not _terminating(p) and _pod_phase(p) not in FINISHED for p in pods.values()
            ):
                phase = ENDING[phase]
        elif phase not in TERMINAL:
            await self._recreate_missing(job, pods, version)
        counters = self._counters(job, pods)
        total = sum(int(t.get("replicas", 1)) for t in spec.get("tasks") or [])
        min_available = int(spec.get("minAvailable", total))
        min_success = spec.get("minSuccess")
        if phase == "Restarting":
            if total - counters["terminating"] >= min_available:
                phase = "Pending"
        elif phase == "Pending" and (
            counters["running"] + counters["succeeded"] + counters["failed"] >= max(min_available, 1)
        ):
            phase = "Running"
        if phase == "Running" and total:
            if min_success is not None and counters["succeeded"] >= int(min_success):
                phase = "Completed"
            elif counters["succeeded"] + counters["failed"] >= total:
                ok = counters["succeeded"] >= int(min_success if min_success is not None else min_available)
                phase = "Completed" if ok else "Failed"
            elif counters["pending"] > total - min_available:
                phase = "Pending"
        if phase in ("Completed", "Failed"):
            await self._kill(key, [p for p in pods.values() if _pod_phase(p) not in FINISHED])
        await self._set_status(
            job, {"state": {"phase": phase}, "retryCount": retries, "version": version, **counters}
        )

    @staticmethod
    def _task_completed(job: dict[str, Any], pods: dict[str, dict[str, Any]], task: str | None) -> bool:
        spec = next((t for t in (job.get("spec") or {}).get("tasks") or [] if t.get("name") == task), None)
        if spec is None:
            return False
        mine = [p for p in pods.values() if (p["metadata"].get("labels") or {}).get(TASK_SPEC_KEY) == task]
        return len(mine) >= int(spec.get("replicas", 1)) and all(_pod_phase(p) == "Succeeded" for p in mine)

    async def _kill(self, key: str, pods: list[dict[str, Any]]) -> None:
        cache = self.pods.setdefault(key, {})
        for p in pods:
            md = p["metadata"]
            if _terminating(p) or str(md.get("uid")) in self.killing:
                continue
            self.killing.add(str(md.get("uid")))
            try:
                answer = await self.client.delete(PODS, md["name"], md.get("namespace"))
            except ApiError:
                continue
            # the counters and the recreation below must see the kill before the watch does
            if isinstance(answer, dict) and _terminating(answer):
                cache[md["name"]] = answer
            else:
                cache.pop(md["name"], None)

    async def _recreate_missing(
        self, job: dict[str, Any], pods: dict[str, dict[str, Any]], version: int
    ) -> None:
        try:
            _, wanted = expand_job(job)
        except (ConvertError, QuantityError):
            return
        missing = [p for p in wanted if p["metadata"]["name"] not in pods]
        if missing:
            await self._create_pods(
                {**job, "status": {**(job.get("status") or {}), "version": version}}, missing
            )

    @staticmethod
    def _counters(job: dict[str, Any], pods: dict[str, dict[str, Any]]) -> dict[str, Any]:
        counts = {"pending": 0, "running": 0, "succeeded": 0, "failed": 0, "terminating": 0}
        tasks: dict[str, dict[str, int]] = {}
        for p in pods.values():
            phase = _pod_phase(p)
            if _terminating(p) and phase not in FINISHED:
                counts["terminating"] += 1
            elif phase.lower() in counts:
                counts[phase.lower()] += 1
            task = (p["metadata"].get("labels") or {}).get(TASK_SPEC_KEY) or ""
            tasks.setdefault(task, {})[phase] = tasks.get(task, {}).get(phase, 0) + 1
        spec = job.get("spec") or {}
        total = sum(int(t.get("replicas", 1)) for t in spec.get("tasks") or [])
        return {
            **counts,
            "minAvailable": int(spec.get("minAvailable", total)),
            # null drops a phase no pod of the task is in any more (a merge patch merges maps)
            "taskStatusCount": {
                t: {"phase": {ph: n.get(ph) for ph in ("Pending", "Running", "Succeeded", "Failed")}}
                for t, n in tasks.items()
            },
        }

    async def _set_status(self, job: dict[str, Any], status: dict[str, Any]) -> None:
        md = job["metadata"]
        current = job.get("status") or {}
        phase = status["state"]["phase"]
        if (current.get("state") or {}).get("phase") != phase:
            status["state"] = {"phase": phase, "lastTransitionTime": _now()}
        elif all(
            current.get(k) == v for k, v in status.items() if k not in ("state", "taskStatusCount")
        ) and (_compact(current.get("taskStatusCount")) == _compact(status.get("taskStatusCount"))):
            return
        else:
            status.pop("state")
        try:
            job["status"] = (
                await self.client.patch(
                    VCJOBS, md["name"], {"status": status}, md.get("namespace"), sub="status"
                )
            ).get("status")
        except ApiError as exc:
            if exc.status != 404:
                log.warning("Volcano Job %s: cannot update status: %s", _job_key(job), exc)


def _compact(tasks: Any) -> Any:
    if not isinstance(tasks, dict):
        return {}
    return {
        t: {ph: n for ph, n in ((v or {}).get("phase") or {}).items() if n}
        for t, v in tasks.items()
        if isinstance(v, dict)
    }


def _job_key(job: dict[str, Any]) -> str:
    md = job.get("metadata") or {}
    return f"{md.get('namespace')}/{md.get('name')}"


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class PodGroupController:
    """Gives bare pods of ours their one-pod PodGroup, as Volcano's controller manager does."""

    def __init__(self, client: RestClient, scheduler_names: tuple[str, ...] = ("volcano",)) -> None:
        self.client = client
        self.scheduler_names = scheduler_names

    async def run(self) -> None:
        async for kind, pod in self.client.watch(PODS):
            if kind == "DELETED":
                continue
            spec = pod.get("spec") or {}
            md = pod.get("metadata") or {}
            if spec.get("schedulerName") not in self.scheduler_names or spec.get("nodeName"):
                continue
            if GROUP_NAME_ANNOTATION in (md.get("annotations") or {}):
                continue
            try:
                await self._group(pod)
            except (ApiError, ConvertError, QuantityError) as exc:
                log.warning("podgroup controller: pod %s/%s: %s", md.get("namespace"), md.get("name"), exc)

    async def _group(self, pod: dict[str, Any]) -> None:
        task = pod_to_task(pod)
        md = pod["metadata"]
        ns = md.get("namespace", "default")
        name = implicit_group_name(task)
        queue = (md.get("annotations") or {}).get(QUEUE_NAME_ANNOTATION, "default")
        pg: dict[str, Any] = {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "PodGroup",
            # owned by the pod's controller (else the pod), as Volcano's controller does: the
            # garbage collector removes it with them
            "metadata": {"name": name, "namespace": ns, "ownerReferences": [_group_owner(pod)]},
            "spec": {
                "minMember": 1,
                "queue": queue,
                "minResources": {k: format_quantity(k, v) for k, v in task.resreq.items() if v > 0},
            },
            "status": {"phase": "Pending"},
        }
        if task.pod.priority_class_name:
            pg["spec"]["priorityClassName"] = task.pod.priority_class_name
        try:
            await self.client.create(PODGROUPS, pg, ns)
        except ApiError as exc:
            if exc.status != 409:
                raise
        await self.client.patch(
            PODS, md["name"], {"metadata": {"annotations": {GROUP_NAME_ANNOTATION: name}}}, ns
        )


def _group_owner(pod: dict[str, Any]) -> dict[str, Any]:
    md = pod.get("metadata") or {}
    ref = next(
        (r for r in md.get("ownerReferences") or [] if isinstance(r, dict) and r.get("controller")), None
    )
    if ref is not None:
        return {k: ref[k] for k in ("apiVersion", "kind", "name", "uid", "controller") if k in ref}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "name": md.get("name"),
        "uid": md.get("uid"),
        "controller": True,
    }


class HyperNodeStatusController:
    """Writes each HyperNode's `status.nodeCount` (the nodes under it), as Volcano's HyperNode
    controller does, so that `kubectl get hypernodes` shows it."""

    def __init__(self, client: RestClient, settle: float = 0.2) -> None:
        self.client = client
        self.settle = settle
        self.hypernodes: dict[str, dict[str, Any]] = {}
        self.labels: dict[str, dict[str, str]] = {}  # node -> labels (what members select)
        self.changed = asyncio.Event()

    async def _follow_hypernodes(self) -> None:
        async for kind, obj in self.client.watch(HYPERNODES):
            name = (obj.get("metadata") or {}).get("name")
            if kind == "DELETED":
                self.hypernodes.pop(name, None)
            else:
                self.hypernodes[name] = obj
            self.changed.set()

    async def _follow_nodes(self) -> None:
        async for kind, obj in self.client.watch(NODES):
            md = obj.get("metadata") or {}
            name, labels = md.get("name"), dict(md.get("labels") or {})
            if kind == "DELETED":
                if self.labels.pop(name, None) is not None:
                    self.changed.set()
            elif self.labels.get(name) != labels:  # status heartbeats change nothing here
                self.labels[name] = labels
                self.changed.set()

    async def run(self) -> None:
        followers = [asyncio.ensure_future(f()) for f in (self._follow_hypernodes, self._follow_nodes)]
        try:
            while True:
                await self.changed.wait()
                await asyncio.sleep(self.settle)  # one recount for a burst of changes
                self.changed.clear()
                await self._write_counts()
        finally:
            for f in followers:
                f.cancel()
            await asyncio.gather(*followers, return_exceptions=True)

    async def _write_counts(self) -> None:
        specs = []
        for obj in self.hypernodes.values():
            with contextlib.suppress(ConvertError):
                specs.append(hypernode_to_spec(obj))
        topo = build_topology(specs, self.labels)
        for name, obj in list(self.hypernodes.items()):
            hn = topo.hypernodes.get(name)
            count = len(hn.nodes) if hn is not None else 0
            if (obj.get("status") or {}).get("nodeCount") == count:
                continue
            try:
                obj["status"] = (
                    await self.client.patch(HYPERNODES, name, {"status": {"nodeCount": count}}, sub="status")
                ).get("status") or {}
            except ApiError as exc:
                log.warning("hypernode controller: %s: %s", name, exc)
