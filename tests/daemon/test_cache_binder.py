"""A decided pod is bound exactly once: claimed in the cache before the Binding is sent, kept
claimed against stale watch events, released on failure, and resynced (never re-bound) on 409."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

import pytest

from scheduler.framework.cycle import BindDecision
from scheduler.kube.binder import Binder
from scheduler.kube.cache import SchedulerCache
from scheduler.kube.client import ApiError
from scheduler.kube.status import EventRecorder, StatusWriter
from scheduler.metrics import SchedulerMetrics
from scheduler.model.objects import TaskStatus
from tests.builders import node, pod, podgroup, queue
from tests.daemon.fakes import FakeClient


def with_uid(obj: dict[str, Any], uid: str, rv: str = "1") -> dict[str, Any]:
    obj["metadata"]["uid"] = uid
    obj["metadata"]["resourceVersion"] = rv
    return obj


def cluster() -> SchedulerCache:
    c = SchedulerCache()
    c.upsert_queue(queue("default"))
    c.upsert_node(node("n1"))
    c.upsert_podgroup(podgroup("g", 1))
    c.upsert_pod(with_uid(pod("p1", group="g"), "uid-p1"))
    return c


def decision(
    c: SchedulerCache, key: str = "c1/p1", node_name: str = "n1", ann: dict[str, str] | None = None
) -> BindDecision:
    task = c.state.get_task(key)
    assert task is not None
    return BindDecision(task.clone(), node_name, ann or {})


def binder(c: SchedulerCache, client: FakeClient, dry_run: bool = False) -> tuple[Binder, StatusWriter]:
    rec = EventRecorder(client, dry_run=dry_run)  # type: ignore[arg-type]
    st = StatusWriter(client, c, rec, dry_run=dry_run)  # type: ignore[arg-type]
    st.start()
    return Binder(client, c, st, rec, SchedulerMetrics(), dry_run=dry_run), st  # type: ignore[arg-type]


# ------------------------------------------------------------------------------------------ cache --
def test_an_assumed_pod_counts_as_bound_and_cannot_be_claimed_twice() -> None:
    c = cluster()
    assert c.assume("c1/p1", "uid-p1", "n1", {"a": "b"}) is True
    task = c.state.get_task("c1/p1")
    assert task is not None and task.status == TaskStatus.BOUND and task.node_name == "n1"
    assert "uid-p1" in c.state.nodes["n1"].tasks
    assert c.assume("c1/p1", "uid-p1", "n1", {}) is False


def test_a_stale_watch_event_does_not_undo_the_claim() -> None:
    c = cluster()
    c.assume("c1/p1", "uid-p1", "n1", {})
    c.upsert_pod(with_uid(pod("p1", group="g"), "uid-p1", rv="2"))  # e.g. a label change, still no node
    task = c.state.get_task("c1/p1")
    assert task is not None and task.status == TaskStatus.BOUND and task.node_name == "n1"
    assert not c.has_pending_work()


def test_the_watch_confirming_the_node_ends_the_claim() -> None:
    c = cluster()
    c.assume("c1/p1", "uid-p1", "n1", {})
    c.upsert_pod(with_uid(pod("p1", group="g", node_name="n1"), "uid-p1", rv="3"))
    assert "c1/p1" not in c.assumed


def test_a_failed_bind_makes_the_pod_pending_again() -> None:
    c = cluster()
    c.assume("c1/p1", "uid-p1", "n1", {})
    c.bind_failed("c1/p1")
    task = c.state.get_task("c1/p1")
    assert task is not None and task.status == TaskStatus.PENDING and not task.node_name
    assert "uid-p1" not in c.state.nodes["n1"].tasks
    assert c.has_pending_work()


def test_a_recreated_pod_with_the_same_name_is_not_claimed_by_the_old_decision() -> None:
    c = cluster()
    c.delete_pod("c1/p1", None)
    c.upsert_pod(with_uid(pod("p1", group="g"), "uid-new"))
    assert c.assume("c1/p1", "uid-p1", "n1", {}) is False


def test_malformed_objects_are_skipped_by_name_and_the_good_version_stays(
    capsys: pytest.CaptureFixture[str],
) -> None:
    c = cluster()
    bad = with_uid(pod("p1", group="g", cpu="lots"), "uid-p1", rv="9")
    c.upsert_pod(bad)
    c.upsert_pod(copy.deepcopy(bad))  # the same bad version is reported once
    assert c.state.get_task("c1/p1") is not None
    assert list(c.skipped) == ["Pod c1/p1"]
    c.upsert_node({"kind": "Node", "metadata": {"name": "n2"}, "status": {"allocatable": {"cpu": []}}})
    assert "Node n2" in c.skipped
    c.upsert_pod(with_uid(pod("p1", group="g"), "uid-p1", rv="10"))
    assert "Pod c1/p1" not in c.skipped


def test_node_selector_keeps_only_matching_nodes() -> None:
    c = SchedulerCache(node_selector={"role": {"train"}})
    c.upsert_node(node("a", labels={"role": "train"}))
    c.upsert_node(node("b", labels={"role": "serve"}))
    assert set(c.state.nodes) == {"a"}
    c.upsert_node(node("a", labels={"role": "serve"}))
    assert set(c.state.nodes) == set()


# ------------------------------------------------------------------------------------------ binder --
async def test_successful_bind_posts_one_binding_with_annotations_and_an_event() -> None:
    c, client = cluster(), FakeClient()
    b, st = binder(c, client)
    assert b.submit([decision(c, ann={"volcano.sh/gpu-ids": "0"})]) == 1
    await b.drain(2)
    await st.drain(1)
    await st.stop()
    assert len(client.binds) == 1
    body = client.binds[0]
    assert body["target"] == {"apiVersion": "v1", "kind": "Node", "name": "n1"}
    assert body["metadata"]["annotations"] == {"volcano.sh/gpu-ids": "0"}
    assert body["metadata"]["uid"] == "uid-p1"
    events = [c for c in client.calls if c[0] == "POST" and c[1].endswith("/events")]
    assert [(e[2]["reason"], e[2]["message"]) for e in events] == [
        ("Scheduled", "Successfully assigned c1/p1 to n1")
    ]
    assert b.bound == 1 and c.assumed["c1/p1"].sent


async def test_settled_is_clear_exactly_while_a_batch_is_in_flight() -> None:
    """The next session waits on `settled` (scheduler/pacing.py): it must be set again the moment
    the last batch ends, retries included, or sessions would wait a whole period for nothing."""
    c, client = cluster(), FakeClient()
    c.upsert_pod(with_uid(pod("p2", group="g"), "uid-p2"))
    client.bind_answers = [ApiError(500, "InternalError", "boom")]  # p1's first attempt fails
    b, st = binder(c, client)
    assert b.settled.is_set()
    b.submit([decision(c)])
    b.submit([decision(c, "c1/p2")])
    assert not b.settled.is_set()
    await asyncio.wait_for(b.settled.wait(), 5)
    assert b.bound == 2 and b.in_flight() == 0 and len(client.binds) == 3
    await st.stop()


async def test_the_same_decision_twice_binds_once() -> None:
    c, client = cluster(), FakeClient()
    b, st = binder(c, client)
    d = decision(c)
    assert b.submit([d]) == 1
    assert b.submit([d]) == 0  # e.g. the next session before the watch confirmed
    await b.drain(2)
    await st.stop()
    assert len(client.binds) == 1


async def test_server_errors_are_retried_then_succeed() -> None:
    c, client = cluster(), FakeClient()
    client.bind_answers = [
        ApiError(500, "InternalError", "boom"),
        ApiError(429, "TooManyRequests", "slow", 0.01),
    ]
    b, st = binder(c, client)
    b.submit([decision(c)])
    await b.drain(5)
    await st.stop()
    assert len(client.binds) == 3 and b.bound == 1 and b.failed == 0


async def test_conflict_resyncs_the_pod_and_never_retries() -> None:
    c, client = cluster(), FakeClient()
    client.bind_answers = [ApiError(409, "Conflict", "pod p1 is already assigned to node n9")]
    other = with_uid(pod("p1", group="g", node_name="n9"), "uid-p1", rv="5")
    client.on("GET", "/api/v1/namespaces/c1/pods/p1", lambda _b, _q: other)
    b, st = binder(c, client)
    b.submit([decision(c)])
    await b.drain(2)
    await st.stop()
    assert len(client.binds) == 1 and b.conflicts == 1 and b.bound == 0
    task = c.state.get_task("c1/p1")
    assert task is not None and task.node_name == "n9" and "c1/p1" not in c.assumed


async def test_a_lost_answer_then_conflict_on_our_own_node_counts_as_bound_once() -> None:
    c, client = cluster(), FakeClient()
    client.bind_answers = [
        ApiError(0, "ConnectionError", "reset"),
        ApiError(409, "Conflict", "already assigned"),
    ]
    mine = with_uid(pod("p1", group="g", node_name="n1"), "uid-p1", rv="6")
    client.on("GET", "/api/v1/namespaces/c1/pods/p1", lambda _b, _q: mine)
    b, st = binder(c, client)
    b.submit([decision(c)])
    await b.drain(5)
    await st.stop()
    assert len(client.binds) == 2 and b.bound == 1 and b.failed == 0


async def test_final_failure_rolls_back_and_tells_the_user_on_the_pod() -> None:
    c, client = cluster(), FakeClient()
    client.bind_answers = [ApiError(422, "Invalid", "spec.nodeName: Invalid value")]
    b, st = binder(c, client)
    b.submit([decision(c)])
    await b.drain(2)
    await st.drain(2)
    await st.stop()
    task = c.state.get_task("c1/p1")
    assert task is not None and task.status == TaskStatus.PENDING and "c1/p1" not in c.assumed
    [patch] = [x for x in client.calls if x[0] == "PATCH" and x[1].endswith("/pods/p1/status")]
    cond = patch[2]["status"]["conditions"][0]
    assert (cond["type"], cond["status"], cond["reason"]) == ("PodScheduled", "False", "SchedulerError")
    assert cond["message"] == "failed to bind to node n1: 422 Invalid: spec.nodeName: Invalid value"
    warn = [x[2] for x in client.calls if x[0] == "POST" and x[1].endswith("/events")]
    assert [(e["type"], e["reason"]) for e in warn] == [("Warning", "FailedScheduling")]


async def test_dry_run_writes_nothing_and_counts_each_pod_once() -> None:
    c, client = cluster(), FakeClient()
    b, st = binder(c, client, dry_run=True)
    assert b.submit([decision(c)]) == 1
    assert b.submit([decision(c)]) == 0
    await asyncio.sleep(0.01)
    await st.stop()
    assert client.binds == [] and client.calls == []
    assert c.state.get_task("c1/p1").status == TaskStatus.PENDING  # type: ignore[union-attr]


async def test_pod_condition_written_once_until_the_watch_catches_up() -> None:
    c, client = cluster(), FakeClient()
    client.on(
        "PATCH",
        "/api/v1/namespaces/c1/pods/p1/status",
        lambda _b, _q: {"metadata": {"resourceVersion": "77"}},
    )
    _, st = binder(c, client)
    task = c.state.get_task("c1/p1")
    assert task is not None
    assert st.pod_condition(task, "Unschedulable", "0/1 nodes are unavailable: 1 Insufficient cpu.") is True
    await st.drain(1)
    # next session, same decision, the watch has not delivered our write yet
    assert st.pod_condition(task, "Unschedulable", "0/1 nodes are unavailable: 1 Insufficient cpu.") is False
    # the watch delivers our write: still nothing to do
    p = with_uid(pod("p1", group="g"), "uid-p1", rv="77")
    p["status"]["conditions"] = [
        {
            "type": "PodScheduled",
            "status": "False",
            "reason": "Unschedulable",
            "message": "0/1 nodes are unavailable: 1 Insufficient cpu.",
        }
    ]
    c.upsert_pod(p)
    task = c.state.get_task("c1/p1")
    assert task is not None
    assert st.pod_condition(task, "Unschedulable", "0/1 nodes are unavailable: 1 Insufficient cpu.") is False
    # a different reason is written
    assert st.pod_condition(task, "Unschedulable", "0/2 nodes are unavailable: 2 Insufficient cpu.") is True
    await st.drain(1)
    await st.stop()
    assert client.count("PATCH", "/pods/p1/status") == 2


async def test_podgroup_status_falls_back_to_the_object_when_the_crd_has_no_status_subresource() -> None:
    from scheduler.model.objects import PodGroupStatus

    c, client = cluster(), FakeClient()
    c.upsert_podgroup(podgroup("h", 1))

    def no_subresource(_b: Any, _q: Any) -> Any:
        raise ApiError(404, "NotFound", "the server could not find the requested resource")

    # the fake matches prefixes, most recently added first: the /status answers go last
    client.on(
        "PATCH",
        "/apis/scheduling.volcano.sh/v1beta1/namespaces/c1/podgroups/g",
        lambda _b, _q: {"metadata": {"resourceVersion": "9"}},
    )
    client.on(
        "PATCH",
        "/apis/scheduling.volcano.sh/v1beta1/namespaces/c1/podgroups/h",
        lambda _b, _q: {"metadata": {"resourceVersion": "10"}},
    )
    client.on("PATCH", "/apis/scheduling.volcano.sh/v1beta1/namespaces/c1/podgroups/g/status", no_subresource)
    client.on("PATCH", "/apis/scheduling.volcano.sh/v1beta1/namespaces/c1/podgroups/h/status", no_subresource)
    _, st = binder(c, client)
    assert st.podgroup_status("c1/g", PodGroupStatus(phase="Inqueue")) is True
    await st.drain(1)
    writes = [(p, b) for m, p, b in client.calls if m == "PATCH"]
    assert writes[-1] == (
        "/apis/scheduling.volcano.sh/v1beta1/namespaces/c1/podgroups/g",
        {"status": writes[-1][1]["status"]},
    )
    assert writes[-1][1]["status"]["phase"] == "Inqueue"
    assert st.podgroup_writes == 1
    # from then on the object is patched directly: no more 404 round trips
    assert st.podgroup_status("c1/h", PodGroupStatus(phase="Inqueue")) is True
    await st.drain(1)
    await st.stop()
    assert client.count("PATCH", "/podgroups/g/status") == 1
    assert client.count("PATCH", "/podgroups/h/status") == 0
    assert client.count("PATCH", "/podgroups/h") == 1
    assert st.podgroup_writes == 2


async def test_podgroup_deleted_meanwhile_is_not_an_error_and_keeps_the_status_subresource() -> None:
    from scheduler.model.objects import PodGroupStatus

    c, client = cluster(), FakeClient()

    def gone(_b: Any, _q: Any) -> Any:
        raise ApiError(404, "NotFound", 'podgroups.scheduling.volcano.sh "g" not found')

    client.on("PATCH", "/apis/scheduling.volcano.sh/v1beta1/namespaces/c1/podgroups/g", gone)
    _, st = binder(c, client)
    assert st.podgroup_status("c1/g", PodGroupStatus(phase="Inqueue")) is True
    await st.drain(1)
    await st.stop()
    assert st.podgroup_writes == 0
    assert not st._no_status_subresource  # the status path stays the first choice


def _count(metrics: SchedulerMetrics, name: str, stage: str) -> float:
    for fam in metrics.registry.collect():
        for s in fam.samples:
            if s.name == f"{name}_count" and s.labels.get("stage") == stage:
                return s.value
    return 0.0


async def test_every_bind_observes_the_assumed_prebound_and_bound_stages() -> None:
    c, client = cluster(), FakeClient()
    p = c.state.get_task("c1/p1")
    assert p is not None
    p.pod.creation = 1.0  # long ago: every latency is observed
    rec = EventRecorder(client)  # type: ignore[arg-type]
    st = StatusWriter(client, c, rec)  # type: ignore[arg-type]
    st.start()
    m = SchedulerMetrics()
    b = Binder(client, c, st, rec, m)  # type: ignore[arg-type]
    assert b.submit([decision(c)], [("n1", "lock-key", "lock-value")]) == 1
    await b.drain(2)
    await st.stop()
    lat = "volcano_task_scheduling_latency_milliseconds"
    assert [_count(m, lat, s) for s in ("Assumed", "PreBound", "Bound")] == [1, 1, 1]
    dur = "volcano_scheduling_stage_duration_milliseconds"
    assert [_count(m, dur, s) for s in ("PreBind", "Bind")] == [1, 1]
    assert client.count("PATCH", "/api/v1/nodes/n1") == 1  # the node lock went first


def test_watched_is_reported_once_per_new_pending_pod_of_ours() -> None:
    c = cluster()
    seen: list[float] = []
    c.on_watched = seen.append
    new = with_uid(pod("p2", group="g"), "uid-p2")
    new["metadata"]["creationTimestamp"] = "2026-01-01T00:00:00Z"
    c.upsert_pod(new)
    c.upsert_pod(copy.deepcopy(new))  # an update of the same pod: not watched again
    bound = with_uid(pod("p3", group="g"), "uid-p3")
    bound["metadata"]["creationTimestamp"] = "2026-01-01T00:00:00Z"
    bound["spec"]["nodeName"] = "n1"
    c.upsert_pod(bound)  # already on a node: nothing to schedule
    other = with_uid(pod("p4", group="g"), "uid-p4")
    other["metadata"]["creationTimestamp"] = "2026-01-01T00:00:00Z"
    other["spec"]["schedulerName"] = "default-scheduler"
    c.upsert_pod(other)  # not ours
    assert len(seen) == 1 and seen[0] > 1.7e9


async def test_a_large_batch_binds_every_pod_in_order_with_a_bounded_number_of_tasks() -> None:
    # after a restart the first session decides the whole backlog at once: the first Binding
    # must not wait until a task was started for every one of thousands of pods
    c, client = SchedulerCache(), FakeClient()
    c.upsert_queue(queue("default"))
    c.upsert_node(node("n1", cpu="1000", memory="4000Gi", pods=2000))
    c.upsert_podgroup(podgroup("g", 1))
    for i in range(1000):
        c.upsert_pod(with_uid(pod(f"p{i}", group="g"), f"uid-{i}"))
    b, st = binder(c, client)
    tasks_at_first_bind: list[int] = []
    plain_bind = client.bind

    async def counting_bind(namespace: str, name: str, body: dict[str, Any], term: int | None = None) -> None:
        if not tasks_at_first_bind:
            tasks_at_first_bind.append(len(asyncio.all_tasks()))
        await plain_bind(namespace, name, body, term)

    client.bind = counting_bind  # type: ignore[method-assign]
    assert b.submit([decision(c, f"c1/p{i}") for i in range(1000)]) == 1000
    await b.drain(10)
    await st.stop()
    assert [body["metadata"]["name"] for body in client.binds] == [f"p{i}" for i in range(1000)]
    assert b.bound == 1000
    assert tasks_at_first_bind[0] <= 2 * b.concurrency  # a task per pod would be over 1,000


async def test_queue_statuses_count_each_podgroup_by_its_phase_in_its_queue() -> None:
    """The counts per queue: the session's phase where it gave one, else the PodGroup's; pods'
    implicit groups, PodGroups of unknown queues and phases that are none of the five (even
    values that are not strings) are not counted."""
    c, client = SchedulerCache(), FakeClient()
    c.upsert_queue(queue("default"))
    c.upsert_queue(queue("q2"))
    phases_of = {"default": ["Pending", "Inqueue", "Inqueue", "Running", "Completed", "Unknown", "Odd"]}
    phases_of["q2"] = ["Running", "Running", "Pending"]
    for q, phases in phases_of.items():
        for i, ph in enumerate(phases):
            c.upsert_podgroup(podgroup(f"{q}-{i}", queue=q, phase=ph))
    c.upsert_podgroup(podgroup("lost", queue="nowhere", phase="Running"))
    c.upsert_pod(with_uid(pod("alone"), "uid-alone"))  # an implicit group of its own
    assert c.state.implicit_jobs
    c.state.jobs["c1/default-6"].pod_group_status.phase = ["not", "a", "phase"]  # type: ignore[assignment]
    rec = EventRecorder(client)  # type: ignore[arg-type]
    st = StatusWriter(client, c, rec)  # type: ignore[arg-type]
    st.start()
    session = {"c1/q2-2": "Inqueue", "c1/default-0": {"unhashable": 1}}  # what this session decided

    class Phases:
        def get(self, uid: str, default: Any) -> Any:
            return session.get(uid, default)

    assert st.queue_statuses(Phases(), {}) == 2
    await st.drain(1)
    await st.stop()
    bodies = {
        path.split("/queues/")[1].split("/")[0]: body["status"]
        for method, path, body in client.calls
        if method == "PATCH" and "/queues/" in path
    }
    assert bodies["default"] == {"pending": 0, "inqueue": 2, "running": 1, "unknown": 1, "completed": 1}
    assert bodies["q2"] == {"pending": 0, "inqueue": 1, "running": 2, "unknown": 0, "completed": 0}
