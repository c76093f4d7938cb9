"""Small object builders for the sandbox tests."""

from __future__ import annotations

from typing import Any


def pod(name: str, ns: str = "default", **spec: Any) -> dict[str, Any]:
    labels = spec.pop("labels", None)
    body: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"containers": [{"name": "main", "image": "busybox:1.36"}], **spec},
    }
    if labels:
        body["metadata"]["labels"] = labels
    return body


def node(name: str, **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "status": {
            "allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }
