"""The store's semantics, in process: identity, versions, admission, deletion, binding, subscribers."""

from __future__ import annotations

import pytest

from scheduler.sim.apiserver import ApiError, Store
from tests.sandbox.objects import node, pod


@pytest.fixture
def store() -> Store:
    return Store(history_size=100)


def _priority_class(name: str, value: int, default: bool = False) -> dict:
    pc = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
    }
    return {**pc, "globalDefault": True} if default else pc


def test_create_assigns_identity_and_one_cluster_wide_resource_version(store: Store) -> None:
    rv0 = store.rv
    p = store.create(pod("a"))
    n = store.create(node("n1"))
    assert p["metadata"]["uid"] and p["metadata"]["creationTimestamp"].endswith("Z")
    assert int(p["metadata"]["resourceVersion"]) == rv0 + 1
    assert int(n["metadata"]["resourceVersion"]) == rv0 + 2
    assert p["metadata"]["generation"] == 1


def test_pod_defaults_requests_from_limits_and_scheduler_name(store: Store) -> None:
    body = pod("a")
    body["spec"]["containers"][0]["resources"] = {
        "limits": {"cpu": "2", "volcano.sh/vgpu-number": "1"},
        "requests": {"cpu": "1"},
    }
    p = store.create(body)
    c = p["spec"]["containers"][0]
    assert c["resources"]["requests"] == {"cpu": "1", "volcano.sh/vgpu-number": "1"}
    assert p["spec"]["schedulerName"] == "default-scheduler"
    assert p["status"] == {"phase": "Pending", "qosClass": "Burstable"}
    assert p["spec"]["priority"] == 0


def test_requests_are_copied_from_limits_making_the_pod_guaranteed(store: Store) -> None:
    body = pod("g")
    body["spec"]["containers"][0]["resources"] = {"limits": {"cpu": "1", "memory": "1Gi"}}
    assert store.create(body)["status"]["qosClass"] == "Guaranteed"


def test_priority_resolved_from_class_unknown_class_forbidden_global_default(store: Store) -> None:
    store.create(_priority_class("high", 1000))
    assert store.create(pod("a", priorityClassName="high"))["spec"]["priority"] == 1000
    with pytest.raises(ApiError) as exc:
        store.create(pod("b", priorityClassName="nope"))
    assert exc.value.code == 403 and "no PriorityClass with name nope was found" in exc.value.message
    store.create(_priority_class("dflt", 7, default=True))
    c = store.create(pod("c"))
    assert (c["spec"]["priority"], c["spec"]["priorityClassName"]) == (7, "dflt")
    with pytest.raises(ApiError) as exc:
        store.create(_priority_class("d2", 8, default=True))
    assert exc.value.code == 422


def test_pods_of_one_template_are_admitted_alike_and_follow_priority_class_changes(store: Store) -> None:
    """The pods of a template reuse the first one's admission (defaults, priority, QoS): each gets
    what a first admission gives; a PriorityClass write is seen at once; a different spec, even a
    bad one, is checked in full."""
    first = store.create(pod("t0"))
    again = store.create(pod("t1"))
    assert again["spec"] == first["spec"] and again["status"] == first["status"]
    # the first pod keeps the spec built from its caller's objects; the later ones share a copy
    assert again["spec"] is not first["spec"]
    assert again["spec"]["tolerations"] is not first["spec"]["tolerations"]
    assert first["spec"]["priority"] == 0 and "priorityClassName" not in first["spec"]
    store.create(_priority_class("dflt", 7, default=True))
    later = store.create(pod("t2"))
    assert (later["spec"]["priority"], later["spec"]["priorityClassName"]) == (7, "dflt")
    store.delete("priorityclasses", None, "dflt")
    assert store.create(pod("t3"))["spec"]["priority"] == 0
    bad = pod("t4")
    bad["spec"]["containers"][0]["resources"] = {"limits": {"cpu": "lots"}}
    with pytest.raises(ApiError) as exc:
        store.create(bad)
    assert exc.value.code == 422
    bad["spec"]["containers"][0]["resources"] = {"limits": ["cpu"]}
    with pytest.raises(ApiError) as exc:
        store.create(bad)
    assert exc.value.code == 400


