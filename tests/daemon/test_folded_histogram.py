"""FoldedHistogram reads exactly as prometheus_client's Histogram, whenever it is read."""

from __future__ import annotations

import math
import random
import threading

import pytest
from prometheus_client import CollectorRegistry, Histogram

import scheduler.metrics as metrics
from scheduler.metrics import FoldedHistogram, exponential_buckets_range

BUCKETS = exponential_buckets_range(1, 5000, 20)


def _samples(registry: CollectorRegistry) -> list[tuple[str, dict[str, str], float]]:
    return [(s.name, s.labels, s.value) for m in registry.collect() for s in m.samples]


def _pair() -> tuple[Histogram, FoldedHistogram, CollectorRegistry, CollectorRegistry]:
    r1, r2 = CollectorRegistry(), CollectorRegistry()
    plain = Histogram("x_ms", "doc", ["stage"], registry=r1, buckets=BUCKETS)
    folded = FoldedHistogram("x_ms", "doc", ["stage"], registry=r2, buckets=BUCKETS)
    return plain, folded, r1, r2


@pytest.mark.parametrize("fold_at", [1, 7, 4096])
def test_every_sample_equals_histogram_read_at_any_point(
    fold_at: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(metrics, "FOLD_AT", fold_at)
    plain, folded, r1, r2 = _pair()
    rng = random.Random(7)
    edges = [0.0, -3.0, 1.0, 5000.0, 4999.999, 1e12, BUCKETS[5], math.nextafter(BUCKETS[5], math.inf)]
    values = [rng.expovariate(0.002) for _ in range(3000)] + edges
    for n, v in enumerate(values):
        stage = "Watched" if n % 3 else "Bound"
        plain.labels(stage).observe(v)
        folded.labels(stage).observe(v)
        if n % 997 == 0:  # a scrape in between folds what waits
            assert _samples(r2) == _samples(r1)
    # the sum is added in the order observed: equal to the last bit, not only approximately
    assert _samples(r2) == _samples(r1)


def test_nan_and_infinity_fall_where_histogram_puts_them() -> None:
    plain, folded, r1, r2 = _pair()
    for v in (1.0, math.inf, float("nan")):
        plain.labels("a").observe(v)
        folded.labels("a").observe(v)
    s1, s2 = _samples(r1), _samples(r2)
    assert [(n, lab) for n, lab, _ in s1] == [(n, lab) for n, lab, _ in s2]
    assert [v for _, _, v in s1 if v == v] == [v for _, _, v in s2 if v == v]


def test_observations_from_many_threads_are_all_counted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(metrics, "FOLD_AT", 50)
    registry = CollectorRegistry()
    h = FoldedHistogram("y_ms", "doc", registry=registry, buckets=BUCKETS)

    def observe() -> None:
        for i in range(5000):
            h.observe(float(i % 100))

    threads = [threading.Thread(target=observe) for _ in range(4)]
    for t in threads:
        t.start()
    for _ in range(20):
        _samples(registry)  # scrapes while the threads observe
    for t in threads:
        t.join()
    assert registry.get_sample_value("y_ms_count") == 20000
    assert registry.get_sample_value("y_ms_sum") == 4 * 50 * sum(range(100))


def test_the_parent_of_labelled_series_refuses_observations_as_histogram_does() -> None:
    _, folded, _, _ = _pair()
    with pytest.raises(ValueError, match="missing label values"):
        folded.observe(1.0)
