"""`explain` ranks the nodes a waiting pod comes closest to, and finds pods of any namespace."""

from __future__ import annotations

from pathlib import Path

import yaml

from scheduler.registry import default_configuration
from scheduler.sim.manifests import load_files
from scheduler.sim.simulate import simulate
from scheduler.web.explain import explain
from scheduler.web.summary import summary_of


def _node(name: str, cpu: str) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"}},
    }


def _pod(name: str, ns: str, cpu: str, node: str = "") -> dict:
    spec: dict = {
        "schedulerName": "volcano",
        "containers": [{"name": "main", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}],
    }
    status = {}
    if node:
        spec["nodeName"] = node
        status = {"phase": "Running"}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns}, "spec": spec,
            "status": status}  # fmt: skip


def test_closest_nodes_are_the_ones_missing_least_and_each_namespace_is_found(tmp_path: Path) -> None:
    # four 4-CPU nodes with 3, 1, 2 and 4 CPUs in use; a 4-CPU pod fits none of them today
    used = {"node-a": "3", "node-b": "1", "node-c": "2", "node-d": "4"}
    docs = [_node(n, "4") for n in used]
    docs += [_pod(f"busy-{n}", "team-a", cpu, node=n) for n, cpu in used.items()]
    docs += [_pod("wants-4", "team-b", "4"), _pod("wants-5", "team-b", "5")]
    docs.append({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
                 "metadata": {"name": "default"}, "spec": {"weight": 1}})  # fmt: skip
    f = tmp_path / "cluster.yaml"
    f.write_text(yaml.safe_dump_all(docs))
    result = simulate(load_files([str(f)], []), default_configuration(), cycles=1)
    view = summary_of(result.cycles, result.session).view
    assert view is not None

    e = explain(view, "team-b", "wants-4")
    assert e is not None
    assert [c["node"] for c in e["closest_nodes"]] == ["node-b", "node-c", "node-a", "node-d"]
    assert e["closest_nodes"][0]["lacks"] == {"cpu": "needs 4, free 3"}
    assert e["verdict"].startswith("must wait")

    big = explain(view, "team-b", "wants-5")
    assert big is not None
    assert big["verdict"] == "can never fit: the pod's request exceeds every node's allocatable"
    assert big["closest_nodes"][0]["lacks"] == {"cpu": "needs 5, free 3 (allocatable 4)"}

    running = explain(view, "team-a", "busy-node-b")  # another namespace, a running pod
    assert running is not None and running["node"] == "node-b"
    assert explain(view, "team-a", "wants-4") is None  # the name is in team-b only
