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
    # a client certificate for the kubeconfig (`client-certificate`/`client-key`), when asked for
    client_cert_file: Path | None = None
    client_key_file: Path | None = None


# the client certificate's subject, as kubeadm writes an admin's: CN is the user, O a group
CLIENT_USER = "vc-sandbox-admin"
CLIENT_GROUP = "system:masters"


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


def _files(directory: Path, client: bool) -> Certificates:
    return Certificates(
        directory / "ca.crt",
        directory / "server.crt",
        directory / "server.key",
        directory / "client.crt" if client else None,
        directory / "client.key" if client else None,
    )


def make_certificates(directory: Path, host: str = "127.0.0.1", client: bool = False) -> Certificates:
    """A CA, a serving certificate for `host` and, with `client`, a client certificate."""
    directory.mkdir(parents=True, exist_ok=True)
    try:
        import cryptography  # noqa: F401
    except ImportError:
        if shutil.which("openssl") is None:
            raise RuntimeError(
                "TLS needs the 'cryptography' package or the 'openssl' command; neither is available"
            ) from None
        return _with_openssl(directory, host, client)
    return _with_cryptography(directory, host, client)


def _with_cryptography(directory: Path, host: str, client: bool = False) -> Certificates:
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

    def leaf(subject: list[x509.NameAttribute], usage: x509.ObjectIdentifier, san: list | None) -> tuple:
        key = ec.generate_private_key(ec.SECP256R1())
        b = (
            x509.CertificateBuilder()
            .subject_name(x509.Name(subject))
            .issuer_name(ca_name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(start)
            .not_valid_after(end)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
            )
        )
        if san:
            b = b.add_extension(x509.SubjectAlternativeName(san), critical=False)
        return b.sign(ca_key, hashes.SHA256()), key

    def write(cert_file: Path, key_file: Path, pair: tuple) -> None:
        cert_file.write_bytes(pair[0].public_bytes(serialization.Encoding.PEM))
        key_file.write_bytes(
            pair[1].private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
            )
        )
        key_file.chmod(0o600)

    dns, ips = _names(host)
    san = [x509.DNSName(d) for d in dns] + [x509.IPAddress(ipaddress.ip_address(i)) for i in ips]
    out = _files(directory, client)
    out.ca_file.write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    server_name = [x509.NameAttribute(NameOID.COMMON_NAME, "kube-apiserver")]
    write(out.cert_file, out.key_file, leaf(server_name, ExtendedKeyUsageOID.SERVER_AUTH, san))
    if out.client_cert_file and out.client_key_file:
        user = [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, CLIENT_GROUP),
            x509.NameAttribute(NameOID.COMMON_NAME, CLIENT_USER),
        ]
        write(out.client_cert_file, out.client_key_file, leaf(user, ExtendedKeyUsageOID.CLIENT_AUTH, None))
    return out


def _with_openssl(directory: Path, host: str, client: bool = False) -> Certificates:
    out = _files(directory, client)
    ca_key = directory / "ca.key"
    dns, ips = _names(host)
    san = ",".join([f"DNS:{d}" for d in dns] + [f"IP:{i}" for i in ips])

    def run(*args: str) -> None:
        subprocess.run(["openssl", *args], check=True, capture_output=True, timeout=30)

    new_key = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes")
    run(
        "req",
        "-x509",
        *new_key,
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

    def leaf(name: str, subject: str, ext_lines: str, cert_file: Path, key_file: Path) -> None:
        ext = directory / f"{name}.ext"
        ext.write_text("basicConstraints=critical,CA:FALSE\n" + ext_lines)
        csr = directory / f"{name}.csr"
        run(
            "req",
            *new_key,
            "-keyout",
            str(key_file),
            "-out",
            str(csr),
            "-subj",
            subject,
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
            str(cert_file),
            "-days",
            str(VALID_DAYS),
            "-extfile",
            str(ext),
        )
        key_file.chmod(0o600)

    leaf(
        "server",
        "/CN=kube-apiserver",
        f"extendedKeyUsage=serverAuth\nsubjectAltName={san}\n",
        out.cert_file,
        out.key_file,
    )
    if out.client_cert_file and out.client_key_file:
        leaf(
            "client",
            f"/O={CLIENT_GROUP}/CN={CLIENT_USER}",
            "extendedKeyUsage=clientAuth\n",
            out.client_cert_file,
            out.client_key_file,
        )
    return out
