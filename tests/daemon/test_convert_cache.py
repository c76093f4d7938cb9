"""pod_to_task parses each container shape once, yet every pod gets exactly its own requests."""

from __future__ import annotations

import copy

import pytest

from scheduler.model.convert import ConvertError, pod_to_task
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
