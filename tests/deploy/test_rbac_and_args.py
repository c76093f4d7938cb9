"""The ClusterRole/Role grant every (verb, resource) the daemon uses, nothing broader (no Secrets,
no wildcards), and the Deployment's arguments are accepted by the daemon's own parser.

Where the permissions come from, in order:
1. a constant the daemon exposes (`API_PERMISSIONS`, `REQUIRED_PERMISSIONS` or `RBAC_RULES` in
   scheduler.daemon or scheduler.kube): an iterable of (apiGroup, resource, verb);
2. otherwise DAEMON_CALLS below, written from reading scheduler/kube/*.py, plus a scan of those
   files: every resource path they build (`resource_path(prefix, "<plural>", ..., "<sub>")`) and every
   `Resource(kind, path)` they watch must be covered by a rule, so a new call cannot go unnoticed.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path
from typing import Any

import pytest

from tests.deploy.conftest import REPO

pytestmark = pytest.mark.kubectl

# (apiGroup, resource, verb) the daemon needs; "" is the core group.
DAEMON_CALLS: set[tuple[str, str, str]] = {
    # informers: list + watch
    *{("", r, v) for r in ("pods", "nodes", "configmaps", "namespaces") for v in ("list", "watch")},
    ("scheduling.k8s.io", "priorityclasses", "list"),
    ("scheduling.k8s.io", "priorityclasses", "watch"),
    *{("scheduling.volcano.sh", r, v) for r in ("podgroups", "queues") for v in ("list", "watch")},
    # binder
    ("", "pods/binding", "create"),
    # evictions: pod status conditions, then DELETE (Volcano does not use the eviction API)
    ("", "pods/status", "patch"),
    ("", "pods", "delete"),
    # device node locks (deviceshare.NodeLockEnable): read the node, patch its annotation
    ("", "nodes", "get"),
    ("", "nodes", "patch"),
    # device configuration ConfigMap read on demand
    ("", "configmaps", "get"),
    # status writes
    ("scheduling.volcano.sh", "podgroups/status", "patch"),
    ("scheduling.volcano.sh", "queues/status", "patch"),
    # events (core; events.k8s.io when the daemon records through the new API)
    ("", "events", "create"),
    ("", "events", "patch"),
    # leader election (namespaced Role)
    ("coordination.k8s.io", "leases", "get"),
    ("coordination.k8s.io", "leases", "create"),
    ("coordination.k8s.io", "leases", "update"),
}

FORBIDDEN_RESOURCES = {"secrets", "serviceaccounts/token", "pods/exec", "pods/attach", "pods/portforward"}


def daemon_permissions() -> tuple[set[tuple[str, str, str]], str]:
    for module in ("scheduler.daemon", "scheduler.kube", "scheduler.kube.client"):
        try:
            mod = importlib.import_module(module)
        except ImportError:
            continue
        for name in ("API_PERMISSIONS", "REQUIRED_PERMISSIONS", "RBAC_RULES"):
            value = getattr(mod, name, None)
            if value:
                return {tuple(x) for x in value}, f"{module}.{name}"  # type: ignore[misc]
    return set(DAEMON_CALLS), "tests/deploy/test_rbac_and_args.py DAEMON_CALLS"


def granted(objs: list[dict[str, Any]]) -> set[tuple[str, str, str]]:
    out = set()
    for o in objs:
        if o["kind"] not in ("ClusterRole", "Role"):
            continue
        for rule in o["rules"]:
            for g in rule["apiGroups"]:
                for r in rule["resources"]:
                    for v in rule["verbs"]:
                        out.add((g, r, v))
    return out


def test_rules_grant_what_the_daemon_uses(kustomized: list[dict[str, Any]], helm_rendered: list[dict[str, Any]]) -> None:
    need, source = daemon_permissions()
    for objs in (kustomized, helm_rendered):
        have = granted(objs)
        missing = sorted(need - have)
        assert not missing, f"not granted (needed per {source}): {missing}"


def test_rules_are_narrow(kustomized: list[dict[str, Any]], helm_rendered: list[dict[str, Any]]) -> None:
    for objs in (kustomized, helm_rendered):
        for g, r, v in granted(objs):
            assert "*" not in (g, r, v), (g, r, v)
            assert r not in FORBIDDEN_RESOURCES, r
            if g in ("scheduling.volcano.sh", "batch.volcano.sh", "apiextensions.k8s.io"):
                assert v not in ("create", "delete", "deletecollection"), (g, r, v)
        leases = [o for o in objs if o["kind"] == "ClusterRole" and any("leases" in r["resources"] for r in o["rules"])]
        assert not leases, "leases belong in the namespaced Role"
        [role] = [o for o in objs if o["kind"] == "Role"]
        assert role["metadata"]["namespace"] == "volcano-system"


def test_rules_grant_nothing_the_daemon_does_not_use(kustomized: list[dict[str, Any]]) -> None:
    need, source = daemon_permissions()
    extra = granted(kustomized) - need
    # allowed on top of the list: the alternative verbs of the same write (update vs patch), and
    # reading single objects of what is listed anyway, and events.k8s.io for the newer events API
    tolerated = {
        ("", "pods", "get"), ("", "pods", "patch"), ("", "pods/status", "update"),
        ("scheduling.volcano.sh", "podgroups", "get"), ("scheduling.volcano.sh", "podgroups", "update"),
        ("scheduling.volcano.sh", "podgroups", "patch"), ("scheduling.volcano.sh", "podgroups/status", "update"),
        ("scheduling.volcano.sh", "queues", "get"), ("scheduling.volcano.sh", "queues/status", "update"),
        ("events.k8s.io", "events", "create"), ("events.k8s.io", "events", "patch"),
    }
    assert not (extra - tolerated), f"granted but not used per {source}: {sorted(extra - tolerated)}"


PATH_RE = re.compile(r'resource_path\(\s*([A-Za-z_."/0-9]+)\s*,\s*"([a-z]+)"(?:[^)]*?,\s*"([a-z]+)"\s*\))?')
WATCH_RE = re.compile(r'["\'](/apis?/[^"\']+)["\']')


def _group_of(prefix: str, text: str) -> str:
    if prefix.startswith('"/api/v1') or prefix == '"/api/v1"':
        return ""
    m = re.match(r'"/apis/([^/]+)/', prefix)
    if m:
        return m.group(1)
    const = re.search(rf"^{re.escape(prefix)}\s*=\s*\"([^\"]+)\"", text, re.M)
    if const:
        return _group_of(f'"{const.group(1)}"', text)
    return "?"


def scanned_resources() -> set[tuple[str, str]]:
    """(apiGroup, resource[/sub]) of every path the daemon's kube/ code builds or watches."""
    found: set[tuple[str, str]] = set()
    for f in sorted((REPO / "scheduler" / "kube").glob("*.py")) + [REPO / "scheduler" / "daemon.py"]:
        if not f.exists():
            continue
        text = f.read_text()
        for prefix, plural, sub in PATH_RE.findall(text):
            found.add((_group_of(prefix, text), f"{plural}/{sub}" if sub else plural))
        for path in WATCH_RE.findall(text):
            m = re.match(r"/api/v1/(?:namespaces/[^/]+/)?([a-z]+)(?:/[^/{]+/([a-z]+))?", path) or re.match(
                r"/apis/([^/]+)/[^/]+/(?:namespaces/[^/]+/)?([a-z]+)", path
            )
            if not m:
                continue
            if path.startswith("/api/v1/"):
                res = m.group(1)
                if res == "namespaces" and "/namespaces/{" in path:
                    continue
                found.add(("", res))
            else:
                found.add((m.group(1), m.group(2)))
    return found


