"""The kube-controller-manager workload controllers the sandbox stands in for.

- Deployment: one ReplicaSet per pod template (`<deployment>-<pod-template-hash>`, revision
  annotations as `kubectl rollout history|undo` read them); a changed template rolls out by the
  strategy (`rollout_plan`: RollingUpdate within maxSurge/maxUnavailable, or Recreate); status
  counts (replicas, updated, ready, available) and the Available condition as
  `kubectl rollout status` and `kubectl get deploy` read them.
- ReplicaSet: keeps `replicas` live pods (`<rs>-<random>`), deleting unscheduled ones first.
- StatefulSet: pods `<sts>-0..N-1`; with the default OrderedReady policy the next one is created
  only once the previous is Running and Ready, and scale-down removes the highest ordinal first;
  a changed template replaces the pods one at a time from the highest ordinal (RollingUpdate).
- batch/v1 Job: up to `parallelism` pods at a time until `completions` succeed (Complete), or more
  than `backoffLimit` fail or `activeDeadlineSeconds` pass (Failed); `completionMode: Indexed`
  runs each index once (`JOB_COMPLETION_INDEX`, `status.completedIndexes`).

Every controller works as the real ones do: over the API (watches and writes), owning its children
by a controller ownerReference, so deleting an owner cascades through the garbage collector.
Writes update the local cache at once, so a reconcile that runs before the watch catches up
does not create the same pods twice.
"""

from __future__ import annotations

import asyncio
import copy
import json
import logging
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from scheduler.sim.reconcile_queue import ReconcileQueue
from scheduler.sim.restclient import (
    BATCH_JOBS,
    DEPLOYMENTS,
    PODS,
    REPLICASETS,
    STATEFULSETS,
    ApiError,
    Resource,
    RestClient,
)

log = logging.getLogger(__name__)

Obj = dict[str, Any]
TEMPLATE_HASH = "pod-template-hash"
REVISION = "deployment.kubernetes.io/revision"
STS_POD_NAME = "statefulset.kubernetes.io/pod-name"
STS_POD_INDEX = "apps.kubernetes.io/pod-index"
STS_REVISION = "controller-revision-hash"
JOB_UID = "batch.kubernetes.io/controller-uid"
JOB_NAME = "batch.kubernetes.io/job-name"
JOB_INDEX = "batch.kubernetes.io/job-completion-index"
# Kubernetes' alphabet for generated name parts: no vowels, no look-alike characters
_SAFE = "bcdfghjklmnpqrstvwxz2456789"


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _md(obj: Obj) -> Obj:
    return obj.get("metadata") or {}


def _spec(obj: Obj) -> Obj:
    return obj.get("spec") or {}


def _rv(obj: Obj) -> int:
    try:
        return int(_md(obj).get("resourceVersion") or 0)
    except ValueError:
        return 0


def _int(value: Any, default: int) -> int:
    try:
        return default if value is None else int(value)
    except (TypeError, ValueError):
        return default


def template_hash(template: Obj) -> str:
    """A stable short hash of a pod template, spelled as Kubernetes spells `pod-template-hash`."""
    h = 0x811C9DC5  # FNV-1a 32
    for b in json.dumps(template, sort_keys=True, separators=(",", ":")).encode():
        h = ((h ^ b) * 0x01000193) & 0xFFFFFFFF
    return "".join(_SAFE[ord(c) % len(_SAFE)] for c in str(h))


def controller_ref(owner: Obj) -> Obj:
    md = _md(owner)
    return {
        "apiVersion": owner.get("apiVersion"),
        "kind": owner.get("kind"),
        "name": md.get("name"),
        "uid": md.get("uid"),
        "controller": True,
        "blockOwnerDeletion": True,
    }


def controller_of(obj: Obj) -> Obj | None:
    return next((r for r in _md(obj).get("ownerReferences") or [] if r.get("controller")), None)


def is_active(pod: Obj) -> bool:
    """Counted by its controller: not terminating and not finished."""
    phase = (pod.get("status") or {}).get("phase")
    return not _md(pod).get("deletionTimestamp") and phase not in ("Succeeded", "Failed")


