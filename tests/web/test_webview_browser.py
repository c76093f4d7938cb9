"""The web view as a person sees it: the `make demo` sandbox in headless Chromium.

Starts the demo's sandbox (GPU node with two V100 cards under HAMi, three priority jobs), opens
the page the sandbox prints, and checks what the page shows against what kubectl says: every
card's used memory is the sum of the `vgpu-ids-new` slices of the pods on it, a pending pod's
reason is its PodScheduled message, and after `kubectl delete vcjob priority-high` the page
changes by itself (server-sent events), without a reload. Screenshots go to the test's tmp dir,
or to $VC_WEB_SCREENSHOTS (docs/images is refreshed that way).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
from pathlib import Path
from typing import Any

import pytest

from tests import k8stools
from tests.sandbox.test_demo import ROOT, sandbox_cmd
from tests.web.browser import Browser, chromium_path

pytestmark = [
    pytest.mark.kubectl,
    pytest.mark.skipif(
        chromium_path() is None,
        reason="chromium is not installed (apt-get install chromium; .ci/run does): browser tests skipped",
    ),
]

CARDS_JS = """[...document.querySelectorAll('.card[data-card^="GPU-"]')].map(c => ({
  uuid: c.dataset.card, used: +c.dataset.memoryUsed,
  pods: [...c.querySelectorAll('.cpods div')].map(d => d.textContent)}))"""
GROUPS_JS = """[...document.querySelectorAll('.group')].map(g => ({
  reason: g.dataset.reason, pods: [...g.querySelectorAll('.pod-link')].map(p => p.dataset.pod)}))"""
JOB_PHASE_JS = """Object.fromEntries([...document.querySelectorAll('tr[data-job]')].map(r =>
  [r.dataset.job.replace(/-[0-9a-f]{8}-[0-9a-f-]{27}$/, ''), r.querySelector('.chip').textContent]))"""


def card_memory(pods: dict[str, Any]) -> dict[str, int]:
    """uuid -> MiB the pods' `vgpu-ids-new` annotations put on each card (what kubectl shows)."""
    used: dict[str, int] = {}
    for p in pods["items"]:
        value = (p["metadata"].get("annotations") or {}).get("volcano.sh/vgpu-ids-new", "")
        for uuid, _vendor, mem, _cores in re.findall(r"(GPU-[0-9a-f-]+),(\w+),(\d+),(\d+)", value):
            used[uuid] = used.get(uuid, 0) + int(mem)
    return used


async def test_page_shows_cards_and_reasons_and_follows_a_delete(tmp_path: Path) -> None:
    tools = k8stools.ensure_binaries()
    if tools is None:
        pytest.skip(k8stools.SKIP_REASON)
    shots = Path(os.environ.get("VC_WEB_SCREENSHOTS") or tmp_path)
    home = tmp_path / "home"
    home.mkdir()
    proc = await asyncio.create_subprocess_exec(
        *sandbox_cmd(tmp_path), cwd=ROOT, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL
    )
    assert proc.stdout is not None
    try:
        first = (await asyncio.wait_for(proc.stdout.readline(), 60)).decode()
        kubeconfig = re.search(r"--kubeconfig (\S+) get pods -A -w", first)
        assert kubeconfig is not None, first
        second = (await asyncio.wait_for(proc.stdout.readline(), 30)).decode()
        url = re.search(r"web view: (http://\S+/)", second)
        assert url is not None, second

        async def kubectl(*args: str) -> str:
            p = await asyncio.create_subprocess_exec(
                str(tools["kubectl"]), "--kubeconfig", kubeconfig.group(1), *args,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
                env={**os.environ, "HOME": str(home)},
            )  # fmt: skip
            out, err = await asyncio.wait_for(p.communicate(), 30)
            assert p.returncode == 0, f"kubectl {' '.join(args)}: {err.decode()}"
            return out.decode()

        async with Browser(1400, 1000) as b:
            await b.open(url.group(1))
            # the page fills in once a session has placed the high job and both vGPU pods; sessions
            # start as pods arrive, so an early one may show the vGPU pods before the high job runs:
            # wait for the settled state (later sessions change nothing) before comparing
            await b.wait_for(
                "document.querySelectorAll('.card .cpods div').length >= 3 && "
                "document.querySelectorAll('.group').length >= 1 && "
                f"({JOB_PHASE_JS})['default/priority-high'] === 'Running'",
                timeout=60,
            )
            pods = json.loads(await kubectl("get", "pods", "-o", "json"))
            want = card_memory(pods)
            assert len(want) == 2, want  # the two-card pod spans both V100s
            cards = await b.eval(CARDS_JS)
            assert {c["uuid"]: c["used"] for c in cards} == want
            holders = {c["uuid"]: c["pods"] for c in cards}
            assert all("default/two-vgpu-pod" in p for p in holders.values()), holders
            assert sum("default/hami-pod" in p for p in holders.values()) == 1, holders

            message = await kubectl(
                "get", "pod", "priority-med-test-0", "-o",
                'jsonpath={.status.conditions[?(@.type=="PodScheduled")].message}',
            )  # fmt: skip
            assert "queue resource quota insufficient: queue default cpu:" in message
            groups = await b.eval(GROUPS_JS)
            med = [g for g in groups if "default/priority-med-test-0" in g["pods"]]
            assert med and med[0]["reason"] == message, (groups, message)
            phases = await b.eval(JOB_PHASE_JS)
            assert phases["default/priority-high"] == "Running", phases
            assert phases["default/priority-med"] == phases["default/priority-low"] == "Pending", phases
            queues = await b.eval(
                "[...document.querySelectorAll('tr[data-queue]')].map(r => r.dataset.queue)"
            )
            assert "default" in queues
            await b.screenshot(str(shots / "webview.png"))

            # the explanation panel of a waiting pod says why with numbers
            await b.eval(
                "document.querySelector('.pod-link[data-pod=\"default/priority-low-test-0\"]').click()"
            )
            text = await b.wait_for(
                "!document.getElementById('explain').classList.contains('hidden') && "
                "document.getElementById('explain-body').innerText.includes('verdict') === false && "
                "document.getElementById('explain-body').innerText"
            )
            assert "must wait" in text and "priority-low-test-0" in text, text
            await b.screenshot(str(shots / "webview-explain.png"), full_page=False)
            await b.eval("document.getElementById('explain-close').click()")

            before = await b.eval("document.body.dataset.session")
            await kubectl("delete", "vcjob", "priority-high")
            # no reload: the page follows the sessions by itself
            await b.wait_for(
                f"({JOB_PHASE_JS})['default/priority-med'] === 'Running' && "
                f"!('default/priority-high' in ({JOB_PHASE_JS}))",
                timeout=60,
            )
            assert await b.eval("document.body.dataset.session") != before
            groups = await b.eval(GROUPS_JS)
            assert not any("default/priority-med-test-0" in g["pods"] for g in groups), groups
            assert any("default/priority-low-test-0" in g["pods"] for g in groups), groups
            cpu_nodes = await b.eval(
                "[...document.querySelectorAll('.node')].map(n => n.querySelector('.barrow .v').textContent)"
            )
            assert cpu_nodes == ["2 / 2"] * 3, cpu_nodes  # the medium job took the three nodes
            await b.screenshot(str(shots / "webview-after-delete.png"))
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGINT)
        await asyncio.wait_for(proc.wait(), 30)
