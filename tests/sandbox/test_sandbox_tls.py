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
    certs = make(tmp_path, "127.0.0.1", client=True)
    ctx = ssl.create_default_context(cafile=str(certs.ca_file))
    ctx.load_cert_chain(certs.cert_file, certs.key_file)  # the key matches the certificate
    assert certs.key_file.stat().st_mode & 0o077 == 0
    assert certs.client_cert_file and certs.client_key_file
    ctx.load_cert_chain(certs.client_cert_file, certs.client_key_file)
    assert certs.client_key_file.stat().st_mode & 0o077 == 0
    # the client certificate names its user and group as kube-apiserver reads them (CN, O)
    peer = ssl._ssl._test_decode_cert(str(certs.client_cert_file))  # type: ignore[attr-defined]
    subject = dict(pair for rdn in peer["subject"] for pair in rdn)
    assert subject == {"commonName": tls.CLIENT_USER, "organizationName": tls.CLIENT_GROUP}
    (tmp_path / "plain").mkdir()
    assert make(tmp_path / "plain", "127.0.0.1").client_cert_file is None


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
@pytest.mark.parametrize("client_certs", [False, True], ids=["token", "client-certificate"])
async def test_https_with_kubectl(tmp_path: Path, client_certs: bool) -> None:
    tools = k8stools.ensure_binaries()
    if tools is None:
        pytest.skip(k8stools.SKIP_REASON)
    async with ApiServer(tls=True, require_auth=True, client_certs=client_certs) as srv:
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
        assert ("token" in (tmp_path / "kc").read_text()) is not client_certs
