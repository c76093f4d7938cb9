"""Fault injection: the misbehaviour of a real control plane, on demand, for tests.

Knobs (constructor arguments of `ApiServer`, attributes here, or `POST /sandbox/faults` JSON):
- `error_rate` (0..1) with `error_codes` (e.g. [429, 500]): that share of API requests (never
  `/sandbox/`, discovery or `/version`) fail with a Status; 429 carries `Retry-After`.
- `latency_ms`: every API request is delayed by this much.
- `close_watches_every` (seconds): watch streams end after that long, as a server restart or a
  load balancer would end them.
- `history_size`: shrink (or grow) the watch history ring of every resource.
- `expire_history` (write-only, true): forget all history now: every resume gets 410 Expired.
- `retry_after` (seconds): the Retry-After of injected 429s.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from scheduler.sim.apiserver.errors import ApiError, internal, too_many_requests

KNOBS = (
    "error_rate",
    "error_codes",
    "latency_ms",
    "close_watches_every",
    "retry_after",
    "history_size",
    "expire_history",
)


@dataclass
class FaultInjector:
    error_rate: float = 0.0
    error_codes: list[int] = field(default_factory=lambda: [500])
    latency_ms: float = 0.0
    close_watches_every: float | None = None
    retry_after: int = 1
    rng: random.Random = field(default_factory=random.Random, repr=False)
    injected: int = 0

    def maybe_error(self) -> ApiError | None:
        if self.error_rate <= 0 or self.rng.random() >= self.error_rate:
            return None
        self.injected += 1
        code = self.rng.choice(self.error_codes or [500])
        if code == 429:
            return too_many_requests(self.retry_after)
        if code == 500:
            return internal("injected fault")
        if code == 503:
            return ApiError(
                503,
                "ServiceUnavailable",
                "the server is currently unable to handle the request (injected)",
                headers={"Retry-After": str(self.retry_after)},
            )
        if code == 504:
            return ApiError(
                504, "Timeout", "the server was unable to return a response in the time allotted (injected)"
            )
        return ApiError(code, "InternalError", f"injected fault {code}")

    def watch_lifetime(self) -> float | None:
        return self.close_watches_every

    def to_dict(self) -> dict[str, Any]:
        return {
            "error_rate": self.error_rate,
            "error_codes": list(self.error_codes),
            "latency_ms": self.latency_ms,
            "close_watches_every": self.close_watches_every,
            "retry_after": self.retry_after,
            "injected": self.injected,
        }

    def configure(self, body: dict[str, Any]) -> None:
        """Set the knobs present in `body` (history knobs are applied by the server)."""
        unknown = sorted(set(body) - set(KNOBS))
        if unknown:
            raise ValueError(f"unknown fault knobs {unknown}; known: {list(KNOBS)}")
        if "error_rate" in body:
            rate = float(body["error_rate"])
            if not 0 <= rate <= 1:
                raise ValueError("error_rate must be between 0 and 1")
            self.error_rate = rate
        if "error_codes" in body:
            self.error_codes = [int(c) for c in body["error_codes"]]
        if "latency_ms" in body:
            self.latency_ms = max(0.0, float(body["latency_ms"]))
        if "close_watches_every" in body:
            v = body["close_watches_every"]
            self.close_watches_every = None if v in (None, 0) else float(v)
        if "retry_after" in body:
            self.retry_after = max(0, int(body["retry_after"]))

    def reset(self) -> None:
        self.error_rate = 0.0
        self.error_codes = [500]
        self.latency_ms = 0.0
        self.close_watches_every = None
