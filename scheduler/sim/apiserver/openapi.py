"""A minimal OpenAPI v3 document: just enough for kubectl to validate on the server.

kubectl (`apply`/`create`, default `--validate=strict`) asks `/openapi/v3` whether the PATCH
operation of the object's kind takes the `fieldValidation` query parameter. If it does, kubectl
sends `?fieldValidation=Strict` and leaves validation to the server; if it cannot find out, it
downloads the full v2 schema and fails without it. So each group/version document lists the
item path of every resource with a PATCH operation carrying `x-kubernetes-group-version-kind`
and the parameter. PATCH operations declare no request body: kubectl then computes apply
patches from its compiled-in types (strategic merge for built-in kinds, JSON merge patch for
Volcano's), exactly as it does against a cluster whose schema lacks patch metadata.
`/openapi/v2` is an empty protobuf document: kubectl validates a `kind: List` file (what
`kubectl get -o yaml` writes) against the v2 schema before it splits the list, and a kind the
schema does not describe passes (each item is then created with `fieldValidation=Strict` as usual).
"""

from __future__ import annotations

import hashlib
from typing import Any

from aiohttp import web

from scheduler.sim.apiserver import codec
from scheduler.sim.apiserver.errors import path_not_found
from scheduler.sim.apiserver.resources import TABLE, ResourceInfo

_V2_PROTOBUF = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
_QUERY_PARAMS = ("fieldValidation", "dryRun", "fieldManager", "force", "pretty")


def _gv_paths() -> dict[str, list[ResourceInfo]]:
    out: dict[str, list[ResourceInfo]] = {"api/v1": TABLE.in_group_version("", "v1")}
    for group, versions in TABLE.groups().items():
        for v in versions:
            out[f"apis/{group}/{v}"] = TABLE.in_group_version(group, v)
    return out


def _item_path(r: ResourceInfo) -> str:
    prefix = f"/apis/{r.group}/{r.version}" if r.group else "/api/v1"
    ns = "/namespaces/{namespace}" if r.namespaced else ""
    return f"{prefix}{ns}/{r.plural}/{{name}}"


def gv_document(gv: str, resources: list[ResourceInfo]) -> dict[str, Any]:
    paths: dict[str, Any] = {}
    for r in resources:
        gvk = {"group": r.group, "version": r.version, "kind": r.kind}
        params = [
            {"name": p, "in": "query", "schema": {"type": "string"}, "uniqueItems": True}
            for p in _QUERY_PARAMS
        ]
        paths[_item_path(r)] = {
            "patch": {
                "operationId": f"patch{r.kind}",
                "x-kubernetes-action": "patch",
                "x-kubernetes-group-version-kind": gvk,
                "parameters": params,
                "responses": {"200": {"description": "OK"}},
            },
        }
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "v1.35.0"},
        "paths": paths,
        "components": {"schemas": {}},
    }


_DOCS: dict[str, bytes] = {gv: codec.dumps(gv_document(gv, rs)) for gv, rs in _gv_paths().items()}
_HASHES = {gv: hashlib.sha512(doc).hexdigest()[:32].upper() for gv, doc in _DOCS.items()}


def answer(parts: list[str], request: web.BaseRequest) -> web.Response:
    """`parts` are the path tokens after `/openapi`."""
    if parts == ["v3"]:
        root = {"paths": {gv: {"serverRelativeURL": f"/openapi/v3/{gv}?hash={_HASHES[gv]}"} for gv in _DOCS}}
        return web.Response(body=codec.dumps(root), headers={"Content-Type": "application/json"})
    if len(parts) > 1 and parts[0] == "v3":
        doc = _DOCS.get("/".join(parts[1:]))
        if doc is not None:
            return web.Response(
                body=doc,
                headers={"Content-Type": "application/json", "Etag": f'"{_HASHES["/".join(parts[1:])]}"'},
            )
    if parts == ["v2"]:
        # kubectl asks for protobuf and decodes the body with proto.Unmarshal: empty = no definitions
        return web.Response(body=b"", headers={"Content-Type": _V2_PROTOBUF})
    raise path_not_found(request.path)
