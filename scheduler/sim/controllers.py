"""The Volcano controllers the sandbox stands in for.

- Volcano Job controller: a `batch.volcano.sh/v1alpha1 Job` gets its PodGroup and pods (names,
  annotations and minMember as Volcano's controller writes them, see `model.vcjob`), and its
  status phase follows its pods: Pending, Running (minAvailable running), Completed (all done).
- PodGroup controller: a pod of ours without a group annotation gets `podgroup-<owner uid>`
  (minMember 1) and the annotation, as Volcano's controller manager does.
- The `default` and `root` queues always exist, as in a normal Volcano install.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from scheduler.model.cluster import implicit_group_name
from scheduler.model.convert import GROUP_NAME_ANNOTATION, QUEUE_NAME_ANNOTATION, ConvertError, pod_to_task
from scheduler.model.resources import QuantityError, format_quantity
from scheduler.model.vcjob import JOB_NAME_KEY, expand_job, job_uid
from scheduler.sim.restclient import PODGROUPS, PODS, QUEUES, VCJOBS, ApiError, RestClient

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


class JobController:
    def __init__(self, client: RestClient, scheduler_names: tuple[str, ...] = ("volcano",)) -> None:
        self.client = client
        self.scheduler_names = scheduler_names
        self.jobs: dict[str, dict[str, Any]] = {}
        # job key -> pod name -> phase
        self.pod_phases: dict[str, dict[str, str]] = {}
        self._created: set[str] = set()

    async def run(self) -> None:
        await asyncio.gather(self._watch_jobs(), self._watch_pods())

    async def _watch_jobs(self) -> None:
        async for kind, job in self.client.watch(VCJOBS):
            md = job.get("metadata") or {}
            key = f"{md.get('namespace')}/{md.get('name')}"
            if kind == "DELETED":
                self.jobs.pop(key, None)
                self._created.discard(key)
                await self._delete_children(job)
                continue
            self.jobs[key] = job
            if key not in self._created:
                self._created.add(key)
                await self._create_children(job)

    async def _create_children(self, job: dict[str, Any]) -> None:
        md = job["metadata"]
        try:
            pg, pods = expand_job(job)
        except (ConvertError, QuantityError) as exc:
            log.warning("Volcano Job %s/%s cannot be expanded: %s", md.get("namespace"), md.get("name"), exc)
            await self._set_phase(job, "Failed")
            return
        for ref in pg["metadata"].get("ownerReferences", []) + [
            r for p in pods for r in p["metadata"]["ownerReferences"]
        ]:
            ref["uid"] = job_uid(job)
        for obj, res in [(pg, PODGROUPS)] + [(p, PODS) for p in pods]:
            try:
                await self.client.create(res, obj, md.get("namespace"))
            except ApiError as exc:
                if exc.status != 409:
                    log.warning(
                        "job %s/%s: cannot create %s: %s",
                        md.get("namespace"),
                        md.get("name"),
                        obj["metadata"]["name"],
                        exc,
                    )
        await self._set_phase(job, "Pending")

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
            phases = self.pod_phases.setdefault(key, {})
            if kind == "DELETED":
                phases.pop(md.get("name"), None)
            else:
                phases[md.get("name")] = (pod.get("status") or {}).get("phase", "Pending")
            job = self.jobs.get(key)
            if job is not None:
                await self._set_phase(job, self._phase_of(job, phases))

    @staticmethod
    def _phase_of(job: dict[str, Any], phases: dict[str, str]) -> str:
        spec = job.get("spec") or {}
        total = sum(int(t.get("replicas", 1)) for t in spec.get("tasks") or [])
        min_available = int(spec.get("minAvailable", total))
        done = sum(1 for p in phases.values() if p in ("Succeeded", "Failed"))
        running = sum(1 for p in phases.values() if p == "Running")
        if total and done >= total:
            return "Completed"
        if running + done >= max(min_available, 1):
            return "Running"
        return "Pending"

    async def _set_phase(self, job: dict[str, Any], phase: str) -> None:
        md = job["metadata"]
        state = ((job.get("status") or {}).get("state") or {}).get("phase")
        if state == phase:
            return
        job.setdefault("status", {})["state"] = {"phase": phase}
        with contextlib.suppress(ApiError):
            await self.client.patch(
                VCJOBS, md["name"], {"status": {"state": {"phase": phase}}}, md.get("namespace"), sub="status"
            )


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
            # owned by the pod, as Volcano's controller does: the garbage collector removes it with the pod
            "metadata": {
                "name": name,
                "namespace": ns,
                "ownerReferences": [
                    {
                        "apiVersion": "v1",
                        "kind": "Pod",
                        "name": md["name"],
                        "uid": md.get("uid", ""),
                        "controller": True,
                    }
                ],
            },
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
