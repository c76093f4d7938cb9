"""Host port conflicts, as kube-scheduler's NodePorts filter finds them.

Ports are (protocol, hostIP, port) with the model's defaults already applied (TCP, 0.0.0.0). A
wanted port conflicts with a used one of the same protocol and number when either side binds the
wildcard 0.0.0.0 or both bind the same IP. Port 0 (no host port) never conflicts.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

WILDCARD = "0.0.0.0"
PORTS_REASON = "node(s) didn't have free ports for the requested pod ports"

Port = tuple[str, str, int]


def conflicts(want: Port, used: Iterable[Port]) -> bool:
    proto, ip, port = want
    if port <= 0:
        return False
    for uproto, uip, uport in used:
        if uport == port and uproto == proto and (ip == WILDCARD or uip in (WILDCARD, ip)):
            return True
    return False


def ports_fit(wanted: list[Port], used: Mapping[Port, int], freed: Mapping[Port, int] | None = None) -> bool:
    """True when none of `wanted` clashes with `used` minus `freed` (pods evicted in the session)."""
    if not wanted or not used:
        return True
    live: Iterable[Port] = used
    if freed:
        live = [p for p, n in used.items() if n - freed.get(p, 0) > 0]
    return all(not conflicts(w, live) for w in wanted)
