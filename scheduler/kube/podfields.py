"""Pod lists decoded into only the fields pod conversion reads.

A pod as the API serves it is mostly what a scheduler never reads: container images, commands,
environment, probes, volume mounts, status.containerStatuses, managed fields. Decoding all of it
into dicts was a quarter of the initial sync at 600,000 pods, and conversion then compared each
pod's whole container dicts with the previous pod's. msgspec decodes straight into `TypedDict`s
that declare the fields `scheduler/model/convert.py: pod_to_task` (and the informer) read, and
skips the rest without building it: the pods are the same plain dicts, with fewer keys, so one
conversion serves both paths and a malformed value is refused by name there as before. The
declared fields are leaves of type `Any` below the sections, so only a section of the wrong kind
(a `metadata` that is not an object, say) fails the typed decode; the page is then decoded in
full as before and conversion refuses that pod alone. `tests/daemon/test_podfields.py` checks
that every field conversion reads is declared here.

The sections pods of one workload repeat (containers, tolerations, labels, conditions, ...) are
first kept as raw JSON (`msgspec.Raw`, a slice of the page): a pod whose section has the same
bytes as the previous pod's gets the object decoded for that one, and only a section that differs
is decoded. Equal bytes decode to equal values, so conversion sees what a full decode would give;
at 150,000 pods this builds a fraction of the dicts and strings (and frees as few), and the
conversion's own comparisons with the previous pod find the same objects. The pods share those
decoded sections, which nothing writes on (conversion copies what the model keeps and may change).

Without msgspec (an install that left it out) the whole answer is decoded, as before.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any, TypedDict

from scheduler.kube.client import json_loads

try:
    from msgspec import Raw
except ImportError:  # pragma: no cover - an install without msgspec decodes everything
    Raw = Any  # type: ignore[misc,assignment]


class ContainerFields(TypedDict, total=False):
    name: Any
    resources: Any
    ports: Any


# `Raw` marks the sections kept as raw JSON until `_expand` decodes them (see the module's doc)
class MetadataFields(TypedDict, total=False):
    name: Any
    generateName: Any
    namespace: Any
    uid: Any
    resourceVersion: Any
    creationTimestamp: Any
    deletionTimestamp: Any
    labels: Raw
    annotations: Raw
    ownerReferences: Raw


class SpecFields(TypedDict, total=False):
    containers: Raw  # list[ContainerFields]
    initContainers: Raw  # list[ContainerFields]
    overhead: Any
    nodeName: Any
    schedulerName: Any
    priority: Any
    priorityClassName: Any
    preemptionPolicy: Any
    nodeSelector: Raw
    affinity: Raw
    tolerations: Raw
    topologySpreadConstraints: Any
    schedulingGates: Any


class StatusFields(TypedDict, total=False):
    phase: Any
    conditions: Raw
    nominatedNodeName: Any


class PodFields(TypedDict, total=False):
    apiVersion: Any
    kind: Any
    metadata: MetadataFields
    spec: SpecFields
    status: StatusFields


class PodListFields(TypedDict, total=False):
    apiVersion: Any
    kind: Any
    metadata: Any
    items: list[PodFields]


class PodEventFields(TypedDict, total=False):
    type: Any
    object: PodFields


# the sections kept raw, by the section of the pod that holds them
RAW_FIELDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("metadata", ("labels", "annotations", "ownerReferences")),
    ("spec", ("containers", "initContainers", "nodeSelector", "affinity", "tolerations")),
    ("status", ("conditions",)),
)
_CONTAINER_LISTS = ("containers", "initContainers")


def _section_decoder() -> Callable[[str, Any], Any]:
    """Decodes one raw section: a container list into the fields conversion reads, the rest whole."""
    import msgspec

    containers = msgspec.json.Decoder(list[ContainerFields]).decode
    anything = msgspec.json.Decoder().decode
    invalid = msgspec.ValidationError

    def section(key: str, raw: Any) -> Any:
        if key in _CONTAINER_LISTS:
            try:
                return containers(raw)
            except invalid:
                # not a list of objects: as it is, so conversion names the bad pod
                return anything(raw)
        return anything(raw)

    return section


def _typed_decoder() -> Callable[[bytes], Any] | None:
    try:
        import msgspec
    except ImportError:  # pragma: no cover - an install without it decodes everything
        return None
    decoder = msgspec.json.Decoder(PodListFields)
    section = _section_decoder()
    invalid = msgspec.ValidationError

    def decode(data: bytes) -> Any:
        try:
            page = decoder.decode(data)
        except invalid:
            # a section of the wrong kind somewhere in the page: the whole page as it is, so
            # conversion names the bad pod and keeps the others
            return json_loads(data)
        items = page.get("items")
        if items:
            _expand(items, section)
        return page

    return decode


def pod_event_decoder() -> Callable[[bytes], Any]:
    """`loads` for the pod watch's events: each event's pod decoded as a list page's pods are.

    The watch of a burst brings each pod two or three times (created, bound, running), and a
    full decode of each event was the largest part of the watch's own CPU. An event whose pod has
    a section of the wrong kind, an ERROR event (a `Status`, which has none of the pod's fields)
    and an install without msgspec are decoded in full, as before. The decoder remembers the last
    raw bytes and value of each section across events, as `expand` does along a page: the pods
    of one workload arrive together, with equal sections, and share them decoded (nothing writes
    on them). Each watch needs its own decoder (that memory is not shared between threads)."""
    try:
        import msgspec
    except ImportError:  # pragma: no cover - an install without it decodes everything
        return json_loads
    decoder = msgspec.json.Decoder(PodEventFields)
    section = _section_decoder()
    invalid = msgspec.ValidationError
    last: dict[str, tuple[Any, Any]] = {}  # key -> (the previous raw bytes, what they decoded to)
    expand_one, raw_fields = _expand_pod_impl, RAW_FIELDS

    def decode(data: bytes) -> Any:
        try:
            event = decoder.decode(data)
        except invalid:
            return json_loads(data)
        obj = event.get("object")
        if obj is None or event.get("type") == "ERROR":
            return json_loads(data)
        expand_one(obj, raw_fields, section, last)
        return event

    return decode


def _expand(items: list[dict[str, Any]], section: Callable[[str, Any], Any]) -> None:
    """Replace each raw section by its decoded value, decoded once for consecutive equal bytes.

    Compiled when built (native/podexpand.pyx: this loop's per-pod lookups were as costly as the
    typed decode itself); `expand` below is its Python twin."""
    _expand_impl(items, RAW_FIELDS, section)


def expand(
    items: list[dict[str, Any]],
    raw_fields: tuple[tuple[str, tuple[str, ...]], ...],
    section: Callable[[str, Any], Any],
) -> None:
    """The Python twin of `scheduler._native.podexpand.expand`."""
    last: dict[str, tuple[Any, Any]] = {}  # key -> (the previous raw bytes, what they decoded to)
    for pod in items:
        expand_pod(pod, raw_fields, section, last)


def expand_pod(
    pod: dict[str, Any],
    raw_fields: tuple[tuple[str, tuple[str, ...]], ...],
    section: Callable[[str, Any], Any],
    last: dict[str, tuple[Any, Any]],
) -> None:
    """One pod's raw sections replaced by their decoded values; bytes equal to the previous pod's
    (`last`: key -> (raw bytes, decoded value), updated) reuse its value instead of decoding."""
    for name, keys in raw_fields:
        sec = pod.get(name)
        if sec is None:
            continue
        for key in keys:
            raw = sec.get(key)
            if raw is None:
                continue
            prev = last.get(key)
            if prev is not None and prev[0] == raw:
                sec[key] = prev[1]
            else:
                value = sec[key] = section(key, raw)
                last[key] = (raw, value)


def _select_expand() -> Callable[..., None]:
    from scheduler._native import select

    return select("podexpand", sys.modules[__name__]).expand  # type: ignore[no-any-return]


def _select_expand_pod() -> Callable[..., None]:
    from scheduler._native import select

    return select("podexpand", sys.modules[__name__]).expand_pod  # type: ignore[no-any-return]


_expand_impl: Callable[..., None] = _select_expand()
# compiled when built (native/podexpand.pyx), as `_expand_impl`: the loop runs once per watch event
_expand_pod_impl: Callable[..., None] = _select_expand_pod()

# `loads` for a page of a pod list (a malformed answer raises ValueError, as json_loads does)
decode_pod_list: Callable[[bytes], Any] = _typed_decoder() or json_loads
