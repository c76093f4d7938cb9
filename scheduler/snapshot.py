"""Read a live cluster's scheduling objects, read-only, for the `snapshot` and `explain` commands.

Every kind is listed separately, in pages, from all namespaces, and each item gets its `kind`
and `apiVersion` back (a List's items carry neither), so one multi-document file holds all of
them and nothing is lost: unlike `kubectl get -o yaml` of two Lists in one file, where the YAML
keeps only the last `items`. Volcano Jobs are left out on purpose: their PodGroups and pods are
listed already, and replaying the Jobs too would create every pod twice.
"""

from __future__ import annotations

from typing import Any

from scheduler.kube.client import ClientOptions, KubeClient
from scheduler.reload import DEFAULT_CONFIGMAP, DEFAULT_CONFIGMAP_NAMESPACE

VOLCANO = "scheduling.volcano.sh/v1beta1"
# (kind, apiVersion, list path): dependencies first, so the file reads top-down
KINDS: tuple[tuple[str, str, str], ...] = (
    ("Namespace", "v1", "/api/v1/namespaces"),
    ("PriorityClass", "scheduling.k8s.io/v1", "/apis/scheduling.k8s.io/v1/priorityclasses"),
    ("Queue", VOLCANO, f"/apis/{VOLCANO}/queues"),
    ("Node", "v1", "/api/v1/nodes"),
    ("PodGroup", VOLCANO, f"/apis/{VOLCANO}/podgroups"),
    ("Pod", "v1", "/api/v1/pods"),
)
# ConfigMaps the scheduler reads: its own configuration and HAMi's device configuration
CONFIGMAPS = (
    (DEFAULT_CONFIGMAP_NAMESPACE, DEFAULT_CONFIGMAP),
    ("kube-system", "volcano-vgpu-device-config"),
)
PAGE = 500


def _clean(item: dict[str, Any], kind: str, api_version: str) -> dict[str, Any]:
    item["kind"], item["apiVersion"] = kind, api_version
    md = item.get("metadata")
    if isinstance(md, dict):
        md.pop("managedFields", None)  # large and of no use to the scheduler
    return item


async def list_kind(client: KubeClient, path: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    cont = ""
    while True:
        query: dict[str, Any] = {"limit": PAGE}
        if cont:
            query["continue"] = cont
        page = await client.request("GET", path, query) or {}
        items.extend(page.get("items") or [])
        cont = (page.get("metadata") or {}).get("continue") or ""
        if not cont:
            return items


async def dump(
    kubeconfig: str = "", configmaps: tuple[tuple[str, str], ...] = CONFIGMAPS
) -> list[dict[str, Any]]:
    """All objects the scheduler reads, in dependency order, with kind and apiVersion set."""
    from scheduler.kube.client import ApiError

    client = await KubeClient.create(ClientOptions(kubeconfig=kubeconfig))
    try:
        out: list[dict[str, Any]] = []
        for kind, api_version, path in KINDS:
            try:
                items = await list_kind(client, path)
            except ApiError as exc:
                if exc.status == 404 and kind in ("Queue", "PodGroup"):
                    raise ApiError(
                        404, "NotFound", f"{kind} is not served by {client.host}: is Volcano's CRD installed?"
                    ) from None
                raise
            out.extend(_clean(i, kind, api_version) for i in items)
        for ns, name in configmaps:
            try:
                cm = await client.request("GET", f"/api/v1/namespaces/{ns}/configmaps/{name}")
            except ApiError as exc:
                if exc.status in (403, 404):
                    continue  # optional: the built-in defaults apply without them
                raise
            out.append(_clean(cm, "ConfigMap", "v1"))
        return out
    finally:
        await client.close()


def scheduler_conf_text(objects: list[dict[str, Any]]) -> tuple[str, str] | None:
    """(source, text) of the scheduler ConfigMap's configuration among `objects`, if present."""
    from scheduler.reload import DEFAULT_KEY

    for o in objects:
        md = o.get("metadata") or {}
        if (
            o.get("kind") == "ConfigMap"
            and md.get("name") == DEFAULT_CONFIGMAP
            and md.get("namespace") == DEFAULT_CONFIGMAP_NAMESPACE
        ):
            text = (o.get("data") or {}).get(DEFAULT_KEY)
            if isinstance(text, str):
                return f"ConfigMap {DEFAULT_CONFIGMAP_NAMESPACE}/{DEFAULT_CONFIGMAP}", text
    return None
