"""Pick the device fit implementations: the compiled modules when built, else the Python twins.

`VC_SCHEDULER_PURE=1` forces the Python twins (for debugging and for the equivalence tests);
`VC_SCHEDULER_REQUIRE_NATIVE=1` makes a missing compiled module an import error (release checks).
vGPU: `fit.py` / `native/gpufit.pyx`; HAMi Ascend: `npufit.py` / `native/npufit.pyx`. Each pair
exposes the same `fit_nodes` function and constants. The vGPU register annotation's decoder:
`annotations.decode_vgpu_register` / `native/vgpureg.pyx`.
"""

from __future__ import annotations

from types import ModuleType

from scheduler._native import compiled, select
from scheduler.plugins.deviceshare import annotations as python_register
from scheduler.plugins.deviceshare import fit as python_fit
from scheduler.plugins.deviceshare import npufit as python_npufit


def native_module() -> ModuleType | None:
    """The compiled vGPU module if it was built, regardless of VC_SCHEDULER_PURE (for tests and bench)."""
    return compiled("gpufit")


def native_npu_module() -> ModuleType | None:
    """The compiled HAMi Ascend module if it was built, regardless of VC_SCHEDULER_PURE."""
    return compiled("npufit")


def native_register_module() -> ModuleType | None:
    """The compiled vGPU register decoder if it was built, regardless of VC_SCHEDULER_PURE."""
    return compiled("vgpureg")


fit_impl: ModuleType = select("gpufit", python_fit)
register_impl: ModuleType = select("vgpureg", python_register)
npu_fit_impl: ModuleType = select("npufit", python_npufit)
