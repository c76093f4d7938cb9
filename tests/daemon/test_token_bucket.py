"""--kube-api-qps / --kube-api-burst: a burst goes out at once, then requests are spaced by 1/qps."""

from __future__ import annotations

import asyncio

import pytest

from scheduler.kube.client import TokenBucket


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def test_burst_is_free_then_requests_wait_one_over_qps() -> None:
    clock = Clock()
    b = TokenBucket(qps=10, burst=3, clock=clock)
    assert [b.reserve() for _ in range(3)] == [0.0, 0.0, 0.0]
    assert b.reserve() == pytest.approx(0.1)
    assert b.reserve() == pytest.approx(0.2)  # waiters queue up in arrival order


def test_tokens_refill_with_time_but_never_beyond_burst() -> None:
    clock = Clock()
    b = TokenBucket(qps=10, burst=2, clock=clock)
    b.reserve()
    b.reserve()
    clock.t += 0.1
    assert b.reserve() == pytest.approx(0.0, abs=1e-9)
    clock.t += 3600
    assert [b.reserve() for _ in range(2)] == [0.0, 0.0]
    assert b.reserve() > 0


def test_zero_qps_means_unlimited() -> None:
    b = TokenBucket(qps=0, burst=1)
    assert all(b.reserve() == 0.0 for _ in range(10_000))


async def test_acquire_paces_real_requests() -> None:
    b = TokenBucket(qps=50, burst=1)
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    for _ in range(6):
        await b.acquire()
    # one free, five spaced by 20 ms
    assert loop.time() - t0 >= 0.09
