"""Pick nodeorder's many-node resource score: `scheduler._native.cpumemscore` when built, else the
Python twin `cpumemscore.py` (`VC_SCHEDULER_PURE` / `VC_SCHEDULER_REQUIRE_NATIVE` as for every
compiled path, see `scheduler._native`)."""

from __future__ import annotations

from types import ModuleType

from scheduler._native import compiled, select
from scheduler.plugins.k8s import cpumemscore as python_scores


def native_module() -> ModuleType | None:
    """The compiled module if it was built, whatever VC_SCHEDULER_PURE says (for tests and bench)."""
    return compiled("cpumemscore")


scores_impl: ModuleType = select("cpumemscore", python_scores)
