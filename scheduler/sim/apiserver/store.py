"""The object store: every object of the sandbox, one cluster-wide resourceVersion, watch history.

Objects are plain dicts and are never mutated once stored: a write builds a new dict (sharing
untouched subtrees), so watch history, in-flight responses and subscribers can hold a version
without copying it. The HTTP layer and in-process components go through the same methods, so
defaulting, admission, conflicts and events are identical for both.

Indexes: objects by resource -> namespace -> name (a namespaced list touches only its
namespace), pods by `spec.nodeName` (kubelets list their node's pods), and a sorted key list per
resource for `limit`/`continue` pagination, built at the first paginated list and kept up to
date afterwards: new keys wait beside it and join it at the next paginated list or removal (an
insertion into the 150,000 keys of a large cluster moved them all, 30-70 us per created pod).

Subscribers (`subscribe(callback)`) are called synchronously after each write with
`(event_type, resource_key, obj)`; the object is the stored one and must be treated as read-only.
A subscriber may write to the store: its write's event is delivered after the current event has
reached every subscriber, so all of them see events in resourceVersion order.
"""

from __future__ import annotations

import asyncio
import bisect
import logging
import os
import random
import time
from collections import deque
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

from scheduler.sim.apiserver import admission, codec, validation
from scheduler.sim.apiserver.errors import (
    STALE,
    ApiError,
    already_exists,
    bad_request,
    conflict,
    forbidden,
    not_found,
)
from scheduler.sim.apiserver.history import Event, History
from scheduler.sim.apiserver.patch import json_patch, merge_patch, strategic_merge_patch
from scheduler.sim.apiserver.resources import TABLE, ResourceInfo
from scheduler.sim.apiserver.selectors import Selector

# pod specs whose admission is kept (a few templates; emptied when full)
_POD_ADMISSION_SIZE = 256
log = logging.getLogger(__name__)

Obj = dict[str, Any]
Subscriber = Callable[[str, str, Obj], None]
INITIAL_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
_SUFFIX_CHARS = "bcdfghjklmnpqrstvwxz2456789"
_BOOKKEEPING = (
    "uid",
    "creationTimestamp",
    "resourceVersion",
    "generation",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "selfLink",
)


_stamp_cache: tuple[int, str] = (0, "")


