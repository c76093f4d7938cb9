"""The defaults the real API server writes into workload specs on create.

Clients rely on them: `kubectl rollout status` refuses a StatefulSet without
`updateStrategy.type: RollingUpdate`, and the controllers read the Deployment's strategy and the
Job's limits. Only fields the user left out are set.
"""

from __future__ import annotations

import copy
from typing import Any

Obj = dict[str, Any]

_DEFAULTS: dict[str, Obj] = {
    "deployments.apps": {
        "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}},
        "revisionHistoryLimit": 10,
        "progressDeadlineSeconds": 600,
    },
    "statefulsets.apps": {
        "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}},
        "podManagementPolicy": "OrderedReady",
        "revisionHistoryLimit": 10,
    },
    "jobs.batch": {"backoffLimit": 6, "completionMode": "NonIndexed", "suspend": False},
}


def _fill(target: Obj, defaults: Obj) -> None:
    for key, value in defaults.items():
        if key not in target:
            target[key] = copy.deepcopy(value)
        elif isinstance(value, dict) and isinstance(target[key], dict):
            # a Recreate strategy takes no rollingUpdate
            if key == "strategy" and target[key].get("type") == "Recreate":
                continue
            _fill(target[key], value)


def with_defaults(key: str, obj: Obj) -> Obj:
    """`obj` with the server's defaults for kind `key` filled in (a copy; `obj` is not changed)."""
    defaults = _DEFAULTS.get(key)
    spec = obj.get("spec")
    if defaults is None or not isinstance(spec, dict):
        return obj
    spec = copy.deepcopy(spec)
    _fill(spec, defaults)
    if key == "deployments.apps" or key == "statefulsets.apps":
        spec.setdefault("replicas", 1)
    if key == "jobs.batch" and spec.get("completions") is None and spec.get("parallelism") is None:
        spec["completions"] = spec["parallelism"] = 1
    elif key == "jobs.batch":
        spec.setdefault("parallelism", 1)
    return {**obj, "spec": spec}
