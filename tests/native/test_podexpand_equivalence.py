"""The compiled expansion of a pod list page's raw sections does what its Python twin does
(native/podexpand.pyx vs scheduler/kube/podfields.expand): the same values, the same sections
decoded (in the same order, so the same calls of `section`), and the same sharing of one decoded
object by consecutive pods with equal bytes, over pages of many shapes: runs of equal sections,
sections that differ, are absent, null, or of the wrong kind.

CI sets VC_SCHEDULER_REQUIRE_NATIVE=1: then a missing compiled module is a failure, not a skip.
"""

from __future__ import annotations

import itertools
import os
import random
from collections.abc import Callable
from typing import Any

import pytest

from scheduler._native import compiled
from scheduler.kube import podfields as twin

msgspec = pytest.importorskip("msgspec", reason="the typed decode needs msgspec")
native = compiled("podexpand")
needs_native = pytest.mark.skipif(native is None, reason="scheduler._native.podexpand is not built")

_VARIANTS: dict[str, list[Any]] = {
    "labels": [{"app": "a"}, {"app": "b", "tier": "x"}, {}, None, "absent"],
    "annotations": [{"scheduling.k8s.io/group-name": "g1"}, {"k": "v"}, None, "absent"],
    "ownerReferences": [[{"kind": "Pod", "name": "o"}], [], "absent"],
    "containers": [
        [{"name": "c", "resources": {"requests": {"cpu": "1"}}, "image": "i"}],
        [{"name": "c", "resources": {"requests": {"cpu": "2"}}}],
        "not-a-list",
        [1, 2],
        "absent",
    ],
    "initContainers": [[{"name": "init"}], None, "absent"],
    "nodeSelector": [{"zone": "a"}, {"zone": "b"}, "absent"],
    "affinity": [{"nodeAffinity": {}}, "absent"],
    "tolerations": [[{"key": "k", "operator": "Exists"}], [], "absent"],
    "conditions": [[{"type": "PodScheduled", "status": "True"}], [{"type": "Ready"}], "absent"],
}
_HOME = {k: section for section, keys in twin.RAW_FIELDS for k in keys}


def _page(rng: random.Random, n: int) -> bytes:
    """Pods that mostly repeat the previous pod's sections (as a gang does), sometimes not."""
    items: list[dict[str, Any]] = []
    cur = {k: rng.choice(v) for k, v in _VARIANTS.items()}
    for i in range(n):
        for k, options in _VARIANTS.items():
            if rng.random() < 0.3:
                cur[k] = rng.choice(options)
        obj: dict[str, Any] = {"metadata": {"name": f"p{i}"}, "spec": {}, "status": {"phase": "Running"}}
        if rng.random() < 0.05:
            obj.pop(rng.choice(["spec", "status"]))
        for k, v in cur.items():
            home = obj.get(_HOME[k])
            if home is not None and v != "absent":
                home[k] = v
        items.append(obj)
    return msgspec.json.encode({"kind": "PodList", "items": items})


def _run(expand: Callable[..., None], data: bytes) -> tuple[list[Any], list[tuple[str, bytes]]]:
    calls: list[tuple[str, bytes]] = []
    decoder = msgspec.json.Decoder(twin.PodListFields)
    anything = msgspec.json.Decoder().decode

    def section(key: str, raw: Any) -> Any:
        calls.append((key, bytes(raw)))
        return anything(raw)

    items = decoder.decode(data)["items"]
    expand(items, twin.RAW_FIELDS, section)
    return items, calls


def _sharing(items: list[Any]) -> list[bool]:
    """For each pod and raw key: is its value the very object the previous pod holds there?"""
    out: list[bool] = []
    for prev, cur in itertools.pairwise(items):
        for section, keys in twin.RAW_FIELDS:
            a, b = prev.get(section) or {}, cur.get(section) or {}
            for k in keys:
                out.append(k in a and k in b and a[k] is b[k])
    return out


def _plain(v: Any) -> Any:
    """A value with the sections still raw spelled as their bytes (a Raw compares by identity)."""
    if isinstance(v, msgspec.Raw):
        return ("raw", bytes(v))
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_plain(x) for x in v]
    return v


def test_native_is_built_when_required() -> None:
    if os.environ.get("VC_SCHEDULER_REQUIRE_NATIVE", "") not in ("", "0"):
        assert native is not None


@needs_native
@pytest.mark.parametrize("seed", range(12))
def test_compiled_expansion_equals_the_python_twin(seed: int) -> None:
    data = _page(random.Random(seed), 200)
    got, got_calls = _run(native.expand, data)
    want, want_calls = _run(twin.expand, data)
    assert got == want
    assert got_calls == want_calls
    assert _sharing(got) == _sharing(want)
    # the page is expanded: no raw section is left
    assert not any(
        isinstance((pod.get(s) or {}).get(k), msgspec.Raw)
        for pod in got
        for s, ks in twin.RAW_FIELDS
        for k in ks
    )


@needs_native
def test_a_section_that_raises_stops_both_alike() -> None:
    data = _page(random.Random(99), 50)

    def failing(key: str, raw: Any) -> Any:
        if key == "tolerations":
            raise ValueError("bad tolerations")
        return msgspec.json.decode(raw)

    results = []
    for expand in (native.expand, twin.expand):
        items = msgspec.json.Decoder(twin.PodListFields).decode(data)["items"]
        with pytest.raises(ValueError, match="bad tolerations"):
            expand(items, twin.RAW_FIELDS, failing)
        results.append(_plain(items))
    assert results[0] == results[1]


def test_the_decoder_uses_the_compiled_expansion_when_built() -> None:
    forced = os.environ.get("VC_SCHEDULER_PURE", "") not in ("", "0")
    want = twin.expand if forced or native is None else native.expand
    assert twin._expand_impl is want


def _run_events(expand_pod: Callable[..., None], data: bytes) -> tuple[list[Any], list[tuple[str, bytes]]]:
    """The page's pods one at a time, as a watch brings them, with one memo across them."""
    calls: list[tuple[str, bytes]] = []
    decoder = msgspec.json.Decoder(twin.PodEventFields)
    anything = msgspec.json.Decoder().decode

    def section(key: str, raw: Any) -> Any:
        calls.append((key, bytes(raw)))
        return anything(raw)

    last: dict[str, tuple[Any, Any]] = {}
    pods = []
    for obj in msgspec.json.decode(data)["items"]:
        pod = decoder.decode(msgspec.json.encode({"type": "MODIFIED", "object": obj}))["object"]
        expand_pod(pod, twin.RAW_FIELDS, section, last)
        pods.append(pod)
    return pods, calls


@needs_native
@pytest.mark.parametrize("seed", range(6))
def test_compiled_event_expansion_equals_the_python_twin(seed: int) -> None:
    data = _page(random.Random(seed), 120)
    got, got_calls = _run_events(native.expand_pod, data)
    want, want_calls = _run_events(twin.expand_pod, data)
    assert got == want
    assert got_calls == want_calls
    assert _sharing(got) == _sharing(want)
    # one pod after another decodes what the page would: each differing section once
    assert got == _run(twin.expand, data)[0]


def test_the_event_decoder_uses_the_compiled_expansion_when_built() -> None:
    forced = os.environ.get("VC_SCHEDULER_PURE", "") not in ("", "0")
    want = twin.expand_pod if forced or native is None else native.expand_pod
    assert twin._expand_pod_impl is want
