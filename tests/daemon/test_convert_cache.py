"""pod_to_task parses each container shape once, yet every pod gets exactly its own requests."""

from __future__ import annotations

import copy

import pytest

from scheduler.model.convert import ConvertError, node_to_info, pod_to_task
from scheduler.model.resources import Resource
from tests.builders import pod


def _pod(name: str, cpu: str = "1", memory: str = "2Gi") -> dict:
    p = pod(name, group="g")
    p["spec"]["containers"][0]["resources"] = {"requests": {"cpu": cpu, "memory": memory}}
    p["spec"]["tolerations"] = [
        {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"}
    ]
    return p


def test_pods_of_one_shape_share_their_parsed_requests() -> None:
    a, b = pod_to_task(_pod("a")), pod_to_task(_pod("b"))
    assert a.resreq is b.resreq and a.pod.containers is b.pod.containers
    assert a.pod.tolerations is b.pod.tolerations  # one copy of equal raw tolerations
    assert a.resreq.milli_cpu == 1000 and a.resreq.memory == 2 * 2**30


def test_a_different_shape_is_parsed_for_itself() -> None:
    pod_to_task(_pod("a"))
    c = pod_to_task(_pod("c", cpu="250m"))
    assert c.resreq.milli_cpu == 250
    d = _pod("d")
    d["spec"]["containers"][0]["ports"] = [{"containerPort": 80, "hostPort": 8080}]
    assert pod_to_task(d).pod.host_ports == [("TCP", "0.0.0.0", 8080)]
    assert pod_to_task(_pod("e")).pod.host_ports == []


@pytest.mark.parametrize("bad", ["lots", -1, True])
def test_a_malformed_pod_is_refused_even_after_good_ones_of_the_same_layout(bad: object) -> None:
    pod_to_task(_pod("a"))
    p = copy.deepcopy(_pod("bad"))
    p["spec"]["containers"][0]["resources"]["requests"]["cpu"] = bad
    with pytest.raises(ConvertError, match="Pod c1/bad"):
        pod_to_task(p)


def test_a_hypernode_turned_invalid_leaves_the_topology() -> None:
    from scheduler.kube.cache import SchedulerCache

    cache = SchedulerCache()
    good = {
        "kind": "HyperNode",
        "metadata": {"name": "s0"},
        "spec": {"tier": 1, "members": [{"type": "Node", "selector": {"exactMatch": {"name": "n0"}}}]},
    }
    cache.hypernodes.upsert(good)
    assert "s0" in cache.state.hypernodes
    cache.hypernodes.upsert({**good, "spec": {"tier": "one"}})
    assert "s0" not in cache.state.hypernodes
    assert "spec.tier must be an integer" in cache.skipped["HyperNode s0"]


def test_labels_and_annotations_that_are_not_strings_are_kept_as_text() -> None:
    p = _pod("a")
    p["metadata"]["labels"] = {"tier": 1, "empty": None, "app": "train"}
    p["metadata"]["annotations"] = {"long": "x" * 100, "list": ["a"]}
    info = pod_to_task(p).pod
    assert info.labels == {"tier": "1", "empty": "", "app": "train"}
    assert info.annotations == {"long": "x" * 100, "list": "['a']"}


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda p: p.update(spec="oops"), "field 'spec' must be an object"),
        (lambda p: p.update(status=[]), "field 'status' must be an object"),
        (lambda p: p["spec"].update(containers={"name": "x"}), "field 'containers' must be a list"),
        (lambda p: p["spec"].update(initContainers="none"), "field 'initContainers' must be a list"),
        (lambda p: p["metadata"].update(labels=["a"]), "field 'labels' must be an object"),
    ],
)
def test_a_pod_with_a_section_of_the_wrong_type_is_refused_by_name(mutate, message: str) -> None:
    pod_to_task(_pod("a"))  # a good pod first: its layout must not let the bad one through
    p = _pod("bad")
    mutate(p)
    with pytest.raises(ConvertError, match="Pod c1/bad") as exc:
        pod_to_task(p)
    assert message in str(exc.value)


def test_a_pod_without_status_is_pending() -> None:
    p = _pod("a")
    p.pop("status", None)
    assert pod_to_task(p).pod.phase == "Pending"


def _fresh(p: dict) -> object:
    """The conversion of `p` with every memo of the previous pod forgotten."""
    import scheduler.model.convert as conv

    conv._LAST_MAPS[:] = [None] * 4
    conv._LAST_CONDITIONS[:] = [None, None]
    conv._LAST_TOLERATIONS[:] = [None, None]
    return pod_to_task(p).pod


def _conditions(p: dict, status: object = "True", reason: object = "") -> dict:
    p["status"] = {
        "phase": "Running",
        "conditions": [
            {"type": "Initialized", "status": "True"},
            {"type": "PodScheduled", "status": status, "reason": reason},
        ],
    }
    return p


