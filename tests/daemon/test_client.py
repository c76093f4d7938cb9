"""The API client reads the proxy environment once (not per request) and names events uniquely."""

from __future__ import annotations

from pathlib import Path

import pytest

from scheduler.kube.client import ClientOptions, KubeClient
from scheduler.kube.status import EventCorrelator

KUBECONFIG = """apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "https://api.example.test:6443", insecure-skip-tls-verify: true}
users:
- name: u
  user: {token: abc}
contexts:
- name: x
  context: {cluster: c, user: u}
current-context: x
"""


@pytest.fixture
def kubeconfig(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    for var in (
        "HTTPS_PROXY",
        "https_proxy",
        "HTTP_PROXY",
        "http_proxy",
        "NO_PROXY",
        "no_proxy",
        "ALL_PROXY",
        "all_proxy",
    ):
        monkeypatch.delenv(var, raising=False)
    p = tmp_path / "kubeconfig"
    p.write_text(KUBECONFIG)
    return str(p)


async def test_the_proxy_from_the_environment_is_resolved_once(
    kubeconfig: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://user:pw@proxy.example.test:3128")
    c = await KubeClient.create(ClientOptions(kubeconfig=kubeconfig))
    try:
        rest = c.api.rest_client
        assert rest.proxy == "http://proxy.example.test:3128"
        assert rest.proxy_headers["Proxy-Authorization"].startswith("Basic ")
        assert rest.pool_manager._trust_env is False  # no netrc/proxy lookup thread per request
    finally:
        await c.close()


async def test_no_proxy_leaves_requests_direct(kubeconfig: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example.test:3128")
    monkeypatch.setenv("NO_PROXY", "api.example.test")
    c = await KubeClient.create(ClientOptions(kubeconfig=kubeconfig))
    try:
        assert not c.api.rest_client.proxy
        assert c.api.rest_client.pool_manager._trust_env is False
    finally:
        await c.close()


def test_event_names_are_unique_even_within_one_clock_tick() -> None:
    corr = EventCorrelator()
    names = {corr.observe(("Pod", "ns", "p", str(i)), 1.0, "p")[1].event_name for i in range(1000)}
    assert len(names) == 1000
    assert all(n.startswith("p.") and int(n[2:], 16) > 0 for n in names)


async def test_watch_events_of_any_size_and_split_anywhere_arrive_whole(tmp_path: Path) -> None:
    """Events split across network reads, several in one read, one over aiohttp's 128 KiB line
    limit and a last one without its newline all reach the informer intact, and the token goes."""
    import asyncio
    import json

    from aiohttp import web

    big = {"type": "ADDED", "object": {"metadata": {"name": "big", "annotations": {"a": "x" * 300_000}}}}
    small = [{"type": "MODIFIED", "object": {"metadata": {"name": f"p{i}"}}} for i in range(5)]
    stream = b"".join(json.dumps(e).encode() + b"\n" for e in [small[0], big, *small[1:4]])
    stream += json.dumps(small[4]).encode()  # no newline: the stream ends after it
    seen_auth: list[str] = []

    async def handler(request: web.Request) -> web.StreamResponse:
        seen_auth.append(request.headers.get("authorization", ""))
        resp = web.StreamResponse()
        await resp.prepare(request)
        for i in range(0, len(stream), 7919):  # odd-sized pieces: events split anywhere
            await resp.write(stream[i : i + 7919])
            await asyncio.sleep(0)
        await resp.write_eof()
        return resp

    app = web.Application()
    app.router.add_get("/api/v1/pods", handler)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    conf = tmp_path / "kc"
    conf.write_text(KUBECONFIG.replace("https://api.example.test:6443", f"http://127.0.0.1:{port}"))
    c = await KubeClient.create(ClientOptions(kubeconfig=str(conf)))
    try:
        got = [e async for e in c.watch("/api/v1/pods", {}, 10)]
    finally:
        await c.close()
        await runner.cleanup()
    assert got == [small[0], big, *small[1:]]
    assert seen_auth == ["Bearer abc"]
