"""The ClusterRole/Role grant exactly the (verb, resource) pairs the daemon uses — every one it
needs, none it does not (no Secrets, no wildcards) — and the Deployment's arguments are accepted
by the daemon's own parser.

Where the daemon's calls come from: a constant the daemon exposes (`API_PERMISSIONS`,
`REQUIRED_PERMISSIONS` or `RBAC_RULES` in scheduler.daemon or scheduler.kube, an iterable of
(apiGroup, resource, verb)) if there is one; otherwise a static reading of scheduler/kube/*.py
and scheduler/daemon.py (tests/deploy/apiscan.py: every `client.request(METHOD, path)`,
`client.bind()` and informer `Resource(kind, path)`). A call the reading cannot resolve fails the
test rather than being skipped. DOCUMENTED is the list as of this writing, for readers; the test
uses the code.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import pytest

from tests.deploy.apiscan import scan
from tests.deploy.conftest import REPO

pytestmark = pytest.mark.kubectl

# (apiGroup, resource, verb) the daemon uses, "" = core group. For readers; the tests use the code.
DOCUMENTED: set[tuple[str, str, str]] = {
    *{
        (g, r, v)
        for g, r in (
            ("", "pods"),
            ("", "nodes"),
            ("", "namespaces"),
            ("", "configmaps"),
            ("", "resourcequotas"),
            ("policy", "poddisruptionbudgets"),
            ("scheduling.k8s.io", "priorityclasses"),
            ("scheduling.volcano.sh", "podgroups"),
            ("scheduling.volcano.sh", "queues"),
        )
        for v in ("list", "watch")
    },  # informers
    ("", "pods/binding", "create"),  # binder
    ("", "pods", "get"),  # binder: re-read before evicting / after a conflict
    ("", "pods/status", "patch"),  # PodScheduled condition; eviction conditions
    ("", "pods", "delete"),  # eviction (as Volcano: no eviction API)
    ("", "nodes", "patch"),  # deviceshare node locks
    ("scheduling.volcano.sh", "podgroups/status", "patch"),
    ("scheduling.volcano.sh", "queues/status", "patch"),
    ("scheduling.volcano.sh", "podgroups", "patch"),  # status when the CRD has no
    ("scheduling.volcano.sh", "queues", "patch"),  # status subresource (404)
    ("", "events", "create"),
    ("", "events", "patch"),  # events, deduplicated by count
    ("coordination.k8s.io", "leases", "get"),
    ("coordination.k8s.io", "leases", "create"),
    ("coordination.k8s.io", "leases", "update"),  # leader election
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
    files = [*sorted((REPO / "scheduler" / "kube").glob("*.py")), REPO / "scheduler" / "daemon.py"]
    found, unresolved = scan(files)
    assert not unresolved, f"API calls tests/deploy/apiscan.py cannot read (extend it): {unresolved}"
    assert found, "no API calls found in scheduler/kube: has the client moved?"
    return found, "a reading of scheduler/kube/*.py and scheduler/daemon.py"


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


def test_rules_are_exactly_what_the_daemon_uses(
    kustomized: list[dict[str, Any]], helm_rendered: list[dict[str, Any]]
) -> None:
    need, source = daemon_permissions()
    for where, objs in (("deploy/kubernetes", kustomized), ("helm chart", helm_rendered)):
        have = granted(objs)
        assert not sorted(need - have), f"{where}: not granted but used per {source}: {sorted(need - have)}"
        assert not sorted(have - need), f"{where}: granted but not used per {source}: {sorted(have - need)}"


def test_documented_list_is_current() -> None:
    need, source = daemon_permissions()
    assert need == DOCUMENTED, (
        f"the daemon's calls changed ({source}): update DOCUMENTED, docs/install.md#permissions and the rules; "
        f"new: {sorted(need - DOCUMENTED)}, gone: {sorted(DOCUMENTED - need)}"
    )


def test_rules_are_narrow(kustomized: list[dict[str, Any]], helm_rendered: list[dict[str, Any]]) -> None:
    for objs in (kustomized, helm_rendered):
        for g, r, v in granted(objs):
            assert "*" not in (g, r, v), (g, r, v)
            assert r not in FORBIDDEN_RESOURCES, r
            if g in ("scheduling.volcano.sh", "batch.volcano.sh", "apiextensions.k8s.io"):
                assert v not in ("create", "delete", "deletecollection"), (g, r, v)
        leases = [
            o
            for o in objs
            if o["kind"] == "ClusterRole" and any("leases" in r["resources"] for r in o["rules"])
        ]
        assert not leases, "leases belong in the namespaced Role"
        [role] = [o for o in objs if o["kind"] == "Role"]
        assert role["metadata"]["namespace"] == "volcano-system"
        assert {r for _g, r, _v in granted([role])} == {"leases"}


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


def test_deployment_args_are_accepted_by_the_daemon(
    kustomized: list[dict[str, Any]], helm_rendered: list[dict[str, Any]], kubectl: Path, helm: Path
) -> None:
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
            wanted = (
                "volcano-scheduler-capacity.conf" if name == "helm capacity" else "volcano-scheduler.conf"
            )
            assert conf == f"/volcano.scheduler/{wanted}"