def test_a_callers_later_change_to_its_pod_reaches_no_other_pod(store: Store) -> None:
    """In-process callers hand the store their own dicts: what one of them changes afterwards in
    the pod it created must not show in the later pods of the same template (which share the
    admitted spec), nor in what they send."""
    mine = pod("mine", nodeSelector={"zone": "a"})
    store.create(mine)
    second = store.create(pod("second", nodeSelector={"zone": "a"}))
    mine["spec"]["nodeSelector"]["zone"] = "b"  # admission copies only the top of a spec
    third = store.create(pod("third", nodeSelector={"zone": "a"}))
    for p in (second, third, store.get("pods", "default", "third")):
        assert p is not None and p["spec"]["nodeSelector"] == {"zone": "a"}
    bound = store.bind("default", "third", {"target": {"name": "n1"}})
    assert (
        bound["spec"]["nodeName"] == "n1" and "nodeName" not in store.get("pods", "default", "second")["spec"]
    )


def test_system_priority_classes_exist(store: Store) -> None:
    assert store.create(pod("a", priorityClassName="system-node-critical"))["spec"]["priority"] == 2000001000


def test_generate_name_and_invalid_names(store: Store) -> None:
    body = pod("x")
    body["metadata"] = {"generateName": "job-"}
    p = store.create(body)
    assert p["metadata"]["name"].startswith("job-") and len(p["metadata"]["name"]) == 9
    with pytest.raises(ApiError) as exc:
        store.create(pod("Bad_Name"))
    err = exc.value
    assert err.code == 422 and err.reason == "Invalid"
    assert err.details["causes"][0]["field"] == "metadata.name"
    assert 'Pod "Bad_Name" is invalid: metadata.name: Invalid value' in err.message


def test_required_fields_are_named(store: Store) -> None:
    body = pod("a")
    body["spec"]["containers"] = [{"name": "c"}]
    with pytest.raises(ApiError) as exc:
        store.create(body)
    assert exc.value.details["causes"][0]["field"] == "spec.containers[0].image"
    body["spec"]["containers"] = [
        {"name": "c", "image": "x", "resources": {"requests": {"cpu": "2"}, "limits": {"cpu": "1"}}}
    ]
    with pytest.raises(ApiError) as exc:
        store.create(body)
    assert "must be less than or equal to cpu limit" in exc.value.message


def test_namespace_must_exist(store: Store) -> None:
    with pytest.raises(ApiError) as exc:
        store.create(pod("a", ns="missing"))
    assert exc.value.code == 404 and 'namespaces "missing" not found' in exc.value.message


def test_already_exists_and_stale_update_conflict(store: Store) -> None:
    p = store.create(pod("a"))
    with pytest.raises(ApiError) as exc:
        store.create(pod("a"))
    assert (exc.value.code, exc.value.reason) == (409, "AlreadyExists")
    fresh = store.update({**p, "metadata": {**p["metadata"], "labels": {"x": "1"}}})
    assert int(fresh["metadata"]["resourceVersion"]) > int(p["metadata"]["resourceVersion"])
    with pytest.raises(ApiError) as exc:
        store.update({**p, "metadata": {**p["metadata"], "labels": {"x": "2"}}})
    assert (exc.value.code, exc.value.reason) == (409, "Conflict")
    assert "the object has been modified" in exc.value.message


def test_noop_update_keeps_resource_version_and_sends_no_event(store: Store) -> None:
    p = store.create(pod("a"))
    seen: list[str] = []
    store.subscribe(lambda t, k, o: seen.append(t))
    same = store.patch("pods", "default", "a", {"metadata": {"labels": None}})
    assert same["metadata"]["resourceVersion"] == p["metadata"]["resourceVersion"] and seen == []


def test_generation_bumps_on_spec_change_only(store: Store) -> None:
    q = store.create(
        {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "Queue",
            "metadata": {"name": "q"},
            "spec": {"weight": 1},
        }
    )
    q2 = store.patch("queues", None, "q", {"metadata": {"labels": {"a": "b"}}})
    assert q2["metadata"]["generation"] == 1
    q3 = store.patch("queues", None, "q", {"spec": {"weight": 2}})
    assert q3["metadata"]["generation"] == 2
    assert q["metadata"]["generation"] == 1  # the stored versions are never mutated


