"""Pod lists decoded into only the fields conversion reads (scheduler/kube/podfields.py): every
field `pod_to_task` reads is declared, conversion makes the same task of either decoding, and a
page with a malformed pod still refuses that pod alone, by name."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import msgspec
import orjson
import pytest

from scheduler.kube.cache import SchedulerCache
from scheduler.kube.client import ClientOptions, KubeClient
from scheduler.kube.informer import Informer, Resource
from scheduler.kube.podfields import (
    RAW_FIELDS,
    ContainerFields,
    MetadataFields,
    PodFields,
    SpecFields,
    StatusFields,
    decode_pod_list,
    pod_event_decoder,
)
from scheduler.model.convert import ConvertError, pod_to_task
from scheduler.model.objects import TaskInfo
from scheduler.sim.apiserver import ApiServer
from tests.builders import pod, podgroup, queue

pytest.importorskip("msgspec", reason="the typed decode needs msgspec")


def rich_pod(name: str = "p1", **spec: Any) -> dict[str, Any]:
    """A pod with every field a scheduler may read, and many it never does."""
    obj = pod(name, group="g", role="worker", priority=7, limits={"cpu": "2", "memory": "2Gi"})
    obj["metadata"].update(
        uid=f"uid-{name}",
        resourceVersion="42",
        creationTimestamp="2026-01-01T00:00:00Z",
        labels={"app": "train", "volcano.sh/task-index": "3"},
        ownerReferences=[{"kind": "Job", "name": "j", "uid": "owner-1", "controller": True}],
        managedFields=[{"manager": "kubectl", "fieldsV1": {"f:spec": {}}}],
    )
    obj["spec"].update(
        initContainers=[
            {"name": "init", "image": "busybox", "resources": {"requests": {"cpu": "3"}}, "command": ["true"]}
        ],
        overhead={"cpu": "100m"},
        priorityClassName="high",
        preemptionPolicy="Never",
        nodeSelector={"zone": "a"},
        affinity={
            "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}}
        },
        tolerations=[{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}],
        topologySpreadConstraints=[
            {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}
        ],
        schedulingGates=[{"name": "wait"}],
        restartPolicy="Always",
        volumes=[{"name": "data", "emptyDir": {}}],
        **spec,
    )
    obj["spec"]["containers"][0].update(
        ports=[{"containerPort": 80, "hostPort": 8080, "protocol": "TCP"}],
        env=[{"name": "A", "value": "1"}],
        command=["sleep", "infinity"],
    )
    obj["status"] = {
        "phase": "Pending",
        "nominatedNodeName": "n3",
        "conditions": [
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "no"}
        ],
        "containerStatuses": [{"name": "main", "ready": False, "restartCount": 0}],
        "qosClass": "Burstable",
    }
    return obj


class Recording(dict[str, Any]):
    """A dict that notes every key read through it, and hands out its sub-objects wrapped."""

    def __init__(self, data: dict[str, Any], path: str, reads: set[tuple[str, str]]) -> None:
        super().__init__(data)
        self.path, self.reads = path, reads

    def _wrap(self, key: str, value: Any) -> Any:
        self.reads.add((self.path, key))
        child = f"{self.path}.{key}" if self.path else key
        if isinstance(value, dict) and child in ("metadata", "spec", "status"):
            return Recording(value, child, self.reads)
        if isinstance(value, list) and child in ("spec.containers", "spec.initContainers"):
            return [Recording(c, "container", self.reads) if isinstance(c, dict) else c for c in value]
        return value

    def get(self, key: str, default: Any = None) -> Any:
        return self._wrap(key, super().get(key, default))

    def __getitem__(self, key: str) -> Any:
        return self._wrap(key, super().__getitem__(key))


def test_every_field_conversion_reads_is_declared() -> None:
    reads: set[tuple[str, str]] = set()
    pod_to_task(Recording(rich_pod(), "", reads))
    declared = {
        "": set(PodFields.__annotations__),
        "metadata": set(MetadataFields.__annotations__),
        "spec": set(SpecFields.__annotations__),
        "status": set(StatusFields.__annotations__),
        "container": set(ContainerFields.__annotations__),
    }
    assert {(p, k) for p, k in reads if p in declared} == reads  # nothing read below the leaves
    missing = sorted(f"{p}.{k}" for p, k in reads if k not in declared[p])
    assert missing == [], f"pod_to_task reads fields the typed pod decode skips: {missing}"
    assert ("spec", "containers") in reads and ("container", "resources") in reads  # it did record


def _fields(task: TaskInfo) -> dict[str, Any]:
    pod_fields = {f.name: getattr(task.pod, f.name) for f in dataclasses.fields(task.pod)}
    return {
        "pod": pod_fields,
        "job": task.job,
        "resreq": task.resreq,
        "init_resreq": task.init_resreq,
        "status": task.status,
        "priority": task.priority,
        "role": task.role,
        "index": task.index,
        "preemptable": task.preemptable,
        "gated": task.scheduling_gated,
    }


def test_conversion_makes_the_same_task_of_either_decoding() -> None:
    bound = rich_pod("p2", nodeName="n1")
    bound["status"]["phase"] = "Running"
    bound["metadata"]["deletionTimestamp"] = "2026-01-02T00:00:00Z"
    pods = [rich_pod("p1"), bound, pod("p3", group="g"), pod("p4", cpu="", memory="")]
    raw = orjson.dumps({"kind": "PodList", "metadata": {"resourceVersion": "9"}, "items": pods})
    typed = decode_pod_list(raw)
    full = orjson.loads(raw)
    assert typed["metadata"] == full["metadata"]
    assert "containerStatuses" not in typed["items"][0]["status"]  # skipped, not built
    assert "env" not in typed["items"][0]["spec"]["containers"][0]
    for t, f in zip(typed["items"], full["items"], strict=True):
        assert _fields(pod_to_task(t)) == _fields(pod_to_task(f))


def test_a_malformed_pod_in_a_page_is_refused_by_name_and_the_others_kept() -> None:
    bad_section = pod("bad-section", group="g")
    bad_section["spec"]["containers"] = {"name": "not-a-list"}  # a section of the wrong kind
    not_int = pod("bad-priority", group="g")
    not_int["spec"]["priority"] = "high"  # a leaf of the wrong kind: conversion's to refuse
    pods = [pod("ok-1", group="g"), bad_section, not_int, pod("ok-2", group="g")]
    page = decode_pod_list(orjson.dumps({"items": pods}))
    cache = SchedulerCache()
    cache.upsert_queue(queue("default"))
    cache.upsert_podgroup(podgroup("g", 1))
    for obj in page["items"]:
        cache.upsert_pod(obj)  # never raises
    assert cache.state.get_task("c1/ok-1") is not None and cache.state.get_task("c1/ok-2") is not None
    assert cache.state.get_task("c1/bad-section") is None and cache.state.get_task("c1/bad-priority") is None
    assert "'containers' must be a list" in cache.skipped["Pod c1/bad-section"]
    assert "spec.priority" in cache.skipped["Pod c1/bad-priority"]


def test_a_page_that_is_not_json_is_an_error_as_before() -> None:
    with pytest.raises(ValueError):
        decode_pod_list(b"<html>proxy error</html>")


@contextlib.asynccontextmanager
async def _sandbox(tmp_path: Path) -> AsyncIterator[tuple[ApiServer, KubeClient]]:
    """A sandbox API server with namespace c1 and PriorityClass high, and a client of it."""
    srv = ApiServer()
    await srv.start()
    srv.write_kubeconfig(tmp_path / "kubeconfig")
    client = await KubeClient.create(ClientOptions(kubeconfig=str(tmp_path / "kubeconfig")))
    try:
        srv.store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "c1"}})
        priority = {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "high"},
        }
        srv.store.create({**priority, "value": 7})
        yield srv, client
    finally:
        await client.close()
        await srv.stop()


async def test_the_pod_informer_lists_through_the_typed_decode(tmp_path: Path) -> None:
    async with _sandbox(tmp_path) as (srv, client):
        for i in range(7):
            srv.store.create(rich_pod(f"p{i}"))
        got: list[dict[str, Any]] = []

        class Collect:
            def upsert(self, obj: dict[str, Any]) -> None:
                got.append(obj)

            def delete(self, key: str, obj: dict[str, Any] | None) -> None:
                raise AssertionError("nothing is deleted")

        inf = Informer(client, Resource("Pod", "/api/v1/pods", loads=decode_pod_list), Collect(), page_size=3)
        await inf.list()
        assert sorted(o["metadata"]["name"] for o in got) == [f"p{i}" for i in range(7)]
        assert all("containerStatuses" not in o["status"] for o in got)
        assert all(o["metadata"]["resourceVersion"] for o in got) and inf.resource_version


def _sections(obj: dict[str, Any]) -> dict[str, Any]:
    return {key: (obj.get(section) or {}).get(key, "absent") for section, keys in RAW_FIELDS for key in keys}


def test_raw_sections_decode_to_what_a_full_decode_gives_and_equal_ones_are_shared() -> None:
    first, same = rich_pod("p1"), rich_pod("p2")
    other = rich_pod("p3")
    other["metadata"]["labels"] = {"app": "serve"}
    other["spec"]["tolerations"] = None  # null, as the API may send it
    other["status"]["conditions"] = []
    del other["spec"]["affinity"]  # absent stays absent
    bare = pod("p4", group="g")
    pods = [first, same, other, bare, rich_pod("p5")]
    raw = orjson.dumps({"kind": "PodList", "items": pods})
    typed, full = decode_pod_list(raw)["items"], orjson.loads(raw)["items"]
    for t, f in zip(typed, full, strict=True):
        got = _sections(t)
        assert not any(isinstance(v, msgspec.Raw) for v in got.values())  # nothing raw is left
        want = _sections(f)
        # containers keep only the fields conversion reads; every other section is as sent
        for key in ("containers", "initContainers"):
            if isinstance(want[key], list):
                want[key] = [{k: c[k] for k in ContainerFields.__annotations__ if k in c} for c in want[key]]
        assert got == want
    # a section with the previous pod's bytes is that pod's object, decoded once
    assert typed[1]["spec"]["containers"] is typed[0]["spec"]["containers"]
    assert typed[1]["metadata"]["labels"] is typed[0]["metadata"]["labels"]
    assert typed[2]["metadata"]["labels"] is not typed[1]["metadata"]["labels"]
    assert typed[2]["spec"]["containers"] is typed[1]["spec"]["containers"]
    assert typed[2]["spec"]["tolerations"] is None and "affinity" not in typed[2]["spec"]
    # after a pod that differs, an equal section is decoded again (only the previous pod counts)
    assert typed[4]["metadata"]["labels"] == typed[0]["metadata"]["labels"]
    assert typed[4]["metadata"]["labels"] is not typed[0]["metadata"]["labels"]


def test_a_container_list_of_the_wrong_kind_is_kept_as_sent_for_conversion_to_refuse() -> None:
    bad = pod("bad", group="g")
    bad["spec"]["containers"] = ["not-an-object"]
    bad["spec"]["initContainers"] = {"name": "not-a-list"}
    items = decode_pod_list(orjson.dumps({"items": [pod("ok", group="g"), bad]}))["items"]
    assert items[1]["spec"]["containers"] == ["not-an-object"]
    assert items[1]["spec"]["initContainers"] == {"name": "not-a-list"}
    with pytest.raises(ConvertError, match="bad"):
        pod_to_task(items[1])
    assert pod_to_task(items[0]).name == "ok"


def _event(etype: str, obj: dict[str, Any]) -> bytes:
    return orjson.dumps({"type": etype, "object": obj})


def _watch_script() -> list[bytes]:
    """A burst pod's life as the watch shows it, with a neighbour of the same workload."""
    p1, p2 = rich_pod("p1"), rich_pod("p2")
    p1["spec"]["priority"] = p2["spec"]["priority"] = 7
    bound = orjson.loads(orjson.dumps(p1))
    bound["spec"]["nodeName"] = "n1"
    bound["metadata"]["resourceVersion"] = "43"
    bound["status"]["conditions"] = [{"type": "PodScheduled", "status": "True"}]
    running = orjson.loads(orjson.dumps(bound))
    running["status"]["phase"] = "Running"
    running["metadata"]["resourceVersion"] = "44"
    relabelled = orjson.loads(orjson.dumps(p2))
    relabelled["metadata"]["labels"] = {"app": "serve"}
    relabelled["metadata"]["resourceVersion"] = "45"
    return [
        _event("ADDED", p1),
        _event("ADDED", p2),
        _event("MODIFIED", bound),
        _event("MODIFIED", running),
        _event("MODIFIED", relabelled),
        _event("BOOKMARK", {"kind": "Pod", "metadata": {"resourceVersion": "46"}}),
        _event("DELETED", relabelled),
    ]


