"""The placement cache's scans over per-node answer codes: the pure-Python twin of `native/nodewindow.pyx`.

A shape's answers are kept as one code per node, aligned with the cache's node list (UNKNOWN, FIT,
REFUSED), so that finding the scan window (the first `want` fitting nodes from a rotating start,
wrapping) reads bytes instead of looking names up. Scan position `p` is node `(start + p) % total`.
The compiled module gives exactly these answers; `scheduler.framework.nodewindow_impl` picks one.
"""

from __future__ import annotations

from array import array
from typing import Any

UNKNOWN = 0
FIT = 1
REFUSED = 2


def window_stop(codes: bytearray, start: int, want: int, pos: int, found: int) -> tuple[int, int, bool]:
    """Read known answers from scan position `pos` (`found` fitting nodes before it) until the
    `want`-th fitting node, an unknown answer or the end of the ring. Returns (pos, found, done):
    done with `pos` the scan's end when the want-th fit or the ring's end was reached, else `pos`
    is the first unknown answer."""
    total = len(codes)
    while pos < total:
        c = codes[(start + pos) % total]
        if c == UNKNOWN:
            return pos, found, False
        pos += 1
        if c == FIT:
            found += 1
            if found >= want:
                return pos, found, True
    return pos, found, True


def to_ask(codes: bytearray, start: int, pos: int, need: int) -> list[int]:
    """The node indices whose unknown answers lie before the stop whatever they turn out to be: the
    unknown ones among the first `need` positions from `pos` not known to refuse, in scan order."""
    total = len(codes)
    out: list[int] = []
    while pos < total and need > 0:
        i = (start + pos) % total
        c = codes[i]
        if c != REFUSED:
            if c == UNKNOWN:
                out.append(i)
            need -= 1
        pos += 1
    return out


def window_nodes(
    codes: bytearray, start: int, end: int, nodes: list[Any]
) -> tuple[list[Any], list[int], list[int]]:
    """The fitting nodes of scan positions [0, end) in scan order, their indices, and the refused
    node indices."""
    total = len(codes)
    fits: list[Any] = []
    at: list[int] = []
    refused: list[int] = []
    for pos in range(end):
        i = (start + pos) % total
        if codes[i] == FIT:
            fits.append(nodes[i])
            at.append(i)
        else:
            refused.append(i)
    return fits, at, refused


def gather_scores(values: array, known: bytearray, at: list[int], out: array) -> list[int]:
    """out[k] = values[at[k]] where known; the k whose value is not known."""
    missing: list[int] = []
    for k, i in enumerate(at):
        if known[i]:
            out[k] = values[i]
        else:
            missing.append(k)
    return missing


def gather_flags(codes: bytearray, at: list[int], out: bytearray) -> list[int]:
    """out[k] = 1 where codes[at[k]] is FIT (else 0); the k whose code is UNKNOWN."""
    missing: list[int] = []
    for k, i in enumerate(at):
        c = codes[i]
        if c == UNKNOWN:
            missing.append(k)
        out[k] = 1 if c == FIT else 0
    return missing


def gather_scores_run(values: array, known: bytearray, start: int, out: array) -> list[int]:
    """gather_scores for the positions start, start + 1, ... around the ring (len(out) of them):
    a window where every node fits, whose positions need no list."""
    total = len(known)
    missing: list[int] = []
    for k in range(len(out)):
        i = (start + k) % total
        if known[i]:
            out[k] = values[i]
        else:
            missing.append(k)
    return missing


def gather_flags_run(codes: bytearray, start: int, out: bytearray) -> list[int]:
    """gather_flags for the positions start, start + 1, ... around the ring (len(out) of them)."""
    total = len(codes)
    missing: list[int] = []
    for k in range(len(out)):
        c = codes[(start + k) % total]
        if c == UNKNOWN:
            missing.append(k)
        out[k] = 1 if c == FIT else 0
    return missing


def _only(flags: bytearray) -> bool:
    """Whether some but not all positions are flagged (then only the flagged ones count)."""
    nflag = len(flags) - flags.count(0)
    return 0 < nflag < len(flags)


def top_indices(scores: array, flags: bytearray) -> list[int] | None:
    """The positions of the top score, in order, among those flagged when some but not all are
    flagged, else among all: what max, then == against it, give. None when the top is NaN (the
    caller decides on Python lists, where a NaN's identity matters)."""
    got = top_ties(scores, flags)
    if got is None:
        return None
    count, first, m, only = got
    if count == 0:
        return []
    return [i for i in range(first, len(scores)) if (not only or flags[i]) and scores[i] == m]


