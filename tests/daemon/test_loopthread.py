"""The one event-loop-on-a-thread the daemon uses for probes, the lease and early Bindings."""

from __future__ import annotations

import asyncio
import threading

import pytest

from scheduler.kube.loopthread import LoopThread


def test_main_runs_to_its_end_on_a_thread_of_its_own() -> None:
    seen: list[str] = []

    async def main() -> None:
        seen.append(threading.current_thread().name)

    lt = LoopThread("probe")
    lt.call_soon(lambda: seen.append("before start"))  # no loop yet: nothing happens
    lt.start(main)
    assert lt.join(5.0)
    assert seen == ["probe"]
    lt.call_soon(lambda: seen.append("after the end"))  # the loop is closed: harmless
    assert seen == ["probe"] and lt.loop is not None and lt.loop.is_closed()


def test_a_wake_from_another_thread_reaches_a_waiting_main() -> None:
    more = asyncio.Event()
    got: list[int] = []

    async def main() -> None:
        await more.wait()
        got.append(1)

    lt = LoopThread("waiter")
    lt.start(main)
    lt.call_soon(more.set)
    assert lt.join(5.0) and got == [1]


@pytest.mark.asyncio
async def test_a_forever_loop_answers_submits_and_stop_cancels_what_is_left() -> None:
    cancelled = threading.Event()

    async def forever() -> None:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    tasks: list[asyncio.Future[None]] = []

    async def started() -> str:
        tasks.append(asyncio.ensure_future(forever()))
        await asyncio.sleep(0)
        return threading.current_thread().name

    lt = LoopThread("server")
    lt.start()
    assert await lt.submit(started()) == "server"
    lt.stop()
    assert await lt.join_async(5.0)
    assert cancelled.is_set()  # as asyncio.run would: nothing is left pending on a closed loop


def test_a_failing_main_never_leaves_start_waiting() -> None:
    async def main() -> None:
        raise RuntimeError("boom")

    lt = LoopThread("failing")
    old = threading.excepthook
    errors: list[BaseException | None] = []
    threading.excepthook = lambda args: errors.append(args.exc_value)
    try:
        lt.start(main, wait=5.0)
        assert lt.join(5.0)
    finally:
        threading.excepthook = old
    assert [str(e) for e in errors] == ["boom"]
