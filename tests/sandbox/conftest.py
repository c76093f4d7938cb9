"""Fixtures: a started sandbox API server, its kubeconfig, a kubernetes_asyncio client, raw HTTP."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
from kubernetes_asyncio import client as k8s
from kubernetes_asyncio import config as k8s_config

from scheduler.sim.apiserver import ApiServer
from tests import k8stools


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[ApiServer]:
    srv = ApiServer(host="127.0.0.1", port=0, bookmark_interval=0.2)
    await srv.start()
    srv.write_kubeconfig(tmp_path / "kubeconfig")
    try:
        yield srv
    finally:
        await srv.stop()


@pytest.fixture
async def api(server: ApiServer, tmp_path: Path) -> AsyncIterator[k8s.ApiClient]:
    cfg = k8s.Configuration()
    await k8s_config.load_kube_config(config_file=str(tmp_path / "kubeconfig"), client_configuration=cfg)
    async with k8s.ApiClient(configuration=cfg) as c:
        yield c


@pytest.fixture
async def http(server: ApiServer) -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(base_url=server.url) as s:
        yield s


@pytest.fixture(scope="session")
def kubectl_bin() -> Path:
    """The real kubectl (from the PyPI package that carries it); tests that need it skip without it."""
    tools = k8stools.ensure_binaries()
    if tools is None:
        pytest.skip(k8stools.SKIP_REASON)
    return tools["kubectl"]
