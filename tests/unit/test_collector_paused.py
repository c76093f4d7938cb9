"""run_session pauses the cyclic garbage collector while it runs, and leaves it as it found it."""

from __future__ import annotations

import gc

import pytest

from scheduler.framework import cycle
from scheduler.framework.cycle import collector_paused, run_session
from scheduler.model.cluster import ClusterState
from scheduler.registry import default_configuration
from tests.builders import node, pod


@pytest.fixture(autouse=True)
def _restore_collector():  # type: ignore[no-untyped-def]
    was = gc.isenabled()
    yield
    if was:
        gc.enable()
    else:
        gc.disable()


def test_the_collector_is_off_inside_and_on_again_after_even_on_error() -> None:
    gc.enable()
    with collector_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(RuntimeError), collector_paused():
        raise RuntimeError("a plugin bug")
    assert gc.isenabled()


def test_a_caller_that_had_it_off_keeps_it_off() -> None:
    gc.disable()
    with collector_paused():
        assert not gc.isenabled()
    assert not gc.isenabled()


def test_a_session_runs_with_the_collector_off(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[bool] = []
    real = cycle.run_actions

    def spy(ssn, timings=None):  # type: ignore[no-untyped-def]
        seen.append(gc.isenabled())
        real(ssn, timings)

    monkeypatch.setattr(cycle, "run_actions", spy)
    state = ClusterState()
    state.apply_node(node("n1"))
    state.apply_pod(pod("p1"))
    gc.enable()
    run_session(state.snapshot(), default_configuration())
    assert seen == [False]
    assert gc.isenabled()
