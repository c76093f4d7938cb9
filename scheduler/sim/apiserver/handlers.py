"""HTTP handlers for resource requests: one function per verb over the store.

The app module parses the URL into a `ResourceRequest`; here it becomes a store call and a JSON
answer. Bodies are JSON only (kubectl and every client library send JSON; a protobuf `Accept`
gets JSON, which clients accept as their fallback).
"""

from __future__ import annotations

import base64
import bisect
from dataclasses import dataclass
from typing import Any, NamedTuple

import yaml
from aiohttp import web
from multidict import CIMultiDict

from scheduler.sim.apiserver import codec, fieldcheck, protobuf, scale, tables
from scheduler.sim.apiserver.appkeys import SERVER_KEY
from scheduler.sim.apiserver.errors import (
    ApiError,
    bad_request,
    method_not_allowed,
    success,
    unsupported_media_type,
)
from scheduler.sim.apiserver.orphan import orphan_dependents
from scheduler.sim.apiserver.resources import ResourceInfo
from scheduler.sim.apiserver.selectors import Selector
from scheduler.sim.apiserver.store import Store
from scheduler.sim.apiserver.watch import WatchOptions, WatchStream

PATCH_TYPES = {
    "application/merge-patch+json": "merge",
    "application/strategic-merge-patch+json": "strategic",
    "application/json-patch+json": "json",
}
JSON = "application/json"
APPLY_PATCH = "application/apply-patch+yaml"


@dataclass
class ResourceRequest:
    res: ResourceInfo
    namespace: str | None
    name: str | None
    subresource: str | None
    watch: bool


_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})


def query_bool(query: Any, key: str) -> bool:
    """A boolean query parameter as Go's strconv.ParseBool reads it (clients send "true" or "True")."""
    return query.get(key, "") in _TRUE


class Answer(NamedTuple):
    """A response before it is a `web.Response`: the write path's fast lane writes it directly.

    `headers` are in the order aiohttp sends them (Content-Length, Date and Server follow).
    """

    status: int
    body: bytes
    headers: tuple[tuple[str, str], ...]


_JSON_HEADERS = (("Content-Type", JSON),)


def json_answer(
    body: Any, status: int = 200, headers: dict[str, str] | None = None, content_type: str = JSON
) -> Answer:
    if not headers and content_type == JSON:
        return Answer(status, codec.dumps(body), _JSON_HEADERS)
    merged = {**(headers or {}), "Content-Type": content_type}
    return Answer(status, codec.dumps(body), tuple(merged.items()))


def to_response(answer: Answer) -> web.Response:
    return web.Response(body=answer.body, status=answer.status, headers=CIMultiDict(answer.headers))


def json_response(
    body: Any, status: int = 200, headers: dict[str, str] | None = None, content_type: str = JSON
) -> web.Response:
    return to_response(json_answer(body, status, headers, content_type))


def written_answer(
    store: Store, res: ResourceInfo, obj: dict[str, Any], status: int = 200, warnings: list[str] | None = None
) -> Answer:
    """The answer to a write: the object's bytes are the ones its watch event sends (encoded once)."""
    ev = store.history(res).last()
    body = ev.obj_bytes() if ev is not None and ev.obj is obj else codec.dumps(obj)
    if not warnings:
        return Answer(status, body, _JSON_HEADERS)
    return Answer(status, body, (*_JSON_HEADERS, *(("Warning", w) for w in warnings)))


def error_answer(err: ApiError) -> Answer:
    return json_answer(err.status(), err.code, err.headers)


def error_response(err: ApiError) -> web.Response:
    return to_response(error_answer(err))


_CREATED = codec.dumps(success(code=201))


def decode_body(raw: bytes) -> Any:
    if not raw:
        raise bad_request("the request body is empty")
    try:
        return codec.loads(raw)
    except (codec.DecodeError, ValueError, UnicodeDecodeError) as exc:
        raise bad_request(f"the object provided is unrecognized (must be of type JSON): {exc}") from None


