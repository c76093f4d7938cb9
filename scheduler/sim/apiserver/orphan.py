"""`propagationPolicy: Orphan` on delete (`kubectl delete --cascade=orphan`).

The owner's dependents lose their ownerReference to it before it goes, so the garbage collector
(`scheduler.sim.gc`) leaves them alone; the real server does the same through the `orphan`
finalizer.
"""

from __future__ import annotations

import contextlib
from typing import Any

from scheduler.sim.apiserver.errors import ApiError
from scheduler.sim.apiserver.resources import TABLE
from scheduler.sim.apiserver.store import Store

Obj = dict[str, Any]


def owner_refs(obj: Obj) -> list[Obj]:
    return [r for r in (obj.get("metadata") or {}).get("ownerReferences") or [] if isinstance(r, dict)]


def orphan_dependents(store: Store, owner: Obj) -> int:
    """Remove the ownerReferences to `owner` from every object naming it; returns how many changed."""
    uid = (owner.get("metadata") or {}).get("uid")
    if not uid:
        return 0
    changed = 0
    for res in TABLE.resources:
        for obj in list(store.iter_objects(res)):
            refs = owner_refs(obj)
            kept = [r for r in refs if r.get("uid") != uid]
            if len(kept) == len(refs):
                continue
            md = obj["metadata"]
            with contextlib.suppress(ApiError):
                store.patch(
                    res, md.get("namespace"), md["name"], {"metadata": {"ownerReferences": kept or None}}
                )
                changed += 1
    return changed
