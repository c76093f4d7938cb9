"""Pick the vGPU fit implementation: the compiled module when built, else the Python twin.

`VC_SCHEDULER_PURE=1` forces the Python twin (for debugging and for the equivalence tests).
Both modules expose the same `fit_nodes` function and constants; see `fit.py`.
"""

from __future__ import annotations

import os
from types import ModuleType

from scheduler.plugins.deviceshare import fit as python_fit


def _select() -> ModuleType:
    if os.environ.get("VC_SCHEDULER_PURE", "") not in ("", "0"):
        return python_fit
    try:
        from scheduler._native import gpufit  # type: ignore[attr-defined]
    except ImportError:
        return python_fit
    return gpufit


def native_module() -> ModuleType | None:
    """The compiled module if it was built, regardless of VC_SCHEDULER_PURE (for tests and bench)."""
    try:
        from scheduler._native import gpufit  # type: ignore[attr-defined]
    except ImportError:
        return None
    return gpufit


fit_impl: ModuleType = _select()