def is_ready(pod: Obj) -> bool:
    conds = (pod.get("status") or {}).get("conditions") or []
    return (pod.get("status") or {}).get("phase") == "Running" and any(
        c.get("type") == "Ready" and c.get("status") == "True" for c in conds
    )


def pod_from_template(
    owner: Obj, template: Obj, labels: dict[str, str], name: str | None = None, annotations: Obj | None = None
) -> Obj:
    """A pod as a controller creates it: the template's metadata and spec, owned by `owner`."""
    tmd = copy.deepcopy(template.get("metadata") or {})
    md: Obj = {
        "namespace": _md(owner).get("namespace"),
        "labels": {**(tmd.get("labels") or {}), **labels},
        "annotations": {**(tmd.get("annotations") or {}), **(annotations or {})},
        "ownerReferences": [controller_ref(owner)],
    }
    if name:
        md["name"] = name
    else:
        md["generateName"] = f"{_md(owner).get('name')}-"
    if not md["annotations"]:
        del md["annotations"]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": md,
        "spec": copy.deepcopy(template.get("spec") or {}),
    }


class Informer:
    """One watched resource: objects by uid, children indexed by their controller's uid."""

    def __init__(self, client: RestClient, res: Resource, owned_only: bool = False) -> None:
        self.client = client
        self.res = res
        # pods: only those a controller owns are kept (a sandbox may hold 100,000s of bare pods)
        self.owned_only = owned_only
        self.objects: dict[str, Obj] = {}
        self.children: dict[str, dict[str, Obj]] = {}  # controller uid -> child uid -> child
        self.listeners: list[Callable[[str, Obj], None]] = []

    def store(self, obj: Obj, deleted: bool = False) -> None:
        """Record a watch event or a write's answer; an older version never replaces a newer one."""
        uid = _md(obj).get("uid")
        if not uid:
            return
        cur = self.objects.get(uid)
        if cur is not None and _rv(cur) > _rv(obj):
            return
        ref = controller_of(cur or obj)
        if ref is None and self.owned_only:
            return
        if deleted:
            self.objects.pop(uid, None)
            if ref:
                self.children.get(ref.get("uid"), {}).pop(uid, None)
        else:
            self.objects[uid] = obj
            if ref:
                self.children.setdefault(ref.get("uid"), {})[uid] = obj
        for cb in self.listeners:
            cb("DELETED" if deleted else "MODIFIED", obj)

    def children_of(self, owner: Obj) -> list[Obj]:
        return list(self.children.get(_md(owner).get("uid"), {}).values())

    async def run(self) -> None:
        async for kind, obj in self.client.watch(self.res):
            self.store(obj, deleted=kind == "DELETED")


