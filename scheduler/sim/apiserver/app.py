"""The HTTP handler: URL parsing, the guard, discovery and the `/sandbox/` admin API.

Every request passes the guard: it records the request in the RBAC vocabulary (verb, group,
resource, subresource), applies injected faults, turns `ApiError` into a `Status` answer and
any other exception into a 500 `Status`, so no request can take the server down.

The handler runs under aiohttp's low-level server (`web.Server`), not an `Application`: every
path goes to the one dispatcher anyway, and the application's router and middleware chain were
~10 % of the CPU a Binding request costs the server.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING, Any

from aiohttp import web

from scheduler.sim.apiserver import discovery, handlers, openapi
from scheduler.sim.apiserver.appkeys import LOG_KEY, SERVER_KEY
from scheduler.sim.apiserver.errors import (
    ApiError,
    bad_request,
    internal,
    method_not_allowed,
    not_found,
    path_not_found,
    too_large,
)
from scheduler.sim.apiserver.fastlane import FastLaneServer
from scheduler.sim.apiserver.handlers import (
    Answer,
    ResourceRequest,
    error_answer,
    error_response,
    json_response,
    to_response,
)
from scheduler.sim.apiserver.resources import TABLE

if TYPE_CHECKING:
    from scheduler.sim.apiserver.server import ApiServer

log = logging.getLogger(__name__)

MAX_BODY = 3 * 1024 * 1024
_NAMESPACE_SUBRESOURCES = ("status", "finalize")


def parse_resource_path(parts: list[str]) -> ResourceRequest:
    """Tokens after `/api` or `/apis`: group/version, [watch], [namespaces/ns], plural, [name, [sub]]."""
    if parts[0] == "api":
        group, version, rest = "", parts[1], parts[2:]
    else:
        group, version, rest = parts[1], parts[2], parts[3:]
    watch = False
    if rest and rest[0] == "watch":
        watch, rest = True, rest[1:]
    namespace: str | None = None
    if len(rest) >= 3 and rest[0] == "namespaces" and rest[2] not in _NAMESPACE_SUBRESOURCES:
        namespace, rest = rest[1], rest[2:]
    if not rest or len(rest) > 3:
        raise path_not_found("/" + "/".join(parts))
    res = TABLE.by_path(group, version, rest[0])
    if res is None:
        raise path_not_found("/" + "/".join(parts))
    name = rest[1] if len(rest) > 1 else None
    sub = rest[2] if len(rest) > 2 else None
    if sub is not None and sub not in res.subresources:
        raise path_not_found("/" + "/".join(parts))
    if not res.namespaced and namespace is not None:
        raise path_not_found("/" + "/".join(parts))
    return ResourceRequest(res, namespace, name, sub, watch)


def rbac_verb(method: str, rr: ResourceRequest, query: Any) -> str:
    if method in ("GET", "HEAD"):
        if rr.watch or handlers.query_bool(query, "watch"):
            return "watch"
        return "get" if rr.name else "list"
    if method == "DELETE":
        return "delete" if rr.name else "deletecollection"
    return {"POST": "create", "PUT": "update", "PATCH": "patch"}.get(method, method.lower())


async def read_body(request: web.BaseRequest) -> bytes:
    if request.content_length is not None and request.content_length > MAX_BODY:
        raise too_large(MAX_BODY)
    chunks: list[bytes] = []
    size = 0
    while True:
        chunk = await request.content.readany()
        if not chunk:
            break
        size += len(chunk)
        if size > MAX_BODY:
            raise too_large(MAX_BODY)
        chunks.append(chunk)
    return b"".join(chunks)


def _authenticated(server: ApiServer, request: web.BaseRequest) -> bool:
    """The token, or (with client certificates on) a certificate the sandbox's CA signed."""
    if request.headers.get("Authorization", "") == f"Bearer {server.token}":
        return True
    if not server.client_certs or request.transport is None:
        return False
    # the TLS layer verified it against the CA (CERT_OPTIONAL): present means trusted
    return bool(request.transport.get_extra_info("peercert"))


