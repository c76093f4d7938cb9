"""Allocate's resource checks over many nodes at once (Python twin of native/resfit.pyx).

The placement cache asks them for every node a task shape has not seen: a pod's InitResreq
against each node's FutureIdle (the resource predicate) and against its Idle (the Idle-fit
preference). The compiled module gives the same answers from C doubles; these are the
Resource methods themselves.
"""

from __future__ import annotations

from array import array
from typing import Protocol

from scheduler.model.resources import EPSILON, Resource

# the compiled module reads a request of at most this many scalars from C doubles (as here)
MAX_SCALARS = 16


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


# -- rows: the nodes' values as one array of doubles ---------------------------------------------
# A node's row is [Idle cpu, Idle memory, FutureIdle cpu, FutureIdle memory, then per scalar key
# Idle and FutureIdle] (see ResourceRows); the compiled module reads them instead of each node's
# Resources. Here the arithmetic is the same Python float arithmetic Resource does.


def _exact(*vs: object) -> bool:
    return all(type(v) is float for v in vs)


def _le(lv: float, rv: float) -> bool:
    return lv < rv or abs(lv - rv) < EPSILON


def rows_fill(
    values: array, ok: bytearray, stride: int, keys: list[str], nodes: list[HasResources], at: list[int]
) -> None:
    """Write the rows of `nodes` (the k-th to row at[k]); ok[row] = 0 where some value read is not
    an exact float (the checks then ask the node's Resources)."""
    if len(at) != len(nodes):
        raise ValueError("at and nodes differ in length")
    if stride != 4 + 2 * len(keys):
        raise ValueError("stride does not match the keys")
    for p, n in zip(at, nodes, strict=True):
        if p < 0 or p >= len(ok) or (p + 1) * stride > len(values):
            raise IndexError(f"row {p} out of range")
        idle, rel, pip = n.idle, n.releasing, n.pipelined
        ic, im, rc, rm, pc, pm = (
            idle.milli_cpu,
            idle.memory,
            rel.milli_cpu,
            rel.memory,
            pip.milli_cpu,
            pip.memory,
        )
        good = _exact(ic, im, rc, rm, pc, pm)
        b = p * stride
        if good:
            values[b : b + 4] = array("d", (ic, im, ic + rc - pc, im + rm - pm))
        if good and keys:
            i_s, r_s, p_s = idle.scalars, rel.scalars, pip.scalars
            if not (type(i_s) is dict and type(r_s) is dict and type(p_s) is dict):
                good = False
            else:
                for j, key in enumerate(keys):
                    a, r, c = i_s.get(key, 0.0), r_s.get(key, 0.0), p_s.get(key, 0.0)
                    if not _exact(a, r, c):
                        good = False
                        break
                    values[b + 4 + 2 * j] = a
                    values[b + 5 + 2 * j] = a + r - c
        ok[p] = 1 if good else 0


def rows_refill(
    values: array,
    ok: bytearray,
    stride: int,
    keys: list[str],
    row_nodes: list[HasResources],
    stale: list[int],
) -> None:
    """rows_fill(values, ok, stride, keys, [row_nodes[i] for i in stale], stale), then `stale`
    emptied: the rows of the nodes changed since the last check, written before the next one."""
    if stride != 4 + 2 * len(keys):
        raise ValueError("stride does not match the keys")
    for p in stale:
        if not 0 <= p < len(row_nodes):
            raise IndexError(f"row {p} out of range")
    rows_fill(values, ok, stride, keys, [row_nodes[p] for p in stale], stale)
    del stale[:]


def rows_misfits_idle(
    req: Resource,
    values: array,
    ok: bytearray,
    stride: int,
    keys: dict[str, int],
    nodes: list[HasResources],
    at: list[int],
    codes: bytearray,
    fit: int,
    refused: int,
) -> list[int]:
    """misfits_idle(req, nodes, at, codes, fit, refused) read from the rows at `at` (row at[k] is
    the k-th node's, filled by rows_fill; `keys` maps each scalar key to its index in the row's
    scalars and holds every key `req` asks)."""
    if len(at) != len(nodes):
        raise ValueError("at and nodes differ in length")
    rs = req.scalars
    if not (
        _exact(req.milli_cpu, req.memory)
        and type(rs) is dict
        and len(rs) <= MAX_SCALARS
        and _exact(*rs.values())
    ):
        return misfits_idle(req, nodes, at, codes, fit, refused)
    cols = [(4 + 2 * keys[k], lv) for k, lv in rs.items()]
    for col, _ in cols:
        if col + 1 >= stride:
            raise IndexError("scalar out of the rows")
    cpu, mem = req.milli_cpu, req.memory
    out: list[int] = []
    for k, p in enumerate(at):
        if p < 0 or p >= len(ok) or p >= len(codes) or (p + 1) * stride > len(values):
            raise IndexError(f"row {p} out of range")
        if ok[p]:
            b = p * stride
            le = (
                _le(cpu, values[b])
                and _le(mem, values[b + 1])
                and all(_le(lv, values[b + c]) for c, lv in cols)
            )
            ff = (
                _le(cpu, values[b + 2])
                and _le(mem, values[b + 3])
                and all(_le(lv, values[b + c + 1]) for c, lv in cols)
            )
        else:
            n = nodes[k]
            ff = req.fits_future(n.idle, n.releasing, n.pipelined)
            le = req.less_equal(n.idle)
        if not ff:
            out.append(k)
        codes[p] = fit if le else refused
    return out
