"""Namespace policy objects some plugins honour: ResourceQuotas (resourcequota) and
PodDisruptionBudgets (pdb), reduced to what those plugins read."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from scheduler.model.convert import ConvertError, _dict, _int, object_name
from scheduler.model.resources import QuantityError, quantity_in_unit


@dataclass(slots=True)
class ResourceQuotaInfo:
    namespace: str
    name: str
    # resource name -> amount in the core's unit for that name (milli-CPU, bytes, milli-units)
    hard: dict[str, float] = field(default_factory=dict)
    used: dict[str, float] = field(default_factory=dict)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(slots=True)
class PdbInfo:
    namespace: str
    name: str
    selector: dict[str, Any] | None
    disruptions_allowed: int = 0
    disrupted_pods: frozenset[str] = frozenset()

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


def _amounts(raw: dict[str, Any], where: str, path: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for name, value in raw.items():
        try:
            out[str(name)] = quantity_in_unit(str(name), value)
        except QuantityError as exc:
            raise ConvertError(f"{where}: {path}.{name}: {exc}") from None
    return out


def _meta(obj: dict[str, Any], kind: str) -> tuple[str, str, str]:
    where = object_name({**obj, "kind": kind})
    md = _dict(obj, "metadata", where)
    name = md.get("name")
    if not name:
        raise ConvertError(f"{where}: metadata.name is required")
    return where, str(md.get("namespace") or "default"), str(name)


def resource_quota_to_info(obj: dict[str, Any]) -> ResourceQuotaInfo:
    """Volcano enforces the quota's status (written by the quota controller); a quota whose status
    has no `hard` yet (no controller, e.g. in `simulate`) counts with its spec and nothing used."""
    where, ns, name = _meta(obj, "ResourceQuota")
    spec = _dict(obj, "spec", where)
    status = _dict(obj, "status", where)
    hard_raw = _dict(status, "hard", where) or _dict(spec, "hard", where)
    path = "status.hard" if _dict(status, "hard", where) else "spec.hard"
    return ResourceQuotaInfo(
        ns,
        name,
        _amounts(hard_raw, where, path),
        _amounts(_dict(status, "used", where), where, "status.used"),
    )


def pdb_to_info(obj: dict[str, Any]) -> PdbInfo:
    where, ns, name = _meta(obj, "PodDisruptionBudget")
    spec = _dict(obj, "spec", where)
    status = _dict(obj, "status", where)
    selector = spec.get("selector")
    if selector is not None and not isinstance(selector, dict):
        raise ConvertError(f"{where}: spec.selector must be an object")
    allowed = _int(status.get("disruptionsAllowed"), where, "status.disruptionsAllowed", 0)
    return PdbInfo(
        ns, name, selector, allowed, frozenset(str(k) for k in _dict(status, "disruptedPods", where))
    )
