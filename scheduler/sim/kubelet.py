"""Simulated kubelets for every node of the sandbox.

One component watches all pods (as every kubelet together would) and plays the kubelet's part:
a pod bound to a node is admitted (the node exists, its selector matches, it fits what is already
running there, the device plugins accept the scheduler's annotations) and turns Running and Ready
after a short delay, or Failed with the reason the real kubelet gives (`OutOfcpu`,
`NodeAffinity`, `UnexpectedAdmissionError`); a pod asking for a run time
(annotation `sandbox.vc-scheduler.io/run-seconds`) turns Succeeded after it; a deleted pod finishes
its graceful termination and is removed.

A node annotated `sandbox.vc-scheduler.io/kubelet: stopped` has a stopped kubelet: pods bound there
wait, and the node lifecycle controller (`nodelifecycle`) marks the node unreachable. When the
annotation goes, the kubelet posts Ready again and starts the pods that waited. A node the sandbox
is given without a Ready condition gets one from its kubelet, as a registering kubelet posts it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from datetime import UTC, datetime
from typing import Any

from scheduler.model.convert import ConvertError, pod_to_task
from scheduler.model.resources import QuantityError, Resource
from scheduler.sim.deviceplugins import check_pod
from scheduler.sim.nodelifecycle import STATUS_UNKNOWN_REASON, kubelet_stopped, ready_condition, with_ready
from scheduler.sim.restclient import NODES, PODS, ApiError, RestClient

log = logging.getLogger(__name__)

RUN_SECONDS = "sandbox.vc-scheduler.io/run-seconds"


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _key(obj: dict[str, Any]) -> str:
    md = obj.get("metadata") or {}
    return f"{md.get('namespace')}/{md.get('name')}"


class SimulatedKubelets:
    def __init__(self, client: RestClient, start_delay: float = 0.2, termination_delay: float = 0.2) -> None:
        self.client = client
        self.start_delay = start_delay
        self.termination_delay = termination_delay
        self.nodes: dict[str, dict[str, Any]] = {}
        # node -> pod key -> request of the pods admitted there and not finished
        self.admitted: dict[str, dict[str, Resource]] = {}
        self._handled: set[str] = set()  # pod uids whose admission is decided
        self._terminating: set[str] = set()
        # node -> pod uid -> pod bound there while its kubelet is stopped
        self._waiting: dict[str, dict[str, dict[str, Any]]] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self.started = 0
        self.failed = 0

    async def run(self) -> None:
        await asyncio.gather(self._watch_nodes(), self._watch_pods())

    def _spawn(self, coro: Any) -> None:
        t = asyncio.ensure_future(coro)
        self._tasks.add(t)
        t.add_done_callback(self._tasks.discard)

    async def _watch_nodes(self) -> None:
        async for kind, node in self.client.watch(NODES):
            name = (node.get("metadata") or {}).get("name")
            if kind == "DELETED":
                self.nodes.pop(name, None)
                continue
            self.nodes[name] = node
            if kubelet_stopped(node):
                continue
            cond = ready_condition(node)
            if cond is None or (
                cond.get("status") == "Unknown" and cond.get("reason") == STATUS_UNKNOWN_REASON
            ):
                self._spawn(self._post_ready(node))
            for pod in self._waiting.pop(name, {}).values():
                self._on_pod("MODIFIED", pod)

    async def _watch_pods(self) -> None:
        async for kind, pod in self.client.watch(PODS):
            try:
                self._on_pod(kind, pod)
            except Exception:  # one odd pod must never stop every kubelet
                log.exception("kubelet: error handling pod %s", _key(pod))

    def _release(self, pod: dict[str, Any]) -> None:
        node = (pod.get("spec") or {}).get("nodeName")
        if node and node in self.admitted:
            self.admitted[node].pop(_key(pod), None)

    def _on_pod(self, kind: str, pod: dict[str, Any]) -> None:
        md = pod.get("metadata") or {}
        uid = md.get("uid", "")
        spec = pod.get("spec") or {}
        phase = (pod.get("status") or {}).get("phase")
        node_name = spec.get("nodeName")
        if node_name in self._waiting:
            self._waiting[node_name].pop(uid, None)
        if kind == "DELETED":
            self._release(pod)
            self._handled.discard(uid)
            self._terminating.discard(uid)
            return
        if md.get("deletionTimestamp"):
            if uid not in self._terminating:
                self._terminating.add(uid)
                self._spawn(self._terminate(pod))
            return
        if phase in ("Succeeded", "Failed"):
            self._release(pod)
            return
        if not node_name or uid in self._handled:
            return
        node = self.nodes.get(node_name)
        if node is not None and kubelet_stopped(node) and phase != "Running":
            self._waiting.setdefault(node_name, {})[uid] = pod
            return
        if phase == "Running":
            # already running (e.g. the sandbox restarted): count it, do not start it again
            self._handled.add(uid)
            self._admit_existing(pod)
            return
        self._handled.add(uid)
        self._spawn(self._start(pod))

    def _request(self, pod: dict[str, Any]) -> Resource:
        try:
            return pod_to_task(pod).init_resreq
        except (ConvertError, QuantityError):
            return Resource()

    def _admit_existing(self, pod: dict[str, Any]) -> None:
        node = pod["spec"]["nodeName"]
        self.admitted.setdefault(node, {})[_key(pod)] = self._request(pod)

    def _admission_error(self, pod: dict[str, Any]) -> tuple[str, str] | None:
        node_name = pod["spec"]["nodeName"]
        node = self.nodes.get(node_name)
        if node is None:
            return "NodeLost", f"node {node_name} does not exist"
        labels = (node.get("metadata") or {}).get("labels") or {}
        for k, v in ((pod.get("spec") or {}).get("nodeSelector") or {}).items():
            if labels.get(k) != v:
                return "NodeAffinity", "Pod Predicate NodeAffinity failed"
        try:
            alloc = Resource.from_list(((node.get("status") or {}).get("allocatable")) or {})
        except QuantityError:
            alloc = Resource()
        used = Resource()
        for r in self.admitted.get(node_name, {}).values():
            used.add(r)
        req = self._request(pod)
        free = alloc.clone().sub(used)
        short = req.insufficient(free)
        if short:
            name = short[0]
            return (
                f"OutOf{name}",
                f"Pod Node didn't have enough resource: {name}, requested: {req.get(name):g}, "
                f"used: {used.get(name):g}, capacity: {alloc.get(name):g}",
            )
        pods_cap = alloc.pods
        if pods_cap and len(self.admitted.get(node_name, {})) + 1 > pods_cap:
            return "OutOfpods", "Node didn't have enough resource: pods"
        dev = check_pod(pod, node)
        if dev.error:
            return "UnexpectedAdmissionError", f"Allocate failed due to {dev.error}, which is unexpected"
        return None

    async def _start(self, pod: dict[str, Any]) -> None:
        ns, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
        node_name = pod["spec"]["nodeName"]
        err = self._admission_error(pod)
        if err is not None:
            reason, message = err
            self.failed += 1
            await self._patch_status(
                ns, name, {"status": {"phase": "Failed", "reason": reason, "message": message}}
            )
            return
        self.admitted.setdefault(node_name, {})[_key(pod)] = self._request(pod)
        dev = check_pod(pod, self.nodes[node_name])
        await asyncio.sleep(self.start_delay)
        if dev.annotations:
            with contextlib.suppress(ApiError):
                await self.client.patch(PODS, name, {"metadata": {"annotations": dev.annotations}}, ns)
        now = _now()
        conds = [
            {"type": t, "status": "True", "lastTransitionTime": now}
            for t in ("PodScheduled", "Initialized", "ContainersReady", "Ready")
        ]
        statuses = [
            {
                "name": c.get("name"),
                "ready": True,
                "restartCount": 0,
                "image": c.get("image", ""),
                "started": True,
                "state": {"running": {"startedAt": now}},
            }
            for c in (pod.get("spec") or {}).get("containers") or []
        ]
        ok = await self._patch_status(
            ns,
            name,
            {
                "status": {
                    "phase": "Running",
                    "startTime": now,
                    "conditions": conds,
                    "containerStatuses": statuses,
                    "hostIP": "10.0.0.1",
                }
            },
        )
        if not ok:
            return
        self.started += 1
        run = ((pod.get("metadata") or {}).get("annotations") or {}).get(RUN_SECONDS)
        if run:
            try:
                seconds = float(run)
            except ValueError:
                log.warning(
                    "pod %s/%s: %s=%r is not a number; it runs until deleted", ns, name, RUN_SECONDS, run
                )
                return
            await asyncio.sleep(max(seconds, 0.0))
            self._release(pod)
            await self._patch_status(
                ns,
                name,
                {
                    "status": {
                        "phase": "Succeeded",
                        "conditions": [
                            {
                                "type": "Ready",
                                "status": "False",
                                "reason": "PodCompleted",
                                "lastTransitionTime": _now(),
                            }
                        ],
                    }
                },
            )

    async def _post_ready(self, node: dict[str, Any]) -> None:
        conditions = with_ready(node, "True", "KubeletReady", "kubelet is posting ready status")
        try:
            await self.client.patch(
                NODES, node["metadata"]["name"], {"status": {"conditions": conditions}}, sub="status"
            )
        except ApiError as exc:
            if exc.status != 404:
                log.warning("kubelet: cannot post the status of node %s: %s", node["metadata"]["name"], exc)

    async def _patch_status(self, ns: str, name: str, patch: dict[str, Any]) -> bool:
        try:
            await self.client.patch(PODS, name, patch, ns, sub="status")
            return True
        except ApiError as exc:
            if exc.status != 404:
                log.warning("kubelet: cannot update pod %s/%s: %s", ns, name, exc)
            return False

    async def _terminate(self, pod: dict[str, Any]) -> None:
        grace = (pod.get("metadata") or {}).get("deletionGracePeriodSeconds")
        delay = self.termination_delay if grace is None else min(float(grace), self.termination_delay)
        await asyncio.sleep(delay)
        self._release(pod)
        md = pod["metadata"]
        with contextlib.suppress(ApiError):
            await self.client.delete(PODS, md["name"], md.get("namespace"), grace=0)

    async def stop(self) -> None:
        for t in list(self._tasks):
            t.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
