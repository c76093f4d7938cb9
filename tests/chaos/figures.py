"""The rows the experiments record for the figures table (one module instance, whatever imports it)."""

from __future__ import annotations

from typing import Any

FIGURES: list[dict[str, Any]] = []


def record(**row: Any) -> None:
    FIGURES.append(row)
