"""A throwaway certificate authority and serving certificate for `ApiServer(tls=True)`.

The CA certificate goes into the kubeconfig (`certificate-authority`), so kubectl and
kubernetes_asyncio verify the server as they would a cluster's, with no "insecure" switch.
Made with the `cryptography` package when it is installed, else with the `openssl` command.
"""

from __future__ import annotations

import datetime
import ipaddress
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

VALID_DAYS = 30


@dataclass(frozen=True)
class Certificates:
    ca_file: Path
    cert_file: Path
    key_file: Path


def _names(host: str) -> tuple[list[str], list[str]]:
    """(DNS names, IP addresses) the serving certificate must cover."""
    dns, ips = ["localhost"], ["127.0.0.1", "::1"]
    try:
        ipaddress.ip_address(host)
        if host not in ips:
            ips.append(host)
    except ValueError:
        if host not in dns:
            dns.append(host)
    return dns, ips


def make_certificates(directory: Path, host: str = "127.0.0.1") -> Certificates:
    directory.mkdir(parents=True, exist_ok=True)
    try:
        import cryptography  # noqa: F401
    except ImportError:
        if shutil.which("openssl") is None:
            raise RuntimeError(
                "TLS needs the 'cryptography' package or the 'openssl' command; neither is available"
            ) from None
        return _with_openssl(directory, host)
    return _with_cryptography(directory, host)


def _with_cryptography(directory: Path, host: str) -> Certificates:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = datetime.datetime.now(datetime.UTC)
    start, end = now - datetime.timedelta(minutes=5), now + datetime.timedelta(days=VALID_DAYS)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "vc-sandbox-ca")])
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(end)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_cert_sign=True,
                crl_sign=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    dns, ips = _names(host)
    san = [x509.DNSName(d) for d in dns] + [x509.IPAddress(ipaddress.ip_address(i)) for i in ips]
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kube-apiserver")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(end)
        .add_extension(x509.SubjectAlternativeName(san), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    out = Certificates(directory / "ca.crt", directory / "server.crt", directory / "server.key")
    out.ca_file.write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    out.cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    out.key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    out.key_file.chmod(0o600)
    return out


def _with_openssl(directory: Path, host: str) -> Certificates:
    out = Certificates(directory / "ca.crt", directory / "server.crt", directory / "server.key")
    ca_key = directory / "ca.key"
    dns, ips = _names(host)
    san = ",".join([f"DNS:{d}" for d in dns] + [f"IP:{i}" for i in ips])
    ext = directory / "server.ext"
    ext.write_text(f"basicConstraints=critical,CA:FALSE\nextendedKeyUsage=serverAuth\nsubjectAltName={san}\n")

    def run(*args: str) -> None:
        subprocess.run(["openssl", *args], check=True, capture_output=True, timeout=30)

    run(
        "req",
        "-x509",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:P-256",
        "-nodes",
        "-keyout",
        str(ca_key),
        "-out",
        str(out.ca_file),
        "-days",
        str(VALID_DAYS),
        "-subj",
        "/CN=vc-sandbox-ca",
        "-addext",
        "basicConstraints=critical,CA:TRUE,pathlen:0",
        "-addext",
        "keyUsage=critical,keyCertSign,cRLSign,digitalSignature",
    )
    csr = directory / "server.csr"
    run(
        "req",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:P-256",
        "-nodes",
        "-keyout",
        str(out.key_file),
        "-out",
        str(csr),
        "-subj",
        "/CN=kube-apiserver",
    )
    run(
        "x509",
        "-req",
        "-in",
        str(csr),
        "-CA",
        str(out.ca_file),
        "-CAkey",
        str(ca_key),
        "-CAcreateserial",
        "-out",
        str(out.cert_file),
        "-days",
        str(VALID_DAYS),
        "-extfile",
        str(ext),
    )
    out.key_file.chmod(0o600)
    return out
