"""Binds sent while their session still runs (scheduler/kube/earlybind.py): a Binding leaves while
the event loop is busy, the fence stops it once the term is over, and no pod is bound twice —
neither by the usual path after the session nor when the session fails after its first commits.

The sandbox API server runs on its own thread here: the sender waits for answers while the
test's event loop is held, as a session holds the daemon's."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

import scheduler.daemon as daemon_module
from scheduler.daemon import Daemon, parse_args
from scheduler.framework.cycle import BindDecision
from scheduler.kube.binder import Binder
from scheduler.kube.cache import SchedulerCache
from scheduler.kube.client import ClientOptions, KubeClient
from scheduler.kube.earlybind import SENT, UNSENT
from scheduler.kube.fence import Fence
from scheduler.kube.status import EventRecorder, StatusWriter
from scheduler.metrics import SchedulerMetrics
from scheduler.sim.apiserver import ApiServer
from tests.builders import node, pod, podgroup, queue
from tests.daemon.test_cache_binder import _count
from tests.daemon.test_fence import FakeLease

NS = "c1"
T = TypeVar("T")


class ServerThread:
    """The sandbox API server on its own event loop and thread."""

    def __init__(self, srv: ApiServer) -> None:
        self.srv = srv
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def call(self, fn: Callable[[], T]) -> T:
        """Run `fn` on the server's thread (the store belongs to it) and return its result."""

        async def run() -> T:
            return fn()

        return asyncio.run_coroutine_threadsafe(run(), self.loop).result(10)

    def bindings(self, name: str) -> list[int]:
        """The answer codes of every Binding POSTed for pod `name`."""
        path = f"/api/v1/namespaces/{NS}/pods/{name}/binding"
        return self.call(lambda: [e["code"] for e in self.srv.request_log if e["path"] == path])


@pytest.fixture
def server() -> Iterator[ServerThread]:
    st = ServerThread(ApiServer(tls=True, require_auth=True))
    asyncio.run_coroutine_threadsafe(st.srv.start(), st.loop).result(10)
    try:
        yield st
    finally:
        asyncio.run_coroutine_threadsafe(st.srv.stop(), st.loop).result(10)
        st.loop.call_soon_threadsafe(st.loop.stop)
        st.thread.join(5)


@pytest.fixture
async def client(server: ServerThread, tmp_path: Path) -> AsyncIterator[KubeClient]:
    server.srv.write_kubeconfig(tmp_path / "kubeconfig")
    c = await KubeClient.create(ClientOptions(kubeconfig=str(tmp_path / "kubeconfig")))
    try:
        yield c
    finally:
        await c.close()


def _cluster(server: ServerThread, pods: list[str], cache: SchedulerCache | None = None) -> SchedulerCache:
    """The same pods in the server and in a cache (with the uids the server gave them)."""
    cache = cache or SchedulerCache()
    store = server.srv.store
    server.call(lambda: store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}))
    cache.upsert_queue(queue("default"))
    for n in ("n1", "n9"):
        cache.upsert_node(server.call(lambda n=n: store.create(node(n))))
    cache.upsert_podgroup(server.call(lambda: store.create(podgroup("g", 1))))
    for name in pods:
        cache.upsert_pod(server.call(lambda name=name: store.create(pod(name, group="g"))))
    return cache


def _binder(cache: SchedulerCache, client: KubeClient, fence: Fence | None = None) -> Binder:
    rec = EventRecorder(client)
    return Binder(client, cache, StatusWriter(client, cache, rec), rec, SchedulerMetrics(), fence=fence)


def _decide(cache: SchedulerCache, name: str) -> BindDecision:
    task = cache.state.get_task(f"{NS}/{name}")
    assert task is not None
    return BindDecision(task.clone(), "n1", {"example.com/decided": "early"})


