"""A first list's pods handed to the cache a run at a time (`upsert_listed_pods`) leave the cache
that `upsert_pod` one by one leaves: the cluster, the pods remembered for the status shortcut,
the refused pods, the "Watched" callbacks; and the informer delivers runs with the same keys."""

from __future__ import annotations

import copy
from typing import Any

from scheduler.kube.cache import SchedulerCache
from scheduler.kube.informer import Informer, Resource
from tests.builders import node, pod, podgroup
from tests.daemon.fakes import FakeClient
from tests.daemon.test_informer import pages, run_until
from tests.unit.test_cluster_bulk import _pods, picture


def _cache(watched: list[float]) -> SchedulerCache:
    cache = SchedulerCache()
    cache.on_watched = watched.append
    for i in range(3):
        cache.upsert_node(node(f"n{i}", cpu="8", memory="16Gi", extra={"nvidia.com/gpu": "4"}))
    cache.upsert_podgroup(podgroup("g1", 2))
    cache.upsert_podgroup(podgroup("g2", 1))
    return cache


def _mix() -> list[Any]:
    """The cluster test's pods, pending ones with a priority (the status shortcut's) and a
    creation time, and a pending pod listed again with a new status (its key is then seen)."""
    pods = _pods()
    for i, p in enumerate(pods):
        p["metadata"]["creationTimestamp"] = f"2026-01-01T00:00:{i:02d}Z"
        p["spec"].setdefault("priority", 0)
    waiting = pod("w0", group="g2", priority=5)
    waiting["metadata"]["creationTimestamp"] = "2026-01-01T00:01:00Z"
    echo = copy.deepcopy(waiting)
    echo["status"]["conditions"] = [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]
    moved = copy.deepcopy(waiting)
    moved["metadata"]["labels"] = {"changed": "yes"}
    nodeless = pod("nodeless-failed", group="g2", phase="Failed", priority=1)  # watched, never seen
    nodeless["metadata"]["creationTimestamp"] = "2026-01-01T00:02:00Z"
    return [waiting, *pods[:10], echo, *pods[10:], nodeless, moved]


def _key(obj: dict[str, Any]) -> str | None:
    """The informer's key for a pod when it hands one over (its namespace is a string)."""
    ns = obj["metadata"].get("namespace")
    return f"{ns}/{obj['metadata']['name']}" if ns and type(ns) is str else None


def _state(cache: SchedulerCache, watched: list[float]) -> tuple[Any, ...]:
    return (picture(cache.state), dict(cache.seen), dict(cache.skipped), list(watched))


def test_runs_of_a_list_leave_the_cache_one_by_one_leaves() -> None:
    pods = _mix()
    watched_one: list[float] = []
    one = _cache(watched_one)
    for p in copy.deepcopy(pods):
        one.upsert_pod(p)
    for size in (1, 3, 100):
        watched: list[float] = []
        listed = _cache(watched)
        failures: list[Any] = []
        objs = copy.deepcopy(pods)
        keys = [_key(o) if size != 3 else None for o in objs]  # with the informer's keys, or none
        for start in range(0, len(objs), size):
            run, run_keys = objs[start : start + size], keys[start : start + size]
            listed.upsert_listed_pods(run, run_keys, lambda o, e, out=failures: out.append((o, e)))
        assert not failures
        assert _state(listed, watched) == _state(one, watched_one)
    # what the comparison is about happened: a refused pod, a status-only update, watched pods
    assert "Pod c1/bad" in one.skipped and "c1/w0" in one.seen and len(watched_one) > 2


def test_a_handler_error_is_named_and_the_run_goes_on() -> None:
    watched: list[float] = []
    cache = _cache(watched)

    def broken(_created: float) -> None:
        raise RuntimeError("metrics bug")

    cache.on_watched = broken
    failures: list[tuple[str, str]] = []
    run = [pod("a", group="g2"), pod("b", group="g2", node_name="n0", phase="Running")]
    for p in run:
        p["metadata"]["creationTimestamp"] = "2026-01-01T00:00:00Z"
    cache.upsert_listed_pods(
        run, [None, "c1/b"], lambda o, e: failures.append((o["metadata"]["name"], str(e)))
    )
    assert failures == [("a", "metrics bug")]
    assert cache.state.get_task("c1/a") is not None and cache.state.get_task("c1/b") is not None


