"""List + watch one resource into a handler, the way client-go's reflector does.

One `Informer` per resource: a paginated list, then a watch from the list's resourceVersion with
bookmarks so a restart resumes from a recent version instead of relisting. A watch that ends
cleanly is resumed from the last version seen; `410 Gone` (history expired) triggers a relist
whose differences (objects that vanished meanwhile) are delivered as deletions; any other error
backs off exponentially with jitter. `synced` is set once the first list has been delivered.

The informer keeps only `key -> resourceVersion` per object (never the object), which is enough
to find deletions after a relist and to skip re-delivering 150,000 unchanged pods after one.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import structlog

from scheduler.kube.client import ApiError, KubeClient, json_loads

log = structlog.get_logger("vc-scheduler.informer")
_rng = random.Random()
_CHUNK = 100  # objects delivered between two yields to the event loop
_SEND_TURNS = 20
OPTIONAL_RETRY_S = 60.0  # how often a missing optional resource (CRD not installed) is looked for


class Handler(Protocol):
    def upsert(self, obj: dict[str, Any]) -> None: ...

    def delete(self, key: str, obj: dict[str, Any] | None) -> None: ...


@dataclass(frozen=True, slots=True)
class Resource:
    """Where a resource is listed: `/api/v1/pods`, or one namespace's ConfigMaps with a selector."""

    kind: str
    path: str
    field_selector: str = ""
    label_selector: str = ""
    # a CRD the cluster may not have (or RBAC may not grant): 404/403 count as an empty list, so
    # the daemon is not held back, and the list is retried now and then
    optional: bool = False
    # decodes a page of the list (default: all of it); pods decode only what conversion reads
    loads: Callable[[bytes], Any] = json_loads
    # decodes one watch event (default: all of it); pods decode only what conversion reads
    watch_loads: Callable[[bytes], Any] = json_loads


def object_key(obj: dict[str, Any]) -> str:
    md = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    ns = md.get("namespace")
    return f"{ns}/{md.get('name')}" if ns else str(md.get("name"))


def _note_listed(known: dict[str, str], obj: dict[str, Any]) -> tuple[str, bool]:
    """A listed object's resourceVersion recorded under its key in `known`: (the key, whether it
    has a namespace that is a string). object_key's key, read without a second lookup of the
    metadata per object of an initial sync."""
    md = obj.get("metadata")
    if type(md) is dict:
        ns = md.get("namespace")
        key = f"{ns}/{md.get('name')}" if ns else str(md.get("name"))
        known[key] = str(md.get("resourceVersion") or "")
        return key, bool(ns) and type(ns) is str
    key = object_key(obj)
    known[key] = ""
    return key, False


@dataclass(slots=True)
class Backoff:
    """Exponential backoff with full jitter, reset after a success."""

    initial: float = 0.5
    maximum: float = 30.0
    attempt: int = 0

    def next_delay(self, rng: random.Random | None = None) -> float:
        rng = rng or _rng
        cap = min(self.maximum, self.initial * (2**self.attempt))
        self.attempt += 1
        # half fixed, half random: never a zero wait, and many informers do not retry in lockstep
        return cap / 2 + rng.random() * cap / 2

    def reset(self) -> None:
        self.attempt = 0


