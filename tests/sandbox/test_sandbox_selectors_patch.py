"""Selector grammar and the three patch formats, as pure functions."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.sim.apiserver import ApiError
from scheduler.sim.apiserver.patch import json_patch, merge_patch, strategic_merge_patch
from scheduler.sim.apiserver.selectors import Selector, parse_field_selector, parse_label_selector

OBJ = {
    "metadata": {"name": "p", "namespace": "ns", "labels": {"app": "web", "tier": "front"}},
    "spec": {"nodeName": "", "schedulerName": "volcano"},
    "status": {"phase": "Pending"},
}


@pytest.mark.parametrize(
    ("selector", "matches"),
    [
        ("app=web", True),
        ("app==web", True),
        ("app!=web", False),
        ("app!=db", True),
        ("missing!=x", True),
        ("app in (web,db)", True),
        ("app in (db)", False),
        ("app notin (db, cache)", True),
        ("missing notin (a)", True),
        ("app", True),
        ("!app", False),
        ("!missing", True),
        ("app=web,tier=front", True),
        ("app=web,tier=back", False),
        ("app in (web),!missing,tier", True),
        ("", True),
    ],
)
def test_label_selector_operators(selector: str, matches: bool) -> None:
    assert Selector.parse(selector, None, "pods").matches(OBJ) is matches


@pytest.mark.parametrize(
    ("selector", "matches"),
    [
        ("spec.nodeName=", True),
        ("spec.nodeName!=", False),
        ("spec.schedulerName=volcano", True),
        ("status.phase=Running", False),
        ("metadata.name=p,metadata.namespace=ns", True),
        ("metadata.namespace!=ns", False),
    ],
)
def test_field_selector_fields(selector: str, matches: bool) -> None:
    assert Selector.parse(None, selector, "pods").matches(OBJ) is matches


def test_bad_selectors_are_400() -> None:
    with pytest.raises(ApiError) as exc:
        parse_field_selector("spec.foo=bar", "pods")
    assert exc.value.code == 400 and "field label not supported: spec.foo" in exc.value.message
    with pytest.raises(ApiError):
        parse_field_selector("spec.nodeName=a", "queues.scheduling.volcano.sh")
    with pytest.raises(ApiError):
        parse_label_selector("app in web")


def test_merge_patch_rfc7386_and_sharing() -> None:
    doc = {"a": {"b": 1, "c": 2}, "keep": {"big": [1, 2, 3]}, "list": [1, 2]}
    out = merge_patch(doc, {"a": {"b": None, "d": 3}, "list": [9]})
    assert out == {"a": {"c": 2, "d": 3}, "keep": {"big": [1, 2, 3]}, "list": [9]}
    assert out["keep"] is doc["keep"] and doc["a"] == {"b": 1, "c": 2}


def test_strategic_merge_by_name_and_type() -> None:
    pod = {
        "spec": {"containers": [{"name": "a", "image": "x"}, {"name": "b", "image": "y"}]},
        "status": {"conditions": [{"type": "Ready", "status": "False"}]},
        "metadata": {"finalizers": ["f1"], "tolerations": [1]},
    }
    patch = {
        "spec": {"containers": [{"name": "b", "image": "z"}, {"name": "c", "image": "w"}]},
        "status": {
            "conditions": [{"type": "Ready", "status": "True"}, {"type": "PodScheduled", "status": "True"}]
        },
        "metadata": {"finalizers": ["f2"], "tolerations": [2]},
    }
    out = strategic_merge_patch(pod, patch)
    assert [(c["name"], c["image"]) for c in out["spec"]["containers"]] == [
        ("a", "x"),
        ("b", "z"),
        ("c", "w"),
    ]
    assert out["status"]["conditions"] == [
        {"type": "Ready", "status": "True"},
        {"type": "PodScheduled", "status": "True"},
    ]
    assert out["metadata"]["finalizers"] == ["f1", "f2"]
    assert out["metadata"]["tolerations"] == [2]  # lists without a merge key are replaced


def test_strategic_merge_directives() -> None:
    doc = {
        "spec": {"containers": [{"name": "a"}, {"name": "b"}], "nodeSelector": {"x": "1"}},
        "metadata": {"finalizers": ["f1", "f2"]},
    }
    out = strategic_merge_patch(
        doc,
        {
            "spec": {
                "containers": [{"name": "a", "$patch": "delete"}],
                "$setElementOrder/containers": [{"name": "b"}],
                "nodeSelector": {"$patch": "replace", "y": "2"},
            },
            "metadata": {"$deleteFromPrimitiveList/finalizers": ["f1"]},
        },
    )
    assert out == {
        "spec": {"containers": [{"name": "b"}], "nodeSelector": {"y": "2"}},
        "metadata": {"finalizers": ["f2"]},
    }


def test_json_patch_operations() -> None:
    doc = {"metadata": {"labels": {"a/b": "1"}}, "spec": {"list": [1, 2, 3]}}
    out = json_patch(
        doc,
        [
            {"op": "add", "path": "/metadata/labels/c", "value": "2"},
            {"op": "remove", "path": "/metadata/labels/a~1b"},
            {"op": "replace", "path": "/spec/list/0", "value": 10},
            {"op": "add", "path": "/spec/list/-", "value": 4},
            {"op": "move", "from": "/spec/list/1", "path": "/spec/moved"},
            {"op": "copy", "from": "/spec/moved", "path": "/spec/copied"},
            {"op": "test", "path": "/spec/copied", "value": 2},
        ],
    )
    assert out == {"metadata": {"labels": {"c": "2"}}, "spec": {"list": [10, 3, 4], "moved": 2, "copied": 2}}
    assert doc == {"metadata": {"labels": {"a/b": "1"}}, "spec": {"list": [1, 2, 3]}}


def test_json_patch_failures() -> None:
    with pytest.raises(ApiError) as exc:
        json_patch({"a": 1}, [{"op": "test", "path": "/a", "value": 2}])
    assert exc.value.code == 422
    with pytest.raises(ApiError) as exc:
        json_patch({"a": 1}, [{"op": "remove", "path": "/b"}])
    assert exc.value.code == 422
    with pytest.raises(ApiError) as exc:
        json_patch({"a": 1}, {"op": "add"})
    assert exc.value.code == 400


json_values = st.recursive(
    st.none() | st.integers() | st.text(max_size=3),
    lambda inner: st.dictionaries(st.text("abc", max_size=2), inner, max_size=3),
    max_leaves=8,
)


@settings(max_examples=50)
@given(json_values, json_values)
def test_merge_patch_never_mutates_its_inputs(target: object, patch: object) -> None:
    import copy

    t0, p0 = copy.deepcopy(target), copy.deepcopy(patch)
    merge_patch(target, patch)
    strategic_merge_patch(target, patch)
    assert (target, patch) == (t0, p0)


@given(st.dictionaries(st.text("abc", min_size=1, max_size=2), st.integers(), max_size=4))
def test_merge_patch_with_itself_is_identity(doc: dict) -> None:
    assert merge_patch(doc, doc) == doc