class WorkloadControllers:
    """Deployment, ReplicaSet, StatefulSet and batch Job controllers over one informer per kind."""

    def __init__(self, client: RestClient) -> None:
        self.client = client
        self.pods = Informer(client, PODS, owned_only=True)
        self.rsets = Informer(client, REPLICASETS)
        self.deployments = Informer(client, DEPLOYMENTS)
        self.statefulsets = Informer(client, STATEFULSETS)
        self.jobs = Informer(client, BATCH_JOBS)
        self._owners = {
            ("apps/v1", "Deployment"): self.deployments,
            ("apps/v1", "ReplicaSet"): self.rsets,
            ("apps/v1", "StatefulSet"): self.statefulsets,
            ("batch/v1", "Job"): self.jobs,
        }
        self._syncers: dict[Informer, Callable[[Obj], Any]] = {
            self.deployments: self._sync_deployment,
            self.rsets: self._sync_replicaset,
            self.statefulsets: self._sync_statefulset,
            self.jobs: self._sync_job,
        }
        # let a burst of watch events settle into one pass per owner
        self._queue: ReconcileQueue[Informer] = ReconcileQueue(0.02)
        self._succeeded: dict[str, set[str]] = {}  # job uid -> uids of its pods that succeeded
        self._failed: dict[str, set[str]] = {}
        self._deadlines: set[str] = set()  # job uids with a wake-up at their activeDeadlineSeconds
        for inf in (self.deployments, self.rsets, self.statefulsets, self.jobs):
            inf.listeners.append(lambda _t, obj, inf=inf: self._mark(inf, obj))
        self.jobs.listeners.append(self._job_gone)
        for inf in (self.pods, self.rsets):
            inf.listeners.append(self._child_changed)

    def _mark(self, inf: Informer, obj: Obj) -> None:
        uid = _md(obj).get("uid")
        if uid:
            self._queue.mark(uid, inf)

    def _child_changed(self, _type: str, obj: Obj) -> None:
        ref = controller_of(obj)
        if ref is None:
            return
        owner_inf = self._owners.get((str(ref.get("apiVersion")), str(ref.get("kind"))))
        if owner_inf is not None and ref.get("uid") in owner_inf.objects:
            self._mark(owner_inf, owner_inf.objects[ref["uid"]])

    async def run(self) -> None:
        informers = (self.pods, self.rsets, self.deployments, self.statefulsets, self.jobs)
        await asyncio.gather(*(i.run() for i in informers), self._loop())

    async def _loop(self) -> None:
        while True:
            for uid, inf in (await self._queue.batch()).items():
                owner = inf.objects.get(uid)
                if owner is None or _md(owner).get("deletionTimestamp"):
                    continue
                try:
                    await self._syncers[inf](owner)
                except ApiError as exc:
                    if exc.status == 409:  # raced with another writer: look again
                        self._mark(inf, owner)
                    else:
                        log.warning("%s %s: %s", owner.get("kind"), _key(owner), exc)
                except Exception:  # one malformed object must not stop every controller
                    log.exception("%s %s: reconcile failed", owner.get("kind"), _key(owner))

    # ---- writes that keep the caches current ----

    async def _create(self, inf: Informer, res: Resource, obj: Obj) -> Obj | None:
        try:
            created = await self.client.create(res, obj, _md(obj).get("namespace"))
        except ApiError as exc:
            if exc.status == 409:
                return None
            raise
        inf.store(created)
        return created

    async def _delete(self, inf: Informer, res: Resource, obj: Obj) -> None:
        md = _md(obj)
        try:
            answer = await self.client.delete(res, md["name"], md.get("namespace"))
        except ApiError as exc:
            if exc.status != 404:
                raise
            answer = None
        if isinstance(answer, dict) and _md(answer).get("deletionTimestamp"):
            inf.store(answer)
        else:
            inf.store({**obj, "metadata": {**md, "resourceVersion": str(_rv(obj) + 1)}}, deleted=True)

    async def _patch(
        self, inf: Informer, res: Resource, obj: Obj, patch: Obj, sub: str | None = None
    ) -> None:
        md = _md(obj)
        inf.store(await self.client.patch(res, md["name"], patch, md.get("namespace"), sub=sub))

    async def _set_status(self, inf: Informer, res: Resource, obj: Obj, status: Obj) -> None:
        current = obj.get("status") or {}
        if all(current.get(k) == v for k, v in status.items()):
            return
        await self._patch(inf, res, obj, {"status": status}, sub="status")

    # ---- ReplicaSet ----

    async def _sync_replicaset(self, rs: Obj) -> None:
        pods = self.pods.children_of(rs)
        active = [p for p in pods if is_active(p)]
        want = max(_int(_spec(rs).get("replicas"), 1), 0)
        template = _spec(rs).get("template") or {}
        for _ in range(want - len(active)):
            await self._create(self.pods, PODS, pod_from_template(rs, template, {}))
        if len(active) > want:
            # unscheduled, then not running, then the newest go first (as the real controller ranks them)
            def rank(p: Obj) -> tuple[int, int, str]:
                return (
                    1 if _spec(p).get("nodeName") else 0,
                    1 if (p.get("status") or {}).get("phase") == "Running" else 0,
                    _invert(_md(p).get("creationTimestamp") or ""),
                )

            for p in sorted(active, key=rank)[: len(active) - want]:
                await self._delete(self.pods, PODS, p)
        active = [p for p in self.pods.children_of(rs) if is_active(p)]
        ready = sum(1 for p in active if is_ready(p))
        await self._set_status(
            self.rsets,
            REPLICASETS,
            rs,
            {
                "replicas": len(active),
                "fullyLabeledReplicas": len(active),
                "readyReplicas": ready,
                "availableReplicas": ready,
                "observedGeneration": _md(rs).get("generation", 1),
            },
        )

    # ---- Deployment ----

    async def _sync_deployment(self, d: Obj) -> None:
        spec = _spec(d)
        template = copy.deepcopy(spec.get("template") or {})
        want = max(_int(spec.get("replicas"), 1), 0)
        h = template_hash(template)
        owned = self.rsets.children_of(d)
        current = next((r for r in owned if (_md(r).get("labels") or {}).get(TEMPLATE_HASH) == h), None)
        revision = 1 + max(
            (_int((_md(r).get("annotations") or {}).get(REVISION), 0) for r in owned), default=0
        )
        if current is None:
            labels = {**((template.get("metadata") or {}).get("labels") or {}), TEMPLATE_HASH: h}
            template.setdefault("metadata", {})["labels"] = labels
            selector = copy.deepcopy(spec.get("selector") or {})
            selector.setdefault("matchLabels", {})[TEMPLATE_HASH] = h
            rs = {
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "metadata": {
                    "name": f"{_md(d)['name']}-{h}",
                    "namespace": _md(d).get("namespace"),
                    "labels": labels,
                    "annotations": {REVISION: str(revision)},
                    "ownerReferences": [controller_ref(d)],
                },
                # the rollout below scales it up as far as the strategy allows
                "spec": {"replicas": 0 if owned else want, "selector": selector, "template": template},
            }
            current = await self._create(self.rsets, REPLICASETS, rs)
            if current is None:
                return
        else:
            mine = _int((_md(current).get("annotations") or {}).get(REVISION), 0)
            if mine != revision - 1:
                # a template rolled back to an older ReplicaSet makes that one the newest revision
                await self._patch(
                    self.rsets, REPLICASETS, current, {"metadata": {"annotations": {REVISION: str(revision)}}}
                )
        mine = (_md(current).get("annotations") or {}).get(REVISION)
        if mine and (_md(d).get("annotations") or {}).get(REVISION) != mine:
            # the Deployment carries its current revision, as `kubectl rollout undo` expects
            await self._patch(
                self.deployments, DEPLOYMENTS, d, {"metadata": {"annotations": {REVISION: mine}}}
            )
        olds = [r for r in self.rsets.children_of(d) if _md(r).get("uid") != _md(current).get("uid")]
        old_pods = any(self.pods.children_of(r) for r in olds)
        new_target, old_targets = rollout_plan(spec.get("strategy") or {}, want, current, olds, old_pods)
        for rs, target in [(current, new_target), *zip(olds, old_targets, strict=True)]:
            if _int(_spec(rs).get("replicas"), 1) != target:
                await self._patch(self.rsets, REPLICASETS, rs, {"spec": {"replicas": target}})
        owned = self.rsets.children_of(d)
        st = [r.get("status") or {} for r in owned]
        cur_status = current.get("status") or {}
        available = sum(_int(s.get("availableReplicas"), 0) for s in st)
        replicas = sum(_int(s.get("replicas"), 0) for s in st)
        ok = available >= want
        await self._set_status(
            self.deployments,
            DEPLOYMENTS,
            d,
            {
                "observedGeneration": _md(d).get("generation", 1),
                "replicas": replicas,
                "updatedReplicas": _int(cur_status.get("replicas"), 0),
                "readyReplicas": sum(_int(s.get("readyReplicas"), 0) for s in st),
                "availableReplicas": available,
                "unavailableReplicas": max(want - available, 0),
                "conditions": [
                    _condition(
                        "Available",
                        ok,
                        "MinimumReplicasAvailable" if ok else "MinimumReplicasUnavailable",
                        "Deployment has minimum availability."
                        if ok
                        else "Deployment does not have minimum availability.",
                        d,
                    ),
                    _condition(
                        "Progressing",
                        True,
                        "NewReplicaSetAvailable" if ok else "ReplicaSetUpdated",
                        f'ReplicaSet "{_md(current)["name"]}" '
                        + ("has successfully progressed." if ok else "is progressing."),
                        d,
                    ),
                ],
            },
        )

    # ---- StatefulSet ----

    async def _sync_statefulset(self, sts: Obj) -> None:
        spec = _spec(sts)
        name = _md(sts)["name"]
        want = max(_int(spec.get("replicas"), 1), 0)
        ordered = spec.get("podManagementPolicy", "OrderedReady") != "Parallel"
        by_name = {_md(p).get("name"): p for p in self.pods.children_of(sts)}
        template = spec.get("template") or {}
        revision = f"{name}-{template_hash(template)}"
        all_ready = True
        for i in range(want):
            pod_name = f"{name}-{i}"
            pod = by_name.get(pod_name)
            if pod is not None and (pod.get("status") or {}).get("phase") == "Failed":
                # a failed member is replaced under the same name, as the real controller does
                await self._delete(self.pods, PODS, pod)
                pod = None
                if ordered:
                    break
                continue
            if pod is None:
                all_ready = False
                labels = {STS_POD_NAME: pod_name, STS_POD_INDEX: str(i), STS_REVISION: revision}
                fresh = pod_from_template(sts, template, labels, name=pod_name)
                fresh["spec"].setdefault("hostname", pod_name)
                await self._create(self.pods, PODS, fresh)
                if ordered:
                    break
                continue
            if not is_ready(pod):
                all_ready = False
                if ordered:
                    break  # the next ordinal waits for this one
        surplus = sorted(
            (
                p
                for n, p in by_name.items()
                if _ordinal(name, str(n)) >= want and not _md(p).get("deletionTimestamp")
            ),
            key=lambda p: -_ordinal(name, _md(p)["name"]),
        )
        terminating = any(_md(p).get("deletionTimestamp") for p in by_name.values())
        for p in surplus[: 1 if ordered else len(surplus)]:
            if ordered and terminating:
                break
            await self._delete(self.pods, PODS, p)
        outdated = sorted(
            (p for p in by_name.values() if (_md(p).get("labels") or {}).get(STS_REVISION) != revision),
            key=lambda p: -_ordinal(name, _md(p)["name"]),
        )
        rolling = (spec.get("updateStrategy") or {}).get("type", "RollingUpdate") == "RollingUpdate"
        if rolling and outdated and all_ready and not terminating and not surplus:
            # a changed template: the highest outdated ordinal goes and comes back with it, one at a time
            await self._delete(self.pods, PODS, outdated[0])
        active = [p for p in self.pods.children_of(sts) if is_active(p)]
        ready = sum(1 for p in active if is_ready(p))
        updated = sum(1 for p in active if (_md(p).get("labels") or {}).get(STS_REVISION) == revision)
        older = [(_md(p).get("labels") or {}).get(STS_REVISION) for p in outdated]
        await self._set_status(
            self.statefulsets,
            STATEFULSETS,
            sts,
            {
                "observedGeneration": _md(sts).get("generation", 1),
                "replicas": len(active),
                "readyReplicas": ready,
                "availableReplicas": ready,
                "currentReplicas": len(active),
                "updatedReplicas": updated,
                "updateRevision": revision,
                # kubectl rollout status waits until both are the same
                "currentRevision": revision if not older or not older[-1] else older[-1],
            },
        )

    # ---- batch/v1 Job ----

    async def _sync_job(self, job: Obj) -> None:
        spec, status = _spec(job), job.get("status") or {}
        uid = _md(job)["uid"]
        pods = self.pods.children_of(job)
        succeeded = self._succeeded.setdefault(uid, set())
        failed = self._failed.setdefault(uid, set())
        for p in pods:
            phase = (p.get("status") or {}).get("phase")
            if phase == "Succeeded":
                succeeded.add(_md(p)["uid"])
            elif phase == "Failed":
                failed.add(_md(p)["uid"])
        indexed = spec.get("completionMode") == "Indexed"
        done_indexes = {
            _int((_md(p).get("annotations") or {}).get(JOB_INDEX), -1)
            for p in pods
            if (p.get("status") or {}).get("phase") == "Succeeded"
        } | _parse_indexes(status.get("completedIndexes"))
        n_succeeded = len(done_indexes) if indexed else max(len(succeeded), _int(status.get("succeeded"), 0))
        n_failed = max(len(failed), _int(status.get("failed"), 0))
        active = [p for p in pods if is_active(p)]
        finished = any(
            c.get("type") in ("Complete", "Failed") and c.get("status") == "True"
            for c in status.get("conditions") or []
        )
        completions = spec.get("completions")
        parallelism = max(_int(spec.get("parallelism"), 1), 0)
        if completions is None and spec.get("parallelism") is None:
            completions = 1
        new: Obj = {"startTime": status.get("startTime") or _now()}
        if not finished:
            done = (
                n_succeeded >= _int(completions, 1)
                if completions is not None
                else (n_succeeded > 0 and not active)
            )
            if done:
                new["completionTime"] = _now()
                new["conditions"] = [
                    _condition(
                        "SuccessCriteriaMet",
                        True,
                        "CompletionsReached",
                        "Reached expected number of succeeded pods",
                        job,
                    ),
                    _condition(
                        "Complete",
                        True,
                        "CompletionsReached",
                        "Reached expected number of succeeded pods",
                        job,
                    ),
                ]
                finished = True
            else:
                failure = self._job_failure(job, n_failed, new["startTime"])
                if failure is not None:
                    reason, message = failure
                    new["conditions"] = [
                        _condition("FailureTarget", True, reason, message, job),
                        _condition("Failed", True, reason, message, job),
                    ]
                    finished = True
        if finished or spec.get("suspend"):
            for p in active:
                await self._delete(self.pods, PODS, p)
            active = []
        else:
            remaining = _int(completions, 1) - n_succeeded if completions is not None else parallelism
            labels = {
                JOB_UID: uid,
                JOB_NAME: _md(job)["name"],
                "controller-uid": uid,
                "job-name": _md(job)["name"],
            }
            template = spec.get("template") or {}
            if indexed:
                busy = done_indexes | {
                    _int((_md(p).get("annotations") or {}).get(JOB_INDEX), -1) for p in active
                }
                todo = [i for i in range(_int(completions, 1)) if i not in busy]
                for i in todo[: max(parallelism - len(active), 0)]:
                    await self._create(self.pods, PODS, indexed_pod(job, template, labels, i))
            else:
                for _ in range(min(parallelism, remaining) - len(active)):
                    await self._create(self.pods, PODS, pod_from_template(job, template, labels))
            active = [p for p in self.pods.children_of(job) if is_active(p)]
        new.update(
            {
                "active": len(active),
                "ready": sum(1 for p in active if is_ready(p)),
                "succeeded": n_succeeded,
                "failed": n_failed,
            }
        )
        if indexed:
            new["completedIndexes"] = _format_indexes(done_indexes - {-1}) or None
        await self._set_status(self.jobs, BATCH_JOBS, job, new)

    def _job_failure(self, job: Obj, n_failed: int, started: str) -> tuple[str, str] | None:
        spec = _spec(job)
        if n_failed > _int(spec.get("backoffLimit"), 6):
            return "BackoffLimitExceeded", "Job has reached the specified backoff limit"
        deadline = spec.get("activeDeadlineSeconds")
        if deadline is None:
            return None
        try:
            start = datetime.strptime(started, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
        except ValueError:
            return None
        left = _int(deadline, 0) - (datetime.now(UTC) - start).total_seconds()
        if left <= 0:
            return "DeadlineExceeded", "Job was active longer than specified deadline"
        uid = _md(job)["uid"]
        if uid not in self._deadlines:  # nothing else may happen to it before then: look again
            self._deadlines.add(uid)
            asyncio.get_running_loop().call_later(left + 0.1, self._deadline_due, uid)
        return None

    def _deadline_due(self, uid: str) -> None:
        self._deadlines.discard(uid)
        job = self.jobs.objects.get(uid)
        if job is not None:
            self._mark(self.jobs, job)

    def _job_gone(self, type_: str, job: Obj) -> None:
        if type_ == "DELETED":
            self._succeeded.pop(_md(job).get("uid", ""), None)
            self._failed.pop(_md(job).get("uid", ""), None)


def indexed_pod(job: Obj, template: Obj, labels: dict[str, str], index: int) -> Obj:
    """A pod of an Indexed Job: its index in a label, an annotation and JOB_COMPLETION_INDEX."""
    pod = pod_from_template(
        job, template, {**labels, JOB_INDEX: str(index)}, annotations={JOB_INDEX: str(index)}
    )
    pod["metadata"]["generateName"] = f"{_md(job)['name']}-{index}-"
    pod["spec"].setdefault("hostname", f"{_md(job)['name']}-{index}")
    for c in pod["spec"].get("containers") or []:
        env = [e for e in c.get("env") or [] if e.get("name") != "JOB_COMPLETION_INDEX"]
        c["env"] = [*env, {"name": "JOB_COMPLETION_INDEX", "value": str(index)}]
    return pod


def _parse_indexes(text: Any) -> set[int]:
    """`completedIndexes` ("0-2,5") as a set."""
    out: set[int] = set()
    for part in str(text or "").split(","):
        lo, _, hi = part.partition("-")
        if lo.strip().isdigit():
            out.update(range(int(lo), int(hi if hi.strip().isdigit() else lo) + 1))
    return out


def _format_indexes(indexes: set[int]) -> str:
    runs: list[list[int]] = []
    for i in sorted(indexes):
        if runs and runs[-1][1] == i - 1:
            runs[-1][1] = i
        else:
            runs.append([i, i])
    return ",".join(f"{a}" if a == b else f"{a}-{b}" for a, b in runs)


def _scaled(value: Any, want: int, default: str, round_up: bool) -> int:
    """maxSurge/maxUnavailable: an int, or a percentage of the replicas (surge rounds up)."""
    text = str(default if value is None else value)
    if text.endswith("%"):
        pct = _int(text[:-1], 25) * want
        return -(-pct // 100) if round_up else pct // 100
    return max(_int(text, 0), 0)


def rollout_plan(
    strategy: Obj, want: int, new_rs: Obj, olds: list[Obj], old_pods_left: bool
) -> tuple[int, list[int]]:
    """Replica counts for the new ReplicaSet and each old one, one step of the Deployment's strategy.

    RollingUpdate: the new one grows while the total stays within replicas + maxSurge; old ones
    shrink, unavailable pods first, while at least replicas - maxUnavailable stay available.
    Recreate: old ones go to 0, the new one grows once no old pod is left.
    """

    def replicas(rs: Obj) -> int:
        return _int(_spec(rs).get("replicas"), 1)

    def available(rs: Obj) -> int:
        return _int((rs.get("status") or {}).get("availableReplicas"), 0)

    if strategy.get("type") == "Recreate":
        return (0 if old_pods_left else want), [0] * len(olds)
    rolling = strategy.get("rollingUpdate") or {}
    surge = _scaled(rolling.get("maxSurge"), want, "25%", round_up=True)
    unavailable = _scaled(rolling.get("maxUnavailable"), want, "25%", round_up=False)
    if surge == 0 and unavailable == 0:
        unavailable = 1
    total = replicas(new_rs) + sum(replicas(r) for r in olds)
    new_target = replicas(new_rs)
    if new_target > want:
        new_target = want
    elif new_target < want:
        new_target = min(want, new_target + max(want + surge - total, 0))
    can_remove = available(new_rs) + sum(available(r) for r in olds) - (want - unavailable)
    old_targets = []
    for rs in olds:
        r = replicas(rs)
        unhealthy = max(r - available(rs), 0)
        healthy_cut = min(available(rs), max(can_remove, 0))
        can_remove -= healthy_cut
        old_targets.append(r - min(r, unhealthy + healthy_cut))
    return new_target, old_targets


def _condition(type_: str, ok: bool, reason: str, message: str, owner: Obj) -> Obj:
    prior = next(
        (c for c in (owner.get("status") or {}).get("conditions") or [] if c.get("type") == type_), None
    )
    status = "True" if ok else "False"
    since = prior.get("lastTransitionTime") if prior and prior.get("status") == status else _now()
    return {
        "type": type_,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": since,
    }


def _ordinal(sts_name: str, pod_name: str) -> int:
    tail = pod_name[len(sts_name) + 1 :]
    return int(tail) if tail.isdigit() else -1


def _invert(timestamp: str) -> str:
    """Sorts newer timestamps first."""
    return "".join(chr(0x10FFFF - ord(c)) for c in timestamp)


def _key(obj: Obj) -> str:
    return f"{_md(obj).get('namespace')}/{_md(obj).get('name')}"