def test_every_resource_the_code_touches_is_covered(kustomized: list[dict[str, Any]]) -> None:
    have = {(g, r) for g, r, _v in granted(kustomized)}
    touched = {x for x in scanned_resources() if x[0] != "?"}
    missing = sorted(touched - have)
    assert not missing, f"scheduler/kube touches resources no rule grants: {missing}"


# --- the Deployment's arguments -----------------------------------------------------------------------
def _parser() -> Any:
    try:
        daemon = importlib.import_module("scheduler.daemon")
    except ImportError as exc:
        pytest.skip(f"scheduler.daemon is not available yet: {exc}")
    for name in ("build_parser", "make_parser", "parser"):
        fn = getattr(daemon, name, None)
        if callable(fn):
            return fn()
    pytest.fail("scheduler.daemon has no build_parser(): the deployment's flags cannot be checked")


def _args(objs: list[dict[str, Any]]) -> list[str]:
    [dep] = [o for o in objs if o["kind"] == "Deployment"]
    args = dep["spec"]["template"]["spec"]["containers"][0]["args"]
    return [a.replace("$(POD_NAMESPACE)", "volcano-system") for a in args]


def test_deployment_args_are_accepted_by_the_daemon(kustomized: list[dict[str, Any]], helm_rendered: list[dict[str, Any]],
                                                     kubectl: Path, helm: Path) -> None:
    from tests.deploy.conftest import KUSTOMIZE_DIR, documents, run
    from tests.deploy.test_manifests import HELM_VARIANTS, render_helm

    parser = _parser()
    shadow = documents(run([kubectl, "kustomize", KUSTOMIZE_DIR / "shadow"]).stdout)
    variants = {"kustomize": kustomized, "shadow": shadow, "helm": helm_rendered}
    for name, extra in HELM_VARIANTS.items():
        variants[f"helm {name}"] = render_helm(helm, extra)
    for name, objs in variants.items():
        args = _args(objs)
        try:
            ns, unknown = parser.parse_known_args(args)
        except SystemExit:
            pytest.fail(f"{name}: the daemon's parser rejects {args}")
        assert not unknown, f"{name}: flags the daemon does not know: {unknown}"
        conf = getattr(ns, "scheduler_conf", None)
        if conf is not None:
            assert conf == "/volcano.scheduler/volcano-scheduler.conf"
