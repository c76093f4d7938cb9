"""Pods of one template share their parsed vGPU request, yet each charge names the pod's own group.

Without pod-group spread the one-pod jobs of a template share one parsed request (whose group
key is the first pod's); the allocation takes the group key from the pod. A charge recorded under
the shared request's key would make a later spread pod of another group avoid (or share) the
wrong cards, so the ledger's keys are checked against each pod's own, and the public requests
against a fresh parse.
"""

from __future__ import annotations

import random

from scheduler.framework.cycle import close_session, open_session, run_actions
from scheduler.framework.session import SessionOptions
from scheduler.model.cluster import ClusterState
from scheduler.plugins.deviceshare import annotations as ann
from scheduler.plugins.deviceshare import vgpu
from scheduler.plugins.deviceshare.plugin import DeviceSharePlugin
from scheduler.registry import parse
from scheduler.sim.devicebench import SESSION_CONF
from scheduler.sim.nodegen import make_nodes, parse_node_spec


def _cluster(jobs: int, spread: bool) -> ClusterState:
    state = ClusterState()
    for node in make_nodes([parse_node_spec("3:cpu=32,memory=128Gi,gpu=4xA100-40GB")]):
        state.apply_node(node)
    state.apply_queue(
        {"kind": "Queue", "metadata": {"name": "default"}, "spec": {"weight": 1}, "status": {"state": "Open"}}
    )
    limits = {ann.VGPU_NUMBER: "1", ann.VGPU_MEMORY: "2048", ann.VGPU_CORES: "10"}
    for j in range(jobs):
        name = f"job-{j:03d}"
        meta = {"name": name, "namespace": "ml", "creationTimestamp": float(j)}
        state.apply_podgroup({"kind": "PodGroup", "metadata": meta, "spec": {"minMember": 1, "queue": "default"},
                              "status": {"phase": "Inqueue"}})  # fmt: skip
        anns = {"scheduling.k8s.io/group-name": name}
        if spread:
            anns[ann.VGPU_PODGROUP_POLICY] = "spread"
        state.apply_pod({
            "kind": "Pod",
            "metadata": {"name": f"{name}-0", "namespace": "ml", "uid": f"uid-{name}",
                         "creationTimestamp": float(j), "annotations": anns},
            "spec": {"schedulerName": "volcano", "containers": [
                {"name": "main", "resources": {"requests": {"cpu": "100m"}, "limits": limits}}]},
            "status": {"phase": "Pending"},
        })  # fmt: skip
    return state


def _run(spread: bool) -> tuple[DeviceSharePlugin, dict[str, str], set[int]]:
    """The session's plugin, the group key each placed pod's charge holds (by uid) and the ids of
    the requests the hooks read."""
    ssn = open_session(
        _cluster(12, spread).snapshot(), parse(SESSION_CONF), SessionOptions(), random.Random(3)
    )
    run_actions(ssn)
    plugin = ssn.plugins["deviceshare"]
    assert isinstance(plugin, DeviceSharePlugin)
    held = {}
    for node in ssn.node_list:
        led = node.devices.get(vgpu.KIND)
        if isinstance(led, vgpu.VgpuLedger):
            held.update({uid: group for uid, (group, _) in led.pods.items()})
    shared = {id(plugin._shared_requests(t)) for j in ssn.jobs.values() for t in j.tasks.values()}
    for j in ssn.jobs.values():
        for t in j.tasks.values():
            # the public requests are the pod's own parse, group keys included
            assert plugin.requests_of(t) == plugin._parse(t.pod)
    close_session(ssn)
    return plugin, held, shared


def test_charges_of_a_shared_template_request_name_each_pods_own_group() -> None:
    _, held, shared = _run(spread=False)
    assert len(shared) == 1  # the pods did share their template's request
    assert len(held) == 12
    assert held == {f"uid-job-{j:03d}": f"ml/job-{j:03d}" for j in range(12)}


def test_pods_asking_pod_group_spread_keep_a_request_of_their_own_group() -> None:
    _, held, shared = _run(spread=True)
    assert len(shared) == 12  # the spread group is part of the fit: one request per group
    assert held == {f"uid-job-{j:03d}": f"ml/job-{j:03d}" for j in range(12)}
