"""`explain`, `simulate` (table, html) and the numbers in reasons, on the demo's manifests."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EX = ROOT / "config" / "examples"
DEMO = ["-f", str(EX / "demo-nodes.yaml"), "-f", str(EX / "sandbox-demo.yaml")]
CONF = ["--conf", str(EX / "sandbox-demo.conf")]


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "scheduler", *args], cwd=ROOT, capture_output=True, text=True, timeout=120
    )


def test_explain_the_waiting_medium_job_says_queue_numbers_and_must_wait() -> None:
    p = run("explain", "default/priority-med-test-0", *DEMO, *CONF)
    assert p.returncode == 0, p.stderr
    assert "verdict:  must wait" in p.stdout
    assert "queue resource quota insufficient: queue default cpu: minResources 6" in p.stdout
    assert "> cluster total 6; must wait" in p.stdout
    assert "gpu-node-2: cpu needs 2, free 0" in p.stdout  # every node is full with the high job


def test_explain_a_vgpu_pod_that_fits_no_card_names_the_largest_card() -> None:
    p = run(
        "explain", "default/vgpu-too-big", *DEMO, "-f", str(EX / "vgpu-too-big.yaml"), *CONF, "-o", "json"
    )
    assert p.returncode == 0, p.stderr
    assert p.stdout.endswith("}\n")
    e = json.loads(p.stdout)
    assert e["verdict"] == "can never fit: asks for 40000 MiB on a card, the largest card has 32768 MiB"
    assert e["node_reasons"]["Insufficient volcano.sh/vgpu-memory"] == 2  # the two CPU nodes
    cards = e["cards"]
    assert [c["node"] for c in cards] == ["gpu-node-2", "gpu-node-2"]
    # card 1 holds one 8000 MiB slice, card 0 the 3000 MiB pod and the other 8000 MiB slice
    assert sorted(c["free_memory"] for c in cards) == [32768 - 11000, 32768 - 8000]
    assert not any(c["fits"] for c in cards)


def test_explain_unknown_pod_is_an_error_naming_it() -> None:
    p = run("explain", "default/nope", *DEMO)
    assert p.returncode == 1
    assert "pod default/nope" in p.stderr and "Traceback" not in p.stderr


def test_simulate_table_has_queue_and_devices_columns_and_a_summary() -> None:
    p = run("simulate", *DEMO, *CONF)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0].split() == ["POD", "NODE", "QUEUE", "DEVICES", "RESULT"]
    hami = next(line for line in lines if line.startswith("default/hami-pod"))
    assert "gpu-node-2  default" in hami and "3000MiB 50%" in hami
    assert "11 pods on 3 nodes: 5 bound, 0 pipelined, 6 pending, 0 evicted; 1 session" in lines


def test_simulate_warns_when_the_input_has_no_nodes() -> None:
    p = run("simulate", "-f", str(EX / "sandbox-demo.yaml"))
    assert "warning: no nodes in the input" in p.stdout


def test_simulate_html_is_one_self_contained_page(tmp_path: Path) -> None:
    p = run("simulate", *DEMO, *CONF, "-o", "html")
    assert p.returncode == 0, p.stderr
    html = p.stdout
    assert "window.VC_DATA = " in html and "<style>" in html
    assert 'src="http' not in html and 'href="http' not in html and "static/app" not in html
    data = json.loads(html.split("window.VC_DATA = ", 1)[1].split(";</script>", 1)[0])
    cards = [c for n in data["nodes"]["items"] for c in n["cards"]]
    assert sorted(c["memory_used"] for c in cards) == [8000, 11000]
    assert "default/priority-med-test-0" in data["explain"]


@pytest.mark.parametrize("flag", ["-o", "--output"])
def test_simulate_json_ends_with_a_newline(flag: str) -> None:
    p = run("simulate", *DEMO, flag, "json")
    assert p.stdout.endswith("}\n")


def test_multi_team_gpu_queues_cap_a_team_by_card_memory() -> None:
    p = run(
        "simulate", "-f", str(EX / "demo-nodes.yaml"), "-f", str(EX / "multi-team-gpu-queues.yaml"),
        "--conf", str(EX / "multi-team-gpu.conf"), "-o", "json",
    )  # fmt: skip
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert sorted(out["bindings"]) == [
        "inference/serve-replica-0", "inference/serve-replica-1",
        "research/train-worker-0", "research/train-worker-1",
    ]  # fmt: skip
    assert out["pending"]["research/train-worker-2"] == (
        "queue research resource quota insufficient: volcano.sh/vgpu-memory: "
        "request 8000 + allocated 16000 > deserved 20000; must wait"
    )