def decode_object(request: web.BaseRequest, raw: bytes) -> Any:
    """A POST/PUT body: JSON, or YAML as the real server also takes.

    Protobuf for the kinds kubectl's typed clients send that way (see `protobuf`); other
    protobuf kinds and CBOR get 415 naming what is accepted.
    """
    ctype = request.headers.get("Content-Type", "application/json").split(";")[0].strip().lower()
    if ctype in ("", "application/json", "*/*"):
        return decode_body(raw)
    if ctype == protobuf.MEDIA_TYPE:
        return protobuf.decode(raw)
    if ctype in ("application/yaml", "application/x-yaml", "text/yaml"):
        try:
            return yaml.safe_load(raw)
        except yaml.YAMLError as exc:
            raise bad_request(f"the object provided is unrecognized (must be of type YAML): {exc}") from None
    raise ApiError(
        415,
        "UnsupportedMediaType",
        f'the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, {protobuf.MEDIA_TYPE} (got "{ctype}")',
    )


def _check_kind(rr: ResourceRequest, body: Any, expected_kind: str | None = None) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise bad_request("the request body must be a JSON object")
    kind = body.get("kind")
    want = expected_kind or rr.res.kind
    if kind and kind != want and not (expected_kind is None and kind == "DeleteOptions"):
        raise bad_request(
            f"the API version in the data ({body.get('apiVersion')}) and kind ({kind}) do not match the expected {want}"
        )
    return body


CRDS = "customresourcedefinitions.apiextensions.k8s.io"


def _schema(store: Store, res: ResourceInfo) -> fieldcheck.Schema | None:
    if res.group in BUILT_IN_GROUPS or res.group == "apiextensions.k8s.io":
        return fieldcheck.builtin_schema(res)
    return fieldcheck.crd_schema(res, store.get(CRDS, None, f"{res.plural}.{res.group}"))


def checked_fields(
    store: Store,
    request: web.BaseRequest,
    rr: ResourceRequest,
    body: Any,
    options: str,
    patch: str | None = None,
) -> tuple[Any, list[str]]:
    """The body as the kind can hold it, and the warnings to send (see `fieldcheck`).

    `patch`: the patch type when `body` is a patch, not an object.
    """
    directive = fieldcheck.directive(request.query, options)
    schema = _schema(store, rr.res)
    if schema is None:
        return body, []
    kept = body
    if patch == "json":
        kept, unknown = fieldcheck.json_patch_checked(body, schema)
    else:
        unknown = fieldcheck.unknown_fields(body, schema, patch=patch == "strategic")
    if not unknown:
        return body, []
    if directive == "Strict":
        raise fieldcheck.strict_error(rr.res, unknown)
    body = kept if patch == "json" else fieldcheck.pruned(body, schema, patch=patch == "strategic")
    return body, fieldcheck.warnings(unknown) if directive == "Warn" else []


def _is_dry_run(request: web.BaseRequest) -> bool:
    return request.query.get("dryRun", "") == "All"


def _continue_token(rv: int, ns: str, name: str) -> str:
    raw = codec.dumps({"v": "meta.k8s.io/v1", "rv": rv, "start": f"{ns}/{name}\x00"})
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _parse_continue(token: str) -> tuple[int, tuple[str, str]]:
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        doc = codec.loads(raw)
        ns, name = doc["start"].rstrip("\x00").split("/", 1)
        return int(doc["rv"]), (ns, name)
    except (ValueError, KeyError, TypeError, AttributeError):
        raise bad_request("continue key is not valid: invalid continue token") from None


def selector_of(request: web.BaseRequest, rr: ResourceRequest) -> Selector:
    q = request.query
    return Selector.parse(
        q.get("labelSelector"),
        q.get("fieldSelector"),
        rr.res.key,
        rr.namespace if rr.res.namespaced else None,
    )