def _replay(cache: SchedulerCache, lines: list[bytes], loads: Any) -> list[Any]:
    """Each event through the cache as the informer delivers it; the tasks after each."""
    after: list[Any] = []
    for line in lines:
        ev = loads(line)
        obj = ev["object"]
        if ev["type"] in ("ADDED", "MODIFIED"):
            cache.upsert_pod(obj)
        elif ev["type"] == "DELETED":
            md = obj["metadata"]
            cache.delete_pod(f"{md['namespace']}/{md['name']}", obj)
        after.append(
            (
                {k: _fields(t) | {"node": t.node_name} for k, t in sorted(cache.state.tasks.items())},
                sorted(cache.seen),
                obj["metadata"].get("resourceVersion"),
            )
        )
    return after


def _cache() -> SchedulerCache:
    cache = SchedulerCache()
    cache.upsert_queue(queue("default"))
    cache.upsert_podgroup(podgroup("g", 1))
    return cache


def test_watch_events_make_the_same_tasks_as_a_full_decode() -> None:
    lines = _watch_script()
    assert _replay(_cache(), lines, pod_event_decoder()) == _replay(_cache(), lines, orjson.loads)


def test_watch_events_share_the_sections_the_previous_event_had_and_keep_none_raw() -> None:
    decode = pod_event_decoder()
    events = [decode(line) for line in _watch_script()]
    full = [orjson.loads(line) for line in _watch_script()]
    assert "containerStatuses" not in events[0]["object"]["status"]  # skipped, not built
    assert events[1]["object"]["spec"]["containers"] is events[0]["object"]["spec"]["containers"]
    assert events[1]["object"]["spec"]["tolerations"] is events[0]["object"]["spec"]["tolerations"]
    for ev, want in zip(events, full, strict=True):
        assert ev["type"] == want["type"]
        got = _sections(ev["object"])
        assert not any(isinstance(v, msgspec.Raw) for v in got.values())
        exp = _sections(want["object"])
        for key in ("containers", "initContainers"):
            if isinstance(exp[key], list):
                exp[key] = [{k: c[k] for k in ContainerFields.__annotations__ if k in c} for c in exp[key]]
        assert got == exp
    assert events[4]["object"]["metadata"]["labels"] == {"app": "serve"}


