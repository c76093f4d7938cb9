"""Server-side field validation: a field the kind does not have is refused (Strict), dropped with
a warning (Warn, the default) or dropped silently (Ignore) — never stored, as on a real cluster."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml

from scheduler.sim.apiserver import ApiServer
from tests.sandbox.objects import pod
from tests.sandbox.test_kubectl import Kubectl

PODS = "/api/v1/namespaces/default/pods"
CRDS = Path(__file__).resolve().parents[2] / "deploy" / "crds"
TYPO_CONFIGMAP = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": {"name": "conf"},
    "data": {"a": "b"},
    "bogus": 1,
}


def typo_pod(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "containers": [{"name": "c", "image": "busybox", "imagePullPolicyy": "Always"}],
            "schedulerName": "volcano",
            "bogus": 1,
        },
    }


async def test_strict_refuses_the_write_naming_every_unknown_field(
    http: aiohttp.ClientSession, server: ApiServer
) -> None:
    async with http.post(PODS, params={"fieldValidation": "Strict"}, json=typo_pod("p")) as r:
        body = await r.json()
    assert r.status == 400 and body["reason"] == "BadRequest"
    assert 'unknown field "spec.bogus"' in body["message"]
    assert 'unknown field "spec.containers[0].imagePullPolicyy"' in body["message"]
    assert body["message"].startswith('Pod in version "v1" cannot be handled as a Pod: strict decoding error')
    assert server.store.get("pods", "default", "p") is None


async def test_warn_is_the_default_and_the_field_is_not_stored(
    http: aiohttp.ClientSession, server: ApiServer
) -> None:
    async with http.post(PODS, json=typo_pod("p")) as r:
        warnings = r.headers.getall("Warning", [])
        created = await r.json()
    assert r.status == 201
    assert sorted(warnings) == [
        '299 - "unknown field \\"spec.bogus\\""',
        '299 - "unknown field \\"spec.containers[0].imagePullPolicyy\\""',
    ]
    stored = server.store.get("pods", "default", "p")
    for obj in (created, stored):
        assert "bogus" not in obj["spec"] and "imagePullPolicyy" not in obj["spec"]["containers"][0]
        assert obj["spec"]["schedulerName"] == "volcano"  # what the kind has is kept


async def test_ignore_drops_silently_and_a_bad_directive_is_refused(
    http: aiohttp.ClientSession, server: ApiServer
) -> None:
    async with http.post(PODS, params={"fieldValidation": "Ignore"}, json=typo_pod("p")) as r:
        assert r.status == 201 and not r.headers.getall("Warning", [])
    assert "bogus" not in server.store.get("pods", "default", "p")["spec"]
    async with http.post(PODS, params={"fieldValidation": "Loose"}, json=typo_pod("q")) as r:
        body = await r.json()
    assert r.status == 422 and 'fieldValidation: Unsupported value: "Loose"' in body["message"]
    assert server.store.get("pods", "default", "q") is None


async def test_patches_are_checked_by_type(http: aiohttp.ClientSession, server: ApiServer) -> None:
    async with http.post(
        PODS, json={**typo_pod("p"), "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
    ) as r:
        assert r.status == 201
    url = f"{PODS}/p"
    merge = {"Content-Type": "application/merge-patch+json"}
    async with http.patch(
        url, params={"fieldValidation": "Strict"}, headers=merge, json={"spec": {"nodeSelectr": {"a": "b"}}}
    ) as r:
        assert r.status == 400 and 'unknown field "spec.nodeSelectr"' in (await r.json())["message"]
    # strategic merge directives are not fields
    strategic = {"Content-Type": "application/strategic-merge-patch+json"}
    patch = {"metadata": {"labels": {"a": "b"}, "$setElementOrder/finalizers": []}}
    async with http.patch(url, params={"fieldValidation": "Strict"}, headers=strategic, json=patch) as r:
        assert r.status == 200 and not r.headers.getall("Warning", [])
    # a JSON patch's target path and value are both checked; with Warn the unknown part is dropped
    ops = [
        {"op": "add", "path": "/spec/bogus", "value": 1},
        {"op": "add", "path": "/metadata/annotations", "value": {"k": "v"}},
        {"op": "add", "path": "/spec/tolerations", "value": [{"key": "k", "operatr": "Exists"}]},
    ]
    async with http.patch(url, headers={"Content-Type": "application/json-patch+json"}, json=ops) as r:
        warnings = r.headers.getall("Warning", [])
        assert r.status == 200
    assert len(warnings) == 2 and any("spec.tolerations[0].operatr" in w for w in warnings)
    stored = server.store.get("pods", "default", "p")
    assert "bogus" not in stored["spec"] and stored["metadata"]["annotations"] == {"k": "v"}
    assert stored["spec"]["tolerations"] == [{"key": "k"}]
    assert stored["metadata"]["labels"] == {"a": "b"}


async def test_a_configmap_typo_is_an_error_not_a_silent_keep(
    http: aiohttp.ClientSession, server: ApiServer
) -> None:
    async with http.post(
        "/api/v1/namespaces/default/configmaps", params={"fieldValidation": "Strict"}, json=TYPO_CONFIGMAP
    ) as r:
        assert r.status == 400 and 'unknown field "bogus"' in (await r.json())["message"]
    assert server.store.get("configmaps", "default", "conf") is None


async def test_custom_resources_follow_their_crd_schema_once_it_exists(
    http: aiohttp.ClientSession, server: ApiServer
) -> None:
    url = "/apis/scheduling.volcano.sh/v1beta1/namespaces/default/podgroups"
    pg = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": "a"},
        "spec": {"minMember": 2, "queue": "default", "minMembr": 3},
    }
    # without a CRD in the sandbox the kind is free-form: everything is kept
    async with http.post(url, params={"fieldValidation": "Strict"}, json=pg) as r:
        assert r.status == 201
    assert server.store.get("podgroups", "default", "a")["spec"]["minMembr"] == 3
    crd = yaml.safe_load((CRDS / "scheduling.volcano.sh_podgroups.yaml").read_text())
    async with http.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", json=crd) as r:
        assert r.status == 201, await r.text()
    strict = {"fieldValidation": "Strict"}
    async with http.post(url, params=strict, json={**pg, "metadata": {"name": "b"}}) as r:
        body = await r.json()
    assert r.status == 400 and 'unknown field "spec.minMembr"' in body["message"]
    good = {**pg, "metadata": {"name": "c"}, "spec": {"minMember": 2, "queue": "default"}}
    async with http.post(url, params=strict, json=good) as r:
        assert r.status == 201 and not r.headers.getall("Warning", [])


@pytest.mark.kubectl
async def test_kubectl_apply_reports_a_typo(kubectl_bin: Path, server: ApiServer, tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    k = Kubectl(kubectl_bin, tmp_path / "kubeconfig", home)
    rc, _, err = await k.run("apply", "-f", "-", stdin=yaml.safe_dump(TYPO_CONFIGMAP), check=False)
    assert rc != 0 and 'strict decoding error: unknown field "bogus"' in err
    assert server.store.get("configmaps", "default", "conf") is None
    rc, out, err = await k.run(
        "apply", "--validate=warn", "-f", "-", stdin=yaml.safe_dump(TYPO_CONFIGMAP), check=False
    )
    assert rc == 0 and "configmap/conf created" in out and 'Warning: unknown field "bogus"' in err
    assert "bogus" not in server.store.get("configmaps", "default", "conf")


def test_a_clean_spec_is_remembered_and_an_unknown_field_is_always_found() -> None:
    from scheduler.sim.apiserver import fieldcheck
    from scheduler.sim.apiserver.resources import TABLE

    schema = fieldcheck.builtin_schema(TABLE.resolve("pods"))
    assert schema is not None
    clean = pod("a")
    for _ in range(2):  # the second check is the remembered one
        assert fieldcheck.unknown_fields(clean, schema) == []
    bad = pod("b")
    bad["spec"]["containers"][0]["bogus"] = 1
    bad["bogus"] = 2
    for _ in range(2):
        assert fieldcheck.unknown_fields(bad, schema) == ["spec.containers[0].bogus", "bogus"]
    # the same spec under another top-level unknown field: still reported, the spec still clean
    assert fieldcheck.unknown_fields({**clean, "extra": {}}, schema) == ["extra"]