def now_rfc3339(offset_seconds: float = 0) -> str:
    global _stamp_cache
    if offset_seconds:
        return (datetime.now(UTC) + timedelta(seconds=offset_seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")
    # timestamps have one-second resolution: format each second once, not once per write
    sec = int(time.time())
    if _stamp_cache[0] != sec:
        _stamp_cache = (sec, datetime.fromtimestamp(sec, UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))
    return _stamp_cache[1]


class _Uids:
    """Random (version 4) UUIDs as text, from one `os.urandom` read per 256 of them.

    `str(uuid.uuid4())` is a system call, a UUID object and its formatting for every created
    object; a job controller's burst creates thousands. Here a pool's bytes become hex once and
    each UUID is cut from it, the version nibble written as 4 and the variant nibble's top bits as
    RFC 4122's 10 (the rest of the bits random, as uuid.UUID(version=4) leaves them).
    """

    __slots__ = ("_at", "_pool")

    def __init__(self) -> None:
        self._pool = ""
        self._at = 0

    def next(self) -> str:
        at = self._at
        if at >= len(self._pool):
            self._pool, at = os.urandom(16 * 256).hex(), 0
        self._at = at + 32
        h = self._pool[at : at + 32]
        return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{_VARIANT[h[16]]}{h[17:20]}-{h[20:]}"


# the variant nibble from a random hex digit: its two low bits kept, the two high bits 10
_VARIANT = {d: "89ab"[int(d, 16) & 3] for d in "0123456789abcdef"}
new_uid = _Uids().next


def _ns_name(obj: Obj) -> tuple[str, str]:
    md = obj["metadata"]
    return md.get("namespace") or "", md["name"]


def _content(obj: Obj) -> Obj:
    """What counts as a spec change for `generation`: everything but metadata and status."""
    return {k: v for k, v in obj.items() if k not in ("metadata", "status", "apiVersion", "kind")}


class Store:
    def __init__(self, history_size: int = 10_000, create_defaults: bool = True) -> None:
        self.rv = 0
        self.history_size = history_size
        self._data: dict[str, dict[str, dict[str, Obj]]] = {r.key: {} for r in TABLE.resources}
        self._histories: dict[str, History] = {r.key: History(history_size) for r in TABLE.resources}
        self._sorted: dict[str, list[tuple[str, str]] | None] = {}
        self._joining: dict[str, list[tuple[str, str]]] = {}  # created since `_sorted` was sorted
        self._pods_by_node: dict[str, dict[tuple[str, str], Obj]] = {}
        self._subscribers: list[Subscriber] = []
        self._pending: deque[tuple[str, str, Obj]] = deque()
        self._notifying = False
        # resource key -> future resolved at its next write (watch streams wait on it)
        self._waiters: dict[str, asyncio.Future[None]] = {}
        # (resource key, namespace, name) -> (stored object, its JSON): filled by lists and initial
        # watch events, dropped at the object's next write, so a second list of 150,000 pods joins
        # bytes instead of encoding every object again
        self._encoded: dict[tuple[str, str, str], tuple[Obj, bytes]] = {}
        self.writes = 0
        # pod spec as sent (JSON) -> the spec admission made of it and the status it set, for
        # specs that passed every check: the pods of one template are admitted once (a job
        # controller's burst spent ~70 us a pod in the same checks and defaults). The kept spec
        # is a private copy that every later pod of the template stores as its own: stored
        # objects are never changed in place, so they can share it (a decoded copy per pod was
        # ~4 us and ~3 KiB a pod). Admission reads the PriorityClasses besides the spec: any
        # write to them empties it.
        self._pod_admission: dict[bytes, tuple[Obj, Obj]] = {}
        if create_defaults:
            for ns in INITIAL_NAMESPACES:
                self.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
            for name, value, desc in admission.SYSTEM_PRIORITY_CLASSES:
                self.create(
                    {
                        "apiVersion": "scheduling.k8s.io/v1",
                        "kind": "PriorityClass",
                        "metadata": {"name": name},
                        "value": value,
                        "description": desc,
                    }
                )

    # ---- lookups ----

    @staticmethod
    def resource(ref: str | ResourceInfo) -> ResourceInfo:
        """A ResourceInfo from itself, a store key ("podgroups.scheduling.volcano.sh") or a plural."""
        if isinstance(ref, ResourceInfo):
            return ref
        r = TABLE.by_key(ref)
        if r is not None:
            return r
        matches = [x for x in TABLE.resources if ref in (x.plural, x.singular, x.kind, *x.short_names)]
        # the core group wins a shared name ("events"), as kubectl resolves it
        matches.sort(key=lambda x: x.group != "")
        if not matches:
            raise KeyError(f"unknown resource {ref!r}")
        return matches[0]

    def resource_of(self, obj: Obj) -> ResourceInfo:
        api_version = str(obj.get("apiVersion") or "")
        group = api_version.rpartition("/")[0]
        res = TABLE.by_kind(group, str(obj.get("kind") or ""))
        if res is None:
            raise bad_request(f"no kind {obj.get('kind')!r} is registered for version {api_version!r}")
        return res

    def get(self, ref: str | ResourceInfo, namespace: str | None, name: str) -> Obj | None:
        """The stored object (read-only) or None."""
        res = self.resource(ref)
        return self._data[res.key].get(namespace or "" if res.namespaced else "", {}).get(name)

    def must_get(self, res: ResourceInfo, namespace: str | None, name: str) -> Obj:
        obj = self.get(res, namespace, name)
        if obj is None:
            raise not_found(res.plural, name, res.group)
        return obj

    def iter_objects(self, ref: str | ResourceInfo, selector: Selector | None = None) -> Iterator[Obj]:
        res = self.resource(ref)
        by_ns = self._data[res.key]
        sel = selector or Selector()
        if res.key == "pods" and sel.fields:
            node = next(
                (f.value for f in sel.fields if f.field == "spec.nodeName" and f.equal and f.value), None
            )
            if node is not None:
                yield from (o for o in self._pods_by_node.get(node, {}).values() if sel.matches(o))
                return
        spaces = (
            [by_ns.get(sel.namespace, {})]
            if sel.namespace is not None and res.namespaced
            else list(by_ns.values())
        )
        for objs in spaces:
            if sel.labels or sel.fields:
                yield from (o for o in objs.values() if sel.matches(o))
            else:
                yield from objs.values()

    def list(
        self,
        ref: str | ResourceInfo,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> list[Obj]:
        """Matching objects (read-only), sorted by namespace and name as the real server returns them."""
        res = self.resource(ref)
        sel = Selector.parse(label_selector, field_selector, res.key, namespace if res.namespaced else None)
        return sorted(self.iter_objects(res, sel), key=_ns_name)

    def sorted_keys(self, res: ResourceInfo) -> list[tuple[str, str]]:
        keys = self._sorted.get(res.key)
        if keys is None:
            keys = sorted((ns, name) for ns, objs in self._data[res.key].items() for name in objs)
            self._sorted[res.key] = keys
            self._joining.pop(res.key, None)
        else:
            joining = self._joining.pop(res.key, None)
            if joining:
                keys.extend(joining)
                keys.sort()  # a sorted run and a short tail: linear, not a full sort
        return keys

    def count(self, ref: str | ResourceInfo) -> int:
        return sum(len(v) for v in self._data[self.resource(ref).key].values())

    def history(self, res: ResourceInfo) -> History:
        return self._histories[res.key]

    # ---- subscriptions ----

    def subscribe(self, callback: Subscriber) -> Callable[[], None]:
        """Call `callback(event_type, resource_key, obj)` after every write; returns the unsubscribe."""
        self._subscribers.append(callback)
        return lambda: self._subscribers.remove(callback) if callback in self._subscribers else None

    def subscribe_queue(
        self, resource_keys: set[str] | None = None
    ) -> tuple[asyncio.Queue[tuple[str, str, Obj]], Callable[[], None]]:
        """An unbounded asyncio queue of (event_type, resource_key, obj) and its unsubscribe."""
        q: asyncio.Queue[tuple[str, str, Obj]] = asyncio.Queue()

        def put(t: str, key: str, obj: Obj) -> None:
            if resource_keys is None or key in resource_keys:
                q.put_nowait((t, key, obj))

        return q, self.subscribe(put)

    def changed(self, key: str) -> asyncio.Future[None]:
        """A future resolved at the next write to resource `key` (for watch streams)."""
        fut = self._waiters.get(key)
        if fut is None or fut.done():
            fut = asyncio.get_running_loop().create_future()
            self._waiters[key] = fut
        return fut

    def expire_history(self) -> None:
        for h in self._histories.values():
            h.expire(self.rv)
        for fut in self._waiters.values():
            if not fut.done():
                fut.set_result(None)

    def set_history_size(self, size: int) -> None:
        self.history_size = size
        for h in self._histories.values():
            h.resize(size)

    # ---- the write path ----

    def _next_rv(self) -> str:
        self.rv += 1
        return str(self.rv)

    def _emit(self, res: ResourceInfo, type_: str, obj: Obj, old: Obj | None) -> None:
        self.writes += 1
        self._histories[res.key].append(Event(type_, res.key, self.rv, obj, old))
        fut = self._waiters.pop(res.key, None)
        if fut is not None and not fut.done():
            fut.set_result(None)
        if not self._subscribers:
            return
        self._pending.append((type_, res.key, obj))
        if self._notifying:
            return  # a subscriber wrote: its event goes out after this one reached everyone
        self._notifying = True
        try:
            while self._pending:
                t, key, o = self._pending.popleft()
                for cb in list(self._subscribers):
                    try:
                        cb(t, key, o)
                    except Exception:  # a broken subscriber must not fail the write that already happened
                        log.exception("store subscriber %r failed on %s %s", cb, t, key)
        finally:
            self._notifying = False

    def encoded(self, res: ResourceInfo, obj: Obj) -> bytes:
        """The JSON of a stored object, encoded once per version of it."""
        md = obj["metadata"]
        key = (res.key, md.get("namespace") or "", md["name"])
        hit = self._encoded.get(key)
        if hit is not None and hit[0] is obj:
            return hit[1]
        data = codec.dumps(obj)
        if self.get(res, md.get("namespace"), md["name"]) is obj:  # only the current version is kept
            self._encoded[key] = (obj, data)
        return data

    def encode_ahead(self, *refs: str | ResourceInfo) -> int:
        """Encode every stored object of these resources and order their keys for pagination now.

        A Go kube-apiserver serves lists from its watch cache, already decoded and cheap to
        encode; this server encodes an object the first time a list or watch sends it, which made
        a client's first list of 150,000 pods several times slower than its second. Benchmarks
        that preload a cluster call this as part of the preload, so that what they time is the
        client, not the sandbox's first encoding. Returns how many objects were encoded.
        """
        n = 0
        for ref in refs:
            res = self.resource(ref)
            self.sorted_keys(res)
            for obj in self.iter_objects(res):
                self.encoded(res, obj)
                n += 1
        return n

    def _put(self, res: ResourceInfo, obj: Obj, old: Obj | None) -> None:
        ns, name = _ns_name(obj)
        if res.key == admission.PRIORITY_CLASSES:
            self._pod_admission.clear()
        if old is not None:
            self._encoded.pop((res.key, ns, name), None)
        self._data[res.key].setdefault(ns, {})[name] = obj
        if old is None and self._sorted.get(res.key) is not None:
            self._joining.setdefault(res.key, []).append((ns, name))
        if res.key == "pods":
            self._index_pod(old, remove=True)
            self._index_pod(obj, remove=False)

    def _remove(self, res: ResourceInfo, obj: Obj) -> None:
        ns, name = _ns_name(obj)
        if res.key == admission.PRIORITY_CLASSES:
            self._pod_admission.clear()
        self._encoded.pop((res.key, ns, name), None)
        objs = self._data[res.key].get(ns, {})
        objs.pop(name, None)
        if not objs:
            self._data[res.key].pop(ns, None)
        if self._sorted.get(res.key) is not None:
            keys = self.sorted_keys(res)
            i = bisect.bisect_left(keys, (ns, name))
            if i < len(keys) and keys[i] == (ns, name):
                del keys[i]
        if res.key == "pods":
            self._index_pod(obj, remove=True)

    def _index_pod(self, pod: Obj | None, remove: bool) -> None:
        if pod is None:
            return
        node = (pod.get("spec") or {}).get("nodeName")
        if not node:
            return
        if remove:
            by_node = self._pods_by_node.get(node)
            if by_node is not None:
                by_node.pop(_ns_name(pod), None)
                if not by_node:
                    del self._pods_by_node[node]
        else:
            self._pods_by_node.setdefault(node, {})[_ns_name(pod)] = pod

    def _check_namespace(self, res: ResourceInfo, ns: str, name: str) -> None:
        nsobj = self.get("namespaces", None, ns)
        if nsobj is None:
            raise not_found("namespaces", ns)
        if nsobj.get("metadata", {}).get("deletionTimestamp"):
            raise forbidden(
                res.plural,
                name,
                f"unable to create new content in namespace {ns} because it is being terminated",
                res.group,
            )

    def create(
        self, obj: Obj, namespace: str | None = None, res: ResourceInfo | None = None, dry_run: bool = False
    ) -> Obj:
        """Create `obj` (its kind picks the resource unless `res` is given); returns the stored object."""
        if not isinstance(obj, dict) or not isinstance(obj.get("metadata", {}), dict):
            raise bad_request("the object must be a JSON object with a metadata object")
        res = res or self.resource_of(obj)
        memo_key = self._pod_spec_key(obj) if res.key == "pods" else None
        admitted = self._pod_admission.get(memo_key) if memo_key is not None else None
        validation.check_decodable(res, obj, spec_known=admitted is not None)
        md = dict(obj.get("metadata") or {})
        if res.namespaced:
            ns = md.get("namespace") or namespace or "default"
            if namespace and md.get("namespace") and md["namespace"] != namespace:
                raise bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request"
                )
            md["namespace"] = ns
        else:
            md.pop("namespace", None)
            ns = ""
        if not md.get("name") and md.get("generateName"):
            md["name"] = str(md["generateName"]) + "".join(random.choices(_SUFFIX_CHARS, k=5))
        for k in _BOOKKEEPING:
            md.pop(k, None)
        name = str(md.get("name") or "")
        obj = {**obj, "apiVersion": res.api_version, "kind": res.kind, "metadata": md}
        if admitted is not None:  # what prepare_create gives a pod with this spec
            obj = {**obj, "spec": admitted[0], "status": dict(admitted[1])}
        else:
            obj = admission.prepare_create(res, obj, self.get, self.iter_objects)
        validation.validate(res, obj, spec_known=admitted is not None)
        if memo_key is not None and admitted is None:
            if len(self._pod_admission) >= _POD_ADMISSION_SIZE:
                self._pod_admission.clear()
            # decoded from JSON: nothing of the caller's objects (admission copies only the
            # top of the spec) may reach the pods that share it
            self._pod_admission[memo_key] = (codec.loads(codec.dumps(obj["spec"])), dict(obj["status"]))
        if res.namespaced:
            self._check_namespace(res, ns, name)
        if name in self._data[res.key].get(ns, {}):
            raise already_exists(res.plural, name, res.group)
        if dry_run:
            return obj
        md = obj["metadata"] = dict(obj["metadata"])
        md["uid"] = new_uid()
        md["creationTimestamp"] = now_rfc3339()
        md["generation"] = 1
        md["resourceVersion"] = self._next_rv()
        self._put(res, obj, None)
        self._emit(res, "ADDED", obj, None)
        return obj

    @staticmethod
    def _pod_spec_key(obj: Obj) -> bytes | None:
        """The pod's spec as JSON, the key of what its admission gave (None: not one to keep)."""
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return None
        try:
            return codec.dumps(spec)
        except (TypeError, ValueError):  # not JSON (an in-process caller's odd value): checked in full
            return None

    def update(
        self,
        obj: Obj,
        namespace: str | None = None,
        res: ResourceInfo | None = None,
        subresource: str | None = None,
        name: str | None = None,
        dry_run: bool = False,
    ) -> Obj:
        """PUT semantics: a stale `metadata.resourceVersion` is a 409 Conflict."""
        if not isinstance(obj, dict) or not isinstance(obj.get("metadata", {}), dict):
            raise bad_request("the object must be a JSON object with a metadata object")
        res = res or self.resource_of(obj)
        validation.check_decodable(res, obj)
        md = obj.get("metadata") or {}
        name = name or md.get("name") or ""
        if md.get("name") and md["name"] != name:
            raise bad_request(
                f"the name of the object ({md['name']}) does not match the name on the URL ({name})"
            )
        ns = (md.get("namespace") or namespace or "default") if res.namespaced else None
        if res.namespaced and namespace and md.get("namespace") and md["namespace"] != namespace:
            raise bad_request(
                "the namespace of the provided object does not match the namespace sent on the request"
            )
        old = self.must_get(res, ns, name)
        rv = md.get("resourceVersion")
        if rv and rv != old["metadata"]["resourceVersion"]:
            raise conflict(res.plural, name, STALE, res.group)
        return self._replace(res, old, obj, subresource, dry_run)

    def patch(
        self,
        ref: str | ResourceInfo,
        namespace: str | None,
        name: str,
        patch: Any,
        patch_type: str = "merge",
        subresource: str | None = None,
        dry_run: bool = False,
    ) -> Obj:
        """Apply a "merge", "strategic" or "json" patch; a resourceVersion in the patch is a precondition."""
        res = self.resource(ref)
        old = self.must_get(res, namespace, name)
        if patch_type == "json":
            new = json_patch(old, patch)
        elif not isinstance(patch, dict):
            raise bad_request("a merge patch must be a JSON object")
        elif patch_type == "strategic":
            new = strategic_merge_patch(old, patch)
        else:
            new = merge_patch(old, patch)
        if not isinstance(new, dict) or not isinstance(new.get("metadata"), dict):
            raise ApiError(422, "Invalid", f'{res.kind} "{name}" is invalid: metadata: Required value')
        rv = new["metadata"].get("resourceVersion")
        if rv and rv != old["metadata"]["resourceVersion"]:
            raise conflict(res.plural, name, STALE, res.group)
        if new["metadata"].get("name") != name:
            raise ApiError(
                422,
                "Invalid",
                f'{res.kind} "{name}" is invalid: metadata.name: Invalid value: "{new["metadata"].get("name")}": field is immutable',
            )
        return self._replace(res, old, new, subresource, dry_run)

    def _replace(self, res: ResourceInfo, old: Obj, new: Obj, subresource: str | None, dry_run: bool) -> Obj:
        validation.check_decodable(res, new)
        old_md = old["metadata"]
        if subresource == "status":
            # only status changes through /status (spec/sim contract)
            new = (
                {**old, "status": new.get("status")}
                if new.get("status") is not None
                else {k: v for k, v in old.items() if k != "status"}
            )
        else:
            new = {**new, "apiVersion": res.api_version, "kind": res.kind}
            if res.has_status:
                if "status" in old:
                    new["status"] = old["status"]
                else:
                    new.pop("status", None)
            md = dict(new.get("metadata") or {})
            for k in (
                "uid",
                "creationTimestamp",
                "deletionTimestamp",
                "deletionGracePeriodSeconds",
                "generation",
                "name",
            ):
                if k in old_md:
                    md[k] = old_md[k]
                else:
                    md.pop(k, None)
            if res.namespaced:
                md["namespace"] = old_md["namespace"]
            new["metadata"] = md
            if res.key == "pods":
                validation.check_pod_update(old, new)
            if res.key == admission.QUEUES and _content(new) != _content(old):
                admission.admit_queue(new, self.get, old)
            if res.key == "namespaces":
                new["status"] = old.get("status")
            if res.key == "secrets":
                new = admission.normalize_secret(new)
                md = new["metadata"]
            validation.validate(res, new)
            if _content(new) != _content(old):
                md["generation"] = int(old_md.get("generation") or 1) + 1
        new["metadata"] = {**new["metadata"], "resourceVersion": old_md["resourceVersion"]}
        if new == old:
            return old  # a no-op write does not bump resourceVersion nor send an event
        if dry_run:
            return new
        if (
            old_md.get("deletionTimestamp")
            and not new["metadata"].get("finalizers")
            and self._removable(res, new)
        ):
            return self._delete_now(res, new)
        new["metadata"]["resourceVersion"] = self._next_rv()
        self._put(res, new, old)
        self._emit(res, "MODIFIED", new, old)
        return new

    @staticmethod
    def _removable(res: ResourceInfo, obj: Obj) -> bool:
        # a terminating pod waits for its kubelet (grace period 0) unless it never ran anywhere
        if res.key != "pods":
            return True
        md = obj["metadata"]
        return md.get("deletionGracePeriodSeconds") == 0 or not (obj.get("spec") or {}).get("nodeName")

    def _delete_now(self, res: ResourceInfo, obj: Obj) -> Obj:
        final = {**obj, "metadata": {**obj["metadata"], "resourceVersion": self._next_rv()}}
        self._remove(res, obj)
        self._emit(res, "DELETED", final, obj)
        return final

    def delete(
        self,
        ref: str | ResourceInfo,
        namespace: str | None,
        name: str,
        grace_period_seconds: int | None = None,
        preconditions: dict[str, Any] | None = None,
        dry_run: bool = False,
    ) -> Obj:
        """Delete; pods on a node terminate gracefully (deletionTimestamp) until a grace-0 delete."""
        res = self.resource(ref)
        obj = self.must_get(res, namespace, name)
        md = obj["metadata"]
        pre = preconditions or {}
        for field, title in (("uid", "UID"), ("resourceVersion", "ResourceVersion")):
            if pre.get(field) and pre[field] != md.get(field):
                raise conflict(
                    res.plural,
                    name,
                    f"Precondition failed: {title} in precondition: {pre[field]}, {title} in object meta: {md.get(field)}",
                    res.group,
                )
        if dry_run:
            return obj
        if res.key == "namespaces":
            return self._delete_namespace(obj)
        grace = 0
        if res.key == "pods":
            grace = self._pod_grace(obj, grace_period_seconds)
        if md.get("deletionTimestamp"):
            # already terminating: only a shorter grace period changes anything
            current = md.get("deletionGracePeriodSeconds")
            if current is not None and grace >= current:
                return obj
        if grace == 0 and not md.get("finalizers"):
            return self._delete_now(res, obj)
        new_md = {
            **md,
            "deletionTimestamp": now_rfc3339(grace),
            "deletionGracePeriodSeconds": grace,
            "resourceVersion": self._next_rv(),
        }
        if md.get("deletionTimestamp") and grace > 0:
            new_md["deletionTimestamp"] = md["deletionTimestamp"]
        new = {**obj, "metadata": new_md}
        self._put(res, new, obj)
        self._emit(res, "MODIFIED", new, obj)
        return new

    @staticmethod
    def _pod_grace(pod: Obj, requested: int | None) -> int:
        spec = pod.get("spec") or {}
        phase = (pod.get("status") or {}).get("phase")
        # as the real pod strategy: never-scheduled and finished pods go at once
        if not spec.get("nodeName") or phase in ("Succeeded", "Failed"):
            return 0
        if requested is not None:
            return max(0, int(requested))
        return int(spec.get("terminationGracePeriodSeconds", 30) or 0)

    def _delete_namespace(self, nsobj: Obj) -> Obj:
        # no namespace controller: the contents go at once, then the namespace itself
        ns = nsobj["metadata"]["name"]
        for res in TABLE.resources:
            if res.namespaced:
                for obj in list(self._data[res.key].get(ns, {}).values()):
                    self._delete_now(res, obj)
        return self._delete_now(TABLE.resolve("namespaces"), nsobj)

    # ---- pod subresources ----

    def bind(self, namespace: str, name: str, binding: Obj) -> Obj:
        """pods/binding: set spec.nodeName, merge the Binding's annotations, PodScheduled=True."""
        pods = TABLE.resolve("pods")
        pod = self.get(pods, namespace, name)
        if pod is None:
            raise not_found("pods", name)
        if (
            not isinstance(binding, dict)
            or not isinstance(binding.get("target") or {}, dict)
            or not isinstance(binding.get("metadata") or {}, dict)
        ):
            raise bad_request(
                "json: cannot unmarshal into Go struct Binding: target and metadata must be objects"
            )
        if not isinstance((binding.get("target") or {}).get("name") or "", str):
            raise bad_request(
                "json: cannot unmarshal into Go struct field Binding.target.name of type string"
            )
        bmd = binding.get("metadata") or {}
        ann = bmd.get("annotations")
        if ann is not None and (
            not isinstance(ann, dict) or any(not isinstance(v, str) for v in ann.values())
        ):
            raise bad_request(
                "json: cannot unmarshal into Go struct field Binding.metadata.annotations of type map[string]string"
            )
        target = binding.get("target") or {}
        node = target.get("name")
        if not node:
            raise ApiError(422, "Invalid", f'Binding.core "{name}" is invalid: target.name: Required value')
        if target.get("kind") not in (None, "", "Node"):
            raise ApiError(
                422,
                "Invalid",
                f'Binding.core "{name}" is invalid: target.kind: Unsupported value: "{target.get("kind")}": supported values: "Node"',
            )
        md = pod["metadata"]
        if md.get("deletionTimestamp"):
            raise conflict("pods", name, "pod is being deleted, cannot be assigned to a host")
        current = (pod.get("spec") or {}).get("nodeName")
        if current:
            raise conflict("pods", name, f'pod {name} is already assigned to node "{current}"')
        uid = (binding.get("metadata") or {}).get("uid")
        if uid and uid != md.get("uid"):
            raise conflict(
                "pods",
                name,
                f"Precondition failed: UID in precondition: {uid}, UID in object meta: {md.get('uid')}",
            )
        new_md = dict(md)
        ann = (binding.get("metadata") or {}).get("annotations") or {}
        if ann:
            new_md["annotations"] = {**(md.get("annotations") or {}), **ann}
        status = dict(pod.get("status") or {})
        conds = [c for c in status.get("conditions") or [] if c.get("type") != "PodScheduled"]
        conds.append(
            {
                "type": "PodScheduled",
                "status": "True",
                "lastProbeTime": None,
                "lastTransitionTime": now_rfc3339(),
            }
        )
        status["conditions"] = conds
        new_md["resourceVersion"] = self._next_rv()
        new = {**pod, "metadata": new_md, "spec": {**pod["spec"], "nodeName": node}, "status": status}
        self._put(pods, new, pod)
        self._emit(pods, "MODIFIED", new, pod)
        return new

    def evict(self, namespace: str, name: str, eviction: Obj) -> Obj:
        """pods/eviction: a delete with the Eviction's DeleteOptions (no disruption budget check)."""
        opts = eviction.get("deleteOptions") or {}
        return self.delete("pods", namespace, name, opts.get("gracePeriodSeconds"), opts.get("preconditions"))

    def snapshot_copy(self, obj: Obj) -> Obj:
        """A private deep copy of a stored object, for callers that want to change it."""
        return codec.loads(codec.dumps(obj))
