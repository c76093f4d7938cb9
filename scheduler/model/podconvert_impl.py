"""Pick the conversion of pods for the cluster cache: `scheduler._native.podconvert` when built,
else its Python twin `convert.pod_to_task` (`VC_SCHEDULER_PURE` / `VC_SCHEDULER_REQUIRE_NATIVE` as
for every compiled path, see `scheduler._native`)."""

from __future__ import annotations

from types import ModuleType

from scheduler._native import compiled, select
from scheduler.model import convert as python_convert


def native_module() -> ModuleType | None:
    """The compiled module if it was built, whatever VC_SCHEDULER_PURE says (for tests and bench)."""
    return compiled("podconvert")


convert_impl: ModuleType = select("podconvert", python_convert)
