"""Numbers in pending reasons: which resource, how much is asked, how much there is.

Volcano's messages ("queue resource quota insufficient", "resource in cluster is overused") name
neither the resource nor the amounts; users grep for those prefixes, so they stay and the numbers
are appended after a colon. `can never fit` says the request alone exceeds a hard limit (the
queue's capability, the cluster times the overcommit factor); `must wait` that it fits once
others release what they hold.
"""

from __future__ import annotations

from scheduler.model.resources import CPU, MEMORY, Resource

NEVER = "can never fit"
WAIT = "must wait"


def human(name: str, value: float) -> str:
    """A core value as a person reads it: cores, Gi/Mi of memory, plain counts for scalars."""
    if value == float("inf"):
        return "unlimited"
    if name == CPU:
        cores = value / 1000
        return f"{cores:g}" if cores >= 1 or cores == 0 else f"{value:g}m"
    if name == MEMORY:
        for unit, size in (("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)):
            if abs(value) >= size:
                return f"{value / size:.3g}{unit}"
        return f"{value:g}"
    return f"{value / 1000:g}"  # scalars are kept in milli-units


def short_dimensions(need: Resource, limit: Resource, req: Resource) -> list[str]:
    """Dimensions where `need` exceeds `limit`, among those `req` asks for."""
    out = []
    for name, want in req.items():
        if want <= 0:
            continue
        if need.get(name) > limit.get(name) + 0.1:
            out.append(name)
    return out


def explain_sum(
    req: Resource,
    terms: list[tuple[str, Resource]],
    limit: tuple[str, Resource],
    hard: Resource | None = None,
) -> str:
    """`cpu: minResources 6 + allocated 2 > capability 4; can never fit` for each short dimension.

    `terms` add up to what is needed (a negative contribution is written as `- name value`);
    `hard` is the limit the request alone is compared with to tell NEVER from WAIT (default: the
    limit itself).
    """
    total = Resource()
    for _label, r in terms:
        total.add(r)
    names = short_dimensions(total, limit[1], req) or [n for n, v in req.items() if v > 0][:1]
    parts = []
    for name in names:
        expr = ""
        for i, (label, r) in enumerate(terms):
            v = r.get(name)
            if i and v == 0 and label != terms[0][0]:
                continue
            sign = "" if i == 0 else (" - " if v < 0 else " + ")
            expr += f"{sign}{label} {human(name, abs(v))}"
        parts.append(f"{name}: {expr} > {limit[0]} {human(name, limit[1].get(name))}")
    never = short_dimensions(req, hard if hard is not None else limit[1], req)
    verdict = f"{NEVER} ({', '.join(never)})" if never else WAIT
    return f"{'; '.join(parts)}; {verdict}"