class Informer:
    def __init__(
        self,
        client: KubeClient,
        resource: Resource,
        handler: Handler,
        # client-go's informers ask for 500; a scheduler may ask more, but measured at 62,000
        # pods pages of 5,000 made the initial sync no faster (the next page is fetched while
        # this one converts) and held 90 MB more of raw objects at the peak
        page_size: int = 500,
        watch_timeout: int = 300,
        on_error: Callable[[str, Exception], None] | None = None,
    ) -> None:
        self.client = client
        self.resource = resource
        self.handler = handler
        self.page_size = page_size
        self.watch_timeout = watch_timeout
        self.on_error = on_error
        # set once the first list has been delivered (the daemon waits for all of them)
        self.initial_sync = asyncio.Event()
        self.synced = self.initial_sync
        self.known: dict[str, str] = {}  # key -> resourceVersion
        self.resource_version = ""
        self.relists = 0
        # seconds the last list waited for its pages (the rest of its time was delivery)
        self.list_wait = 0.0
        self.watches = 0
        self.events = 0
        self.backoff = Backoff()

    def _query(self) -> dict[str, Any]:
        q: dict[str, Any] = {}
        if self.resource.field_selector:
            q["fieldSelector"] = self.resource.field_selector
        if self.resource.label_selector:
            q["labelSelector"] = self.resource.label_selector
        return q

    def _deliver_upsert(self, obj: dict[str, Any], key: str | None = None, rv: str | None = None) -> None:
        if key is None or rv is None:
            key = object_key(obj)
            md = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
            rv = str(md.get("resourceVersion") or "")
        self.known[key] = rv
        try:
            self.handler.upsert(obj)
        except Exception as exc:  # a handler bug must not stop the stream for every other object
            log.error(
                "handler failed", kind=self.resource.kind, object=key, error=f"{type(exc).__name__}: {exc}"
            )

    def _deliver_delete(self, key: str, obj: dict[str, Any] | None) -> None:
        self.known.pop(key, None)
        try:
            self.handler.delete(key, obj)
        except Exception as exc:
            log.error(
                "handler failed", kind=self.resource.kind, object=key, error=f"{type(exc).__name__}: {exc}"
            )

    async def _page(self, cont: str) -> dict[str, Any]:
        q = {**self._query(), "limit": self.page_size}
        if cont:
            q["continue"] = cont
        page = await self.client.request("GET", self.resource.path, q, loads=self.resource.loads)
        if not isinstance(page, dict):
            raise ApiError(0, "BadResponse", f"list {self.resource.path}: not an object")
        return page

    async def list(self) -> None:
        """A full, paginated list, delivered as a diff against what was known.

        Pages are delivered as they arrive so that at most two pages of raw objects are alive: the
        next page is requested before the current one is delivered, so the API server encodes it
        while we convert this one (at 150,000 pods that overlap is seconds of the initial sync).
        Delivery yields to the event loop every `_CHUNK` objects, so the prefetch goes out, and
        probes and lease renewals are answered during a long sync.
        """
        seen: set[str] = set()
        # the first list (or one after everything went): nothing known can have vanished, and
        # no object can be unchanged, so neither is looked for (600,000 set insertions less)
        fresh = not self.known
        rv = ""
        wait = 0.0
        fetch: asyncio.Future[dict[str, Any]] | None = asyncio.ensure_future(self._page(""))
        try:
            while fetch is not None:
                t0 = time.monotonic()
                page = await fetch
                wait += time.monotonic() - t0
                fetch = None
                md = page.get("metadata") or {}
                rv = str(md.get("resourceVersion") or rv)
                cont = str(md.get("continue") or "")
                if cont:
                    fetch = asyncio.ensure_future(self._page(cont))
                    # sending a request takes a few turns of the loop (rate limiter, connection
                    # pool, write): give them now, before converting 500 objects without a pause
                    for _ in range(_SEND_TURNS):
                        await asyncio.sleep(0)
                items = page.get("items") or []
                del page
                if fresh and type(items) is list:
                    await self._deliver_fresh(items)
                    del items
                    continue
                for n, obj in enumerate(items):
                    if n % _CHUNK == 0:
                        await asyncio.sleep(0)
                    if not isinstance(obj, dict):
                        continue
                    md = obj.get("metadata")
                    if type(md) is dict:  # object_key, without a call per object
                        ns = md.get("namespace")
                        key = f"{ns}/{md.get('name')}" if ns else str(md.get("name"))
                        orv = str(md.get("resourceVersion") or "")
                    else:
                        key, orv = object_key(obj), ""
                    if fresh:
                        self._deliver_upsert(obj, key, orv)
                        continue
                    seen.add(key)
                    # after a relist, objects whose version did not move are already in the cache
                    if not orv or self.known.get(key) != orv:
                        self._deliver_upsert(obj, key, orv)
                del items
        finally:
            if fetch is not None and not fetch.done():
                fetch.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await fetch
        for key in [] if fresh else [k for k in self.known if k not in seen]:
            self._deliver_delete(key, None)
        self.resource_version = rv
        self.relists += 1
        self.list_wait = wait

    async def _deliver_fresh(self, items: list[Any]) -> None:
        """A page of the first list: every object is new, so each is delivered as it comes.

        `_deliver_upsert` spelled out in one loop (the same key, version and error handling):
        its calls and checks per object were a measurable part of an initial sync of 600,000
        pods. Yields to the event loop every `_CHUNK` objects, as `list` does. Each object leaves
        the page as it is delivered, so it is freed while still in the processor's caches, not
        with the whole page once that is done."""
        known, upsert, kind = self.known, self.handler.upsert, self.resource.kind
        listed = getattr(self.handler, "upsert_listed", None)
        n = len(items)
        for start in range(0, n, _CHUNK):
            await asyncio.sleep(0)
            if listed is not None:
                self._deliver_run(items, start, min(start + _CHUNK, n), listed)
                continue
            for i in range(start, min(start + _CHUNK, n)):
                obj = items[i]
                items[i] = None
                if not isinstance(obj, dict):
                    continue
                key, _ = _note_listed(known, obj)
                try:
                    upsert(obj)
                except Exception as exc:  # a handler bug must not stop the stream for every other object
                    log.error("handler failed", kind=kind, object=key, error=f"{type(exc).__name__}: {exc}")

    def _deliver_run(
        self,
        items: list[Any],
        start: int,
        stop: int,
        listed: Callable[[list[Any], list[str | None], Callable[[Any, Exception], None]], None],
    ) -> None:
        """`items[start:stop]` of a first list to a handler that takes them as a run
        (`upsert_listed(objs, keys, failed)`): the same keys and versions as one by one. `keys`
        has each object's `namespace/name` key where it has a namespace that is a string (None
        elsewhere), the very string `known` holds, for the handler to keep instead of making its
        own (one key string a pod, hashed once, instead of two). The handler names each object it
        failed on through `failed`, logged as `_deliver_fresh` logs it."""
        known = self.known
        run: list[Any] = []
        keys: list[str | None] = []
        keep, keep_key = run.append, keys.append
        for i in range(start, stop):
            obj = items[i]
            items[i] = None
            if not isinstance(obj, dict):
                continue
            key, namespaced = _note_listed(known, obj)
            keep_key(key if namespaced else None)
            keep(obj)
        kind = self.resource.kind

        def failed(obj: Any, exc: Exception) -> None:
            log.error(
                "handler failed", kind=kind, object=object_key(obj), error=f"{type(exc).__name__}: {exc}"
            )

        try:
            listed(run, keys, failed)
        except Exception as exc:  # a handler bug must not stop the stream for the other objects
            log.error("handler failed", kind=kind, objects=len(run), error=f"{type(exc).__name__}: {exc}")

    async def watch_once(self) -> bool:
        """Watch until the stream ends. False when the history expired and a relist is needed."""
        q = {
            **self._query(),
            "resourceVersion": self.resource_version,
            "allowWatchBookmarks": "true",
            "timeoutSeconds": self.watch_timeout,
        }
        self.watches += 1
        backoff = self.backoff
        known, upsert = self.known, self.handler.upsert
        async for ev in self.client.watch(
            self.resource.path, q, self.watch_timeout, self.resource.watch_loads
        ):
            etype = ev.get("type")
            obj = ev.get("object")
            if not isinstance(obj, dict):
                continue
            if etype == "ERROR":
                code = obj.get("code")
                if code in (410, "410") or obj.get("reason") in ("Expired", "Gone"):
                    return False
                raise ApiError(
                    int(code or 0), str(obj.get("reason") or "Error"), str(obj.get("message") or "")
                )
            # object_key and the version spelled out once per event (a burst's thousands of
            # events): the same key, the same version string as `_deliver_upsert` works out
            md = obj.get("metadata")
            key = None
            if type(md) is dict:
                rv = md.get("resourceVersion")
                rv = rv if type(rv) is str else str(rv or "")
                ns = md.get("namespace")
                key = f"{ns}/{md.get('name')}" if ns else str(md.get("name"))
            else:
                rv = str((md or {}).get("resourceVersion") or "")
            if rv:
                self.resource_version = rv
            self.events += 1
            if etype == "BOOKMARK":
                continue
            if etype == "ADDED" or etype == "MODIFIED":
                if key is None:  # worked out as for a list
                    self._deliver_upsert(obj)
                else:  # _deliver_upsert spelled out: one call less for each of a burst's events
                    known[key] = rv
                    try:
                        upsert(obj)
                    except Exception as exc:  # a handler bug must not stop the stream
                        log.error(
                            "handler failed",
                            kind=self.resource.kind,
                            object=key,
                            error=f"{type(exc).__name__}: {exc}",
                        )
            elif etype == "DELETED":
                self._deliver_delete(object_key(obj), obj)
            # a stream that delivers events is healthy: the next error starts from a short wait
            if backoff.attempt:
                backoff.reset()
        return True

    async def run(self) -> None:
        need_list = True
        while True:
            try:
                if need_list:
                    await self.list()
                    need_list = False
                    if not self.synced.is_set():
                        self.synced.set()
                        log.info(
                            "initial list done",
                            kind=self.resource.kind,
                            objects=len(self.known),
                            waited_ms=round(self.list_wait * 1000),
                        )
                if not await self.watch_once():
                    log.info("watch history expired, relisting", kind=self.resource.kind)
                    need_list = True
            except asyncio.CancelledError:
                raise
            except ApiError as exc:
                if exc.status == 410:
                    need_list = True
                    continue
                if self.resource.optional and exc.status in (403, 404):
                    await self._absent(exc)
                    need_list = True
                    continue
                await self._wait_after(exc)
            except Exception as exc:  # never let one resource's trouble end the daemon
                await self._wait_after(exc)

    async def _absent(self, exc: ApiError) -> None:
        if not self.synced.is_set():
            self.synced.set()
            log.warning(
                "optional resource not available; treated as empty",
                kind=self.resource.kind,
                status=exc.status,
                error=str(exc),
            )
        await asyncio.sleep(OPTIONAL_RETRY_S)

    async def _wait_after(self, exc: Exception) -> None:
        delay = self.backoff.next_delay()
        if isinstance(exc, ApiError) and exc.retry_after:
            delay = max(delay, exc.retry_after)
        if self.on_error is not None:
            self.on_error(self.resource.kind, exc)
        log.warning(
            "list/watch failed, retrying",
            kind=self.resource.kind,
            error=str(exc),
            retry_in_s=round(delay, 2),
        )
        await asyncio.sleep(delay)
