"""`snapshot` and `explain --kubeconfig` against the running demo sandbox, as the docs use them."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import sys
from pathlib import Path

import pytest
import yaml

from tests import k8stools
from tests.sandbox.test_demo import ROOT, sandbox_cmd

pytestmark = pytest.mark.kubectl


async def cli(*args: str) -> tuple[int, str, str]:
    p = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "scheduler", *args, cwd=ROOT,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(p.communicate(), 120)
    return p.returncode or 0, out.decode(), err.decode()


async def test_snapshot_loses_nothing_and_explain_reads_the_cluster(tmp_path: Path) -> None:
    tools = k8stools.ensure_binaries()
    if tools is None:
        pytest.skip(k8stools.SKIP_REASON)
    proc = await asyncio.create_subprocess_exec(
        *sandbox_cmd(tmp_path), cwd=ROOT, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL
    )
    assert proc.stdout is not None
    try:
        first = (await asyncio.wait_for(proc.stdout.readline(), 60)).decode()
        m = re.search(r"--kubeconfig (\S+) get pods -A -w", first)
        assert m is not None, first
        kubeconfig = m.group(1)
        env = {**os.environ, "HOME": str(tmp_path)}

        async def kubectl(*args: str) -> str:
            p = await asyncio.create_subprocess_exec(
                str(tools["kubectl"]), "--kubeconfig", kubeconfig, *args,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=env,
            )  # fmt: skip
            out, err = await asyncio.wait_for(p.communicate(), 30)
            assert p.returncode == 0, err.decode()
            return out.decode()

        await kubectl("apply", "-f", str(ROOT / "config" / "examples" / "vgpu-too-big.yaml"))
        # wait until a session has decided: the high job runs and the big pod carries its reason
        for _ in range(120):
            msg = await kubectl(
                "get", "pod", "vgpu-too-big", "-o",
                'jsonpath={.status.conditions[?(@.type=="PodScheduled")].message}',
            )  # fmt: skip
            if "nodes are unavailable" in msg:
                break
            await asyncio.sleep(0.5)
        assert "nodes are unavailable" in msg

        snap = tmp_path / "cluster.yaml"
        rc, _out, err = await cli("snapshot", "--kubeconfig", kubeconfig, "-o", str(snap))
        assert rc == 0, err
        docs = list(yaml.safe_load_all(snap.read_text()))
        kinds: dict[str, int] = {}
        for d in docs:
            kinds[d["kind"]] = kinds.get(d["kind"], 0) + 1
        live_pods = json.loads(await kubectl("get", "pods", "-A", "-o", "json"))["items"]
        assert kinds["Node"] == 3 and kinds["Pod"] == len(live_pods) and kinds["Queue"] >= 1, kinds
        assert kinds["PodGroup"] >= 5 and "Job" not in kinds, kinds  # Jobs would replay their pods twice
        assert f"wrote {len(docs)} objects" in err

        # the replay agrees with the cluster: the medium job still waits, the high one still runs
        rc, out, err = await cli("simulate", "-f", str(snap), "--conf", "config/examples/sandbox-demo.conf")
        assert rc == 0, err
        med = next(line for line in out.splitlines() if line.startswith("default/priority-med-test-0"))
        assert "queue resource quota insufficient: queue default cpu:" in med, out
        assert "3 nodes" in out and "warning: no nodes" not in out

        conf = ("--conf", "config/examples/sandbox-demo.conf")  # the sandbox's daemon runs with this file
        rc, out, err = await cli("explain", "default/priority-med-test-0", "--kubeconfig", kubeconfig, *conf)
        assert rc == 0, err
        assert "verdict:  must wait" in out and "queue default" in out, out
        rc, out, err = await cli(
            "explain", "default/vgpu-too-big", "--kubeconfig", kubeconfig, *conf, "-o", "json"
        )
        assert rc == 0, err
        e = json.loads(out)
        assert e["verdict"].startswith("can never fit: asks for 40000 MiB on a card"), e["verdict"]
        assert {c["node"] for c in e["cards"]} == {"gpu-node-2"}
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGINT)
        await asyncio.wait_for(proc.wait(), 30)
