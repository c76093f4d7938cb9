"""The web view's endpoints on a simulated demo cluster: answers, paging, events, the daemon flag."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from scheduler.flags import parse_args
from scheduler.registry import load_file
from scheduler.sim.manifests import load_files
from scheduler.sim.sandbox import web_flags
from scheduler.sim.simulate import simulate
from scheduler.web.explain import explain
from scheduler.web.routes import WebView
from scheduler.web.summary import Summary, summary_of

EX = Path(__file__).resolve().parents[2] / "config" / "examples"


def demo_summary(cycles: int = 1) -> Summary:
    objects = load_files([str(EX / "demo-nodes.yaml"), str(EX / "sandbox-demo.yaml")], [])
    result = simulate(objects, load_file(str(EX / "sandbox-demo.conf")), cycles=cycles)
    return summary_of(result.cycles, result.session)


@pytest.fixture
def view() -> WebView:
    summary = demo_summary(cycles=2)
    return WebView(summary, lambda ns, n: explain(summary.view, ns, n) if summary.view else None)


@pytest.fixture
async def client(view: WebView) -> AsyncIterator[TestClient]:
    app = web.Application()
    view.add_routes(app)
    async with TestClient(TestServer(app)) as c:
        yield c


async def test_overview_queues_and_pending(client: TestClient) -> None:
    o = await (await client.get("/api/overview")).json()
    assert o["session"] == 2 and o["nodes"] == 3
    assert o["cards"] == {"total": 2, "in_use": 2, "memory_used": 19000, "memory_total": 65536}
    assert o["used"]["cpu"] == 6 and o["allocatable"]["cpu"] == 6
    q = await (await client.get("/api/queues")).json()
    default = next(x for x in q["items"] if x["name"] == "default")
    assert default["jobs"] == {"Pending": 2, "Running": 3} and default["allocated"]["cpu"] == 6
    p = await (await client.get("/api/pending")).json()
    assert p["pods"] == 6 and p["total"] == 1  # med and low wait for the same reason
    assert p["items"][0]["reason"].startswith(
        "job is not admitted (enqueue): queue resource quota insufficient"
    )
    assert p["items"][0]["queues"] == {"default": 6}


async def test_lists_are_paged_and_filtered(client: TestClient) -> None:
    page = await (await client.get("/api/nodes", params={"limit": "2", "offset": "1"})).json()
    assert (page["total"], [n["name"] for n in page["items"]]) == (3, ["node-0", "node-1"])
    gpu = await (await client.get("/api/nodes", params={"devices": "1"})).json()
    assert [n["name"] for n in gpu["items"]] == ["gpu-node-2"]
    cards = gpu["items"][0]["cards"]
    assert [(c["memory_used"], c["cores_used"], c["pods"]) for c in cards] == [
        (11000, 50, ["default/hami-pod", "default/two-vgpu-pod"]),
        (8000, 0, ["default/two-vgpu-pod"]),
    ]
    huge = await (await client.get("/api/jobs", params={"limit": "100000"})).json()
    assert huge["limit"] == 500  # never more than a page, whatever the browser asks
    pending = await (await client.get("/api/jobs", params={"phase": "Pending"})).json()
    assert sorted(j["name"].rsplit("-", 5)[0] for j in pending["items"]) == ["priority-low", "priority-med"]
    assert all("must wait" in j["reason"] for j in pending["items"])
    bad = await client.get("/api/jobs", params={"offset": "x", "limit": "-3"})
    assert bad.status == 200


async def test_explain_endpoint_and_unknown_pod(client: TestClient) -> None:
    e = await (await client.get("/api/explain/default/priority-low-test-0")).json()
    assert e["verdict"].startswith("must wait") and e["queue"]["name"] == "default"
    assert (await client.get("/api/explain/default/nope")).status == 404


async def test_page_and_assets_are_local(client: TestClient) -> None:
    html = await (await client.get("/")).text()
    assert 'src="static/app.js"' in html and "http" not in html.split("<body>")[1]
    js = await client.get("/static/app.js")
    assert js.status == 200 and js.content_type == "text/javascript"


async def test_events_announce_each_session_and_close_ends_them(client: TestClient, view: WebView) -> None:
    resp = await client.get("/api/events")
    assert resp.headers["Content-Type"] == "text/event-stream"
    assert await resp.content.readline() == b"event: session\n"
    assert await resp.content.readline() == b"data: 2\n"
    await resp.content.readline()
    view.notify(3)
    assert await asyncio.wait_for(resp.content.readline(), 5) == b"event: session\n"
    assert await resp.content.readline() == b"data: 3\n"
    view.close()
    await resp.content.readline()
    assert await asyncio.wait_for(resp.content.read(), 5) == b""  # the stream ended


def test_history_keeps_the_last_sessions_only() -> None:
    s = demo_summary(cycles=3)
    items = s.sessions()["items"]
    assert [x["session"] for x in items] == [1, 2, 3]
    assert items[0]["binds"] == 5 and items[1]["binds"] == 0
    assert set(items[0]["action_ms"]) == {"enqueue", "allocate", "backfill"}


def test_daemon_flag_and_sandbox_turn_the_web_view_on() -> None:
    assert parse_args(["--enable-web"]).enable_web and not parse_args([]).enable_web
    args, url = web_flags(["--listen-address=0.0.0.0:18080"], "127.0.0.1", no_web=False)
    assert url == "http://127.0.0.1:18080/" and "--enable-web" in args and "--enable-metrics" in args
    args, url = web_flags([], "127.0.0.1", no_web=False)
    assert url.startswith("http://127.0.0.1:") and any(a.startswith("--listen-address=") for a in args)
    assert web_flags(["--x"], "127.0.0.1", no_web=True) == (["--x"], "")