def list_objects(store: Store, request: web.BaseRequest, rr: ResourceRequest) -> dict[str, Any]:
    """A list, paginated with `limit`/`continue` over the sorted keys.

    Pages after the first come from the current state rather than a snapshot at the first
    page's resourceVersion (they carry that resourceVersion, so a watch started from it misses
    nothing); tokens do not expire because the sandbox never compacts.
    """
    sel = selector_of(request, rr)
    q = request.query
    limit = int(q.get("limit") or 0) if (q.get("limit") or "0").isdigit() else 0
    list_rv = store.rv
    start_after: tuple[str, str] | None = None
    if q.get("continue"):
        list_rv, start_after = _parse_continue(q["continue"])
    md: dict[str, Any] = {"resourceVersion": str(list_rv)}
    if not limit and start_after is None:
        items = (
            store.list(rr.res)
            if sel.empty
            else sorted(
                store.iter_objects(rr.res, sel),
                key=lambda o: (o["metadata"].get("namespace") or "", o["metadata"]["name"]),
            )
        )
        return {"kind": rr.res.list_kind, "apiVersion": rr.res.api_version, "metadata": md, "items": items}
    keys = store.sorted_keys(rr.res)
    lo, hi = 0, len(keys)
    ns_scoped = sel.namespace is not None and rr.res.namespaced
    if ns_scoped:
        # keys sort by (namespace, name): one namespace is one contiguous run
        lo = bisect.bisect_left(keys, (sel.namespace, ""))
        hi = bisect.bisect_left(keys, (str(sel.namespace) + "\x00", ""))
    i = max(lo, bisect.bisect_right(keys, start_after)) if start_after is not None else lo
    items: list[dict[str, Any]] = []
    while i < hi:
        ns, name = keys[i]
        i += 1
        obj = store.get(rr.res, ns or None, name)
        if obj is None or not sel.matches(obj):
            continue
        items.append(obj)
        if limit and len(items) >= limit:
            if i < hi:
                md["continue"] = _continue_token(list_rv, ns, name)
                # as the real server: a count only when no label/field selector makes it unknowable
                if not sel.labels and not sel.fields:
                    md["remainingItemCount"] = hi - i
            break
    return {"kind": rr.res.list_kind, "apiVersion": rr.res.api_version, "metadata": md, "items": items}


async def handle_get(store: Store, request: web.BaseRequest, rr: ResourceRequest) -> web.StreamResponse:
    if rr.watch or query_bool(request.query, "watch"):
        return await handle_watch(store, request, rr)
    table = tables.wants_table(request.headers.get("Accept", ""))
    if rr.name is None:
        doc = list_objects(store, request, rr)
        if table:
            return json_response(
                tables.to_table(rr.res, doc["items"], doc["metadata"], request.query.get("includeObject"))
            )
        # the same bytes as json_response(doc), from each object's cached encoding
        body = b"".join(
            (
                b'{"kind":',
                codec.dumps(doc["kind"]),
                b',"apiVersion":',
                codec.dumps(doc["apiVersion"]),
                b',"metadata":',
                codec.dumps(doc["metadata"]),
                b',"items":[',
                b",".join([store.encoded(rr.res, o) for o in doc["items"]]),
                b"]}",
            )
        )
        return web.Response(body=body, status=200, headers={"Content-Type": JSON})
    if rr.subresource == "scale":
        return json_response(scale.to_scale(store.must_get(rr.res, rr.namespace, rr.name)))
    if rr.subresource not in (None, "status"):
        raise method_not_allowed()
    obj = store.must_get(rr.res, rr.namespace, rr.name)
    if table:
        return json_response(
            tables.to_table(
                rr.res,
                [obj],
                {"resourceVersion": obj["metadata"]["resourceVersion"]},
                request.query.get("includeObject"),
            )
        )
    return json_response(obj)


async def handle_watch(store: Store, request: web.BaseRequest, rr: ResourceRequest) -> web.StreamResponse:
    q = request.query
    sel = selector_of(request, rr)
    if rr.name is not None:
        sel = Selector(
            sel.labels,
            (*sel.fields, *Selector.parse(None, f"metadata.name={rr.name}", rr.res.key).fields),
            sel.namespace,
        )
    try:
        timeout = float(q["timeoutSeconds"]) if q.get("timeoutSeconds") else None
    except ValueError:
        raise bad_request(f"invalid timeoutSeconds: {q['timeoutSeconds']!r}") from None
    server = request[SERVER_KEY]
    opts = WatchOptions(
        resource_version=q.get("resourceVersion"),
        timeout=timeout if timeout is not None else server.watch_timeout,
        bookmarks=query_bool(q, "allowWatchBookmarks"),
        bookmark_interval=server.bookmark_interval,
        coalesce=server.watch_coalesce,
        send_initial_events=query_bool(q, "sendInitialEvents") if "sendInitialEvents" in q else None,
        close_after=server.faults.watch_lifetime,
    )
    stream = WatchStream(store, rr.res, sel, opts)  # raises 400 before the response starts
    table = tables.wants_table(request.headers.get("Accept", ""))
    resp = web.StreamResponse(
        status=200, headers={"Content-Type": JSON, "Cache-Control": "no-cache, private"}
    )
    resp.enable_chunked_encoding()
    await resp.prepare(request)
    server.active_watches += 1
    try:
        async for chunk in stream.events():
            if table:
                chunk = tables.table_watch_chunk(rr.res, chunk)
            await resp.write(chunk)
    except (ConnectionResetError, ConnectionError):
        return resp
    finally:
        server.active_watches -= 1
    await resp.write_eof()
    return resp


