"""A throw-away certificate authority and one server certificate it signs for a list of host names.

Tools with Confluent Cloud's hosts written into them (shift_left) reach the
local service through tls_proxy.py, which must present a certificate those
tools trust: the CA made here, trusted through REQUESTS_CA_BUNDLE and
SSL_CERT_FILE of that tool's process only. Made with `cryptography` when it
is installed, else with the `openssl` command; valid for two days.
"""

from __future__ import annotations

import datetime
import subprocess
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel

_DAYS = 2


class CertificateFiles(BaseModel):
    """PEM files: the CA to trust, the server's certificate chain and its private key."""

    ca: Path
    cert: Path
    key: Path


def make_certificates(folder: Path, hosts: Sequence[str]) -> CertificateFiles:
    """Write a new CA and a certificate for `hosts` (signed by it) into `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    files = CertificateFiles(ca=folder / "ca.pem", cert=folder / "server.pem", key=folder / "server.key")
    try:
        import cryptography  # noqa: F401
    except ImportError:
        _with_openssl(files, hosts)
    else:
        _with_cryptography(files, hosts)
    return files


def _with_cryptography(files: CertificateFiles, hosts: Sequence[str]) -> None:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = datetime.datetime.now(datetime.UTC)
    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "shift-left-dagster throw-away CA")])

    def base(subject: x509.Name, public_key: ec.EllipticCurvePublicKey) -> x509.CertificateBuilder:
        return (x509.CertificateBuilder().subject_name(subject).issuer_name(ca_name).public_key(public_key)
                .serial_number(x509.random_serial_number())
                .not_valid_before(now - datetime.timedelta(minutes=5))
                .not_valid_after(now + datetime.timedelta(days=_DAYS))
                .add_extension(x509.SubjectKeyIdentifier.from_public_key(public_key), critical=False))

    ca = (base(ca_name, ca_key.public_key())
          .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                       content_commitment=False, key_encipherment=False, data_encipherment=False,
                                       key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
          .sign(ca_key, hashes.SHA256()))
    server = (base(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, hosts[0])]), key.public_key())
              .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
              .add_extension(x509.SubjectAlternativeName([x509.DNSName(h) for h in hosts]), critical=False)
              .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
              .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
              .sign(ca_key, hashes.SHA256()))
    files.ca.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    files.cert.write_bytes(server.public_bytes(serialization.Encoding.PEM))
    files.key.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                            serialization.NoEncryption()))
    files.key.chmod(0o600)


def _with_openssl(files: CertificateFiles, hosts: Sequence[str]) -> None:
    def openssl(*args: str) -> None:
        subprocess.run(["openssl", *args], check=True, capture_output=True)

    ca_key, csr, ext = (files.ca.with_suffix(s) for s in (".key", ".csr", ".ext"))
    new_key = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes")
    openssl("req", "-x509", *new_key, "-keyout", str(ca_key), "-out", str(files.ca), "-days", str(_DAYS),
            "-subj", "/CN=shift-left-dagster throw-away CA",
            "-addext", "basicConstraints=critical,CA:TRUE,pathlen:0",
            "-addext", "keyUsage=critical,digitalSignature,keyCertSign,cRLSign")
    openssl("req", "-new", *new_key, "-keyout", str(files.key), "-out", str(csr), "-subj", f"/CN={hosts[0]}")
    ext.write_text("basicConstraints=critical,CA:FALSE\nextendedKeyUsage=serverAuth\n"
                   "authorityKeyIdentifier=keyid\nsubjectKeyIdentifier=hash\n"
                   f"subjectAltName={','.join(f'DNS:{h}' for h in hosts)}\n")
    openssl("x509", "-req", "-in", str(csr), "-CA", str(files.ca), "-CAkey", str(ca_key), "-CAcreateserial",
            "-out", str(files.cert), "-days", str(_DAYS), "-extfile", str(ext))
    files.key.chmod(0o600)