def test_status_subresource_isolation(store: Store) -> None:
    store.create(
        {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "PodGroup",
            "metadata": {"name": "pg", "namespace": "default"},
            "spec": {"minMember": 1},
            "status": {"phase": "Running"},
        }
    )
    pg = store.get("podgroups", "default", "pg")
    assert "status" not in pg  # a CRD with a status subresource drops status on create
    pg = store.patch("pg", "default", "pg", {"spec": {"minMember": 5}, "status": {"phase": "Inqueue"}})
    assert pg["spec"]["minMember"] == 5 and "status" not in pg
    pg = store.patch(
        "pg",
        "default",
        "pg",
        {"spec": {"minMember": 9}, "status": {"phase": "Inqueue"}},
        subresource="status",
    )
    assert pg["spec"]["minMember"] == 5 and pg["status"] == {"phase": "Inqueue"}


def test_pod_spec_is_immutable_except_allowed_fields(store: Store) -> None:
    store.create(pod("a"))
    with pytest.raises(ApiError) as exc:
        store.patch("pods", "default", "a", {"spec": {"nodeName": "n1"}})
    assert exc.value.code == 422 and "pod updates may not change fields" in exc.value.message
    p = store.patch("pods", "default", "a", {"spec": {"activeDeadlineSeconds": 5}})
    assert p["spec"]["activeDeadlineSeconds"] == 5


def test_binding_sets_node_annotations_condition_and_refuses_twice(store: Store) -> None:
    store.create(pod("a"))
    binding = {
        "metadata": {"name": "a", "annotations": {"volcano.sh/x": "1"}},
        "target": {"kind": "Node", "name": "n1"},
    }
    p = store.bind("default", "a", binding)
    assert p["spec"]["nodeName"] == "n1" and p["metadata"]["annotations"]["volcano.sh/x"] == "1"
    assert {"type": "PodScheduled", "status": "True"}.items() <= p["status"]["conditions"][0].items()
    assert store.list("pods", field_selector="spec.nodeName=n1")[0]["metadata"]["name"] == "a"
    with pytest.raises(ApiError) as exc:
        store.bind("default", "a", {**binding, "target": {"kind": "Node", "name": "n2"}})
    assert exc.value.code == 409 and 'pod a is already assigned to node "n1"' in exc.value.message
    with pytest.raises(ApiError) as exc:
        store.bind("default", "missing", binding)
    assert exc.value.code == 404


def test_pod_deletion_is_graceful_once_bound(store: Store) -> None:
    store.create(pod("unbound"))
    store.delete("pods", "default", "unbound")
    assert store.get("pods", "default", "unbound") is None  # never scheduled: removed at once
    store.create(pod("a"))
    store.bind("default", "a", {"target": {"name": "n1"}})
    p = store.delete("pods", "default", "a")
    assert p["metadata"]["deletionTimestamp"] and p["metadata"]["deletionGracePeriodSeconds"] == 30
    assert store.get("pods", "default", "a") is not None
    with pytest.raises(ApiError) as exc:
        store.bind("default", "a", {"target": {"name": "n2"}})
    assert exc.value.code == 409
    store.delete("pods", "default", "a", grace_period_seconds=0)  # the kubelet confirms
    assert store.get("pods", "default", "a") is None
    assert store.list("pods", field_selector="spec.nodeName=n1") == []


def test_delete_preconditions(store: Store) -> None:
    p = store.create(pod("a"))
    with pytest.raises(ApiError) as exc:
        store.delete("pods", "default", "a", preconditions={"uid": "other"})
    assert exc.value.code == 409 and "Precondition failed: UID" in exc.value.message
    with pytest.raises(ApiError):
        store.delete("pods", "default", "a", preconditions={"resourceVersion": "1"})
    store.delete("pods", "default", "a", preconditions={"uid": p["metadata"]["uid"]})
    assert store.get("pods", "default", "a") is None


def test_finalizers_hold_deletion_until_removed(store: Store) -> None:
    store.create(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "c", "namespace": "default", "finalizers": ["x/y"]},
        }
    )
    store.delete("configmaps", "default", "c")
    assert store.get("configmaps", "default", "c")["metadata"]["deletionTimestamp"]
    store.patch("configmaps", "default", "c", {"metadata": {"finalizers": None}})
    assert store.get("configmaps", "default", "c") is None


def test_namespace_deletion_removes_its_contents(store: Store) -> None:
    store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}})
    store.create(pod("a", ns="team"))
    store.delete("namespaces", None, "team")
    assert store.get("pods", "team", "a") is None and store.get("namespaces", None, "team") is None


def test_subscribers_see_every_write_in_order(store: Store) -> None:
    seen: list[tuple[str, str, str]] = []
    unsubscribe = store.subscribe(lambda t, k, o: seen.append((t, k, o["metadata"]["name"])))
    store.create(pod("a"))
    store.patch("pods", "default", "a", {"metadata": {"labels": {"x": "y"}}})
    store.delete("pods", "default", "a")
    unsubscribe()
    store.create(pod("b"))
    assert seen == [("ADDED", "pods", "a"), ("MODIFIED", "pods", "a"), ("DELETED", "pods", "a")]


def test_a_failing_subscriber_does_not_fail_the_write(store: Store) -> None:
    def boom(t: str, k: str, o: dict) -> None:
        raise RuntimeError("subscriber bug")

    store.subscribe(boom)
    assert store.create(pod("a"))["metadata"]["name"] == "a"


async def test_subscribe_queue_filters_resources(store: Store) -> None:
    q, unsubscribe = store.subscribe_queue({"nodes"})
    store.create(pod("a"))
    store.create(node("n1"))
    assert q.get_nowait()[:2] == ("ADDED", "nodes") and q.empty()
    unsubscribe()


def test_history_ring_floor_and_resume(store: Store) -> None:
    res = store.resource("pods")
    start = store.rv
    for i in range(150):
        store.create(pod(f"p{i}"))
    h = store.history(res)
    assert h.seq_after(start) is None  # 150 events > 100 kept: too old
    recent = store.rv - 10
    pos = h.seq_after(recent)
    assert pos is not None and [h.at(s).obj["metadata"]["name"] for s in range(pos, h.seq)][-1] == "p149"
    assert len(range(pos, h.seq)) == 10
    store.expire_history()
    assert h.seq_after(recent) is None and h.seq_after(store.rv) == h.seq


def test_resource_lookup_by_short_name_and_kind(store: Store) -> None:
    assert store.resource("pg").key == "podgroups.scheduling.volcano.sh"
    assert store.resource("vcjob").key == "jobs.batch.volcano.sh"
    assert store.resource("events").key == "events"
    with pytest.raises(KeyError):
        store.resource("widgets")


def test_a_subscriber_that_writes_keeps_everyone_in_order(store: Store) -> None:
    first: list[tuple[str, str]] = []
    second: list[tuple[str, str]] = []

    def kubelet(t: str, key: str, obj: dict) -> None:
        first.append((t, obj["metadata"]["resourceVersion"]))
        if t == "ADDED" and key == "pods":
            store.patch(
                "pods",
                "default",
                obj["metadata"]["name"],
                {"status": {"phase": "Running"}},
                subresource="status",
            )

    store.subscribe(kubelet)
    store.subscribe(lambda t, k, o: second.append((t, o["metadata"]["resourceVersion"])))
    store.create(pod("a"))
    assert first == second and [t for t, _ in first] == ["ADDED", "MODIFIED"]
    assert int(first[0][1]) < int(first[1][1])


def test_pagination_order_follows_creations_and_deletions_after_the_first_paginated_list(
    store: Store,
) -> None:
    res = store.resource("pods")
    for name in ("m", "c", "x"):
        store.create(pod(name))
    assert store.sorted_keys(res) == [("default", "c"), ("default", "m"), ("default", "x")]
    store.create(pod("a"))
    store.create(pod("q"))
    store.delete("pods", "default", "q")  # created and removed before any list saw it
    store.delete("pods", "default", "m")
    store.create(pod("m2"))
    assert store.sorted_keys(res) == [("default", n) for n in ("a", "c", "m2", "x")]
    store.create(pod("b"))
    assert [k[1] for k in store.sorted_keys(res)] == ["a", "b", "c", "m2", "x"]


def test_uids_are_distinct_version_4_uuids() -> None:
    import uuid

    from scheduler.sim.apiserver.store import new_uid

    uids = [new_uid() for _ in range(1000)]  # past one pool of 256
    assert len(set(uids)) == len(uids)
    for u in uids:
        parsed = uuid.UUID(u)
        assert str(parsed) == u and parsed.version == 4 and parsed.variant == uuid.RFC_4122


def test_labels_are_checked_every_time_valid_ones_remembered(store: Store) -> None:
    store.create(pod("a", labels={"app": "x", "example.com/tier": "web"}))
    store.create(pod("b", labels={"app": "x", "example.com/tier": "web"}))  # remembered pairs
    for labels in ({"app": "x y"}, {"bad key!": "x"}, {"app": "x", "example.com/tier": "-web"}):
        for _ in range(2):
            with pytest.raises(ApiError) as exc:
                store.create(pod("c", labels=labels))
            assert exc.value.code == 422 and "metadata.labels" in exc.value.message
