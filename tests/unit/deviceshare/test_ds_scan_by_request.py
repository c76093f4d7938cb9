"""ScanCache finds a request's scan by the request object (one-pod jobs of a few templates take
turns): the scan it finds must be the one its shape key names, on the table asked about."""

from __future__ import annotations

from dshelpers import A100_GEOMETRY, T4, pod, vgpu_limits, vgpu_node

from scheduler.plugins.deviceshare import annotations as ann
from scheduler.plugins.deviceshare.config import parse_device_config
from scheduler.plugins.deviceshare.requests import VgpuRequest, vgpu_request
from scheduler.plugins.deviceshare.vgpu import FIT, ScanCache, VgpuLedger, VgpuTable

CFG = parse_device_config(A100_GEOMETRY)
BINPACK = 1


def _table(n_nodes: int, devmem: int = 16384) -> tuple[VgpuTable, list[VgpuLedger]]:
    table = VgpuTable()
    leds = []
    for i in range(n_nodes):
        regs = [ann.RegisteredCard(f"GPU-{i}-{c}", 10, devmem, T4, True, "hami-core") for c in range(2)]
        led, _ = VgpuLedger.from_node(vgpu_node(f"n{i}", regs), CFG, table)
        assert led is not None
        leds.append(led)
    return table, leds


def _request(name: str, mem: int) -> VgpuRequest:
    r, err = vgpu_request(pod(name, vgpu_limits(1, mem)), CFG)
    assert r is not None, err
    return r


def _fill(led: VgpuLedger, req: VgpuRequest, uid: str) -> None:
    f = led.fit(req, BINPACK)
    assert f.ok
    led.add_pod(uid, req.group_key, led.segments(req, f.picks))


def _assert_answers_like_fit(
    cache: ScanCache, table: VgpuTable, leds: list[VgpuLedger], req: VgpuRequest
) -> None:
    codes, scores = cache.answers(table, req, BINPACK)
    for led in leds:
        f = led.fit(req, BINPACK)
        assert cache.node_fit(led, req, BINPACK) == (f.ok, f.reason, f.score if f.ok else 0.0)
        assert (codes[led.idx] == FIT) == f.ok
        if f.ok:
            assert scores[led.idx] == f.score


def test_the_same_request_on_a_new_table_is_scanned_there() -> None:
    """A request object met on one table (last session's) and asked about another: the answers
    are the new table's, not those of the scan found for that object before."""
    req, other = _request("a", 12000), _request("b", 1000)
    cache = ScanCache()
    old, old_leds = _table(3)
    _assert_answers_like_fit(cache, old, old_leds, req)
    _assert_answers_like_fit(cache, old, old_leds, other)  # `req` is no longer the last asked
    new, new_leds = _table(3)
    for i, led in enumerate(new_leds):  # every card of the new table too full for 12,000 MiB
        for k in range(4):
            _fill(led, _request(f"f{i}-{k}", 8000), f"f{i}-{k}")
    _assert_answers_like_fit(cache, new, new_leds, req)
    assert all(not led.fit(req, BINPACK).ok for led in new_leds)


def test_requests_taking_turns_read_their_own_scans_brought_up_to_date() -> None:
    """Two request objects of different sizes asked in turn, with a charge between asks: each
    finds its own scan, refitted where the charges fell."""
    table, leds = _table(20)
    small, big = _request("s", 1000), _request("b", 15000)
    cache = ScanCache()
    for k in range(12):
        req = small if k % 2 else big
        _assert_answers_like_fit(cache, table, leds, req)
        if leds[k].fit(big, BINPACK).ok:
            _fill(leds[k], big, f"p{k}")


def test_a_scan_that_left_the_cache_is_not_found_by_its_request() -> None:
    """More shapes than ScanCache keeps: the first request's scan leaves, and asking for it again
    makes a new one (the one its key names), with answers like the fit's."""
    table, leds = _table(4, devmem=32768)
    cache = ScanCache()
    reqs = [_request(f"r{i}", 100 + i) for i in range(ScanCache.LIMIT + 1)]
    for r in reqs:
        cache.answers(table, r, BINPACK)
    _fill(leds[1], reqs[0], "x")
    _assert_answers_like_fit(cache, table, leds, reqs[0])
    for r, scan in cache._by_req.values():
        assert cache._scans[cache._key(r, BINPACK)] is scan