def top_ties(scores: array, flags: bytearray) -> tuple[int, int, float, bool] | None:
    """What top_indices finds, without listing it: (how many positions tie at the top, the first
    of them, the top, whether only flagged positions count); None when the top is NaN."""
    n = len(scores)
    only = _only(flags)
    m = 0.0
    first = -1
    count = 0
    for i in range(n):
        if only and not flags[i]:
            continue
        v = scores[i]
        if first < 0 or v > m:
            m, first, count = v, i, 1
        elif v == m:
            count += 1
    if first >= 0 and m != m:
        return None
    return count, first, m, only


def nth_tie(scores: array, flags: bytearray, top: float, only: bool, k: int) -> int:
    """The position of the k-th (from 0) tie at `top`, among the flagged positions if `only`."""
    for i in range(len(scores)):
        if (not only or flags[i]) and scores[i] == top:
            if k == 0:
                return i
            k -= 1
    raise IndexError(k)


def run_missing(codes: bytearray, known: bytearray, start: int, n: int) -> tuple[list[int], list[int]]:
    """For the run start, start + 1, ... (n positions round the ring): the node indices whose
    Idle-fit code is UNKNOWN and those whose score is not known, each in run order."""
    total = len(codes)
    fits: list[int] = []
    scores: list[int] = []
    for k in range(n):
        i = (start + k) % total
        if codes[i] == UNKNOWN:
            fits.append(i)
        if not known[i]:
            scores.append(i)
    return fits, scores


def _gathered_run(values: array, codes: bytearray, start: int, n: int) -> tuple[array, bytearray]:
    """The run's scores and Idle-fit flags gathered (every code known): what best() gathered."""
    scores = array("d", bytes(8 * n))
    gather_scores_run(values, bytearray([1]) * len(codes), start, scores)
    flags = bytearray(n)
    gather_flags_run(codes, start, flags)
    return scores, flags


def run_top(values: array, codes: bytearray, start: int, n: int) -> tuple[int, int, float, bool] | None:
    """top_ties over the run: the scores values[i] and the flags codes[i] == FIT of its positions
    (every code known), the first tie as its place in the run. The compiled module reads them in
    place; this twin gathers them, which is the definition."""
    return top_ties(*_gathered_run(values, codes, start, n))


def run_nth_tie(values: array, codes: bytearray, start: int, n: int, top: float, only: bool, k: int) -> int:
    """nth_tie over the run as run_top reads it: the place in the run of the k-th tie."""
    scores, flags = _gathered_run(values, codes, start, n)
    return nth_tie(scores, flags, top, only, k)


def forget(codes: bytearray, at: list[int]) -> None:
    """Set the answers at positions `at` back to UNKNOWN (repeats allowed; a position outside the
    codes is an IndexError, before or after the others are set)."""
    total = len(codes)
    for i in at:
        if not 0 <= i < total:
            raise IndexError(f"position {i} out of range")
        codes[i] = UNKNOWN


def take(nodes: list[Any], at: list[int]) -> list[Any]:
    """[nodes[i] for i in at] (a position outside the list is an IndexError; no negative indexing)."""
    total = len(nodes)
    for i in at:
        if not 0 <= i < total:
            raise IndexError(f"position {i} out of range")
    return [nodes[i] for i in at]


def settle(codes: bytearray, at: list[int], got: list[Any]) -> list[int]:
    """Write the answers `got` of the nodes at positions `at` (None: FIT, anything else: REFUSED)
    and return the places k in `got` of the refusals, in order (a position outside the codes is an
    IndexError, before or after the others are written)."""
    if len(got) != len(at):
        raise ValueError("at and got differ in length")
    total = len(codes)
    refused = []
    for k, (i, r) in enumerate(zip(at, got, strict=True)):
        if not 0 <= i < total:
            raise IndexError(f"position {i} out of range")
        if r is None:
            codes[i] = FIT
        else:
            codes[i] = REFUSED
            refused.append(k)
    return refused


def zeros_at(flags: bytearray, at: list[int]) -> list[int]:
    """The places k in `at` (in order) whose position's flag is 0 (a position outside the flags is
    an IndexError; no negative indexing)."""
    total = len(flags)
    out = []
    for k, i in enumerate(at):
        if not 0 <= i < total:
            raise IndexError(f"position {i} out of range")
        if not flags[i]:
            out.append(k)
    return out
