"""Allocate's resource checks over many nodes at once (Python twin of native/resfit.pyx).

The placement cache asks them for every node a task shape has not seen: a pod's InitResreq
against each node's FutureIdle (the resource predicate) and against its Idle (the Idle-fit
preference). The compiled module gives the same answers from C doubles; these are the
Resource methods themselves.
"""

from __future__ import annotations

from typing import Protocol

from scheduler.model.resources import Resource


class HasResources(Protocol):
    idle: Resource
    releasing: Resource
    pipelined: Resource


def misfits(req: Resource, nodes: list[HasResources]) -> list[int]:
    """Positions of the nodes whose FutureIdle `req` does not fit (Resource.fits_future), in order."""
    fits = req.fits_future
    return [i for i, n in enumerate(nodes) if not fits(n.idle, n.releasing, n.pipelined)]


def idle_fits(req: Resource, nodes: list[HasResources]) -> list[bool]:
    """Whether `req` fits each node's Idle (Resource.less_equal), in order."""
    le = req.less_equal
    return [le(n.idle) for n in nodes]


def misfits_idle(
    req: Resource, nodes: list[HasResources], at: list[int], codes: bytearray, fit: int, refused: int
) -> list[int]:
    """misfits(req, nodes), and whether `req` fits each node's Idle (idle_fits) written as `fit`
    or `refused` to codes[at[k]] for the k-th node: both answers for the same nodes at once."""
    if len(at) != len(nodes):
        raise ValueError("at and nodes differ in length")
    for i, f in zip(at, idle_fits(req, nodes), strict=True):
        codes[i] = fit if f else refused
    return misfits(req, nodes)