def test_binds_in_flight_take_the_one_by_one_path() -> None:
    watched: list[float] = []
    one, listed = _cache(watched), _cache([])
    for cache in (one, listed):
        cache.upsert_pod(pod("p", group="g2", priority=0))
        assert cache.assume("c1/p", cache.state.get_task("c1/p").uid, "n1", {"x": "y"})  # type: ignore[union-attr]
    one.upsert_pod(pod("p", group="g2", priority=0))
    listed.upsert_listed_pods([pod("p", group="g2", priority=0)], ["c1/p"], lambda o, e: None)
    assert picture(listed.state) == picture(one.state)
    assert listed.state.get_task("c1/p").node_name == "n1"  # type: ignore[union-attr]


async def test_the_informer_hands_a_first_list_to_the_cache_in_runs() -> None:
    pods = [pod(f"p{i}", group="g2", node_name="n0", phase="Running") for i in range(5)]
    for i, p in enumerate(pods):
        p["metadata"]["resourceVersion"] = str(i + 1)
    client = FakeClient()
    client.on("GET", "/api/v1/pods", pages(pods[:3], pods[3:]))
    client.watch_scripts = [[]]
    cache = _cache([])
    runs: list[int] = []
    listed = cache.pods.upsert_listed

    def counting(objs: list[Any], keys: list[str | None], failed: Any) -> None:
        runs.append(len(objs))
        # the informer's own key strings, handed over for the cache to keep
        assert keys == [f"c1/{o['metadata']['name']}" for o in objs]
        assert all(k in inf.known and next(x for x in inf.known if x == k) is k for k in keys)
        listed(objs, keys, failed)  # type: ignore[misc]

    cache.pods.upsert_listed = counting
    inf = Informer(client, Resource("Pod", "/api/v1/pods"), cache.pods, page_size=3)  # type: ignore[arg-type]
    await run_until(inf, lambda: inf.synced.is_set())
    assert runs == [3, 2]
    assert inf.known == {f"c1/p{i}": str(i + 1) for i in range(5)}
    assert sorted(cache.state.pod_keys) == [f"c1/p{i}" for i in range(5)]
    # one key string a pod, shared by the informer and the cache
    assert {id(k) for k in cache.state.pod_keys} == {id(k) for k in inf.known}


def test_a_run_notes_odd_objects_as_one_by_one_does() -> None:
    """A run hands the cache `namespace/name` keys only where the namespace is a non-empty string,
    and `known` gets object_key's key and the version as a string for odd metadata too: no
    namespace, an empty or numeric one, a missing or numeric version, no metadata object."""
    from scheduler.kube.informer import _note_listed

    objs: list[Any] = [
        {"metadata": {"namespace": "c1", "name": "a", "resourceVersion": "7"}},
        {"metadata": {"name": "cluster-wide", "resourceVersion": 8}},
        {"metadata": {"namespace": "", "name": "empty-ns"}},
        {"metadata": {"namespace": 5, "name": "numeric-ns", "resourceVersion": None}},
        {"metadata": ["not", "an", "object"]},
        "not a pod",
        {"kind": "Pod"},
    ]
    expected: dict[str, str] = {}
    expected_keys = [
        key if namespaced else None
        for key, namespaced in (_note_listed(expected, o) for o in objs if isinstance(o, dict))
    ]
    handed: list[tuple[list[Any], list[str | None]]] = []
    cache = _cache([])
    inf = Informer(FakeClient(), Resource("Pod", "/api/v1/pods"), cache.pods)  # type: ignore[arg-type]
    inf._deliver_run(list(objs), 0, len(objs), lambda run, keys, failed: handed.append((run, keys)))
    assert inf.known == expected
    assert handed == [([o for o in objs if isinstance(o, dict)], expected_keys)]
    assert expected_keys == ["c1/a", None, None, None, None, None]
