"""Pick the vGPU fit implementation: the compiled module when built, else the Python twin.

`VC_SCHEDULER_PURE=1` forces the Python twin (for debugging and for the equivalence tests);
`VC_SCHEDULER_REQUIRE_NATIVE=1` makes a missing compiled module an import error (release checks).
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
    except ImportError as exc:
        if os.environ.get("VC_SCHEDULER_REQUIRE_NATIVE", "") not in ("", "0"):
            raise ImportError(
                "VC_SCHEDULER_REQUIRE_NATIVE is set but the compiled module scheduler._native.gpufit "
                f"is not installed ({exc}); build vc-scheduler with Cython and a C compiler"
            ) from exc
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
