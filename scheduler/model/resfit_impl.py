"""Pick allocate's many-node resource checks: `scheduler._native.resfit` when built, else the
Python twin `resfit.py` (`VC_SCHEDULER_PURE` / `VC_SCHEDULER_REQUIRE_NATIVE` as for every compiled
path, see `scheduler._native`)."""

from __future__ import annotations

from types import ModuleType

from scheduler._native import compiled, select
from scheduler.model import resfit as python_resfit


def native_module() -> ModuleType | None:
    """The compiled module if it was built, whatever VC_SCHEDULER_PURE says (for tests and bench)."""
    return compiled("resfit")


resfit_impl: ModuleType = select("resfit", python_resfit)