class App:
    def __init__(self, server: ApiServer) -> None:
        self.server = server
        self.store = server.store

    def build(self) -> web.Server:
        # access_log None: a log line per request is not what a load test wants to measure
        if not self.server.fast_lane:
            return web.Server(self.guard, access_log=None)
        return FastLaneServer(
            self.guard, answer=self.answer_write, faults=self.server.faults, access_log=None
        )

    def _begin(self, request: web.BaseRequest) -> dict[str, Any]:
        """The request's log entry, logged now (so a running watch is visible in the log)."""
        request[SERVER_KEY] = self.server
        request[LOG_KEY] = entry = {
            "method": request.method,
            "path": request.path,
            "query": request.query_string,
            "user_agent": request.headers.get("User-Agent", ""),
            "verb": "",
            "group": "",
            "version": "",
            "resource": "",
            "subresource": "",
            "namespace": "",
            "name": "",
            "code": 0,
        }
        self.server.request_log.append(entry)
        return entry

    def _check_auth(self, request: web.BaseRequest) -> None:
        server = self.server
        if (
            server.require_auth
            and not request.path.startswith("/sandbox/")
            and not _authenticated(server, request)
        ):
            raise ApiError(401, "Unauthorized", "Unauthorized")

    def answer_write(self, request: web.BaseRequest, raw: bytes) -> Answer:
        """guard + dispatch + resource for a write to a resource path, synchronously.

        The connection's fast lane (`fastlane`) calls it with a complete request when no fault
        would delay it; the answer is the one the asynchronous path gives the same request.
        """
        started = time.monotonic()
        entry = self._begin(request)
        try:
            self._check_auth(request)
            rr = self._route(request, [p for p in request.path.split("/") if p])
            err = self.server.faults.maybe_error()
            if err is not None:
                raise err
            self._check_write_path(request, rr)
            answer = handlers.write(self.store, request, rr, raw)
        except ApiError as err:
            answer = error_answer(err)
        except Exception as exc:  # the server must answer, whatever a request does to it
            log.exception("sandbox API server: unhandled error on %s %s", request.method, request.path)
            answer = error_answer(internal(f"{type(exc).__name__}: {exc}"))
        entry["code"] = answer.status
        entry["duration_ms"] = round((time.monotonic() - started) * 1000, 3)
        return answer

    async def guard(self, request: web.BaseRequest) -> web.StreamResponse:
        server = self.server
        started = time.monotonic()
        entry = self._begin(request)
        task = asyncio.current_task()
        if task is not None:
            server.in_flight.add(task)
        try:
            self._check_auth(request)
            resp = await self.dispatch(request)
        except ApiError as err:
            resp = error_response(err)
        except web.HTTPException as exc:
            resp = error_response(ApiError(exc.status, exc.reason.replace(" ", ""), exc.text or exc.reason))
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the server must answer, whatever a request does to it
            log.exception("sandbox API server: unhandled error on %s %s", request.method, request.path)
            resp = error_response(internal(f"{type(exc).__name__}: {exc}"))
        finally:
            if task is not None:
                server.in_flight.discard(task)
        entry["code"] = resp.status
        entry["duration_ms"] = round((time.monotonic() - started) * 1000, 3)
        return resp

    async def _faults(self) -> None:
        f = self.server.faults
        if f.latency_ms:
            await asyncio.sleep(f.latency_ms / 1000)
        err = f.maybe_error()
        if err is not None:
            raise err

    async def dispatch(self, request: web.BaseRequest) -> web.StreamResponse:
        parts = [p for p in request.path.split("/") if p]
        accept = request.headers.get("Accept", "")
        head = parts[0] if parts else ""
        if not parts:
            return json_response(
                {
                    "paths": [
                        "/api",
                        "/api/v1",
                        "/apis",
                        "/healthz",
                        "/livez",
                        "/openapi/v2",
                        "/openapi/v3",
                        "/readyz",
                        "/version",
                    ]
                }
            )
        if head in ("healthz", "livez", "readyz"):
            return web.Response(text="ok")
        if parts == ["version"]:
            return json_response(discovery.version())
        if head == "openapi":
            return openapi.answer(parts[1:], request)
        if head == "sandbox":
            return await self.admin(request, parts[1:])
        if head == "api" and len(parts) == 1:
            agg = discovery.wants_aggregated(accept)
            if agg:
                return json_response(discovery.aggregated(True, _agg_version(agg)), content_type=agg)
            return json_response(discovery.api_versions(request.host))
        if head == "apis" and len(parts) == 1:
            agg = discovery.wants_aggregated(accept)
            if agg:
                return json_response(discovery.aggregated(False, _agg_version(agg)), content_type=agg)
            return json_response(discovery.api_group_list())
        if head == "apis" and len(parts) == 2:
            doc = discovery.api_group(parts[1])
            if doc is None:
                raise path_not_found(request.path)
            return json_response(doc)
        if (head == "api" and len(parts) == 2) or (head == "apis" and len(parts) == 3):
            group, version = ("", parts[1]) if head == "api" else (parts[1], parts[2])
            doc = discovery.api_resource_list(group, version)
            if doc is None:
                raise path_not_found(request.path)
            return json_response(doc)
        if head not in ("api", "apis"):
            raise path_not_found(request.path)
        rr = self._route(request, parts)
        await self._faults()
        return await self.resource(request, rr)

    @staticmethod
    def _route(request: web.BaseRequest, parts: list[str]) -> ResourceRequest:
        """The resource path's request, recorded in the request's log entry."""
        rr = parse_resource_path(parts)
        request[LOG_KEY].update(
            verb=rbac_verb(request.method, rr, request.query),
            group=rr.res.group,
            version=rr.res.version,
            resource=rr.res.plural,
            subresource=rr.subresource or "",
            namespace=rr.namespace or "",
            name=rr.name or "",
        )
        return rr

    @staticmethod
    def _check_write_path(request: web.BaseRequest, rr: ResourceRequest) -> None:
        if (
            rr.res.namespaced
            and rr.namespace is None
            and request.method in ("POST", "PUT", "PATCH")
            and rr.name is None
        ):
            # creating through the cluster-wide path is not allowed for namespaced kinds
            raise method_not_allowed()

    async def resource(self, request: web.BaseRequest, rr: ResourceRequest) -> web.StreamResponse:
        self._check_write_path(request, rr)
        method = request.method
        if method in ("GET", "HEAD"):
            return await handlers.handle_get(self.store, request, rr)
        if method not in ("POST", "PUT", "PATCH", "DELETE"):
            raise method_not_allowed()
        raw = await read_body(request)
        return to_response(handlers.write(self.store, request, rr, raw))

    async def admin(self, request: web.BaseRequest, parts: list[str]) -> web.StreamResponse:
        server = self.server
        what = parts[0] if parts else ""
        if what == "faults":
            if request.method == "GET":
                return json_response(server.fault_state())
            if request.method == "DELETE":
                server.faults.reset()
                return json_response(server.fault_state())
            if request.method in ("POST", "PUT", "PATCH"):
                body = handlers.decode_body(await read_body(request))
                if not isinstance(body, dict):
                    raise bad_request("faults must be a JSON object")
                try:
                    server.set_faults(**body)
                except (ValueError, TypeError) as exc:
                    raise bad_request(str(exc)) from None
                return json_response(server.fault_state())
            raise method_not_allowed()
        if what == "requests":
            if request.method == "DELETE":
                server.request_log.clear()
                return json_response({"items": []})
            return json_response({"items": list(server.request_log)})
        if what == "stats":
            return json_response(server.stats())
        raise not_found("sandbox", what or "/")


def _agg_version(media: str) -> str:
    return "apidiscovery.k8s.io/v2beta1" if "v=v2beta1" in media else "apidiscovery.k8s.io/v2"
