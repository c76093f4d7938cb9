"""The per-cycle view the session works on: copy-on-write jobs and nodes it may change freely."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from scheduler.model.job import JobInfo
from scheduler.model.node import NodeInfo
from scheduler.model.objects import PriorityClassInfo, QueueInfo, TaskInfo
from scheduler.model.policy import PdbInfo, ResourceQuotaInfo
from scheduler.model.topology import Topology


@dataclass(slots=True)
class JobViewChanges:
    """Which job views are new since the previous snapshot of the same cluster state, so that a
    plugin can keep per-job or per-queue sums from one session to the next and redo only these.

    A view is handed out again only when neither the cluster nor the last session changed it, so
    every job not in `fresh` looks exactly as it did to the previous session when it opened."""

    serial: int  # this snapshot's number; the previous one is serial - 1
    fresh: set[str]  # jobs whose view is new: new or changed in the cluster, or touched by a session
    gone: set[str]  # jobs of the previous snapshot that are not in this one
    # plugin name -> (serial of the snapshot it was computed on, what the plugin keeps)
    carry: dict[str, tuple[int, Any]]


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
    resource_quotas: list[ResourceQuotaInfo] = field(default_factory=list)
    pdbs: list[PdbInfo] = field(default_factory=list)
    # some pod in the cluster has required pod anti-affinity (placements then affect other nodes)
    has_required_anti_affinity: bool = True
    # jobs that changed in the cluster since the previous snapshot; None = treat every job as changed
    dirty_jobs: set[str] | None = None
    # jobs not quiet (see JobInfo.is_quiet) or changed since the last snapshot; None = unknown
    busy_jobs: set[str] | None = None
    # job uid -> a number growing with the job's place in `jobs`; None = unknown
    job_position: dict[str, int] | None = None
    # how the job views differ from the previous snapshot's; None = unknown (compute from scratch)
    job_changes: JobViewChanges | None = None
    # the HyperNode tree; None = built by the session from the nodes alone (no HyperNodes)
    topology: Topology | None = None
    # pending pods of ours in no job (their PodGroup is missing or was refused as malformed),
    # with why: the session gives each a condition instead of leaving it pending in silence
    unattached: list[tuple[TaskInfo, str]] = field(default_factory=list)
    # "Kind ns/name" -> why the object was refused (malformed), for the messages above
    refused: dict[str, str] = field(default_factory=dict)
    # PodGroups left out because their pods (and owner pods) are gone
    orphan_groups: list[str] = field(default_factory=list)
    # What the cluster knows of the node views without a walk over them (None = unknown: the
    # session walks). The views in `nodes` order; the version of the cluster's node each view
    # shows (NodeInfo.view_versions of the views as handed out); node name -> position in that
    # order; whether some node has a taint.
    node_list: list[NodeInfo] | None = None
    node_versions: list[int] | None = None
    node_index: dict[str, int] | None = None
    has_taints: bool | None = None
    # the positions in `node_list` whose view or version may differ from the previous snapshot's
    # (None = unknown: compare every position)
    node_changed_at: list[int] | None = None
    # how many of `queues` some job names, at least (None = unknown)
    queues_with_jobs: int | None = None
