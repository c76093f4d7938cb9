"""Simulated kubelets for every node of the sandbox.

One component watches all pods (as every kubelet together would) and plays the kubelet's part:
a pod bound to a node is admitted (the node exists, its selector matches, it fits what is already
running there, the device plugins accept the scheduler's annotations) and turns Running and Ready
after a short delay, or Failed with the reason the real kubelet gives (`OutOfcpu`,
`NodeAffinity`, `UnexpectedAdmissionError`); a deleted pod finishes its graceful termination and
is removed. A running pod gets an IP from its node's `spec.podCIDR` and the node's InternalIP.

How long a pod runs: the annotation `sandbox.vc-scheduler.io/run-seconds` (then it Succeeds), or
its containers' `command`/`args`: `sleep N` (also inside `sh -c "..."`, with s/m/h suffixes) ends
after N seconds, with the code of an `exit K` in the same command (else 0). The pod ends when its
last container does: Succeeded, or Failed with a non-zero code; under restartPolicy Always (and
OnFailure after a failure) the container restarts instead and its restartCount grows. A container
without a finite `sleep` runs until the pod is deleted.

A node annotated `sandbox.vc-scheduler.io/kubelet: stopped` has a stopped kubelet: pods bound there
wait, and the node lifecycle controller (`nodelifecycle`) marks the node unreachable. When the
annotation goes, the kubelet posts Ready again and starts the pods that waited. A node the sandbox
is given without a Ready condition gets one from its kubelet, as a registering kubelet posts it.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import re
from datetime import UTC, datetime
from typing import Any

from scheduler.model.convert import ConvertError, pod_to_task
from scheduler.model.resources import QuantityError, Resource
from scheduler.sim.deviceplugins import check_pod
from scheduler.sim.nodelifecycle import STATUS_UNKNOWN_REASON, kubelet_stopped, ready_condition, with_ready
from scheduler.sim.restclient import NODES, PODS, ApiError, RestClient

log = logging.getLogger(__name__)

RUN_SECONDS = "sandbox.vc-scheduler.io/run-seconds"
_SLEEP = re.compile(r"\bsleep\s+(\d+(?:\.\d+)?)([smh]?)\b")
_EXIT = re.compile(r"\bexit\s+(\d+)\b")
_UNIT = {"": 1.0, "s": 1.0, "m": 60.0, "h": 3600.0}


def run_plan(pod: dict[str, Any]) -> tuple[float, int] | None:
    """(seconds until the pod's containers end, exit code), or None when one runs forever."""
    ends: list[tuple[float, int]] = []
    for c in (pod.get("spec") or {}).get("containers") or []:
        words = [str(w) for w in (c.get("command") or []) + (c.get("args") or [])]
        text = " ".join(words)
        m = _SLEEP.search(text)
        if m is None:
            return None
        code = _EXIT.search(text[m.end() :])
        ends.append((float(m.group(1)) * _UNIT[m.group(2)], int(code.group(1)) if code else 0))
    if not ends:
        return None
    return max(e[0] for e in ends), max(e[1] for e in ends)


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
        self.ips: dict[str, dict[str, str]] = {}  # node -> pod key -> pod IP
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
        if node and node in self.ips:
            self.ips[node].pop(_key(pod), None)

    def _addresses(self, pod: dict[str, Any]) -> tuple[str, str]:
        """(hostIP, podIP): the node's InternalIP and the lowest free host of its podCIDR."""
        node_name = pod["spec"]["nodeName"]
        node = self.nodes.get(node_name) or {}
        host = next(
            (
                a.get("address")
                for a in (node.get("status") or {}).get("addresses") or []
                if a.get("type") == "InternalIP"
            ),
            "10.0.0.1",
        )
        used = self.ips.setdefault(node_name, {})
        if _key(pod) in used:
            return str(host), used[_key(pod)]
        try:
            cidr = ipaddress.ip_network(str((node.get("spec") or {}).get("podCIDR") or ""), strict=False)
        except ValueError:
            # no or a malformed podCIDR: a /24 of 10.96.0.0/12 picked from the node's name
            index = int.from_bytes(node_name.encode()[-4:].rjust(4, b"\0"), "big") % 4096
            cidr = ipaddress.ip_network((int(ipaddress.IPv4Address("10.96.0.0")) + (index << 8), 24))
        taken = set(used.values())
        # the first address is the node's bridge, as with the usual CNI plugins
        ip = next((str(h) for i, h in enumerate(cidr.hosts()) if i > 0 and str(h) not in taken), "")
        if ip:
            used[_key(pod)] = ip
        return str(host), ip

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
        host_ip, pod_ip = self._addresses(pod)
        ok = await self._patch_status(
            ns,
            name,
            {
                "status": {
                    "phase": "Running",
                    "startTime": now,
                    "conditions": conds,
                    "containerStatuses": statuses,
                    "hostIP": host_ip,
                    "hostIPs": [{"ip": host_ip}],
                    "podIP": pod_ip or None,
                    "podIPs": [{"ip": pod_ip}] if pod_ip else None,
                }
            },
        )
        if not ok:
            return
        self.started += 1
        await self._run(pod, statuses)

    async def _run(self, pod: dict[str, Any], statuses: list[dict[str, Any]]) -> None:
        ns, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
        run = ((pod.get("metadata") or {}).get("annotations") or {}).get(RUN_SECONDS)
        plan: tuple[float, int] | None = None
        if run:
            try:
                plan = (max(float(run), 0.0), 0)
            except ValueError:
                log.warning(
                    "pod %s/%s: %s=%r is not a number; it runs until deleted", ns, name, RUN_SECONDS, run
                )
                return
        else:
            plan = run_plan(pod)
        if plan is None:
            return
        seconds, code = plan
        policy = (pod.get("spec") or {}).get("restartPolicy") or "Always"
        restarts = 0
        while True:
            await asyncio.sleep(seconds)
            restart = not run and (policy == "Always" or (policy == "OnFailure" and code != 0))
            if not restart:
                break
            # the container exited and the kubelet started it again
            restarts += 1
            now = _now()
            for st in statuses:
                st["restartCount"] = restarts
                st["lastState"] = {
                    "terminated": {"exitCode": code, "reason": "Completed" if code == 0 else "Error"}
                }
                st["state"] = {"running": {"startedAt": now}}
            if not await self._patch_status(ns, name, {"status": {"containerStatuses": statuses}}):
                return
        self._release(pod)
        now = _now()
        reason = "Completed" if code == 0 else "Error"
        for st in statuses:
            st.update(
                {
                    "ready": False,
                    "started": False,
                    "state": {"terminated": {"exitCode": code, "reason": reason, "finishedAt": now}},
                }
            )
        await self._patch_status(
            ns,
            name,
            {
                "status": {
                    "phase": "Succeeded" if code == 0 else "Failed",
                    "containerStatuses": statuses,
                    "conditions": [
                        {"type": t, "status": "True", "lastTransitionTime": now}
                        for t in ("PodScheduled", "Initialized")
                    ]
                    + [
                        {"type": t, "status": "False", "reason": "PodCompleted", "lastTransitionTime": now}
                        for t in ("Ready", "ContainersReady")
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
