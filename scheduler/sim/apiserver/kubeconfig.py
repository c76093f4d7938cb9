"""A kubeconfig for the sandbox, usable by `kubectl --kubeconfig` and kubernetes_asyncio."""

from __future__ import annotations

import os
from pathlib import Path

import yaml

CONTEXT = "vc-sandbox"


def kubeconfig(
    url: str,
    token: str | None = None,
    ca_file: str | None = None,
    namespace: str = "default",
    client_cert: tuple[str, str] | None = None,
) -> dict:
    """`client_cert`: (certificate file, key file) the user authenticates with."""
    cluster: dict[str, object] = {"server": url}
    if ca_file:
        cluster["certificate-authority"] = str(ca_file)
    user: dict[str, object] = {"token": token} if token else {}
    if client_cert:
        user["client-certificate"], user["client-key"] = client_cert
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "preferences": {},
        "clusters": [{"name": CONTEXT, "cluster": cluster}],
        "users": [{"name": CONTEXT, "user": user}],
        "contexts": [
            {"name": CONTEXT, "context": {"cluster": CONTEXT, "user": CONTEXT, "namespace": namespace}}
        ],
        "current-context": CONTEXT,
    }


def write_kubeconfig(
    path: str | os.PathLike[str],
    url: str,
    token: str | None = None,
    ca_file: str | None = None,
    namespace: str = "default",
    client_cert: tuple[str, str] | None = None,
) -> Path:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(p.name + ".tmp")
    # it may hold a token: readable by its owner only, as kubectl expects of a kubeconfig
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        yaml.safe_dump(kubeconfig(url, token, ca_file, namespace, client_cert), f, sort_keys=False)
    tmp.replace(p)
    return p
