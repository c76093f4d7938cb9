"""The resource table: every kind the sandbox serves, as discovery advertises it.

One row per resource says where it lives (group/version, plural), how kubectl may name it
(singular, shortNames), its scope, its verbs and which subresources it has. Everything else —
routing, discovery documents, validation of the `kind` in a body, the RBAC vocabulary of the
request log — is derived from this table, so adding a kind is one line here.
"""

from __future__ import annotations

from dataclasses import dataclass, field

ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")


@dataclass(frozen=True, slots=True)
class ResourceInfo:
    group: str
    version: str
    plural: str
    singular: str
    kind: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    # subresources with their own verbs; "status" means writes to the main resource keep status
    subresources: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ALL_VERBS
    # true for kinds whose status may be set on create (nodes); others reset or drop it
    status_on_create: bool = False
    extra: dict[str, str] = field(default_factory=dict, compare=False, hash=False)

    @property
    def key(self) -> str:
        """Store key: "pods", "podgroups.scheduling.volcano.sh" (the name RBAC and errors use)."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def has_status(self) -> bool:
        return "status" in self.subresources

    @property
    def list_kind(self) -> str:
        return self.kind + "List"


def _r(
    group: str,
    version: str,
    plural: str,
    kind: str,
    namespaced: bool,
    short: tuple[str, ...] = (),
    sub: tuple[str, ...] = (),
    singular: str | None = None,
    categories: tuple[str, ...] = (),
    verbs: tuple[str, ...] = ALL_VERBS,
    status_on_create: bool = False,
) -> ResourceInfo:
    return ResourceInfo(
        group,
        version,
        plural,
        singular or kind.lower(),
        kind,
        namespaced,
        short,
        sub,
        categories,
        verbs,
        status_on_create,
    )


_SCALABLE = ("status", "scale")
_NS_VERBS = ("create", "delete", "get", "list", "patch", "update", "watch")

RESOURCES: tuple[ResourceInfo, ...] = (
    _r("", "v1", "namespaces", "Namespace", False, ("ns",), ("status",), verbs=_NS_VERBS),
    _r("", "v1", "nodes", "Node", False, ("no",), ("status",), status_on_create=True),
    _r("", "v1", "pods", "Pod", True, ("po",), ("status", "binding", "eviction"), categories=("all",)),
    _r("", "v1", "configmaps", "ConfigMap", True, ("cm",)),
    _r("", "v1", "resourcequotas", "ResourceQuota", True, ("quota",), ("status",)),
    _r("", "v1", "events", "Event", True, ("ev",)),
    _r("", "v1", "services", "Service", True, ("svc",), ("status",), categories=("all",)),
    _r("", "v1", "serviceaccounts", "ServiceAccount", True, ("sa",)),
    # helm keeps its releases in Secrets; stored like any other kind (stringData is folded in)
    _r("", "v1", "secrets", "Secret", True),
    _r("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", False, ("pc",)),
    _r("coordination.k8s.io", "v1", "leases", "Lease", True),
    _r("events.k8s.io", "v1", "events", "Event", True, ("ev",)),
    _r(
        "scheduling.volcano.sh",
        "v1beta1",
        "podgroups",
        "PodGroup",
        True,
        ("pg", "podgroup-v1beta1"),
        ("status",),
    ),
    _r("scheduling.volcano.sh", "v1beta1", "queues", "Queue", False, ("q", "queue-v1beta1"), ("status",)),
    _r("batch.volcano.sh", "v1alpha1", "jobs", "Job", True, ("vcjob", "vj"), ("status",)),
    _r("topology.volcano.sh", "v1alpha1", "hypernodes", "HyperNode", False, ("hn",), ("status",)),
    _r(
        "apiextensions.k8s.io",
        "v1",
        "customresourcedefinitions",
        "CustomResourceDefinition",
        False,
        ("crd", "crds"),
        ("status",),
    ),
    _r("apps", "v1", "deployments", "Deployment", True, ("deploy",), _SCALABLE, categories=("all",)),
    _r("apps", "v1", "replicasets", "ReplicaSet", True, ("rs",), _SCALABLE, categories=("all",)),
    _r("apps", "v1", "statefulsets", "StatefulSet", True, ("sts",), _SCALABLE, categories=("all",)),
    _r("batch", "v1", "jobs", "Job", True, (), ("status",), categories=("all",)),
    _r("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", False),
    _r("rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", False),
    _r("rbac.authorization.k8s.io", "v1", "roles", "Role", True),
    _r("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding", True),
    _r("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", True, ("pdb",), ("status",)),
)

# Order of groups in /apis. kubectl resolves a name several groups serve ("events") by the first
# group that has it, after the core group; CRD groups (Volcano's) come last, as on a cluster.
GROUP_ORDER = (
    "apps",
    "batch",
    "events.k8s.io",
    "policy",
    "rbac.authorization.k8s.io",
    "scheduling.k8s.io",
    "coordination.k8s.io",
    "apiextensions.k8s.io",
    "batch.volcano.sh",
    "scheduling.volcano.sh",
    "topology.volcano.sh",
)


class ResourceTable:
    """Lookups over RESOURCES by URL coordinates, by store key and by (group, kind)."""

    def __init__(self, resources: tuple[ResourceInfo, ...] = RESOURCES) -> None:
        self.resources = resources
        self._by_path = {(r.group, r.version, r.plural): r for r in resources}
        self._by_key = {r.key: r for r in resources}
        self._by_kind = {(r.group, r.kind): r for r in resources}

    def by_path(self, group: str, version: str, plural: str) -> ResourceInfo | None:
        return self._by_path.get((group, version, plural))

    def by_key(self, key: str) -> ResourceInfo | None:
        return self._by_key.get(key)

    def by_kind(self, group: str, kind: str) -> ResourceInfo | None:
        return self._by_kind.get((group, kind))

    def resolve(self, key_or_plural: str) -> ResourceInfo:
        """Store key, or a bare core plural ("pods"), as callers of the Python API write it."""
        r = self._by_key.get(key_or_plural)
        if r is None:
            raise KeyError(f"unknown resource {key_or_plural!r}; known: {sorted(self._by_key)}")
        return r

    def groups(self) -> dict[str, list[str]]:
        """Non-core group -> its versions, in the preferred discovery order."""
        out: dict[str, list[str]] = {}
        for g in GROUP_ORDER:
            for r in self.resources:
                if r.group == g and r.version not in out.setdefault(g, []):
                    out[g].append(r.version)
        return out

    def in_group_version(self, group: str, version: str) -> list[ResourceInfo]:
        return [r for r in self.resources if r.group == group and r.version == version]


TABLE = ResourceTable()
