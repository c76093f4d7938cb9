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

Without msgspec (an install that left it out) the whole answer is decoded, as before.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypedDict

from scheduler.kube.client import json_loads


class ContainerFields(TypedDict, total=False):
    name: Any
    resources: Any
    ports: Any


class MetadataFields(TypedDict, total=False):
    name: Any
    generateName: Any
    namespace: Any
    uid: Any
    resourceVersion: Any
    creationTimestamp: Any
    deletionTimestamp: Any
    labels: Any
    annotations: Any
    ownerReferences: Any


class SpecFields(TypedDict, total=False):
    containers: list[ContainerFields]
    initContainers: list[ContainerFields]
    overhead: Any
    nodeName: Any
    schedulerName: Any
    priority: Any
    priorityClassName: Any
    preemptionPolicy: Any
    nodeSelector: Any
    affinity: Any
    tolerations: Any
    topologySpreadConstraints: Any
    schedulingGates: Any


class StatusFields(TypedDict, total=False):
    phase: Any
    conditions: Any
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


def _typed_decoder() -> Callable[[bytes], Any] | None:
    try:
        import msgspec
    except ImportError:  # pragma: no cover - an install without it decodes everything
        return None
    decoder = msgspec.json.Decoder(PodListFields)
    invalid = msgspec.ValidationError

    def decode(data: bytes) -> Any:
        try:
            return decoder.decode(data)
        except invalid:
            # a section of the wrong kind somewhere in the page: the whole page as it is, so
            # conversion names the bad pod and keeps the others
            return json_loads(data)

    return decode


# `loads` for a page of a pod list (a malformed answer raises ValueError, as json_loads does)
decode_pod_list: Callable[[bytes], Any] = _typed_decoder() or json_loads