def write(store: Store, request: web.BaseRequest, rr: ResourceRequest, raw: bytes) -> Answer:
    """A POST, PUT, PATCH or DELETE whose body has been read; synchronous (no verb awaits)."""
    method = request.method
    if method == "POST":
        return post(store, request, rr, decode_object(request, raw))
    if method == "PUT":
        return put(store, request, rr, decode_object(request, raw))
    if method == "PATCH":
        return patch(store, request, rr, raw)
    if method == "DELETE":
        return delete(store, request, rr, raw)
    raise method_not_allowed()


def post(store: Store, request: web.BaseRequest, rr: ResourceRequest, body: Any) -> Answer:
    if rr.subresource == "binding" and rr.res.key == "pods":
        binding = _check_kind(rr, body, "Binding")
        name = rr.name or (binding.get("metadata") or {}).get("name")
        store.bind(rr.namespace or "default", str(name), binding)
        return Answer(201, _CREATED, _JSON_HEADERS)
    if rr.subresource == "eviction" and rr.res.key == "pods":
        eviction = _check_kind(rr, body, "Eviction")
        store.evict(rr.namespace or "default", str(rr.name), eviction)
        return Answer(201, _CREATED, _JSON_HEADERS)
    if rr.name is not None:
        raise method_not_allowed()
    body, warn = checked_fields(store, request, rr, _check_kind(rr, body), "CreateOptions")
    obj = store.create(body, rr.namespace, rr.res, dry_run=_is_dry_run(request))
    return written_answer(store, rr.res, obj, 201, warn)


def put(store: Store, request: web.BaseRequest, rr: ResourceRequest, body: Any) -> Answer:
    if rr.subresource == "scale" and rr.name is not None:
        return json_answer(scale.write_scale(store, rr.res, rr.namespace, rr.name, body))
    if rr.name is None or rr.subresource not in (None, "status"):
        raise method_not_allowed()
    body, warn = checked_fields(store, request, rr, _check_kind(rr, body), "UpdateOptions")
    obj = store.update(body, rr.namespace, rr.res, rr.subresource, rr.name, dry_run=_is_dry_run(request))
    return written_answer(store, rr.res, obj, warnings=warn)


BUILT_IN_GROUPS = frozenset(
    {
        "",
        "apps",
        "batch",
        "policy",
        "rbac.authorization.k8s.io",
        "scheduling.k8s.io",
        "coordination.k8s.io",
        "events.k8s.io",
    }
)


def patch(store: Store, request: web.BaseRequest, rr: ResourceRequest, raw: bytes) -> Answer:
    if rr.name is None or rr.subresource not in (None, "status", "scale"):
        raise method_not_allowed()
    ctype = request.headers.get("Content-Type", "").split(";")[0].strip()
    if ctype == APPLY_PATCH:
        return apply(store, request, rr, raw)
    ptype = PATCH_TYPES.get(ctype)
    if ptype is None:
        raise unsupported_media_type(ctype)
    if ptype == "strategic" and rr.res.group not in BUILT_IN_GROUPS:
        # as the real server: custom resources have no Go struct to derive merge keys from
        raise ApiError(
            415,
            "UnsupportedMediaType",
            "strategic merge patch is not supported for custom resources; use merge-patch+json or json-patch+json",
        )
    body = decode_body(raw)
    if rr.subresource == "scale":
        return json_answer(scale.patch_scale(store, rr.res, rr.namespace, rr.name, body, ptype))
    body, warn = checked_fields(store, request, rr, body, "PatchOptions", ptype)
    obj = store.patch(
        rr.res, rr.namespace, rr.name, body, ptype, rr.subresource, dry_run=_is_dry_run(request)
    )
    return written_answer(store, rr.res, obj, warnings=warn)


