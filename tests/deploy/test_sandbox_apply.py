"""Real kubectl applies the manifests to the sandbox API server: the CRDs, the kustomize install,
the shadow overlay and the rendered chart are accepted and stored as written."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.deploy.conftest import CHART, CRD_DIR, KUSTOMIZE_DIR

pytestmark = pytest.mark.kubectl


def _api_server() -> Any:
    try:
        from scheduler.sim.apiserver import ApiServer
    except ImportError as exc:
        pytest.skip(f"the sandbox API server (scheduler.sim.apiserver.ApiServer) is not available: {exc}")
    return ApiServer


async def sh(*cmd: Any, kubeconfig: str, stdin: bytes | None = None) -> str:
    home = Path(sys.prefix) / "k8s-home"
    home.mkdir(exist_ok=True)
    env = {
        **os.environ,
        "KUBECONFIG": kubeconfig,
        "HOME": str(home),
        "HELM_CACHE_HOME": str(home / "cache"),
        "HELM_CONFIG_HOME": str(home / "config"),
        "HELM_DATA_HOME": str(home / "data"),
    }
    proc = await asyncio.create_subprocess_exec(
        *[str(c) for c in cmd],
        stdin=asyncio.subprocess.PIPE if stdin is not None else None,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
    )
    out, err = await asyncio.wait_for(proc.communicate(stdin), 45)
    assert proc.returncode == 0, f"{' '.join(map(str, cmd))}: {err.decode()}{out.decode()}"
    return out.decode()


async def test_kubectl_apply_to_the_sandbox(kubectl: Path, helm: Path, tmp_path: Path) -> None:
    ApiServer = _api_server()
    server = ApiServer(host="127.0.0.1", port=0)
    await server.start()
    try:
        kc = str(tmp_path / "kubeconfig")
        server.write_kubeconfig(kc)
        await sh(kubectl, "apply", "-k", CRD_DIR, kubeconfig=kc)
        crds = json.loads(await sh(kubectl, "get", "crd", "-o", "json", kubeconfig=kc))
        names = {c["metadata"]["name"] for c in crds["items"]}
        assert {
            "podgroups.scheduling.volcano.sh",
            "queues.scheduling.volcano.sh",
            "jobs.batch.volcano.sh",
        } <= names

        # (`kubectl create namespace` would send protobuf, which the sandbox does not read)
        await sh(
            kubectl,
            "apply",
            "-f",
            "-",
            kubeconfig=kc,
            stdin=b"apiVersion: v1\nkind: Namespace\nmetadata: {name: volcano-system}\n",
        )

        await sh(kubectl, "apply", "-k", KUSTOMIZE_DIR, kubeconfig=kc)
        dep = json.loads(
            await sh(
                kubectl,
                "-n",
                "volcano-system",
                "get",
                "deployment",
                "volcano-scheduler",
                "-o",
                "json",
                kubeconfig=kc,
            )
        )
        assert dep["spec"]["replicas"] == 2
        cm = json.loads(
            await sh(
                kubectl,
                "-n",
                "volcano-system",
                "get",
                "configmap",
                "volcano-scheduler-configmap",
                "-o",
                "json",
                kubeconfig=kc,
            )
        )
        assert "volcano-scheduler.conf" in cm["data"]
        for kind, name in (("clusterrole", "volcano-scheduler"), ("clusterrolebinding", "volcano-scheduler")):
            await sh(kubectl, "get", kind, name, kubeconfig=kc)
        for kind, name in (
            ("serviceaccount", "volcano-scheduler"),
            ("service", "volcano-scheduler-service"),
            ("poddisruptionbudget", "volcano-scheduler"),
            ("role", "volcano-scheduler-leader-election"),
        ):
            await sh(kubectl, "-n", "volcano-system", "get", kind, name, kubeconfig=kc)
        # applying again is a no-op update, as on a real cluster
        await sh(kubectl, "apply", "-k", KUSTOMIZE_DIR, kubeconfig=kc)

        await sh(kubectl, "apply", "-k", KUSTOMIZE_DIR / "shadow", kubeconfig=kc)
        await sh(
            kubectl, "-n", "volcano-system", "get", "deployment", "volcano-scheduler-shadow", kubeconfig=kc
        )

        rendered = await sh(
            helm,
            "template",
            "vc",
            CHART,
            "--namespace",
            "volcano-system",
            "--set",
            "custom.grafana_dashboard_enable=true",
            kubeconfig=kc,
        )
        await sh(kubectl, "apply", "-f", "-", kubeconfig=kc, stdin=rendered.encode())
        await sh(kubectl, "-n", "volcano-system", "get", "deployment", "vc-scheduler", kubeconfig=kc)

        # objects of the CRDs are served with their short names
        await sh(
            kubectl,
            "apply",
            "-f",
            "-",
            kubeconfig=kc,
            stdin=b"""
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: deploy-test}
spec: {weight: 2}
""",
        )
        out = await sh(kubectl, "get", "q", "deploy-test", "-o", "jsonpath={.spec.weight}", kubeconfig=kc)
        assert out.strip() == "2"
    finally:
        await server.stop()
