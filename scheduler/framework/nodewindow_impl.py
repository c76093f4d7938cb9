"""Pick the placement window scans: `scheduler._native.nodewindow` when built, else the Python twin
(`VC_SCHEDULER_PURE` / `VC_SCHEDULER_REQUIRE_NATIVE` as for every compiled path, see
`scheduler._native`)."""

from __future__ import annotations

from types import ModuleType

from scheduler._native import compiled, select
from scheduler.framework import nodewindow as python_window


def native_module() -> ModuleType | None:
    """The compiled module if it was built, whatever VC_SCHEDULER_PURE says (for tests and bench)."""
    return compiled("nodewindow")


window_impl: ModuleType = select("nodewindow", python_window)
