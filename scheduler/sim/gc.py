"""The garbage collector of kube-controller-manager, by ownerReference, for the sandbox.

An object whose every owner is gone is deleted (background propagation: the owner goes first,
its dependents after, each with its normal graceful deletion, so pods terminate through their
kubelet). Deleting a Deployment thus removes its ReplicaSets and their pods; a Job, its pods.

It follows the store's change feed in-process (it sees every kind without a watch per kind) and
knows an owner is gone only once it saw that uid deleted: a dependent naming an owner the sandbox
never held (a hand-written manifest with a made-up uid) is left alone, unlike the real collector,
which would look the owner up and delete the dependent.

The other half, `propagationPolicy: Orphan` (`kubectl delete --cascade=orphan`), is part of the
delete request itself: see `apiserver.orphan`.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from scheduler.sim.apiserver.errors import ApiError
from scheduler.sim.apiserver.orphan import owner_refs as _refs
from scheduler.sim.apiserver.resources import TABLE
from scheduler.sim.apiserver.store import Store

log = logging.getLogger(__name__)

Obj = dict[str, Any]
Ref = tuple[str, str, str]  # store key, namespace, name


class GarbageCollector:
    def __init__(self, store: Store, max_deleted: int = 100_000) -> None:
        self.store = store
        self.alive: set[str] = set()
        self.deleted: dict[str, None] = {}  # uids seen deleted, oldest first (bounded)
        self.max_deleted = max_deleted
        self.dependents: dict[str, set[Ref]] = {}  # owner uid -> dependents naming it
        self._queue: asyncio.Queue[Ref] = asyncio.Queue()
        self._unsubscribe: Any = None
        self.collected = 0

    def start(self) -> None:
        for res in TABLE.resources:
            for obj in self.store.iter_objects(res):
                self._seen(res.key, obj)
        self._unsubscribe = self.store.subscribe(self._on_change)

    def stop(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None

    def _seen(self, key: str, obj: Obj) -> None:
        md = obj.get("metadata") or {}
        uid = md.get("uid")
        if uid:
            self.alive.add(uid)
        refs = _refs(obj)
        if not refs:
            return
        where = (key, md.get("namespace") or "", md.get("name") or "")
        for r in refs:
            self.dependents.setdefault(str(r.get("uid")), set()).add(where)
        if self._orphaned(refs):
            self._queue.put_nowait(where)

    def _orphaned(self, refs: list[Obj]) -> bool:
        return all(str(r.get("uid")) in self.deleted and str(r.get("uid")) not in self.alive for r in refs)

    def _on_change(self, type_: str, key: str, obj: Obj) -> None:
        if type_ != "DELETED":
            self._seen(key, obj)
            return
        md = obj.get("metadata") or {}
        uid = md.get("uid")
        where = (key, md.get("namespace") or "", md.get("name") or "")
        for r in _refs(obj):
            deps = self.dependents.get(str(r.get("uid")))
            if deps is not None:
                deps.discard(where)
        if not uid:
            return
        self.alive.discard(uid)
        self.deleted[uid] = None
        if len(self.deleted) > self.max_deleted:
            self.deleted.pop(next(iter(self.deleted)))
        for dep in self.dependents.pop(uid, set()):
            self._queue.put_nowait(dep)

    async def run(self) -> None:
        self.start()
        try:
            while True:
                ref = await self._queue.get()
                self._collect(ref)
                if self._queue.empty():
                    await asyncio.sleep(0)  # let the writes of one owner's dependents reach watchers
        finally:
            self.stop()

    def _collect(self, ref: Ref) -> None:
        key, ns, name = ref
        obj = self.store.get(key, ns or None, name)
        if obj is None or (obj.get("metadata") or {}).get("deletionTimestamp"):
            return
        refs = _refs(obj)
        if not refs or not self._orphaned(refs):
            return  # another owner still lives (or the reference was removed meanwhile)
        try:
            self.store.delete(key, ns or None, name)
            self.collected += 1
        except ApiError as exc:
            if exc.status != 404:
                log.warning("garbage collector: cannot delete %s %s/%s: %s", key, ns, name, exc)
