"""Every image make images builds runs with a read-only root as uid 10001 and answers its
health check: the services their gRPC health, the gateway its /healthz. Each service runs on
a database its own image migrated, with this machine's Kafka (the test's topics)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import grpc
import httpx
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from servicekit.mtls import Identity, channel_credentials
from tests.k8s.apiserver import REPO
from tests.support import tls
from tests.support.infrastructure import Infrastructure
from tests.support.sandboxes import free_port
from tests.support.topics import PLATFORM_TOPICS

SETTINGS = REPO / "deploy/images"
PODMAN_ENV = {
    **os.environ,
    "CONTAINERS_CONF": str(SETTINGS / "containers.conf"),
    "CONTAINERS_STORAGE_CONF": str(SETTINGS / "storage.conf"),
    "CONTAINERS_REGISTRIES_CONF": str(SETTINGS / "registries.conf"),
}
PROCESSES = {
    "booking": "services.booking",
    "payment": "services.payment",
    "access": "services.access",
    "notify": "services.notify",
    "gateway": "gateway_bff",
}
ANSWERS_WITHIN_S = 120.0
MOUNTED_TLS = "/etc/liftfit/tls"  # where the manifests mount the process's Secret


def podman(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["podman", *args], env=PODMAN_ENV, capture_output=True, text=True, timeout=timeout
    )


def image(name: str) -> str:
    return f"localhost/liftfit/{name}:dev"


def _platform_env() -> dict[str, str]:
    lines = (REPO / "deploy/local/platform.env").read_text().splitlines()
    return dict(line.split("=", 1) for line in lines if "=" in line and not line.startswith("#"))


def _run_args(settings: dict[str, str], volumes: tuple[str, ...] = ()) -> list[str]:
    hardened = ["--read-only", "--tmpfs", "/tmp", "--user", "10001:10001", "--network=host"]
    mounts = [arg for volume in volumes for arg in ("-v", volume)]
    env = [arg for key, value in settings.items() for arg in ("-e", f"{key}={value}")]
    return hardened + mounts + env


def _certificates_for(name: str, target: Path) -> Path:
    """The process's key pair, readable by the image's user as a Secret volume makes it."""
    copied = Path(shutil.copytree(tls.folder(name), target / name))
    for path in (copied, *copied.iterdir()):
        os.chown(path, 10001, 10001)
    return copied


@contextmanager
def running(name: str, settings: dict[str, str], volumes: tuple[str, ...] = ()) -> Iterator[str]:
    container = f"liftfit-image-test-{name}-{uuid.uuid4().hex[:8]}"
    args = _run_args(settings, volumes)
    started = podman("run", "-d", "--name", container, *args, image(name))
    assert started.returncode == 0, started.stderr
    try:
        yield container
    finally:
        podman("rm", "-f", "-t", "5", container)


def _grpc_serving(address: str, tls_dir: Path | None = None) -> bool:
    """Health over mutual TLS as the operators' tools, or in plaintext (the probes' port)."""
    if tls_dir is None:
        channel = grpc.insecure_channel(address)
    else:
        pair = Identity(tls_dir).read()
        channel = grpc.secure_channel(address, channel_credentials(pair))
    with channel:
        try:
            answer = health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(), timeout=2
            )
        except grpc.RpcError:
            return False
        return bool(answer.status == health_pb2.HealthCheckResponse.SERVING)


def _http_alive(url: str) -> bool:
    try:
        return httpx.get(url, timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def wait_until(answers: Callable[[], bool], container: str) -> None:
    deadline = time.monotonic() + ANSWERS_WITHIN_S
    while not answers():
        state = podman("inspect", "--format", "{{.State.Status}}", container).stdout.strip()
        if state != "running" or time.monotonic() > deadline:
            logs = podman("logs", container).stdout + podman("logs", container).stderr
            raise AssertionError(f"{container} ({state}) did not answer: {logs[-3000:]}")
        time.sleep(0.5)


@pytest.mark.parametrize("name", sorted(PROCESSES))
def test_each_image_runs_as_uid_10001_without_pip_and_carries_its_labels(name: str) -> None:
    inspected = podman("image", "inspect", image(name))
    assert inspected.returncode == 0, f"{image(name)}: `make images` builds it"
    config = json.loads(inspected.stdout)[0]["Config"]
    assert config["User"] == "10001:10001"
    assert {"org.opencontainers.image.source", "org.opencontainers.image.revision"} <= set(
        config["Labels"]
    )
    assert f"PROCESS={PROCESSES[name]}" in config["Env"]
    probe = "import importlib.util as u; print(u.find_spec('pip'))"
    found = podman("run", "--rm", *_run_args({}), image(name), "python", "-c", probe)
    assert found.stdout.strip() == "None", found.stdout + found.stderr
    compilers = podman("run", "--rm", *_run_args({}), image(name), "sh", "-c", "command -v gcc cc")
    assert compilers.stdout.strip() == ""


@pytest.mark.parametrize("name", sorted(PROCESSES))
async def test_each_image_answers_its_health_check_with_a_read_only_root(
    name: str,
    infra: Infrastructure,
    new_database: Callable[[str], str],
    new_topics: Callable[[dict[str, int]], Awaitable[str]],
    tmp_path: Path,
) -> None:
    prefix = await new_topics(PLATFORM_TOPICS)
    database = new_database(name)
    migrated = podman(
        "run", "--rm", *_run_args({}), image(name),
        "python", "-m", "servicekit.migrate", "upgrade", name, "--url", database,
    )  # fmt: skip
    assert migrated.returncode == 0, migrated.stdout + migrated.stderr
    upper, port, health_port = name.upper(), free_port(), free_port()
    certificates = _certificates_for(name, tmp_path)
    settings = {
        **_platform_env(),
        "KAFKA_BOOTSTRAP": infra.kafka_bootstrap,
        "TOPIC_PREFIX": prefix,
        "OTEL_TRACES_EXPORTER": "none",
        f"{upper}_DATABASE_URL": database,
        f"{upper}_GRPC_ADDRESS": f"127.0.0.1:{port}",
        f"{upper}_METRICS_ADDRESS": f"127.0.0.1:{free_port()}",
        f"{upper}_HEALTH_ADDRESS": f"127.0.0.1:{health_port}",
        f"{upper}_TLS_DIR": MOUNTED_TLS,
        "GATEWAY_ADDRESS": f"127.0.0.1:{port}",
    }
    volumes = (f"{certificates}:{MOUNTED_TLS}:ro",)
    with running(name, settings, volumes) as container:
        if name == "gateway":
            wait_until(lambda: _http_alive(f"http://127.0.0.1:{port}/healthz"), container)
        else:
            tools = Path(tls.folder("operator-tools"))
            wait_until(lambda: _grpc_serving(f"127.0.0.1:{port}", tools), container)
            assert _grpc_serving(f"127.0.0.1:{health_port}")  # the kubelet's probe
