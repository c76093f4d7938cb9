"""A small Kubernetes REST client for the sandbox's simulated kubelets and controllers.

They talk to the sandbox API server over HTTP exactly as real kubelets and controllers do (list,
watch with resourceVersion resume and relist on 410, status patches), so the server is exercised
the same way the daemon exercises it. Plain aiohttp and JSON: the simulated components handle
every pod of the cluster and must stay cheap.
"""

from __future__ import annotations

import asyncio
import json
import logging
import ssl
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import aiohttp

log = logging.getLogger(__name__)

MERGE_PATCH = "application/merge-patch+json"


class ApiError(Exception):
    def __init__(self, status: int, body: Any) -> None:
        self.status = status
        self.body = body
        msg = body.get("message") if isinstance(body, dict) else str(body)
        super().__init__(f"HTTP {status}: {msg}")


@dataclass(frozen=True, slots=True)
class Resource:
    """Where a kind lives in the API: `/api/v1` or `/apis/<group>/<version>`, plural, scope."""

    prefix: str
    plural: str
    namespaced: bool

    def path(self, namespace: str | None = None, name: str | None = None, sub: str | None = None) -> str:
        p = self.prefix
        if self.namespaced and namespace:
            p += f"/namespaces/{namespace}"
        p += f"/{self.plural}"
        if name:
            p += f"/{name}"
        if sub:
            p += f"/{sub}"
        return p


PODS = Resource("/api/v1", "pods", True)
NODES = Resource("/api/v1", "nodes", False)
NAMESPACES = Resource("/api/v1", "namespaces", False)
EVENTS = Resource("/api/v1", "events", True)
CONFIGMAPS = Resource("/api/v1", "configmaps", True)
PRIORITY_CLASSES = Resource("/apis/scheduling.k8s.io/v1", "priorityclasses", False)
PODGROUPS = Resource("/apis/scheduling.volcano.sh/v1beta1", "podgroups", True)
QUEUES = Resource("/apis/scheduling.volcano.sh/v1beta1", "queues", False)
VCJOBS = Resource("/apis/batch.volcano.sh/v1alpha1", "jobs", True)
DEPLOYMENTS = Resource("/apis/apps/v1", "deployments", True)
REPLICASETS = Resource("/apis/apps/v1", "replicasets", True)
STATEFULSETS = Resource("/apis/apps/v1", "statefulsets", True)
BATCH_JOBS = Resource("/apis/batch/v1", "jobs", True)


class RestClient:
    def __init__(self, base_url: str, token: str | None = None, ca_file: str | None = None) -> None:
        self.base_url = base_url.rstrip("/")
        self._headers = {"Accept": "application/json", "User-Agent": "vc-scheduler-sandbox"}
        if token:
            self._headers["Authorization"] = f"Bearer {token}"
        self._ssl: ssl.SSLContext | bool = ssl.create_default_context(cafile=ca_file) if ca_file else True
        self._session: aiohttp.ClientSession | None = None

    async def __aenter__(self) -> RestClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def session(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(
                headers=self._headers, connector=aiohttp.TCPConnector(limit=64, ssl=self._ssl)
            )
        return self._session

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()

    async def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        content_type: str = "application/json",
        params: dict | None = None,
    ) -> Any:
        data = None if body is None else json.dumps(body)
        headers = {"Content-Type": content_type} if body is not None else None
        for attempt in range(5):
            async with self.session().request(
                method, self.base_url + path, data=data, headers=headers, params=params
            ) as resp:
                text = await resp.text()
                payload: Any = json.loads(text) if text else None
                if resp.status == 429 or resp.status >= 500:
                    # the sandbox may inject faults: back off and retry like client-go does
                    delay = float(resp.headers.get("Retry-After", "0") or 0) or 0.05 * 2**attempt
                    await asyncio.sleep(min(delay, 1.0))
                    continue
                if resp.status >= 400:
                    raise ApiError(resp.status, payload)
                return payload
        raise ApiError(503, {"message": f"{method} {path}: server kept failing"})

    async def get(self, res: Resource, name: str, namespace: str | None = None) -> dict[str, Any]:
        return await self.request("GET", res.path(namespace, name))

    async def list(self, res: Resource, namespace: str | None = None, **params: str) -> dict[str, Any]:
        return await self.request("GET", res.path(namespace), params=params or None)

    async def create(
        self, res: Resource, obj: dict[str, Any], namespace: str | None = None
    ) -> dict[str, Any]:
        return await self.request("POST", res.path(namespace), obj)

    async def patch(
        self,
        res: Resource,
        name: str,
        patch: dict[str, Any],
        namespace: str | None = None,
        sub: str | None = None,
    ) -> dict[str, Any]:
        return await self.request("PATCH", res.path(namespace, name, sub), patch, MERGE_PATCH)

    async def delete(
        self, res: Resource, name: str, namespace: str | None = None, grace: int | None = None
    ) -> Any:
        body = {"kind": "DeleteOptions", "apiVersion": "v1"}
        if grace is not None:
            body["gracePeriodSeconds"] = grace
        return await self.request("DELETE", res.path(namespace, name), body)

    async def watch(self, res: Resource, **params: str) -> AsyncIterator[tuple[str, dict[str, Any]]]:
        """Every object as ADDED once, then changes; relists on 410 and reconnects on errors.

        A relist replays the current objects as ADDED (and deletions are not recovered), which
        is what the simulated components need: they act on current state, idempotently.
        """
        rv = ""
        backoff = 0.1
        while True:
            try:
                if not rv:
                    listed = await self.list(res, **params)
                    rv = listed["metadata"].get("resourceVersion", "")
                    for item in listed.get("items") or []:
                        yield "ADDED", item
                q = dict(
                    params, watch="true", resourceVersion=rv, allowWatchBookmarks="true", timeoutSeconds="300"
                )
                async with self.session().get(
                    self.base_url + res.path(),
                    params=q,
                    timeout=aiohttp.ClientTimeout(total=None, sock_read=330),
                ) as resp:
                    if resp.status == 410:
                        rv = ""
                        continue
                    if resp.status >= 400:
                        raise ApiError(resp.status, await resp.text())
                    backoff = 0.1
                    async for line in resp.content:
                        if not line.strip():
                            continue
                        ev = json.loads(line)
                        obj = ev.get("object") or {}
                        kind = ev.get("type")
                        if kind == "ERROR":
                            if obj.get("code") == 410:
                                rv = ""
                            break
                        new_rv = (obj.get("metadata") or {}).get("resourceVersion")
                        if new_rv:
                            rv = new_rv
                        if kind == "BOOKMARK":
                            continue
                        yield kind, obj
            except asyncio.CancelledError:
                raise
            except (TimeoutError, aiohttp.ClientError, ApiError, json.JSONDecodeError) as exc:
                log.debug("watch %s: %s; reconnecting", res.plural, exc)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 5.0)


