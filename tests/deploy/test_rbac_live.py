"""The daemon, started with the Deployment's own arguments against the sandbox API server, makes
only requests the ClusterRole and Role allow.

A cluster that exercises the writes: a pod to bind on a shared-GPU node with node locks on (node
patch, Binding), a pod that cannot be placed (pod status patch, events), leader election (Lease),
Queue status; a higher-priority pod next to a running lower-priority one may also preempt (pod
status patch, delete), though the run does not require it. The server's request log
records each request's RBAC verb and resource; after the run every one must be granted.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.deploy.test_rbac_and_args import granted

pytestmark = [pytest.mark.kubectl, pytest.mark.slow]

CONF = """\
actions: "enqueue, allocate, preempt, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: deviceshare
    arguments:
      deviceshare.GPUSharingEnable: true
      deviceshare.NodeLockEnable: true
"""


def _pod(
    name: str, cpu: str, prio: str, limits: dict[str, str] | None = None, node: str = ""
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "schedulerName": "volcano",
        "priorityClassName": prio,
        "containers": [
            {
                "name": "c",
                "image": "busybox",
                "resources": {"requests": {"cpu": cpu}, **({"limits": limits} if limits else {})},
            }
        ],
    }
    if node:
        spec["nodeName"] = node
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec,
    }


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_daemon_requests_are_all_granted(kustomized: list[dict[str, Any]], tmp_path: Path) -> None:
    try:
        from scheduler.sim.apiserver import ApiServer
        from scheduler.sim.controllers import ensure_default_queues
        from scheduler.sim.nodegen import make_nodes, parse_node_spec
        from scheduler.sim.restclient import NAMESPACES, PODS, PRIORITY_CLASSES, ApiError, RestClient
        from scheduler.sim.sandbox import create_objects
    except ImportError as exc:
        pytest.skip(f"the sandbox is not available: {exc}")

    [dep] = [o for o in kustomized if o["kind"] == "Deployment"]
    args = list(dep["spec"]["template"]["spec"]["containers"][0]["args"])
    conf = tmp_path / "volcano-scheduler.conf"
    conf.write_text(CONF)
    port = _free_port()
    args = [
        f"--scheduler-conf={conf}"
        if a.startswith("--scheduler-conf=")
        else f"--listen-address=127.0.0.1:{port}"
        if a.startswith("--listen-address=")
        else a.replace("$(POD_NAMESPACE)", "volcano-system")
        for a in args
    ]

    server = ApiServer(host="127.0.0.1", port=0)
    await server.start()
    client = RestClient(
        server.url, token=getattr(server, "token", None), ca_file=getattr(server, "ca_file", None)
    )
    daemon = None
    try:
        kc = str(tmp_path / "kubeconfig")
        server.write_kubeconfig(kc)
        for ns in ("default", "kube-system", "volcano-system"):
            with contextlib.suppress(ApiError):  # some exist from the start
                await client.create(
                    NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}
                )
        await ensure_default_queues(client)
        for name, value in (("low", 10), ("high", 1000)):
            await client.create(
                PRIORITY_CLASSES,
                {
                    "apiVersion": "scheduling.k8s.io/v1",
                    "kind": "PriorityClass",
                    "metadata": {"name": name},
                    "value": value,
                },
            )
        nodes = make_nodes([parse_node_spec("1:cpu=2,gpu=2xT4,mode=gpushare")])
        node = nodes[0]["metadata"]["name"]
        objs = [
            *nodes,
            _pod("running-low", "2", "low", node=node),
            _pod("gpu-pod", "0", "high", limits={"volcano.sh/gpu-memory": "1024"}),
            _pod("preemptor", "2", "high"),
        ]
        skipped: list[Any] = []
        await create_objects(client, objs, skipped)
        assert not skipped, skipped
        await client.patch(PODS, "running-low", {"status": {"phase": "Running"}}, "default", sub="status")
        server.request_log.clear()

        daemon = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "scheduler",
            "--kubeconfig",
            kc,
            *args,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
        )

        def seen(verb: str, resource: str, sub: str = "") -> bool:
            return any(
                e.get("verb") == verb and e.get("resource") == resource and e.get("subresource", "") == sub
                for e in server.request_log
            )

        for _ in range(150):
            if daemon.returncode is not None:
                break
            if (
                seen("create", "pods", "binding")
                and seen("patch", "nodes")
                and seen("patch", "queues", "status")
            ):
                break
            await asyncio.sleep(0.1)
        await asyncio.sleep(2.5)  # a few more sessions: conditions, events, a preemption if it comes
    finally:
        stderr = b""
        if daemon is not None:
            if daemon.returncode is None:
                daemon.terminate()
            with contextlib.suppress(TimeoutError):
                _, stderr = await asyncio.wait_for(daemon.communicate(), 15)
            if daemon.returncode is None:
                daemon.kill()
        await client.close()
        await server.stop()

    log = [e for e in server.request_log if e.get("verb")]
    assert log, f"the daemon made no API requests; its stderr: {stderr.decode()[-2000:]}"
    used = {
        (e["group"], e["resource"] + (f"/{e['subresource']}" if e.get("subresource") else ""), e["verb"])
        for e in log
    }
    have = granted(kustomized)
    assert not sorted(used - have), f"requests the RBAC rules do not allow: {sorted(used - have)}"
    # the run exercised the writes it was built for
    for want in (
        ("", "pods/binding", "create"),
        ("", "nodes", "patch"),
        ("", "pods/status", "patch"),
        ("", "events", "create"),
        ("coordination.k8s.io", "leases", "create"),
    ):
        assert want in used, (
            f"{want} not exercised; requests: {sorted(used)}; stderr: {stderr.decode()[-1500:]}"
        )
