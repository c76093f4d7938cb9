"""docs/install.md against what the manifests really create.

Every install the guide shows is rendered (kustomize: deploy/kubernetes, its shadow overlay and
the site overlay the guide tells users to write; Helm: each `helm install` command of the guide,
with its release name and flags), and every object name the guide uses in a kubectl command
(`deploy/X`, `svc/X`, `get cm X`, `-l app=X`, `SHADOW=X`) or names in backticks must be one of
theirs. The chart's NOTES must be commands that work when pasted.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import yaml

from scheduler.__version__ import __version__
from tests.deploy.conftest import CHART, DEPLOY, REPO, run
from tests.deploy.test_manifests import render_helm, render_kustomize

DOC = REPO / "docs" / "install.md"


def code_blocks(text: str, lang: str) -> list[str]:
    return re.findall(rf"^```{lang}\n(.*?)^```", text, re.S | re.M)


def helm_installs(text: str) -> list[list[str]]:
    """The argument lists of every `helm install` in the guide's shell blocks."""
    out = []
    for block in code_blocks(text, "sh"):
        for cmd in block.replace("\\\n", " ").splitlines():
            if cmd.strip().startswith("helm install"):
                out.append(shlex.split(cmd.split("#")[0]))
    return out


def site_overlay(tmp_path: Path) -> Path:
    """The guide's `~/my-site` overlay (its kustomization.yaml as the guide writes it), reaching
    this repository through the link `vc-scheduler` the guide makes."""
    (block,) = [b for b in code_blocks(DOC.read_text(), "sh") if "kind: Kustomization" in b]
    kustomization = block.split("<<'EOF'\n", 1)[1].split("\nEOF\n", 1)[0] + "\n"
    site = tmp_path / "my-site"
    site.mkdir()
    (site / "vc-scheduler").symlink_to(REPO)
    (site / "kustomization.yaml").write_text(kustomization)
    (site / "volcano-scheduler.conf").write_text('actions: "enqueue, allocate"\ntiers: []\n')
    return site


def names_used(text: str) -> set[str]:
    used: set[str] = set()
    for block in code_blocks(text, "sh"):
        for line in block.replace("\\\n", " ").splitlines():
            if not line.strip().startswith(("kubectl", "SHADOW=")):
                continue
            # drop comments, output files and the repository paths given to -k/-f
            line = re.sub(r"\s-[kf]\s+\S+", " ", line.split(" #")[0].split(" > ")[0])
            used.update(re.findall(r"\b(?:deploy|deployment|svc|service)/([a-z0-9][-a-z0-9]*)", line))
            used.update(re.findall(r"\bget (?:cm|configmap) ([a-z0-9][-a-z0-9]*)", line))
            used.update(re.findall(r"-l app=([a-z0-9][-a-z0-9]*)", line))
            used.update(re.findall(r"^SHADOW=([a-z0-9][-a-z0-9]*)", line))
    prose = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    for name in re.findall(r"`([a-z0-9]+(?:-[a-z0-9]+)+)`", prose):
        if "scheduler" in name and "-config" not in name[-7:]:
            used.add(name)
    used.update(re.findall(r"SHADOW=([a-z0-9][-a-z0-9]*)", text))
    return used


def object_names(objs: list[dict[str, Any]]) -> set[str]:
    names = {o["metadata"]["name"] for o in objs}
    for o in objs:  # pod labels count: `-l app=X`
        labels = (((o.get("spec") or {}).get("template") or {}).get("metadata") or {}).get("labels") or {}
        names.update(str(v) for v in labels.values())
    return names


def test_every_name_the_install_guide_uses_is_created_by_its_manifests(
    kubectl: Path, helm: Path, tmp_path: Path
) -> None:
    text = DOC.read_text()
    rendered = render_kustomize(kubectl, DEPLOY / "kubernetes") + render_kustomize(
        kubectl, DEPLOY / "kubernetes" / "shadow"
    )
    site = render_kustomize(kubectl, site_overlay(tmp_path))
    rendered += site
    installs = helm_installs(text)
    assert {args[2] for args in installs} >= {"volcano", "vc-shadow", "vc"}, installs
    for args in installs:
        release, chart, extra = args[2], args[3], args[4:]
        assert chart == "deploy/helm/vc-scheduler", args
        extra = [a for a in extra if a not in ("-n", "volcano-system", "--create-namespace")]
        # the guide's relative file is the site overlay's
        extra = [a.replace("$HOME/my-site/", f"{tmp_path}/my-site/") for a in extra]
        rendered += render_helm(helm, extra, release)
    known = object_names(rendered)
    used = names_used(text)
    assert {"volcano-scheduler", "volcano-scheduler-shadow", "vc-shadow-scheduler", "vc-scheduler"} <= used
    missing = sorted(used - known)
    assert not missing, f"docs/install.md uses names no rendered manifest creates: {missing}"


def test_the_site_overlay_sets_image_and_configuration_without_editing_the_repository(
    kubectl: Path, tmp_path: Path
) -> None:
    objs = render_kustomize(kubectl, site_overlay(tmp_path))
    (dep,) = [o for o in objs if o["kind"] == "Deployment"]
    assert (
        dep["spec"]["template"]["spec"]["containers"][0]["image"] == f"<registry>/vc-scheduler:{__version__}"
    )
    (cm,) = [o for o in objs if o["kind"] == "ConfigMap"]
    assert cm["metadata"]["name"] == "volcano-scheduler-configmap"
    assert cm["data"] == {"volcano-scheduler.conf": 'actions: "enqueue, allocate"\ntiers: []\n'}
    # the placeholder image the manifests name is the version being released
    base = render_kustomize(kubectl, DEPLOY / "kubernetes")
    (base_dep,) = [o for o in base if o["kind"] == "Deployment"]
    image = base_dep["spec"]["template"]["spec"]["containers"][0]["image"]
    assert image == f"ghcr.io/vc-scheduler/vc-scheduler:{__version__}"
    assert f"vc-scheduler:{__version__}" in DOC.read_text()


def test_no_step_of_the_guide_writes_into_the_repository() -> None:
    for block in code_blocks(DOC.read_text(), "sh"):
        for target in re.findall(r">\s*(\S+)", block):
            assert not target.startswith(("deploy/", "config/", "scheduler/")), target


def test_chart_notes_are_commands_that_work_when_pasted(helm: Path, tmp_path: Path) -> None:
    res = run([helm, "install", "vc", CHART, "-n", "volcano-system", "--dry-run=client"])
    assert res.returncode == 0, res.stderr
    notes = res.stdout.split("NOTES:", 1)[1]
    # a foreground port-forward never returns: nothing may be chained after it
    for line in notes.splitlines():
        if "port-forward" in line:
            assert line.rstrip().endswith("&") and "&&" not in line, line
    objs = yaml.safe_load_all(res.stdout.split("NOTES:", 1)[0].split("HOOKS:")[-1])
    names = {o["metadata"]["name"] for o in objs if isinstance(o, dict) and "metadata" in o}
    for ref in re.findall(r"\b(?:deploy|svc)/([a-z0-9-]+)", notes):
        assert ref in names, (ref, sorted(names))
    assert f"vc-scheduler {__version__} is installed as vc-scheduler" in notes
