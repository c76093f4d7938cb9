"""Discovery documents derived from the resource table.

Legacy discovery (`/api`, `/api/v1`, `/apis`, `/apis/<group>[/<version>]`) and aggregated
discovery (`apidiscovery.k8s.io/v2` `APIGroupDiscoveryList`, what kubectl 1.30+ asks for first
on `/api` and `/apis`), so kubectl resolves `po`, `pg`, `q`, `vcjob` in one round trip.
"""

from __future__ import annotations

from typing import Any

from scheduler.sim.apiserver.resources import TABLE, ResourceInfo

KUBE_VERSION = {
    "major": "1",
    "minor": "35",
    "gitVersion": "v1.35.0-vc-sandbox",
    "gitCommit": "0000000000000000000000000000000000000000",
    "gitTreeState": "clean",
    "buildDate": "2026-01-01T00:00:00Z",
    "goVersion": "go1.25.0",
    "compiler": "gc",
    "platform": "linux/amd64",
}
AGGREGATED_V2 = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
AGGREGATED_V2BETA1 = "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"

# (subresource) -> (kind, group, version, verbs) of what it accepts/answers
SUBRESOURCE_KINDS: dict[str, tuple[str | None, str | None, str | None, tuple[str, ...]]] = {
    "status": (None, None, None, ("get", "patch", "update")),
    "binding": ("Binding", "", "v1", ("create",)),
    "eviction": ("Eviction", "policy", "v1", ("create",)),
    "scale": ("Scale", "autoscaling", "v1", ("get", "patch", "update")),
}


def version() -> dict[str, Any]:
    return dict(KUBE_VERSION)


def api_versions(server_address: str) -> dict[str, Any]:
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
    }


def _group_doc(group: str, versions: list[str]) -> dict[str, Any]:
    gvs = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
    return {"name": group, "versions": gvs, "preferredVersion": gvs[0]}


def api_group_list() -> dict[str, Any]:
    return {
        "kind": "APIGroupList",
        "apiVersion": "v1",
        "groups": [_group_doc(g, vs) for g, vs in TABLE.groups().items()],
    }


def api_group(group: str) -> dict[str, Any] | None:
    versions = TABLE.groups().get(group)
    if not versions:
        return None
    return {"kind": "APIGroup", "apiVersion": "v1", **_group_doc(group, versions)}


def _resource_entries(r: ResourceInfo) -> list[dict[str, Any]]:
    main: dict[str, Any] = {
        "name": r.plural,
        "singularName": r.singular,
        "namespaced": r.namespaced,
        "kind": r.kind,
        "verbs": list(r.verbs),
    }
    if r.short_names:
        main["shortNames"] = list(r.short_names)
    if r.categories:
        main["categories"] = list(r.categories)
    out = [main]
    for sub in r.subresources:
        kind, group, ver, verbs = SUBRESOURCE_KINDS[sub]
        entry: dict[str, Any] = {
            "name": f"{r.plural}/{sub}",
            "singularName": "",
            "namespaced": r.namespaced,
            "kind": kind or r.kind,
            "verbs": list(verbs),
        }
        if group is not None and (group, ver) != (r.group, r.version):
            entry["group"], entry["version"] = group, ver
        out.append(entry)
    return out


def api_resource_list(group: str, version: str) -> dict[str, Any] | None:
    resources = TABLE.in_group_version(group, version)
    if not resources:
        return None
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": f"{group}/{version}" if group else version,
        "resources": [e for r in resources for e in _resource_entries(r)],
    }


def _aggregated_resource(r: ResourceInfo) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "resource": r.plural,
        "responseKind": {"group": r.group, "version": r.version, "kind": r.kind},
        "scope": "Namespaced" if r.namespaced else "Cluster",
        "singularResource": r.singular,
        "verbs": list(r.verbs),
    }
    if r.short_names:
        entry["shortNames"] = list(r.short_names)
    if r.categories:
        entry["categories"] = list(r.categories)
    subs = []
    for sub in r.subresources:
        kind, group, ver, verbs = SUBRESOURCE_KINDS[sub]
        subs.append(
            {
                "subresource": sub,
                "responseKind": {
                    "group": r.group if group is None else group,
                    "version": r.version if ver is None else ver,
                    "kind": kind or r.kind,
                },
                "verbs": list(verbs),
            }
        )
    if subs:
        entry["subresources"] = subs
    return entry


def aggregated(core: bool, api_version: str = "apidiscovery.k8s.io/v2") -> dict[str, Any]:
    """`/api` (core=True) or `/apis` as an APIGroupDiscoveryList."""
    groups = {"": ["v1"]} if core else TABLE.groups()
    items = []
    for g, versions in groups.items():
        items.append(
            {
                "metadata": {"name": g, "creationTimestamp": None},
                "versions": [
                    {
                        "version": v,
                        "freshness": "Current",
                        "resources": [_aggregated_resource(r) for r in TABLE.in_group_version(g, v)],
                    }
                    for v in versions
                ],
            }
        )
    return {"kind": "APIGroupDiscoveryList", "apiVersion": api_version, "metadata": {}, "items": items}


def wants_aggregated(accept: str) -> str | None:
    """The aggregated media type to answer with, if the client's Accept asks for one."""
    for part in accept.split(","):
        p = part.replace(" ", "")
        if "as=APIGroupDiscoveryList" in p and "g=apidiscovery.k8s.io" in p:
            if "v=v2beta1" in p:
                return AGGREGATED_V2BETA1
            if "v=v2" in p:
                return AGGREGATED_V2
    return None
