"""Pick the device fit implementations: the compiled modules when built, else the Python twins.

`VC_SCHEDULER_PURE=1` forces the Python twins (for debugging and for the equivalence tests);
`VC_SCHEDULER_REQUIRE_NATIVE=1` makes a missing compiled module an import error (release checks).
vGPU: `fit.py` / `native/gpufit.pyx`; HAMi Ascend: `npufit.py` / `native/npufit.pyx`. Each pair
exposes the same `fit_nodes` function and constants.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType

from scheduler.plugins.deviceshare import fit as python_fit
from scheduler.plugins.deviceshare import npufit as python_npufit


def _compiled(name: str) -> ModuleType | None:
    try:
        return importlib.import_module(f"scheduler._native.{name}")
    except ImportError:
        return None


def _select(name: str, twin: ModuleType) -> ModuleType:
    if os.environ.get("VC_SCHEDULER_PURE", "") not in ("", "0"):
        return twin
    try:
        return importlib.import_module(f"scheduler._native.{name}")
    except ImportError as exc:
        if os.environ.get("VC_SCHEDULER_REQUIRE_NATIVE", "") not in ("", "0"):
            raise ImportError(
                f"VC_SCHEDULER_REQUIRE_NATIVE is set but the compiled module scheduler._native.{name} "
                f"is not installed ({exc}); build vc-scheduler with Cython and a C compiler"
            ) from exc
        return twin


def native_module() -> ModuleType | None:
    """The compiled vGPU module if it was built, regardless of VC_SCHEDULER_PURE (for tests and bench)."""
    return _compiled("gpufit")


def native_npu_module() -> ModuleType | None:
    """The compiled HAMi Ascend module if it was built, regardless of VC_SCHEDULER_PURE."""
    return _compiled("npufit")


fit_impl: ModuleType = _select("gpufit", python_fit)
npu_fit_impl: ModuleType = _select("npufit", python_npufit)
