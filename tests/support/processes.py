"""Booking and payment as real processes, started the way `make up` starts them.

`python -m services.booking` (and `services.payment`) from the repository's root, with
the settings of deploy/local/platform.env pointed at the test's own databases, topic
prefix, free ports and sandbox card gateway. The HTTP gateway, where the card gateway's
notifications enter and customers come back to, is the test's to serve
(tests/support/notification_entry.py); it sets PAYMENT_RETURN_URL to its return page.
Tests SIGKILL a process, start it again under the same settings and watch its gRPC health.
Each process appends its output to `<name>.log` in the test's temporary directory;
`log_report()` gives their last lines for a failure report, and `stop_all()` leaves no
process behind.
"""

from __future__ import annotations

import asyncio
import compileall
import functools
import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import pytest

from servicekit import config
from tests.support import tls
from tests.support.card_gateway import free_port
from tests.support.health import SERVING, HealthWatch

REPO_ROOT = Path(__file__).resolve().parents[2]
PLATFORM_ENV = REPO_ROOT / "deploy" / "local" / "platform.env"
SERVICES = ("booking", "payment")
HARNESS_MARK = "---- test harness:"


def platform_settings() -> dict[str, str]:
    """deploy/local/platform.env as scripts/platform.sh reads it: KEY=VALUE lines."""
    settings: dict[str, str] = {}
    for line in PLATFORM_ENV.read_text().splitlines():
        name, equals, value = line.partition("=")
        if equals and name.isidentifier():
            settings[name] = value
    return settings


@functools.cache
def compile_bytecode() -> None:
    """The repository's bytecode, written once, as scripts/platform.sh does before a start."""
    for folder in ("servicekit", "services", "sandboxes", "build/gen"):
        compileall.compile_dir(REPO_ROOT / folder, quiet=1)


@dataclass(frozen=True)
class Sandbox:
    """A running sandbox card gateway and the credentials it was started with."""

    url: str
    api_key: str
    secrets: tuple[str, ...]


