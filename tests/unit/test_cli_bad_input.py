"""Bad input never produces a traceback: simulate and check-config name what is wrong."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

MIXED = """
apiVersion: v1
kind: Node
metadata: {name: n1}
status:
  allocatable: {cpu: "4", memory: 8Gi, pods: "110"}
  conditions: [{type: Ready, status: "True"}]
---
apiVersion: v1
kind: Node
metadata: {name: n-bad}
status:
  allocatable: {cpu: "four", memory: 8Gi}
  conditions: [{type: Ready, status: "True"}]
---
apiVersion: v1
kind: Pod
metadata: {name: good, namespace: default}
spec:
  schedulerName: volcano
  containers: [{name: c, resources: {requests: {cpu: "1"}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: bad-quantity, namespace: default}
spec:
  schedulerName: volcano
  containers: [{name: c, resources: {requests: {memory: "12XB"}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: negative, namespace: default}
spec:
  schedulerName: volcano
  containers: [{name: c, resources: {requests: {cpu: "-2"}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: no-containers, namespace: default}
spec: {schedulerName: volcano, containers: []}
---
apiVersion: v1
kind: Pod
metadata:
  name: garbled-devices
  namespace: default
  annotations: {volcano.sh/vgpu-ids-new: "GPU-x,NVIDIA,notanumber", volcano.sh/gpu-index: "zero"}
spec:
  schedulerName: volcano
  containers: [{name: c, resources: {requests: {cpu: "1"}}}]
---
- just
- a list
---
42
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {name: too-big, namespace: default}
spec: {minMember: 5}
---
apiVersion: v1
kind: Pod
metadata: {name: member, namespace: default, annotations: {scheduling.k8s.io/group-name: too-big}}
spec:
  schedulerName: volcano
  containers: [{name: c, resources: {requests: {cpu: "1"}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: lost, namespace: default, annotations: {scheduling.k8s.io/group-name: nowhere}}
spec:
  schedulerName: volcano
  containers: [{name: c, resources: {requests: {cpu: "1"}}}]
"""


def vc(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "scheduler", *args], capture_output=True, text=True, timeout=60
    )


def test_simulate_binds_the_valid_pods_and_names_every_skipped_object(tmp_path: Path) -> None:
    f = tmp_path / "mixed.yaml"
    f.write_text(MIXED)
    proc = vc("simulate", "-f", str(f), "-o", "json")
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    out = json.loads(proc.stdout)
    assert out["bindings"]["default/good"] == "n1"
    assert out["bindings"]["default/garbled-devices"] == "n1"
    skipped = {s["object"]: s["reason"] for s in out["skipped"]}
    assert "Node n-bad" in skipped and "cpu" in skipped["Node n-bad"]
    assert "12XB" in skipped["Pod default/bad-quantity"]
    assert "greater than or equal to 0" in skipped["Pod default/negative"]
    assert "container" in skipped["Pod default/no-containers"]
    assert any("not an object" in r for r in skipped.values())
    # a gang that can never be met and a pod whose PodGroup does not exist stay pending, named
    assert "Not enough valid tasks" in out["pending"]["default/member"]
    assert out["pending"]["default/lost"] == "PodGroup default/nowhere does not exist"


def test_a_file_that_is_not_yaml_names_the_file_and_position(tmp_path: Path) -> None:
    f = tmp_path / "broken.yaml"
    f.write_text("kind: Pod\nmetadata: {name: [unclosed\n")
    proc = vc("simulate", "-f", str(f))
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    assert str(f) in proc.stderr and "line" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_check_config_quotes_the_offending_names(tmp_path: Path) -> None:
    bad = tmp_path / "bad.conf"
    bad.write_text('actions: "enqueue, allocate"\ntiers:\n- plugins:\n  - name: prioritty\n')
    proc = vc("check-config", str(bad))
    assert proc.returncode != 0 and "'prioritty'" in proc.stderr and "'priority'" in proc.stderr
    good = tmp_path / "good.conf"
    good.write_text('actions: "enqueue, allocate"\ntiers:\n- plugins:\n  - name: gang\n  - name: tdm\n')
    proc = vc("check-config", str(good))
    assert proc.returncode == 0 and "'tdm'" in proc.stderr


def test_simulate_refuses_a_bad_config_before_doing_anything(tmp_path: Path) -> None:
    conf = tmp_path / "c.conf"
    conf.write_text('actions: "allocate, shufle"\n')
    cluster = tmp_path / "c.yaml"
    cluster.write_text("kind: Namespace\nmetadata: {name: x}\n")
    proc = vc("simulate", "-f", str(cluster), "--conf", str(conf))
    assert proc.returncode != 0 and "'shufle'" in proc.stderr and "Traceback" not in proc.stderr


def test_version_is_printed() -> None:
    proc = vc("--version")
    assert proc.returncode == 0 and proc.stdout.startswith("vc-scheduler ")
