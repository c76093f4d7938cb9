"""Compiled hot paths built from native/*.pyx (absent when built without a compiler), and how the
core picks each one or its pure-Python twin.

`VC_SCHEDULER_PURE=1` forces the twins (for debugging and for the equivalence tests);
`VC_SCHEDULER_REQUIRE_NATIVE=1` makes a missing compiled module an import error (release checks).
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType


def _flag(name: str) -> bool:
    return os.environ.get(name, "") not in ("", "0")


def compiled(name: str) -> ModuleType | None:
    """The compiled module `name` if it was built, whatever VC_SCHEDULER_PURE says (tests, bench)."""
    try:
        return importlib.import_module(f"{__name__}.{name}")
    except ImportError:
        return None


def select(name: str, twin: ModuleType) -> ModuleType:
    """The compiled module `name`, or its pure-Python `twin` when forced or not built."""
    if _flag("VC_SCHEDULER_PURE"):
        return twin
    try:
        return importlib.import_module(f"{__name__}.{name}")
    except ImportError as exc:
        if _flag("VC_SCHEDULER_REQUIRE_NATIVE"):
            raise ImportError(
                f"VC_SCHEDULER_REQUIRE_NATIVE is set but the compiled module {__name__}.{name} "
                f"is not installed ({exc}); build vc-scheduler with Cython and a C compiler"
            ) from exc
        return twin
