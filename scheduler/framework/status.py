"""Outcomes of predicates and device allocation, in Kubernetes' vocabulary.

A predicate answers `None` (fits) or an `Unfit`. `resolvable` says whether evicting pods could
cure it (Kubernetes' Unschedulable) or not (UnschedulableAndUnresolvable: selectors, taints...);
preempt and reclaim skip only the unresolvable nodes.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Unfit:
    reason: str
    resolvable: bool = True

    def __str__(self) -> str:
        return self.reason


def unresolvable(reason: str) -> Unfit:
    return Unfit(reason, resolvable=False)


class AllocateError(Exception):
    """An allocate event handler refused the placement (e.g. the device no longer fits)."""
