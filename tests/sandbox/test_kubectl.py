"""Real kubectl v1.35 against the sandbox: apply/create, get (tables, yaml, json), describe,
watch, patch (merge, json, strategic), delete, and the Volcano short names.

kubectl runs as an asyncio subprocess: the server shares the test's event loop and must keep
serving while kubectl waits for it.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from scheduler.sim.apiserver import ApiServer
from tests import k8stools

pytestmark = pytest.mark.kubectl
MANIFESTS = Path(__file__).parent / "manifests"


class Kubectl:
    def __init__(self, binary: Path, kubeconfig: Path, home: Path) -> None:
        self.binary = binary
        self.kubeconfig = kubeconfig
        # kubectl caches discovery under HOME; a fresh one per test keeps servers apart
        self.env = {**os.environ, "HOME": str(home), "KUBECONFIG": str(kubeconfig)}

    async def run(
        self, *args: str, check: bool = True, timeout: float = 20, stdin: str | None = None
    ) -> tuple[int, str, str]:
        proc = await asyncio.create_subprocess_exec(
            str(self.binary),
            "--kubeconfig",
            str(self.kubeconfig),
            "--request-timeout",
            "10s",
            *args,
            stdin=asyncio.subprocess.PIPE if stdin is not None else None,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=self.env,
        )
        out, err = await asyncio.wait_for(
            proc.communicate(stdin.encode() if stdin is not None else None), timeout
        )
        rc = proc.returncode if proc.returncode is not None else -1
        if check:
            assert rc == 0, f"kubectl {' '.join(args)} failed ({rc}): {err.decode()}"
        return rc, out.decode(), err.decode()

    async def json(self, *args: str) -> Any:
        return json.loads((await self.run(*args, "-o", "json"))[1])


@pytest.fixture
async def kubectl(kubectl_bin: Path, server: ApiServer, tmp_path: Path) -> Kubectl:
    home = tmp_path / "home"
    home.mkdir()
    return Kubectl(kubectl_bin, tmp_path / "kubeconfig", home)


async def apply_all(k: Kubectl) -> None:
    for name in ("priorityclasses", "queue", "podgroup", "vcjob", "gpu-pods"):
        await k.run("apply", "-f", str(MANIFESTS / f"{name}.yaml"))


async def test_apply_creates_then_is_unchanged_then_configures(kubectl: Kubectl, server: ApiServer) -> None:
    _, out, _ = await kubectl.run(
        "apply", "-f", str(MANIFESTS / "priorityclasses.yaml"), "-f", str(MANIFESTS / "queue.yaml")
    )
    assert "priorityclass.scheduling.k8s.io/high-priority created" in out
    assert "queue.scheduling.volcano.sh/research created" in out
    _, out, _ = await kubectl.run("apply", "-f", str(MANIFESTS / "queue.yaml"))
    assert "queue.scheduling.volcano.sh/research unchanged" in out
    rv = server.store.get("queues", None, "research")["metadata"]["resourceVersion"]
    changed = yaml.safe_load((MANIFESTS / "queue.yaml").read_text())
    changed["spec"]["weight"] = 8
    del changed["spec"]["capability"]
    _, out, _ = await kubectl.run("apply", "-f", "-", stdin=yaml.safe_dump(changed))
    assert "queue.scheduling.volcano.sh/research configured" in out
    q = server.store.get("queues", None, "research")
    assert q["spec"]["weight"] == 8 and "capability" not in q["spec"]  # removed from the applied config
    assert q["metadata"]["resourceVersion"] != rv and q["metadata"]["generation"] == 2
    assert "kubectl.kubernetes.io/last-applied-configuration" in q["metadata"]["annotations"]


async def test_apply_of_a_pod_twice_uses_strategic_merge(kubectl: Kubectl, server: ApiServer) -> None:
    await kubectl.run("apply", "-f", str(MANIFESTS / "priorityclasses.yaml"))
    await kubectl.run("apply", "-f", str(MANIFESTS / "gpu-pods.yaml"))
    _, out, _ = await kubectl.run("apply", "-f", str(MANIFESTS / "gpu-pods.yaml"))
    assert "pod/vgpu-pod unchanged" in out
    doc = next(yaml.safe_load_all((MANIFESTS / "gpu-pods.yaml").read_text()))
    doc["metadata"]["labels"] = {"app": "vgpu", "stage": "two"}
    _, out, _ = await kubectl.run("apply", "-f", "-", stdin=yaml.safe_dump(doc))
    assert "pod/vgpu-pod configured" in out
    p = server.store.get("pods", "default", "vgpu-pod")
    assert p["metadata"]["labels"] == {"app": "vgpu", "stage": "two"}
    limits = p["spec"]["containers"][0]["resources"]
    assert limits["requests"]["volcano.sh/vgpu-number"] == "2"  # defaulted from the limit
    assert p["spec"]["priority"] == 10 and p["spec"]["schedulerName"] == "volcano"


async def test_get_by_short_names_and_output_formats(kubectl: Kubectl) -> None:
    await apply_all(kubectl)
    for args, expect in (
        (("get", "pg"), "train-gang"),
        (("get", "podgroups"), "train-gang"),
        (("get", "podgroup", "train-gang"), "train-gang"),
        (("get", "q"), "research"),
        (("get", "queues"), "research"),
        (("get", "vcjob"), "mpi-train"),
        (("get", "vj"), "mpi-train"),
        (("get", "po"), "vgpu-pod"),
        (("get", "pc"), "high-priority"),
        (("get", "ns"), "kube-system"),
    ):
        _, out, _ = await kubectl.run(*args)
        assert expect in out, (args, out)
    _, out, _ = await kubectl.run("get", "pods", "-o", "wide")
    header = out.splitlines()[0].split()
    assert header[:5] == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"] and "NODE" in header
    assert "Pending" in out
    _, out, _ = await kubectl.run("get", "pg")
    assert out.splitlines()[0].split()[:2] == ["NAME", "STATUS"]
    _, out, _ = await kubectl.run("get", "pod", "vgpu-pod", "-o", "yaml")
    pod = yaml.safe_load(out)
    assert (
        pod["kind"] == "Pod"
        and pod["metadata"]["annotations"]["scheduling.k8s.io/group-name"] == "train-gang"
    )
    listed = await kubectl.json("get", "queues")
    assert listed["kind"] == "List" and [i["metadata"]["name"] for i in listed["items"]] == ["research"]
    _, out, _ = await kubectl.run("get", "pods", "-l", "app=vgpu", "-o", "name")
    assert out.split() == ["pod/vgpu-pod", "pod/vgpu-pod-2"]
    _, out, _ = await kubectl.run("get", "pods", "--field-selector", "spec.nodeName=", "-o", "name")
    assert len(out.split()) == 2


async def test_create_describe_and_delete(kubectl: Kubectl, server: ApiServer) -> None:
    await kubectl.run("create", "-f", str(MANIFESTS / "priorityclasses.yaml"))
    rc, _, err = await kubectl.run("create", "-f", str(MANIFESTS / "priorityclasses.yaml"), check=False)
    assert rc != 0 and "AlreadyExists" in err
    await kubectl.run("create", "-f", str(MANIFESTS / "gpu-pods.yaml"))
    _, out, _ = await kubectl.run("describe", "pod", "vgpu-pod")
    assert "Priority Class Name:  low-priority" in out and "volcano.sh/vgpu-number:  2" in out
    _, out, _ = await kubectl.run("delete", "pod", "vgpu-pod")
    assert 'pod "vgpu-pod" deleted' in out
    assert server.store.get("pods", "default", "vgpu-pod") is None  # unbound: removed at once
    rc, _, err = await kubectl.run("get", "pod", "vgpu-pod", check=False)
    assert rc != 0 and 'pods "vgpu-pod" not found' in err


async def test_create_and_apply_of_a_list_round_trip(kubectl: Kubectl, server: ApiServer) -> None:
    """`kind: List` files (what `kubectl get -o yaml` writes) are validated against /openapi/v2."""
    listed = (
        "apiVersion: v1\nkind: List\nitems:\n"
        "- {apiVersion: v1, kind: ConfigMap, metadata: {name: first}, data: {x: '1'}}\n"
        "- {apiVersion: v1, kind: ConfigMap, metadata: {name: second}, data: {x: '2'}}\n"
    )
    _, out, _ = await kubectl.run("create", "-f", "-", stdin=listed)
    assert "configmap/first created" in out and "configmap/second created" in out
    _, saved, _ = await kubectl.run("get", "configmap", "first", "second", "-o", "yaml")
    await kubectl.run("delete", "configmap", "first", "second")
    assert server.store.get("configmaps", "default", "first") is None
    _, out, _ = await kubectl.run("apply", "-f", "-", stdin=saved)
    assert "configmap/first created" in out and "configmap/second created" in out
    assert server.store.get("configmaps", "default", "second")["data"] == {"x": "2"}


async def test_get_watch_sees_an_event(kubectl: Kubectl, server: ApiServer) -> None:
    server.store.create(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "early", "namespace": "default"},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]},
        }
    )
    proc = await asyncio.create_subprocess_exec(
        str(kubectl.binary),
        "--kubeconfig",
        str(kubectl.kubeconfig),
        "get",
        "pods",
        "-w",
        "--request-timeout",
        "3s",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=kubectl.env,
    )
    assert proc.stdout is not None
    first = await asyncio.wait_for(proc.stdout.readline(), 10)  # the header: the list has arrived
    assert first.split()[:2] == [b"NAME", b"READY"]
    await asyncio.wait_for(proc.stdout.readline(), 10)
    await asyncio.sleep(0.3)  # kubectl starts its watch after printing the list
    server.store.create(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "late", "namespace": "default"},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]},
        }
    )
    line = await asyncio.wait_for(proc.stdout.readline(), 10)
    proc.terminate()
    await proc.wait()
    assert line.split()[:3] == [b"late", b"0/1", b"Pending"]


async def test_patch_types_with_kubectl(kubectl: Kubectl, server: ApiServer) -> None:
    await apply_all(kubectl)
    await kubectl.run(
        "patch", "pod", "vgpu-pod", "--type", "merge", "-p", '{"metadata":{"labels":{"m":"1"}}}'
    )
    await kubectl.run(
        "patch",
        "pod",
        "vgpu-pod",
        "--type",
        "json",
        "-p",
        '[{"op":"add","path":"/metadata/annotations/j","value":"2"}]',
    )
    await kubectl.run(
        "patch",
        "pod",
        "vgpu-pod",
        "--type",
        "strategic",
        "-p",
        '{"spec":{"containers":[{"name":"cuda","image":"nvidia/cuda:12.5.0-base-ubuntu22.04"}]}}',
    )
    p = server.store.get("pods", "default", "vgpu-pod")
    assert p["metadata"]["labels"]["m"] == "1" and p["metadata"]["annotations"]["j"] == "2"
    assert p["spec"]["containers"][0]["image"].startswith("nvidia/cuda:12.5.0")
    assert (
        p["spec"]["containers"][0]["resources"]["limits"]["volcano.sh/vgpu-number"] == "2"
    )  # merged by name
    await kubectl.run("patch", "pg", "train-gang", "--type", "merge", "-p", '{"spec":{"minMember":3}}')
    assert server.store.get("pg", "default", "train-gang")["spec"]["minMember"] == 3
    rc, _, err = await kubectl.run(
        "patch", "pod", "vgpu-pod", "-p", '{"spec":{"nodeName":"n1"}}', check=False
    )
    assert rc != 0 and "pod updates may not change fields" in err
    await kubectl.run("label", "queue", "research", "tier=gold")
    await kubectl.run("annotate", "vcjob", "mpi-train", "note=x")
    assert server.store.get("queues", None, "research")["metadata"]["labels"] == {"tier": "gold"}


async def test_apply_crd_and_delete_manifests(kubectl: Kubectl, server: ApiServer, tmp_path: Path) -> None:
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "numatopologies.nodeinfo.volcano.sh"},
        "spec": {
            "group": "nodeinfo.volcano.sh",
            "scope": "Cluster",
            "names": {
                "plural": "numatopologies",
                "singular": "numatopology",
                "kind": "Numatopology",
                "shortNames": ["numatopo"],
            },
            "versions": [
                {
                    "name": "v1alpha1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
                    },
                }
            ],
        },
    }
    path = tmp_path / "crd.yaml"
    path.write_text(yaml.safe_dump(crd))
    _, out, _ = await kubectl.run("apply", "-f", str(path))
    assert "customresourcedefinition.apiextensions.k8s.io/numatopologies.nodeinfo.volcano.sh created" in out
    await kubectl.run(
        "wait", "--for", "condition=Established", "crd/numatopologies.nodeinfo.volcano.sh", "--timeout", "5s"
    )
    await apply_all(kubectl)
    _, out, _ = await kubectl.run(
        "delete", "-f", str(MANIFESTS / "vcjob.yaml"), "-f", str(MANIFESTS / "queue.yaml")
    )
    assert "deleted" in out
    assert (
        server.store.get("vcjob", "default", "mpi-train") is None
        and server.store.get("q", None, "research") is None
    )


async def test_imperative_create_commands_send_protobuf_and_work(kubectl: Kubectl, server: ApiServer) -> None:
    await kubectl.run("create", "namespace", "team-a")
    await kubectl.run("label", "namespace", "team-a", "tier=gold")
    await kubectl.run("create", "configmap", "cfg", "-n", "team-a", "--from-literal=mode=fast")
    await kubectl.run("create", "serviceaccount", "bot", "-n", "team-a")
    await kubectl.run("create", "priorityclass", "urgent", "--value=500", "--preemption-policy=Never")
    await kubectl.run("create", "clusterrole", "pod-reader", "--verb=get,list,watch", "--resource=pods")
    await kubectl.run(
        "create",
        "rolebinding",
        "bot-reads",
        "-n",
        "team-a",
        "--clusterrole=pod-reader",
        "--serviceaccount=team-a:bot",
    )
    s = server.store
    assert s.get("namespaces", None, "team-a")["metadata"]["labels"]["tier"] == "gold"
    assert s.get("configmaps", "team-a", "cfg")["data"] == {"mode": "fast"}
    pc = s.get("priorityclasses", None, "urgent")
    assert (pc["value"], pc["preemptionPolicy"]) == (500, "Never")
    assert s.get("clusterroles", None, "pod-reader")["rules"] == [
        {"verbs": ["get", "list", "watch"], "apiGroups": [""], "resources": ["pods"]}
    ]
    rb = s.get("rolebindings", "team-a", "bot-reads")
    assert rb["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "ClusterRole",
        "name": "pod-reader",
    }
    assert rb["subjects"] == [{"kind": "ServiceAccount", "name": "bot", "namespace": "team-a"}]
    assert (
        "generateName" not in s.get("configmaps", "team-a", "cfg")["metadata"]
    )  # Go's empty strings dropped
    # Deployments and Jobs come as protobuf too: what is stored is what the client built
    for args in (
        ("deployment", "web", "--image=nginx", "--replicas=2", "--port=80"),
        ("job", "once", "--image=busybox", "--", "sleep", "5"),
    ):
        _, dry, _ = await kubectl.run("create", "--dry-run=client", "-o", "json", *args)
        await kubectl.run("create", *args)
        stored = s.get("deployments" if args[0] == "deployment" else "jobs.batch", "default", args[1])
        sent = json.loads(dry)["spec"]
        # what the client sent, plus the server's defaults (strategy, backoffLimit, ...)
        assert _within(sent, stored["spec"]), (args, stored["spec"])
        assert stored["spec"]["strategy" if args[0] == "deployment" else "backoffLimit"]
    rc, _, err = await kubectl.run("create", "service", "clusterip", "web", "--tcp=80", check=False)
    assert rc != 0 and "send JSON" in err  # a kind the protobuf reader does not describe: a clear 415


def _within(sent: Any, stored: Any) -> bool:
    """Every field of `sent` is in `stored` with the same value (maps may have gained defaults)."""
    if isinstance(sent, dict):
        return isinstance(stored, dict) and all(
            k in stored and _within(v, stored[k]) for k, v in sent.items()
        )
    return bool(sent == stored)


async def test_cordon_and_drain_evict_through_protobuf(kubectl: Kubectl, server: ApiServer) -> None:
    s = server.store
    s.create(
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": "n1"},
            "status": {"conditions": [{"type": "Ready", "status": "True"}]},
        }
    )
    s.create(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "victim", "namespace": "default"},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]},
        }
    )
    s.bind("default", "victim", {"target": {"name": "n1"}})
    server.request_log.clear()
    _, out, _ = await kubectl.run("drain", "n1", "--force", "--grace-period", "0", "--timeout", "10s")
    assert "node/n1 drained" in out
    assert s.get("nodes", None, "n1")["spec"]["unschedulable"] is True
    assert s.get("pods", "default", "victim") is None
    assert any(e["subresource"] == "eviction" and e["code"] == 201 for e in server.request_log)


async def test_server_side_apply(kubectl: Kubectl, server: ApiServer) -> None:
    _, out, _ = await kubectl.run(
        "apply",
        "--server-side",
        "-f",
        str(MANIFESTS / "priorityclasses.yaml"),
        "-f",
        str(MANIFESTS / "queue.yaml"),
        "-f",
        str(MANIFESTS / "gpu-pods.yaml"),
    )
    assert "queue.scheduling.volcano.sh/research serverside-applied" in out
    changed = yaml.safe_load((MANIFESTS / "queue.yaml").read_text())
    changed["spec"]["weight"] = 9
    await kubectl.run("apply", "--server-side", "-f", "-", stdin=yaml.safe_dump(changed))
    q = server.store.get("queues", None, "research")
    assert q["spec"]["weight"] == 9 and q["spec"]["capability"]["cpu"] == "64"
    assert server.store.get("pods", "default", "vgpu-pod")["spec"]["priority"] == 10


async def test_helm_install_upgrade_uninstall(kubectl: Kubectl, server: ApiServer, tmp_path: Path) -> None:
    tools = k8stools.ensure_binaries()
    assert tools is not None
    chart = tmp_path / "chart"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: sbx\nversion: 0.1.0\n")
    (chart / "values.yaml").write_text("weight: 1\n")
    (chart / "templates" / "objects.yaml").write_text(
        'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: sbx-conf}\ndata: {weight: "{{ .Values.weight }}"}\n---\n'
        "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: sbx-queue}\nspec: {weight: {{ .Values.weight }}}\n"
    )
    env = {
        **kubectl.env,
        "HELM_CACHE_HOME": str(tmp_path / "hc"),
        "HELM_CONFIG_HOME": str(tmp_path / "hcfg"),
        "HELM_DATA_HOME": str(tmp_path / "hd"),
    }

    async def helm(*args: str) -> str:
        proc = await asyncio.create_subprocess_exec(
            str(tools["helm"]),
            "--kubeconfig",
            str(kubectl.kubeconfig),
            *args,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=env,
        )
        out, err = await asyncio.wait_for(proc.communicate(), 45)
        assert proc.returncode == 0, f"helm {' '.join(args)}: {err.decode()}"
        return out.decode()

    await helm("install", "sbx", str(chart), "-n", "default")
    assert server.store.get("queues", None, "sbx-queue")["spec"]["weight"] == 1
    assert any(
        s["metadata"]["name"].startswith("sh.helm.release.v1.sbx") for s in server.store.list("secrets")
    )
    await helm("upgrade", "sbx", str(chart), "-n", "default", "--set", "weight=5")
    assert server.store.get("queues", None, "sbx-queue")["spec"]["weight"] == 5
    assert "sbx" in await helm("list", "-n", "default")
    await helm("uninstall", "sbx", "-n", "default")
    assert server.store.get("queues", None, "sbx-queue") is None and server.store.list("secrets") == []


ROOT = Path(__file__).resolve().parents[2]
SEED_CLUSTERS = ("priority-gang-seed003", "gpu-share-seed000", "vgpu-binpack-seed004")


async def test_seed_manifests_apply_create_get_describe_delete(kubectl: Kubectl, server: ApiServer) -> None:
    """The seed scenarios' own files and the demo's manifest, as a user would feed them to kubectl."""
    s = server.store
    # the demo's manifest: PriorityClasses, three Volcano Jobs and vGPU pods, created (not applied)
    await kubectl.run("create", "namespace", "demo")
    rc, _, err = await kubectl.run(
        "create", "-n", "demo", "-f", str(ROOT / "config" / "examples" / "sandbox-demo.yaml"), check=False
    )
    # the manifest names default: kubectl refuses its namespaced objects, as on a cluster, while the
    # cluster-scoped PriorityClasses are created
    assert rc != 0 and "does not match the namespace" in err
    assert s.get("priorityclasses", None, "med-priority")["value"] == 50 and s.list("pods", "demo") == []
    rc, out, err = await kubectl.run(
        "create", "-f", str(ROOT / "config" / "examples" / "sandbox-demo.yaml"), check=False
    )
    assert (
        rc != 0
        and err.count("AlreadyExists") == 3
        and 'priorityclasses.scheduling.k8s.io "high-priority" already exists' in err
    )
    assert "job.batch.volcano.sh/priority-low created" in out and "pod/two-vgpu-pod created" in out, out
    _, out, _ = await kubectl.run("get", "vcjob")
    assert [line.split()[0] for line in out.splitlines()[1:]] == [
        "priority-high",
        "priority-low",
        "priority-med",
    ]
    _, out, _ = await kubectl.run("describe", "vcjob", "priority-med")
    assert re.search(r"Min Available:\s+3", out) and re.search(r"Queue:\s+default", out), out
    _, out, _ = await kubectl.run("delete", "-f", str(ROOT / "config" / "examples" / "sandbox-demo.yaml"))
    assert 'job.batch.volcano.sh "priority-high" deleted' in out and 'pod "hami-pod" deleted' in out
    assert (
        s.get("vcjob", "default", "priority-high") is None
        and s.get("pods", "default", "two-vgpu-pod") is None
    )
    # the seed scenarios' clusters, applied one after the other (they share the default queue)
    for seed in SEED_CLUSTERS:
        _, out, _ = await kubectl.run(
            "apply", "-f", str(ROOT / "tests" / "scenarios" / seed / "cluster.yaml")
        )
        assert "created" in out or "configured" in out or "unchanged" in out, out
    assert [
        s.get("priorityclasses", None, n)["value"] for n in ("high-priority", "med-priority", "low-priority")
    ] == [100, 50, 10]
    assert s.get("podgroups", "default", "priority-high")["spec"]["minMember"] == 3
    vgpu = s.get("pods", "default", "hami-pod")["spec"]["containers"][0]["resources"]
    assert vgpu["requests"]["volcano.sh/vgpu-memory"] == "3000"  # requests defaulted from the limits
    _, out, _ = await kubectl.run("get", "pg", "priority-high", "-o", "yaml")
    pg = yaml.safe_load(out)
    assert (pg["kind"], pg["spec"]["priorityClassName"], pg["spec"]["minResources"]) == (
        "PodGroup",
        "high-priority",
        {"cpu": "6"},
    )
    _, out, _ = await kubectl.run("describe", "podgroup", "priority-med")
    assert re.search(r"Min Member:\s+3", out) and re.search(r"Priority Class Name:\s+med-priority", out), out
    _, out, _ = await kubectl.run("describe", "queue", "default")
    assert re.search(r"^Name:\s+default$", out, re.MULTILINE) and re.search(r"Weight:\s+1", out), out
    _, out, _ = await kubectl.run("get", "q", "-o", "name")
    assert out.split() == ["queue.scheduling.volcano.sh/default"]