def apply(store: Store, request: web.BaseRequest, rr: ResourceRequest, raw: bytes) -> Answer:
    """Server-side apply, simplified: create when absent, else merge the applied fields in.

    The applied configuration is merged like a strategic merge patch (built-in kinds) or a
    merge patch (custom resources). Field ownership is not tracked: there are no apply
    conflicts, and a field dropped from the applied configuration stays on the object.
    """
    if not request.query.get("fieldManager"):
        raise ApiError(
            422,
            "Invalid",
            'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch',
        )
    try:
        applied = yaml.safe_load(raw) if raw.strip() else None
    except yaml.YAMLError as exc:
        raise bad_request(f"error decoding YAML: {exc}") from None
    if not isinstance(applied, dict):
        raise bad_request("the applied configuration must be an object")
    body, warn = checked_fields(store, request, rr, _check_kind(rr, applied), "PatchOptions")
    dry = _is_dry_run(request)
    if store.get(rr.res, rr.namespace, str(rr.name)) is None:
        if rr.subresource is not None:
            store.must_get(rr.res, rr.namespace, str(rr.name))  # a status apply needs the object: 404
        md = dict(body.get("metadata") or {})
        if md.get("name", rr.name) != rr.name:
            raise bad_request(
                f"the name of the object ({md.get('name')}) does not match the name on the URL ({rr.name})"
            )
        md["name"] = rr.name
        obj = store.create({**body, "metadata": md}, rr.namespace, rr.res, dry_run=dry)
        return written_answer(store, rr.res, obj, 201, warn)
    ptype = "strategic" if rr.res.group in BUILT_IN_GROUPS else "merge"
    obj = store.patch(rr.res, rr.namespace, str(rr.name), body, ptype, rr.subresource, dry_run=dry)
    return written_answer(store, rr.res, obj, warnings=warn)


def delete(store: Store, request: web.BaseRequest, rr: ResourceRequest, raw: bytes) -> Answer:
    opts: dict[str, Any] = decode_object(request, raw) if raw.strip() else {}
    if not isinstance(opts, dict):
        raise bad_request("DeleteOptions must be a JSON object")
    q = request.query
    grace = opts.get("gracePeriodSeconds")
    if q.get("gracePeriodSeconds") not in (None, ""):
        try:
            grace = int(q["gracePeriodSeconds"])
        except ValueError:
            raise bad_request(f"invalid gracePeriodSeconds {q['gracePeriodSeconds']!r}") from None
    dry = _is_dry_run(request) or "All" in (opts.get("dryRun") or [])
    if rr.name is None:
        # deletecollection: every matching object, answered as the list of what was deleted
        sel = selector_of(request, rr)
        deleted = [
            store.delete(rr.res, o["metadata"].get("namespace"), o["metadata"]["name"], grace, None, dry)
            for o in sorted(store.iter_objects(rr.res, sel), key=lambda o: o["metadata"]["name"])
        ]
        return json_answer(
            {
                "kind": rr.res.list_kind,
                "apiVersion": rr.res.api_version,
                "metadata": {"resourceVersion": str(store.rv)},
                "items": deleted,
            }
        )
    if rr.subresource is not None:
        raise method_not_allowed()
    policy = q.get("propagationPolicy") or opts.get("propagationPolicy")
    if not dry and (policy == "Orphan" or opts.get("orphanDependents") is True):
        orphan_dependents(store, store.must_get(rr.res, rr.namespace, rr.name))
    obj = store.delete(rr.res, rr.namespace, rr.name, grace, opts.get("preconditions"), dry)
    if store.get(rr.res, rr.namespace, rr.name) is not None:
        return json_answer(obj, 202 if obj["metadata"].get("deletionTimestamp") else 200)
    return json_answer(obj, 200)
