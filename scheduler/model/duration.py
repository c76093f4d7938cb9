"""Go's duration syntax (`1m30s`, `500ms`), read by the daemon's flags and by the sla plugin."""

from __future__ import annotations

import re

_DURATION_UNITS = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,
    "μs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
}
_DURATION_RE = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")


def parse_duration(text: str) -> float:
    """Go's time.ParseDuration (`1s`, `500ms`, `1m30s`, `1.5h`, `0`) in seconds."""
    s = text.strip()
    sign = -1.0 if s.startswith("-") else 1.0
    body = s.lstrip("+-")
    if body == "0":
        return 0.0
    if not body:
        raise ValueError(f"invalid duration {text!r}")
    pos, total = 0, 0.0
    while pos < len(body):
        m = _DURATION_RE.match(body, pos)
        if m is None:
            if re.fullmatch(r"\d+(\.\d*)?", body[pos:]):
                raise ValueError(f"missing unit in duration {text!r} (e.g. {body}s)")
            raise ValueError(f"invalid duration {text!r} (use Go syntax: 1s, 500ms, 1m30s)")
        total += float(m.group(1)) * _DURATION_UNITS[m.group(2)]
        pos = m.end()
    return sign * total