def _hold_loop_until(done: Callable[[], bool], seconds: float = 5.0) -> bool:
    """Block the event loop's thread, as a long session does, until `done()` or the time is up."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if done():
            return True
        time.sleep(0.01)
    return done()


async def test_a_binding_leaves_while_the_loop_is_busy_and_the_usual_path_does_not_send_it_again(
    server: ServerThread, client: KubeClient
) -> None:
    cache = _cluster(server, ["p1", "p2"])
    b = _binder(cache, client)
    await b.prepare_early()
    sender = b.commit_sender(0)
    assert sender is not None
    first, second = _decide(cache, "p1"), _decide(cache, "p2")
    first.task.pod.creation = 1.0  # long ago: every latency is observed
    sender.hand(first)
    # the loop is held: only the sender's thread can have written this Binding
    assert _hold_loop_until(lambda: server.bindings("p1") == [201])
    early = sender.finish()
    assert [e.outcome for e in early] == [SENT]
    settled = b.settle_early(early, 0)
    assert settled == {f"{NS}/p1"} and b.bound == 1 and b.early == 1
    # observed as every bind is (scheduler/kube/binder.py), the pod's creation being known
    lat, dur = (
        "volcano_task_scheduling_latency_milliseconds",
        "volcano_scheduling_stage_duration_milliseconds",
    )
    assert [_count(b.metrics, lat, s) for s in ("Assumed", "PreBound", "Bound")] == [1, 1, 1]
    assert [_count(b.metrics, dur, s) for s in ("PreBind", "Bind")] == [1, 1]
    task = cache.state.get_task(f"{NS}/p1")
    assert task is not None and task.node_name == "n1"  # claimed: the next session leaves it alone
    # the session's whole result reaches the binder: the early bind is claimed already
    assert b.submit([first, second], term=0) == 1
    await b.drain(5)
    assert server.bindings("p1") == [201] and server.bindings("p2") == [201]
    placed = server.call(lambda: server.srv.store.get("pods", NS, "p1"))
    assert placed["metadata"]["annotations"]["example.com/decided"] == "early"


async def test_a_term_that_ended_during_the_session_sends_nothing_more(
    server: ServerThread, client: KubeClient
) -> None:
    cache = _cluster(server, ["p1", "p2"])
    lease = FakeLease()
    fence = Fence(lease)
    b = _binder(cache, client, fence)
    term = fence.term()
    await b.prepare_early()
    sender = b.commit_sender(term)
    assert sender is not None
    sender.hand(_decide(cache, "p1"))
    assert _hold_loop_until(lambda: server.bindings("p1") == [201])
    lease.t += lease.renew_deadline + 1  # no renewal in time: the term is over by the clock
    late = _decide(cache, "p2")
    sender.hand(late)
    _hold_loop_until(lambda: bool(server.bindings("p2")), 0.5)
    early = sender.finish()
    assert [e.outcome for e in early] == [SENT, UNSENT]
    assert server.bindings("p2") == []
    assert b.settle_early(early, term) == {f"{NS}/p1"}
    assert b.submit([late], term=term) == 0 and b.fenced == 1  # and not the usual way either
    p2 = cache.state.get_task(f"{NS}/p2")
    assert p2 is not None and not p2.node_name


async def test_an_early_bind_the_api_refuses_with_409_is_resynced_not_retried(
    server: ServerThread, client: KubeClient
) -> None:
    cache = _cluster(server, ["p1"])
    body = {"metadata": {"name": "p1"}, "target": {"kind": "Node", "name": "n9"}}
    server.call(lambda: server.srv.store.bind(NS, "p1", body))  # someone else bound it meanwhile
    b = _binder(cache, client)
    await b.prepare_early()
    sender = b.commit_sender(0)
    assert sender is not None
    sender.hand(_decide(cache, "p1"))
    assert _hold_loop_until(lambda: server.bindings("p1") == [409])
    assert b.settle_early(sender.finish(), 0) == {f"{NS}/p1"}
    await b.drain(5)
    assert server.bindings("p1") == [409] and b.conflicts == 1 and b.bound == 0
    task = cache.state.get_task(f"{NS}/p1")
    assert task is not None and task.node_name == "n9" and f"{NS}/p1" not in cache.assumed


async def test_no_pod_is_bound_twice_when_the_session_fails_after_its_first_commits(
    server: ServerThread, client: KubeClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    d = Daemon(parse_args(["--leader-elect=false"]), client)
    d.reloader.load_initial(strict=False)
    d._wire_writers()
    assert d.binder is not None and d.status is not None
    d.status.start()
    d.send_during_session = True
    names = [f"p{i}" for i in range(4)]
    _cluster(server, names, d.cache)

    def close_fails(ssn: Any) -> Any:
        # every bind is committed and handed to the sender; the Bindings get time to leave
        _hold_loop_until(lambda: all(server.bindings(n) for n in names))
        raise RuntimeError("a core bug after the commits")

    monkeypatch.setattr(daemon_module, "close_session", close_fails)
    monkeypatch.setattr(daemon_module, "SEND_DURING_SESSION_AFTER_S", 0.0)  # this session is short
    await d.binder.prepare_early()
    assert d.run_once() is None and d.session_errors == 1
    assert all(server.bindings(n) == [201] for n in names)
    assert all(f"{NS}/{n}" in d.cache.assumed for n in names)  # claimed, though the session failed
    monkeypatch.undo()
    await d.binder.prepare_early()
    res = d.run_once()
    assert res is not None and res.binds == []  # nothing left to decide
    await d.binder.drain(5)
    await d.status.drain(5)
    await d.status.stop()
    assert all(server.bindings(n) == [201] for n in names)


async def test_a_short_session_sends_its_binds_after_it_as_before(
    server: ServerThread, client: KubeClient
) -> None:
    cache = _cluster(server, ["p1"])
    b = _binder(cache, client)
    await b.prepare_early()
    sender = b.commit_sender(0, not_before=time.monotonic() + 60)  # the session ends long before
    assert sender is not None
    d = _decide(cache, "p1")
    sender.hand(d)
    assert not _hold_loop_until(lambda: bool(server.bindings("p1")), 0.3)
    early = sender.finish()
    assert [e.outcome for e in early] == [UNSENT] and b.settle_early(early, 0) == set()
    assert b.submit([d], term=0) == 1  # the usual way
    await b.drain(5)
    assert server.bindings("p1") == [201] and b.early == 0