def test_an_error_event_and_a_malformed_pod_are_decoded_in_full() -> None:
    decode = pod_event_decoder()
    gone = {"kind": "Status", "code": 410, "reason": "Expired", "message": "too old resource version"}
    assert decode(_event("ERROR", gone)) == {"type": "ERROR", "object": gone}
    bad = pod("bad", group="g")
    bad["spec"]["containers"] = {"name": "not-a-list"}  # kept as sent, for conversion to refuse
    cache = _cache()
    cache.upsert_pod(decode(_event("ADDED", bad))["object"])
    assert "'containers' must be a list" in cache.skipped["Pod c1/bad"]
    odd = pod("odd", group="g")
    odd["status"] = "not-an-object"  # a section of the wrong kind: the event decoded in full
    odd["metadata"]["finalizers"] = ["kept"]  # a field the typed decode would skip
    ev = decode(_event("ADDED", odd))
    assert ev == orjson.loads(_event("ADDED", odd))
    with pytest.raises(ValueError):
        decode(b"<html>proxy error</html>")
    assert decode(b"[1, 2]") == [1, 2]  # not an event: _watch_event drops it, as before


async def test_the_pod_informer_watches_through_the_typed_decode(tmp_path: Path) -> None:
    async with _sandbox(tmp_path) as (srv, client):
        got: list[dict[str, Any]] = []

        class Collect:
            def upsert(self, obj: dict[str, Any]) -> None:
                got.append(obj)

            def delete(self, key: str, obj: dict[str, Any] | None) -> None:
                got.append({"deleted": key})

        res = Resource("Pod", "/api/v1/pods", loads=decode_pod_list, watch_loads=pod_event_decoder())
        inf = Informer(client, res, Collect(), watch_timeout=5)
        await inf.list()
        watching = asyncio.ensure_future(inf.watch_once())
        await asyncio.sleep(0.2)
        for i in range(3):
            srv.store.create(rich_pod(f"p{i}"))
        for _ in range(100):
            if len(got) >= 3:
                break
            await asyncio.sleep(0.05)
        watching.cancel()
        names = [o["metadata"]["name"] for o in got if "metadata" in o]
        assert names[:3] == ["p0", "p1", "p2"]
        assert all("containerStatuses" not in o["status"] for o in got if "status" in o)
        assert inf.known["c1/p2"] and inf.resource_version == inf.known["c1/p2"]