def test_consecutive_pods_with_equal_maps_convert_as_each_alone() -> None:
    first = _conditions(_pod("a"))
    first["metadata"]["labels"] = {"app": "train", "volcano.sh/job-name": "g"}
    second = copy.deepcopy(first)
    second["metadata"]["name"] = "b"
    a, b = pod_to_task(first).pod, pod_to_task(second).pod
    assert b == _fresh(copy.deepcopy(second))
    assert a.labels is b.labels  # nothing writes on a pod's labels: one dict for equal ones
    assert a.annotations == b.annotations and a.annotations is not b.annotations  # binds write on these
    assert b.scheduled_condition == ("True", "", "")
    assert a.tolerations is b.tolerations


def test_a_pod_changed_in_place_is_converted_again_in_full() -> None:
    pod_to_task(_pod("z", cpu="7"))  # so that the next pod's own lists are the last ones seen
    p = _conditions(_pod("a"))
    before = pod_to_task(p).pod
    p["metadata"]["labels"]["tier"] = "web"
    p["metadata"]["annotations"]["scheduling.k8s.io/group-name"] = "h"
    p["status"]["conditions"][1]["reason"] = "Unschedulable"
    p["spec"]["tolerations"][0]["effect"] = "NoSchedule"
    p["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "3"
    after = pod_to_task(p)
    assert after.resreq.milli_cpu == 3000  # not the requests the same list had before
    assert after.pod.labels["tier"] == "web" and "tier" not in before.labels
    assert after.job == "c1/h"
    assert after.pod.scheduled_condition == ("True", "Unschedulable", "")
    assert after.pod.tolerations[0]["effect"] == "NoSchedule"
    assert after.pod == _fresh(copy.deepcopy(p))


@pytest.mark.parametrize(("before", "value"), [(1, True), (True, 1), (0, False), (None, None)])
def test_maps_and_conditions_equal_to_the_last_only_by_python_equality_are_converted_apart(
    before: object, value: object
) -> None:
    # 1 == True, yet "1" != "True": a value that is not a string never takes the memo's answer
    p = _conditions(_pod("a"), status=before, reason=before)
    p["metadata"]["labels"] = {"tier": before}
    pod_to_task(p)
    q = _conditions(_pod("b"), status=value, reason=value)
    q["metadata"]["labels"] = {"tier": value}
    got = pod_to_task(q).pod
    assert got == _fresh(copy.deepcopy(q))
    assert got.labels == {"tier": "" if value is None else str(value)}
    assert got.scheduled_condition == (str(value), str(value), "")


def _node(name: str, alloc: dict) -> dict:
    return {"metadata": {"name": name}, "status": {"capacity": dict(alloc), "allocatable": alloc}}


def _fields(r: Resource) -> tuple:
    return (r.milli_cpu, r.memory, r.pods, r.scalars)


def test_equal_resource_lists_are_parsed_once_into_copies_of_their_own() -> None:
    alloc = {"cpu": "64", "memory": "512Gi", "pods": "110", "example.com/fpga": "2"}
    first = node_to_info(_node("n1", alloc))
    second = node_to_info(_node("n2", dict(alloc)))
    assert (
        _fields(second.allocatable)
        == _fields(first.allocatable)
        == (64000.0, 512 * 2**30, 110.0, {"example.com/fpga": 2000.0})
    )
    # each node may change its own (idle is worked out of allocatable in place)
    assert second.allocatable is not first.allocatable
    assert second.allocatable.scalars is not first.allocatable.scalars
    first.allocatable.milli_cpu = 1.0
    first.allocatable.scalars["example.com/fpga"] = 1.0
    third = node_to_info(_node("n3", dict(alloc)))
    assert _fields(third.allocatable) == (64000.0, 512 * 2**30, 110.0, {"example.com/fpga": 2000.0})


def test_resource_lists_that_differ_in_order_or_kind_are_parsed_for_themselves() -> None:
    a = node_to_info(_node("a", {"cpu": "1", "example.com/x": "1", "example.com/y": "2"}))
    b = node_to_info(_node("b", {"cpu": "1", "example.com/y": "2", "example.com/x": "1"}))
    assert list(a.allocatable.scalars) == ["example.com/x", "example.com/y"]
    assert list(b.allocatable.scalars) == ["example.com/y", "example.com/x"]
    assert node_to_info(_node("c", {"cpu": 1})).allocatable.milli_cpu == 1000.0
    # True equals 1 as a dict key: a list holding it is never taken for one holding 1
    with pytest.raises(ConvertError, match=r"status\.allocatable\.cpu"):
        node_to_info(_node("d", {"cpu": True}))


def test_a_bad_resource_list_raises_every_time() -> None:
    for name in ("bad1", "bad2"):
        with pytest.raises(ConvertError, match=rf"Node {name}: status\.allocatable\.cpu"):
            node_to_info(_node(name, {"cpu": "lots"}))
