"""The per-cycle view the session works on: cloned jobs, nodes and queues it may mutate freely."""

from __future__ import annotations

from dataclasses import dataclass, field

from scheduler.model.objects import JobInfo, NodeInfo, PriorityClassInfo, QueueInfo


@dataclass(slots=True)
class Snapshot:
    nodes: dict[str, NodeInfo] = field(default_factory=dict)
    jobs: dict[str, JobInfo] = field(default_factory=dict)
    queues: dict[str, QueueInfo] = field(default_factory=dict)
    priority_classes: dict[str, PriorityClassInfo] = field(default_factory=dict)
    # "namespace/name" -> ConfigMap data (device configuration and the like)
    configmaps: dict[str, dict[str, str]] = field(default_factory=dict)
    # namespace name -> labels (inter-pod affinity namespace selectors)
    namespaces: dict[str, dict[str, str]] = field(default_factory=dict)
