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


async def test_events_and_podgroup_writes_never_take_the_bindings_tokens(tmp_path: object) -> None:
    """As Volcano's separate clientsets: core, Volcano CRDs, events and the lease each have a bucket."""
    from kubernetes_asyncio import client as k8s

    from scheduler.kube.client import ClientOptions, KubeClient

    cfg = k8s.Configuration()
    cfg.host = "http://127.0.0.1:1"
    c = KubeClient(k8s.ApiClient(configuration=cfg), ClientOptions(qps=10, burst=2))
    try:
        binding = c.bucket_for("/api/v1/namespaces/ns/pods/p/binding")
        events = c.bucket_for("/api/v1/namespaces/ns/events")
        assert c.bucket_for("/api/v1/namespaces/ns/events/p.1") is events
        for bucket in (
            events,
            c.bucket_for("/apis/scheduling.volcano.sh/v1beta1/namespaces/ns/podgroups/pg/status"),
            c.bucket_for("/apis/coordination.k8s.io/v1/namespaces/volcano-system/leases/volcano"),
        ):
            assert [bucket.reserve() for _ in range(3)][-1] > 0  # this one's burst is spent
        assert c.bucket_for("/api/v1/namespaces/ns/pods/events") is binding  # a pod named "events"
        assert [binding.reserve() for _ in range(2)] == [0.0, 0.0]  # the Bindings' burst is whole
        assert binding.reserve() > 0
    finally:
        await c.close()
