"""Kubernetes quantities and the Resource vector the decision core computes with.

A Resource holds CPU in millicores, memory in bytes and every other resource ("scalar") in
milli-units (quantity x 1000), as Volcano does, so that fractional extended resources compare
exactly. The `pods` dimension is kept apart (it is a count, checked by predicates) and ignored by
comparisons. Comparisons use Volcano's tolerance of 0.1 in the unit of the dimension.

`Resource` is the compiled class of `native/resourcevec.pyx` when it was built, else its pure
twin `scheduler.model.resourcevec.Resource` (`VC_SCHEDULER_PURE` / `VC_SCHEDULER_REQUIRE_NATIVE`
as for every compiled path, see `scheduler._native`): both do the same float operations in the
same order. The quantity grammar lives in `scheduler.model.quantity`; its names are here too.
"""

from __future__ import annotations

from types import ModuleType

from scheduler._native import compiled, select
from scheduler.model import resourcevec as python_resourcevec
from scheduler.model.quantity import (
    CPU,
    EPHEMERAL_STORAGE,
    FIXED_NAMES,
    MEMORY,
    PODS,
    QUANTITY_MAX,
    QUANTITY_MAX_EXPONENT,
    QuantityError,
    format_quantity,
    parse_quantity,
    quantity_in_unit,
)
from scheduler.model.resourcevec import EPSILON, Infinity

__all__ = [
    "CPU",
    "EPHEMERAL_STORAGE",
    "EPSILON",
    "FIXED_NAMES",
    "MEMORY",
    "PODS",
    "QUANTITY_MAX",
    "QUANTITY_MAX_EXPONENT",
    "Infinity",
    "PyResource",
    "QuantityError",
    "Resource",
    "empty",
    "format_quantity",
    "native_module",
    "parse_quantity",
    "quantity_in_unit",
]

# the pure-Python class, whichever one `Resource` is (equivalence tests, podconvert's slot reads)
PyResource = python_resourcevec.Resource


def native_module() -> ModuleType | None:
    """The compiled module if it was built, whatever VC_SCHEDULER_PURE says (for tests and bench)."""
    return compiled("resourcevec")


Resource: type[PyResource] = select("resourcevec", python_resourcevec).Resource


def empty() -> Resource:
    return Resource()
