"""Pick allocate's many-node resource checks: `scheduler._native.resfit` when built, else the
Python twin `resfit.py`.

`VC_SCHEDULER_PURE=1` forces the twin; `VC_SCHEDULER_REQUIRE_NATIVE=1` makes a missing compiled
module an import error (release checks), as for the placement window (framework/nodewindow_impl.py).
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType

from scheduler.model import resfit as python_resfit


def _flag(name: str) -> bool:
    return os.environ.get(name, "") not in ("", "0")


def native_module() -> ModuleType | None:
    """The compiled module if it was built, whatever VC_SCHEDULER_PURE says (for tests and bench)."""
    try:
        return importlib.import_module("scheduler._native.resfit")
    except ImportError:
        return None


def _select() -> ModuleType:
    if _flag("VC_SCHEDULER_PURE"):
        return python_resfit
    compiled = native_module()
    if compiled is None:
        if _flag("VC_SCHEDULER_REQUIRE_NATIVE"):
            raise ImportError(
                "VC_SCHEDULER_REQUIRE_NATIVE is set but the compiled module scheduler._native.resfit "
                "is not installed; build vc-scheduler with Cython and a C compiler"
            )
        return python_resfit
    return compiled


resfit_impl: ModuleType = _select()
