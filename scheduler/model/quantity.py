"""Kubernetes quantities: the API server's grammar, parsed exactly, and the unit the decision core
holds each resource name in (milli-CPU, bytes, milli-units of scalar resources)."""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

CPU = "cpu"
MEMORY = "memory"
PODS = "pods"
# the names Resource holds in attributes of their own, not in `scalars`
FIXED_NAMES = frozenset((CPU, MEMORY, PODS))
EPHEMERAL_STORAGE = "ephemeral-storage"

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "": Decimal(1),
    "k": Decimal("1e3"),
    "M": Decimal("1e6"),
    "G": Decimal("1e9"),
    "T": Decimal("1e12"),
    "P": Decimal("1e15"),
    "E": Decimal("1e18"),
}
# The API server's grammar: sign, digits with an optional fraction, then a binary suffix, a decimal
# suffix or a decimal exponent (e/E followed by a signed integer).
_QUANTITY = re.compile(
    r"^(?P<num>[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))"
    r"(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?[0-9]+)?$"
)


class QuantityError(ValueError):
    """A quantity string the Kubernetes API would refuse."""


def parse_quantity(value: object) -> Decimal:
    """Parse a Kubernetes quantity ("100m", "1.5Gi", "1e3", 2) into an exact Decimal."""
    if isinstance(value, bool):
        raise QuantityError(f"quantity must be a string or number, got {value!r}")
    if isinstance(value, int):
        return _in_range(Decimal(value), value)
    if isinstance(value, float):
        return _in_range(Decimal(repr(value)), value)
    if not isinstance(value, str):
        raise QuantityError(f"quantity must be a string or number, got {type(value).__name__}")
    text = value.strip()
    match = _QUANTITY.match(text)
    if not match:
        raise QuantityError(f"quantities must match the regular expression of the API, got {value!r}")
    try:
        number = Decimal(match.group("num"))
    except InvalidOperation as exc:  # pragma: no cover - the regex already guards this
        raise QuantityError(f"invalid quantity {value!r}") from exc
    suffix = match.group("suffix") or ""
    if suffix in _BINARY:
        q = number * _BINARY[suffix]
    elif suffix in _DECIMAL:
        q = number * _DECIMAL[suffix]
    elif abs(int(suffix[1:])) > QUANTITY_MAX_EXPONENT:  # 1e999999999 would take Decimal minutes
        raise QuantityError(f"quantity {value!r} is out of range")
    else:
        q = number * (Decimal(10) ** int(suffix[1:]))
    return _in_range(q, value)


# Kubernetes counts with quantities as int64 (Value, MilliValue): a larger one is no real capacity
# or request, and must not reach 64-bit code as one.
QUANTITY_MAX = Decimal(2**63 - 1)
QUANTITY_MAX_EXPONENT = 30


def _in_range(q: Decimal, value: object) -> Decimal:
    if not q.is_finite() or abs(q) > QUANTITY_MAX:
        raise QuantityError(f"quantity {value!r} is out of range (at most {QUANTITY_MAX:.4g})")
    return q


def quantity_in_unit(name: str, value: object) -> float:
    """A quantity in the unit the core uses for that resource name (milli-CPU, bytes, milli-units)."""
    q = parse_quantity(value)
    if name in (MEMORY, EPHEMERAL_STORAGE) or name.startswith("hugepages-"):
        return float(q)
    if name == PODS:
        return float(q)
    # cpu and every scalar resource are held in milli-units
    return float(q * 1000)


def format_quantity(name: str, value: float) -> str:
    """Render a core value back as a Kubernetes quantity string (for status fields)."""
    if name == CPU:
        if value % 1000 == 0:
            return str(int(value // 1000))
        return f"{round(value)}m"
    if name in (MEMORY, EPHEMERAL_STORAGE, PODS) or name.startswith("hugepages-"):
        return str(round(value))
    if value % 1000 == 0:
        return str(int(value // 1000))
    return f"{round(value)}m"