def service_environment(
    *,
    booking_database_url: str,
    payment_database_url: str,
    kafka_bootstrap: str,
    topic_prefix: str,
    sandbox: Sandbox,
    overrides: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """platform.env's settings for this test's databases, topics, ports and sandbox."""
    env = {**os.environ, **platform_settings()}
    env.update(
        # The repository's own code first, whatever the virtualenv's path file points at.
        PYTHONPATH=os.pathsep.join([str(REPO_ROOT), str(REPO_ROOT / "build" / "gen")]),
        KAFKA_BOOTSTRAP=kafka_bootstrap,
        TOPIC_PREFIX=topic_prefix,
        BOOKING_DATABASE_URL=booking_database_url,
        BOOKING_GRPC_ADDRESS=f"127.0.0.1:{free_port()}",
        PAYMENT_DATABASE_URL=payment_database_url,
        PAYMENT_GRPC_ADDRESS=f"127.0.0.1:{free_port()}",
        # Any free port: platform.env's fixed ones may be a running platform's.
        BOOKING_METRICS_ADDRESS="127.0.0.1:0",
        PAYMENT_METRICS_ADDRESS="127.0.0.1:0",
        # No Jaeger runs for these processes: exporting to platform.env's would only retry
        # against nothing, in the processes whose restart time the fault tests measure.
        OTEL_TRACES_EXPORTER="none",
        PAYMENT_WEBHOOK_SECRETS=",".join(sandbox.secrets),
        CARD_GATEWAY_URL=sandbox.url,
        CARD_GATEWAY_API_KEY=sandbox.api_key,
        BOOKING_TLS_DIR=tls.folder("booking"),
        PAYMENT_TLS_DIR=tls.folder("payment"),
    )
    env.update(overrides or {})
    return env


class ServiceProcess:
    """One service's process: spawned, killed and spawned again under the same settings."""

    def __init__(self, name: str, env: Mapping[str, str], log_dir: Path, python: str = "") -> None:
        self.name = name
        self.env = dict(env)
        self.python = python or sys.executable  # another interpreter: benchmarks.interpreters
        password = env.get(f"{name.upper()}_KAFKA_PASSWORD")
        if password:  # platform.env's: Kafka as the service's own principal, as
            # scripts/platform.sh starts it; the topics' prefix needs its ACLs
            # (tests.support.platform.grant_kafka_access).
            self.env |= {"KAFKA_USERNAME": name, "KAFKA_PASSWORD": password}
        self.log_path = log_dir / f"{name}.log"
        self.grpc_target = self.env[f"{name.upper()}_GRPC_ADDRESS"]
        self.spawned_at = 0.0
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def alive(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def spawn(self) -> None:
        assert not self.alive, f"{self.name} is already running"
        with self.log_path.open("ab") as log:
            started = datetime.now().strftime("%Y-%m-%d %H:%M:%S,%f")[:-3]  # as logging writes it
            log.write(f"{HARNESS_MARK} {started} python -m services.{self.name}\n".encode())
            log.flush()
            self._process = subprocess.Popen(
                [self.python, "-m", f"services.{self.name}"],
                cwd=REPO_ROOT,
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        self.spawned_at = time.monotonic()

    @property
    def pid(self) -> int:
        return self._running().pid

    def kill(self) -> None:
        """SIGKILL, as a crash or the OOM killer would; reaped at once, so no zombie stays."""
        process = self._running()
        process.send_signal(signal.SIGKILL)
        process.wait(10)

    async def stop(self, within: float = 30.0) -> None:
        """SIGTERM, as a deployment's rollout sends it; SIGKILL if it outlives `within`."""
        process = self._running()
        process.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(_exit_of(process), within)
        except TimeoutError:
            self.kill()

    async def wait_serving(self, within: float = 30.0) -> float:
        """Seconds from the spawn to SERVING on Health/Watch; fails if the process exits."""
        process = self._running()
        async with HealthWatch(*self._health_target()) as watch:
            serving = asyncio.create_task(watch.until(SERVING, within))
            exited = asyncio.create_task(_exit_of(process))
            try:
                done, _ = await asyncio.wait({serving, exited}, return_when=asyncio.FIRST_COMPLETED)
                seconds = time.monotonic() - self.spawned_at
            finally:
                serving.cancel()
                exited.cancel()
            if serving not in done:
                raise AssertionError(
                    f"{self.name} exited with code {process.returncode} before it served\n"
                    + self.tail()
                )
            try:
                serving.result()
            except AssertionError as error:
                raise AssertionError(f"{error}\n{self.tail()}") from None
        return seconds

    def _health_target(self) -> tuple[str, bool]:
        """Where its health is watched, and whether in plaintext: its own health address
        when it has one (the kubelet's probe, plaintext), so that replicas sharing one gRPC
        port each answer for themselves; else its gRPC address."""
        own = self.env.get(f"{self.name.upper()}_HEALTH_ADDRESS")
        if own:
            return own, True
        return self.grpc_target, self.env.get(config.PLAINTEXT_SETTING) == config.PLAINTEXT_VALUE

    async def restart(self, within: float = 30.0) -> float:
        """Starts the process again as `make up` would; seconds until it is SERVING."""
        self.spawn()
        return await self.wait_serving(within)

    def log_lines(self) -> list[str]:
        if not self.log_path.exists():
            return []
        return self.log_path.read_text(errors="replace").splitlines()

    def tail(self, lines: int = 40) -> str:
        return f"---- last lines of {self.log_path}:\n" + "\n".join(self.log_lines()[-lines:])

    def _running(self) -> subprocess.Popen[bytes]:
        assert self._process is not None, f"{self.name} was never started"
        return self._process


async def _exit_of(process: subprocess.Popen[bytes]) -> None:
    while process.poll() is None:
        await asyncio.sleep(0.05)


@dataclass
class ProcessPlatform:
    """The service processes of one test, all with one environment."""

    env: dict[str, str]
    log_dir: Path
    sandbox: Sandbox
    processes: dict[str, ServiceProcess] = field(default_factory=dict)

    def __post_init__(self) -> None:
        compile_bytecode()
        for name in SERVICES:
            self.processes[name] = ServiceProcess(name, self.env, self.log_dir)

    @property
    def booking(self) -> ServiceProcess:
        return self.processes["booking"]

    @property
    def payment(self) -> ServiceProcess:
        return self.processes["payment"]

    async def start(self, *names: str) -> None:
        for name in names:
            self.processes[name].spawn()
            await self.processes[name].wait_serving()

    def stop_all(self) -> None:
        for process in self.processes.values():
            if process.alive:
                process.kill()

    def log_report(self) -> str:
        return "\n".join(process.tail() for process in self.processes.values())


# Where the faults suite's fixture leaves the platform of a test, for the failure report.
RUNNING_PLATFORM = pytest.StashKey[ProcessPlatform]()
