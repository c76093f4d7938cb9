"""The chaos suite's referee: every pod event from the API server's own record, checked as it comes.

It subscribes to the sandbox store (what the API server committed, not what a client saw) and,
after each pod event, re-checks the node the pod is on:
- no pod is bound twice (a uid never moves from one node to another, and gets one node only once);
- the pods bound to a node and not finished never ask for more than its allocatable (cpu, memory,
  extended resources, pod count);
- on vGPU nodes, the pods holding a card never use more than its memory, 100 % of its cores, or
  its split count.
At the end, `finish` adds: no valid pod is left unbound while it fits on some node by requests,
and the daemons never exited. Kubelet admission failures (OutOf*, UnexpectedAdmissionError) are
counted: a scheduler that over-commits shows up there too.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from scheduler.model.convert import ConvertError, pod_to_task
from scheduler.model.resources import QuantityError, Resource
from scheduler.plugins.deviceshare import annotations as ann

REJECTIONS = ("OutOf", "UnexpectedAdmissionError")


@dataclass(slots=True)
class _Held:
    node: str
    request: Resource
    cards: list[tuple[str, int, int]] = field(default_factory=list)  # (uuid, memory MiB, cores %)


def _request(pod: dict[str, Any]) -> Resource:
    try:
        return pod_to_task(pod).init_resreq
    except (ConvertError, QuantityError):
        return Resource()


def _cards(pod: dict[str, Any], request: Resource) -> list[tuple[str, int, int]]:
    if request.scalars.get(ann.VGPU_NUMBER, 0) <= 0:
        return []  # the device plugin gives cards only to pods asking for them, whatever they carry
    value = ((pod.get("metadata") or {}).get("annotations") or {}).get(ann.VGPU_IDS_NEW)
    return [(d.uuid, d.mem, d.cores) for seg in ann.decode_pod_devices(value) for d in seg]


def _finished(etype: str, pod: dict[str, Any]) -> bool:
    return etype == "DELETED" or (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


class Checker:
    def __init__(self, store: Any, valid: Callable[[dict[str, Any]], bool] = lambda _p: True) -> None:
        self.store = store
        self.valid = valid
        self.events = 0
        self.binds = 0
        self.rejections = 0
        self.violations: list[str] = []
        self._node_of: dict[str, str] = {}  # uid -> the node it was bound to (ever)
        self._held: dict[str, _Held] = {}  # uid -> what it holds while bound and not finished
        self._by_node: dict[str, set[str]] = {}
        self._rejected: set[str] = set()
        self._unsubscribe = store.subscribe(self._on_event)

    def close(self) -> None:
        self._unsubscribe()

    # ------------------------------------------------------------------ events --
    def _on_event(self, etype: str, key: str, obj: dict[str, Any]) -> None:
        if key == "pods":
            self.observe(etype, obj)

    def observe(self, etype: str, pod: dict[str, Any]) -> None:
        self.events += 1
        md = pod.get("metadata") or {}
        uid = str(md.get("uid") or f"{md.get('namespace')}/{md.get('name')}")
        name = f"{md.get('namespace')}/{md.get('name')}"
        node = (pod.get("spec") or {}).get("nodeName") or ""
        status = pod.get("status") or {}
        rejected = status.get("phase") == "Failed" and str(status.get("reason", "")).startswith(REJECTIONS)
        if rejected and uid not in self._rejected:
            self._rejected.add(uid)
            self.rejections += 1
            self.violations.append(f"kubelet rejected {name} on {node}: {status.get('reason')}")
        if node:
            before = self._node_of.get(uid)
            if before is None:
                self._node_of[uid] = node
                self.binds += 1
            elif before != node:
                self.violations.append(f"pod {name} bound twice: {before} then {node}")
        held = self._held.pop(uid, None)
        if held is not None:
            self._by_node.get(held.node, set()).discard(uid)
        if node and not _finished(etype, pod):
            req = _request(pod)
            self._held[uid] = _Held(node, req, _cards(pod, req))
            self._by_node.setdefault(node, set()).add(uid)
            self._check_node(node, name)

    # ------------------------------------------------------------------ totals --
    def used(self, node: str) -> tuple[Resource, int, dict[str, list[int]]]:
        total = Resource()
        cards: dict[str, list[int]] = {}
        uids = self._by_node.get(node, set())
        for uid in uids:
            h = self._held[uid]
            total.add(h.request)
            for uuid, mem, cores in h.cards:
                c = cards.setdefault(uuid, [0, 0, 0])
                c[0] += mem
                c[1] += cores
                c[2] += 1
        return total, len(uids), cards

    def _check_node(self, node: str, trigger: str) -> None:
        obj = self.store.get("nodes", None, node)
        if obj is None:
            return
        try:
            alloc = Resource.from_list((obj.get("status") or {}).get("allocatable") or {})
        except QuantityError:
            return
        used, count, cards = self.used(node)
        short = used.insufficient(alloc)
        if short:
            self.violations.append(
                f"node {node} over-committed in {short} after {trigger}: "
                f"{used.get(short[0]):g} > {alloc.get(short[0]):g}"
            )
        if alloc.pods and count > alloc.pods:
            self.violations.append(
                f"node {node} over-committed in pods after {trigger}: {count} > {alloc.pods:g}"
            )
        if cards:
            register = ((obj.get("metadata") or {}).get("annotations") or {}).get(ann.VGPU_REGISTER)
            known = {c.uuid: c for c in (ann.decode_vgpu_register(register)[0] or [])}
            for uuid, (mem, cores, n) in cards.items():
                card = known.get(uuid)
                if card is None:
                    self.violations.append(
                        f"pod {trigger} holds card {uuid} that node {node} does not register"
                    )
                elif mem > card.devmem or cores > 100 or n > card.count:
                    self.violations.append(
                        f"card {uuid} on {node} over-committed after {trigger}: "
                        f"{mem}/{card.devmem} MiB, {cores}/100 cores, {n}/{card.count} pods"
                    )

    # ------------------------------------------------------------------ the end --
    def fits_somewhere(self, pod: dict[str, Any]) -> str:
        """A node where the pod would fit by requests now (vGPU pods: a card with room), or ""."""
        req = _request(pod)
        wants_vgpu = req.scalars.get(ann.VGPU_NUMBER, 0) > 0
        for obj in self.store.list("nodes"):
            name = obj["metadata"]["name"]
            conds = (obj.get("status") or {}).get("conditions") or []
            if not any(c.get("type") == "Ready" and c.get("status") == "True" for c in conds):
                continue
            if (obj.get("spec") or {}).get("unschedulable") or (obj.get("spec") or {}).get("taints"):
                continue
            try:
                alloc = Resource.from_list((obj.get("status") or {}).get("allocatable") or {})
            except QuantityError:
                continue
            used, count, cards = self.used(name)
            if req.insufficient(alloc.clone().sub(used)) or (alloc.pods and count + 1 > alloc.pods):
                continue
            if wants_vgpu:
                register = ((obj.get("metadata") or {}).get("annotations") or {}).get(ann.VGPU_REGISTER)
                mem = _vgpu_memory(pod)
                regs = ann.decode_vgpu_register(register)[0] or []
                if not any(
                    c.health
                    and cards.get(c.uuid, [0, 0, 0])[2] < c.count
                    and c.devmem - cards.get(c.uuid, [0, 0, 0])[0] >= mem
                    for c in regs
                ):
                    continue
            return name
        return ""

    def finish(self, daemons_alive: bool = True) -> list[str]:
        """End-of-run rules on top of those checked at every event; returns every violation."""
        for pod in self.store.list("pods"):
            spec, md = pod.get("spec") or {}, pod.get("metadata") or {}
            if spec.get("nodeName") or md.get("deletionTimestamp") or spec.get("schedulerName") != "volcano":
                continue
            if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed") or not self.valid(pod):
                continue
            where = self.fits_somewhere(pod)
            if where:
                self.violations.append(
                    f"pod {md.get('namespace')}/{md.get('name')} left unbound though it fits {where}"
                )
        if not daemons_alive:
            self.violations.append("a scheduler daemon exited")
        return self.violations


def _vgpu_memory(pod: dict[str, Any]) -> int:
    total = 0
    for c in (pod.get("spec") or {}).get("containers") or []:
        lim = ((c.get("resources") or {}).get("limits")) or {}
        try:
            total += int(lim.get(ann.VGPU_MEMORY, 0))
        except (TypeError, ValueError):
            return 0
    return total
