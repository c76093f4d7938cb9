"""When the next session starts: the period, or soon after new pods arrive (scheduler/pacing.py)."""

from __future__ import annotations

import asyncio

from scheduler.pacing import MAX_DELAY_S, Pacer


async def _pause_with_arrivals(pacer: Pacer, arrivals: list[float]) -> float:
    """How long `pause` lasts when pods are watched at the given offsets (seconds)."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for at in arrivals:
        loop.call_later(at, pacer.arrived.set)
    t0 = loop.time()
    await pacer.pause((stop,))
    return loop.time() - t0


async def test_without_new_pods_the_session_waits_for_the_period() -> None:
    took = await _pause_with_arrivals(Pacer(0.5), [])
    assert took >= 0.45


async def test_a_new_pod_starts_the_session_long_before_the_period_ends() -> None:
    pacer = Pacer(5.0)
    took = await _pause_with_arrivals(pacer, [0.05])
    assert took < 1.0
    assert pacer.early == 1


async def test_a_stream_of_new_pods_is_waited_for_until_it_pauses_but_not_forever() -> None:
    # a pod every 10 ms for 2 s: the stream never pauses, the cap starts the session anyway
    took = await _pause_with_arrivals(Pacer(5.0), [0.01 * i for i in range(1, 200)])
    assert MAX_DELAY_S <= took < 1.0


async def test_a_long_last_session_keeps_the_next_one_away() -> None:
    pacer = Pacer(5.0)
    pacer.last_session_s = 0.8  # sessions may take at most two thirds of the loop
    took = await _pause_with_arrivals(pacer, [0.01])
    assert 0.38 <= took < 1.0  # half the last session, not twice it


async def test_volcano_fixed_period_ignores_arrivals() -> None:
    pacer = Pacer(0.5, on_arrival=False)
    took = await _pause_with_arrivals(pacer, [0.01, 0.02])
    assert took >= 0.45
    assert pacer.early == 0


async def test_pods_watched_before_the_pause_were_in_the_last_session() -> None:
    pacer = Pacer(0.5)
    pacer.arrived.set()  # watched before the session that just ended
    took = await _pause_with_arrivals(pacer, [])
    assert took >= 0.45


async def test_stop_ends_the_wait_at_once() -> None:
    pacer = Pacer(5.0)
    stop = asyncio.Event()
    asyncio.get_running_loop().call_later(0.05, stop.set)
    await asyncio.wait_for(pacer.pause((stop,)), 1.0)


async def test_the_next_session_waits_for_the_last_ones_bindings() -> None:
    loop = asyncio.get_running_loop()
    pacer = Pacer(0.3)
    settled = asyncio.Event()
    loop.call_later(0.5, settled.set)  # after the period, before the period and one more
    t0 = loop.time()
    await pacer.pause((asyncio.Event(),), settled)
    assert 0.45 <= loop.time() - t0 < 0.58  # woken when the last Binding is answered, not later
    assert pacer.held == 1


async def test_bindings_that_never_finish_hold_the_session_one_more_period_at_most() -> None:
    loop = asyncio.get_running_loop()
    pacer = Pacer(0.2)
    t0 = loop.time()
    await asyncio.wait_for(pacer.pause((asyncio.Event(),), asyncio.Event()), 2.0)
    assert 0.35 <= loop.time() - t0 < 1.5
