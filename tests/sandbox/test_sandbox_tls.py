"""HTTPS with a generated CA: clients verify the server through the kubeconfig's CA."""

from __future__ import annotations

import asyncio
import importlib.util
import shutil
import ssl
from pathlib import Path

import aiohttp
import pytest
from kubernetes_asyncio import client as k8s
from kubernetes_asyncio import config as k8s_config

from scheduler.sim.apiserver import ApiServer, tls
from tests import k8stools

GENERATORS = [
    pytest.param(
        "cryptography",
        marks=pytest.mark.skipif(
            importlib.util.find_spec("cryptography") is None,
            reason="the cryptography package is not installed",
        ),
    ),
    pytest.param(
        "openssl", marks=pytest.mark.skipif(shutil.which("openssl") is None, reason="no openssl command")
    ),
]


@pytest.mark.parametrize("generator", GENERATORS)
def test_certificates_chain_to_the_ca(tmp_path: Path, generator: str) -> None:
    make = tls._with_cryptography if generator == "cryptography" else tls._with_openssl
    certs = make(tmp_path, "127.0.0.1")
    ctx = ssl.create_default_context(cafile=str(certs.ca_file))
    ctx.load_cert_chain(certs.cert_file, certs.key_file)  # the key matches the certificate
    assert certs.key_file.stat().st_mode & 0o077 == 0


async def test_https_with_kubernetes_asyncio(tmp_path: Path) -> None:
    async with ApiServer(tls=True) as srv:
        assert srv.url.startswith("https://127.0.0.1:") and srv.ca_file
        srv.write_kubeconfig(tmp_path / "kc")
        cfg = k8s.Configuration()
        await k8s_config.load_kube_config(config_file=str(tmp_path / "kc"), client_configuration=cfg)
        async with k8s.ApiClient(configuration=cfg) as c:
            names = [n.metadata.name for n in (await k8s.CoreV1Api(c).list_namespace()).items]
        assert "default" in names
        # without the CA the server is not trusted
        async with aiohttp.ClientSession() as s:
            with pytest.raises(aiohttp.ClientConnectorCertificateError):
                await s.get(srv.url + "/version")


@pytest.mark.kubectl
async def test_https_with_kubectl(tmp_path: Path) -> None:
    tools = k8stools.ensure_binaries()
    if tools is None:
        pytest.skip(k8stools.SKIP_REASON)
    async with ApiServer(tls=True) as srv:
        srv.write_kubeconfig(tmp_path / "kc")
        proc = await asyncio.create_subprocess_exec(
            str(tools["kubectl"]),
            "--kubeconfig",
            str(tmp_path / "kc"),
            "get",
            "ns",
            "-o",
            "name",
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env={"HOME": str(tmp_path)},
        )
        out, err = await asyncio.wait_for(proc.communicate(), 20)
        assert proc.returncode == 0, err.decode()
        assert "namespace/kube-system" in out.decode().split()
