"""A local certificate authority for the services' mutual TLS (docs/security.md).

`make up` and the tests issue one key pair per principal of the boundary table
(deploy/boundary.yaml), the principal's name as the certificate's common name, each in a
folder of its own laid out as cert-manager lays out a Secret (`tls.crt`, `tls.key`,
`ca.crt`), which is what a process is pointed at (servicekit.mtls). In a cluster,
cert-manager or a mesh issues the same files; nothing here runs there.

    python -m servicekit.certificates DIR PRINCIPAL...   issue what is missing or expiring
"""

from __future__ import annotations

import datetime as dt
import fcntl
import ipaddress
import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

CERTIFICATE, KEY, AUTHORITY = "tls.crt", "tls.key", "ca.crt"
AUTHORITY_KEY = "ca.key"
LIFETIME = dt.timedelta(days=30)
RENEW_BEFORE = dt.timedelta(days=7)
AUTHORITY_LIFETIME = dt.timedelta(days=3650)
# The names a service is reached by: loopback locally, its Service's name in a cluster.
LOOPBACK = (ipaddress.ip_address("127.0.0.1"), ipaddress.ip_address("::1"))


def ensure(folder: Path, principals: Sequence[str]) -> None:
    """The authority in `folder` and a key pair per principal, issuing only what is missing
    or expires within RENEW_BEFORE. Safe when several processes run it at once."""
    folder.mkdir(parents=True, exist_ok=True)
    with _locked(folder / ".lock"):
        authority, authority_key = _authority(folder)
        for principal in principals:
            if _needs_issuing(folder / principal, authority):
                issue(folder / principal, principal, authority, authority_key)


def issue(
    target: Path,
    principal: str,
    authority: x509.Certificate,
    authority_key: ec.EllipticCurvePrivateKey,
    not_before: dt.datetime | None = None,
) -> None:
    """A new key pair for `principal` into `target`, each file replaced atomically, the
    key first: a reader that sees the new certificate finds its key beside it."""
    key = ec.generate_private_key(ec.SECP256R1())
    start = not_before or _now() - dt.timedelta(minutes=5)
    certificate = (
        _builder(principal, authority.subject, key, start, LIFETIME)
        .add_extension(x509.SubjectAlternativeName(_names(principal)), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.ExtendedKeyUsage(
                [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]
            ),
            critical=False,
        )
        .sign(authority_key, hashes.SHA256())
    )
    target.mkdir(parents=True, exist_ok=True)
    _write(target / KEY, _key_pem(key), private=True)
    _write(target / AUTHORITY, authority.public_bytes(serialization.Encoding.PEM))
    _write(target / CERTIFICATE, certificate.public_bytes(serialization.Encoding.PEM))


def load_authority(folder: Path) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    certificate = x509.load_pem_x509_certificate((folder / AUTHORITY).read_bytes())
    key = serialization.load_pem_private_key((folder / AUTHORITY_KEY).read_bytes(), None)
    assert isinstance(key, ec.EllipticCurvePrivateKey)
    return certificate, key


def _authority(folder: Path) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    if (folder / AUTHORITY_KEY).exists():
        return load_authority(folder)
    key = ec.generate_private_key(ec.SECP256R1())
    name = "liftfit local authority"
    certificate = (
        _builder(name, _subject(name), key, _now() - dt.timedelta(minutes=5), AUTHORITY_LIFETIME)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=False,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(key, hashes.SHA256())
    )
    _write(folder / AUTHORITY_KEY, _key_pem(key), private=True)
    _write(folder / AUTHORITY, certificate.public_bytes(serialization.Encoding.PEM))
    return certificate, key


def _builder(
    common_name: str,
    issuer: x509.Name,
    key: ec.EllipticCurvePrivateKey,
    start: dt.datetime,
    lifetime: dt.timedelta,
) -> x509.CertificateBuilder:
    return (
        x509.CertificateBuilder()
        .subject_name(_subject(common_name))
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(start + lifetime)
    )


def _subject(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _names(principal: str) -> list[x509.GeneralName]:
    dns = [principal, "localhost", f"{principal}.liftfit.svc", f"{principal}.liftfit"]
    return [x509.DNSName(name) for name in dns] + [x509.IPAddress(ip) for ip in LOOPBACK]


def _needs_issuing(target: Path, authority: x509.Certificate) -> bool:
    try:
        certificate = x509.load_pem_x509_certificate((target / CERTIFICATE).read_bytes())
        (target / KEY).stat()
        held = (target / AUTHORITY).read_bytes()
    except (OSError, ValueError):
        return True
    expiring = certificate.not_valid_after_utc - RENEW_BEFORE < _now()
    foreign = certificate.issuer != authority.subject
    return expiring or foreign or held != authority.public_bytes(serialization.Encoding.PEM)


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _write(path: Path, data: bytes, private: bool = False) -> None:
    partial = path.with_name(f".{path.name}.{os.getpid()}.new")
    partial.write_bytes(data)
    partial.chmod(0o600 if private else 0o644)
    partial.replace(path)


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def main(argv: Sequence[str]) -> int:
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    ensure(Path(argv[0]), argv[1:])
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