# (group, kind) -> resource, for creating the objects of a manifest file
BY_KIND: dict[tuple[str, str], Resource] = {
    ("", "Pod"): PODS,
    ("", "Node"): NODES,
    ("", "Namespace"): NAMESPACES,
    ("", "ConfigMap"): CONFIGMAPS,
    ("", "Event"): EVENTS,
    ("", "Service"): Resource("/api/v1", "services", True),
    ("", "ServiceAccount"): Resource("/api/v1", "serviceaccounts", True),
    ("scheduling.k8s.io", "PriorityClass"): PRIORITY_CLASSES,
    ("scheduling.volcano.sh", "PodGroup"): PODGROUPS,
    ("scheduling.volcano.sh", "Queue"): QUEUES,
    ("batch.volcano.sh", "Job"): VCJOBS,
    ("apps", "Deployment"): DEPLOYMENTS,
    ("apps", "ReplicaSet"): REPLICASETS,
    ("apps", "StatefulSet"): STATEFULSETS,
    ("batch", "Job"): BATCH_JOBS,
    ("policy", "PodDisruptionBudget"): Resource("/apis/policy/v1", "poddisruptionbudgets", True),
    ("rbac.authorization.k8s.io", "ClusterRole"): Resource(
        "/apis/rbac.authorization.k8s.io/v1", "clusterroles", False
    ),
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"): Resource(
        "/apis/rbac.authorization.k8s.io/v1", "clusterrolebindings", False
    ),
    ("rbac.authorization.k8s.io", "Role"): Resource("/apis/rbac.authorization.k8s.io/v1", "roles", True),
    ("rbac.authorization.k8s.io", "RoleBinding"): Resource(
        "/apis/rbac.authorization.k8s.io/v1", "rolebindings", True
    ),
    ("coordination.k8s.io", "Lease"): Resource("/apis/coordination.k8s.io/v1", "leases", True),
    ("apiextensions.k8s.io", "CustomResourceDefinition"): Resource(
        "/apis/apiextensions.k8s.io/v1", "customresourcedefinitions", False
    ),
}


def resource_for(obj: dict[str, Any]) -> Resource | None:
    api_version = str(obj.get("apiVersion") or "")
    group, _, version = api_version.rpartition("/")
    res = BY_KIND.get((group, str(obj.get("kind") or "")))
    if res is None:
        return None
    # keep the object's own version in the path (the table names the served one)
    if group and version and not res.prefix.endswith("/" + version):
        return Resource(f"/apis/{group}/{version}", res.plural, res.namespaced)
    return res
