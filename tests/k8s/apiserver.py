"""A real kube-apiserver with its etcd, on loopback, for validating the manifests.

`make k8s-tools` builds both from the Go module proxy (deploy/k8s/tools) into .local/k8s by
version; this module starts them on free ports with a throwaway CA, a serving certificate, a
token of `system:masters` and a service-account key, and writes a kubeconfig for kubectl. It
fails, naming the missing file and the command that makes it, when a binary is absent.
"""

from __future__ import annotations

import datetime
import ipaddress
import secrets
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import NameOID

from tests.support.sandboxes import free_port

REPO = Path(__file__).resolve().parents[2]
KUBERNETES_VERSION = "v1.33.13"
ETCD_VERSION = "v3.5.21"
TOOLS = REPO / ".local/k8s"
KUBE_APISERVER = TOOLS / KUBERNETES_VERSION / "kube-apiserver"
KUBECTL = TOOLS / KUBERNETES_VERSION / "kubectl"
ETCD = TOOLS / f"etcd-{ETCD_VERSION}" / "etcd"
READY_WITHIN_S = 180.0


@dataclass(frozen=True)
class ApiServer:
    """A running API server: kubectl reaches it through `kubeconfig`."""

    url: str
    kubeconfig: Path

    def kubectl(
        self, *args: str, stdin: str | None = None, merged: bool = False
    ) -> subprocess.CompletedProcess[str]:
        return kubectl("--kubeconfig", str(self.kubeconfig), *args, stdin=stdin, merged=merged)


def kubectl(
    *args: str, stdin: str | None = None, merged: bool = False
) -> subprocess.CompletedProcess[str]:
    """kubectl's answer; `merged` puts its errors and warnings in stdout, in the order given."""
    _require(KUBECTL)
    return subprocess.run(
        [str(KUBECTL), *args],
        input=stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT if merged else subprocess.PIPE,
        text=True,
        timeout=300,
    )


def _require(binary: Path) -> None:
    if not binary.is_file():
        raise AssertionError(f"{binary} is missing: `make k8s-tools` builds it")


def _write_key(path: Path, key: rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey) -> None:
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )


def _certificate(
    subject: str,
    key: ec.EllipticCurvePrivateKey,
    issuer: tuple[x509.Name, ec.EllipticCurvePrivateKey] | None,
) -> x509.Certificate:
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)])
    issuer_name, signing_key = issuer or (name, key)
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(issuer_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=issuer is None, path_length=None), critical=True)
    )
    if issuer is not None:
        names = [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    return builder.sign(signing_key, hashes.SHA256())


def _credentials(folder: Path) -> str:
    """Writes the CA, serving certificate, service-account key and token file; the token."""
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = _certificate("liftfit-check-ca", ca_key, None)
    serving_key = ec.generate_private_key(ec.SECP256R1())
    serving = _certificate("kube-apiserver", serving_key, (ca.subject, ca_key))
    (folder / "ca.crt").write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    (folder / "serving.crt").write_bytes(serving.public_bytes(serialization.Encoding.PEM))
    _write_key(folder / "serving.key", serving_key)
    _write_key(folder / "sa.key", rsa.generate_private_key(public_exponent=65537, key_size=2048))
    token = secrets.token_hex(24)
    (folder / "tokens.csv").write_text(f'{token},admin,admin,"system:masters"\n')
    return token


def _kubeconfig(folder: Path, url: str, token: str) -> Path:
    path = folder / "kubeconfig"
    path.write_text(
        f"""apiVersion: v1
kind: Config
clusters:
- name: check
  cluster: {{server: "{url}", certificate-authority: "{folder / "ca.crt"}"}}
users:
- name: admin
  user: {{token: "{token}"}}
contexts:
- name: check
  context: {{cluster: check, user: admin}}
current-context: check
"""
    )
    return path


def _etcd(folder: Path, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    _require(ETCD)
    client, peer = free_port(), free_port()
    url = f"http://127.0.0.1:{client}"
    process = subprocess.Popen(
        [
            str(ETCD),
            f"--data-dir={folder / 'etcd'}",
            f"--listen-client-urls={url}",
            f"--advertise-client-urls={url}",
            f"--listen-peer-urls=http://127.0.0.1:{peer}",
            f"--initial-advertise-peer-urls=http://127.0.0.1:{peer}",
            f"--initial-cluster=default=http://127.0.0.1:{peer}",
            "--unsafe-no-fsync",
        ],
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
    )
    return process, url


def _apiserver(folder: Path, etcd_url: str, port: int, log: Path) -> subprocess.Popen[bytes]:
    _require(KUBE_APISERVER)
    return subprocess.Popen(
        [
            str(KUBE_APISERVER),
            f"--etcd-servers={etcd_url}",
            "--bind-address=127.0.0.1",
            "--advertise-address=127.0.0.1",
            f"--secure-port={port}",
            f"--cert-dir={folder / 'certs'}",
            f"--tls-cert-file={folder / 'serving.crt'}",
            f"--tls-private-key-file={folder / 'serving.key'}",
            f"--client-ca-file={folder / 'ca.crt'}",
            f"--token-auth-file={folder / 'tokens.csv'}",
            "--authorization-mode=RBAC",
            f"--service-account-key-file={folder / 'sa.key'}",
            f"--service-account-signing-key-file={folder / 'sa.key'}",
            "--service-account-issuer=https://kubernetes.default.svc",
            "--service-cluster-ip-range=10.96.0.0/16",
        ],
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
    )


def _wait_ready(server: ApiServer, processes: list[subprocess.Popen[bytes]], log: Path) -> None:
    deadline = time.monotonic() + READY_WITHIN_S
    while time.monotonic() < deadline:
        for process in processes:
            if process.poll() is not None:
                tail = log.read_text()[-3000:]
                raise AssertionError(f"{process.args!r} exited; its log: {tail}")
        if server.kubectl("get", "--raw=/readyz").returncode == 0:
            return
        time.sleep(0.5)
    raise AssertionError(f"the API server was not ready in {READY_WITHIN_S}s: {log}")


def _stop(processes: list[subprocess.Popen[bytes]]) -> None:
    for process in processes:
        process.terminate()
    for process in processes:
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@contextmanager
def api_server(folder: Path) -> Iterator[ApiServer]:
    """etcd and kube-apiserver under `folder` (their data, credentials and logs), stopped after."""
    token = _credentials(folder)
    processes: list[subprocess.Popen[bytes]] = []
    try:
        etcd, etcd_url = _etcd(folder, folder / "etcd.log")
        processes.append(etcd)
        port = free_port()
        processes.append(_apiserver(folder, etcd_url, port, folder / "apiserver.log"))
        url = f"https://127.0.0.1:{port}"
        server = ApiServer(url=url, kubeconfig=_kubeconfig(folder, url, token))
        _wait_ready(server, processes, folder / "apiserver.log")
        yield server
    finally:
        _stop(processes)
