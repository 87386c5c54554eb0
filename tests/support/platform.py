"""The whole platform started as `make up` starts it, for tests that need every part.

`scripts/platform.sh up` runs with the test's own databases (empty: the script migrates
them), topics, free ports and a state folder of its own (PLATFORM_STATE_DIR), so a
developer's running platform is neither used nor disturbed. Every process the script
started is killed at the end, and the databases and topics are dropped.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import tempfile
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg

from tests.support import tls
from tests.support.infrastructure import (
    KAFKA_ADMIN_PASSWORD,
    Infrastructure,
    drop_database,
    service_database,
)
from tests.support.sandboxes import CONTROL_TOKENS, free_port
from tests.support.topics import PLATFORM_TOPICS, create_topics, delete_topics

REPO = Path(__file__).resolve().parents[2]
PARTS = ("booking", "payment", "access", "notify", "gateway")


@dataclass
class Platform:
    env: dict[str, str]
    output: str
    state: Path

    def address(self, name: str) -> str:
        return self.env[name]

    def url(self, port: str) -> str:
        return f"http://127.0.0.1:{self.env[port]}"

    @property
    def gateway(self) -> str:
        return f"http://{self.env['GATEWAY_ADDRESS']}"

    @property
    def jaeger(self) -> str:
        """Jaeger's query API (and UI), where every process of the platform exports."""
        return self.url("JAEGER_QUERY_PORT")

    def pid(self, name: str) -> int:
        return int((self.state / "run" / f"{name}.pid").read_text().strip())

    async def up(self) -> str:
        """Runs the script again: it starts what is not running."""
        return await _run_script(self.env, self.state)


@contextlib.asynccontextmanager
async def database(platform: Platform, service: str) -> AsyncIterator[psycopg.AsyncConnection[Any]]:
    """A service's database as its owner, for a failure no HTTP call can cause (an outbox
    row the broker refused, an incident a job opened), made where it would happen."""
    url = platform.env[f"{service.upper()}_MIGRATION_DATABASE_URL"].replace("+psycopg", "")
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as connection:
        yield connection


def _environment(
    infra: Infrastructure, names: dict[str, str], prefix: str, state: Path
) -> dict[str, str]:
    ports = {name: str(free_port()) for name in ("card", "lock", "mail_http", "mail_smtp")}
    jaeger = {
        name: str(free_port())
        for name in (
            "JAEGER_OTLP_GRPC_PORT",
            "JAEGER_QUERY_PORT",
            "JAEGER_QUERY_GRPC_PORT",
            "JAEGER_HEALTH_PORT",
        )
    }
    env = {**os.environ, "PLATFORM_STATE_DIR": str(state), "TOPIC_PREFIX": prefix}
    env["KAFKA_BOOTSTRAP"] = infra.kafka_bootstrap
    for part, name in names.items():
        # Each part on a database of its own roles, as make up runs it (platform.env).
        owner, runtime = service_database(infra.pg_admin_dsn, part, name)
        upper = part.upper()
        env[f"{upper}_MIGRATION_DATABASE_URL"] = _with_driver(owner)
        env[f"{upper}_DATABASE_URL"] = _with_driver(runtime)
        env[f"{upper}_GRPC_ADDRESS"] = f"127.0.0.1:{free_port()}"
        env[f"{upper}_TLS_DIR"] = tls.folder(part)  # as scripts/platform.sh points them
        if part != "gateway":  # the gateway serves /metrics on its own address
            env[f"{upper}_METRICS_ADDRESS"] = f"127.0.0.1:{free_port()}"
    gateway = f"127.0.0.1:{free_port()}"
    webhook_secret = f"whsec_test_{uuid.uuid4().hex}"
    env |= {
        "CARD_GATEWAY_WEBHOOK_SECRETS": webhook_secret,
        "PAYMENT_WEBHOOK_SECRETS": webhook_secret,
        "GATEWAY_ADDRESS": gateway,
        "PROMETHEUS_ADDRESS": f"127.0.0.1:{free_port()}",
        "GATEWAY_IDENTITY": "dev",
        "GATEWAY_OPERATORS": "ops",
        # Schemathesis, the load of tests/faults and the benchmarks write hundreds of times a
        # second as one user from one address: far past the limits a customer needs. The
        # limits themselves are tested in-process (tests/gateway/unit/test_rate_limits.py).
        **_unlimited_writes(),
        **CONTROL_TOKENS,
        "PAYMENT_RETURN_URL": f"http://{gateway}/v1/payments/return",
        "CARD_GATEWAY_PORT": ports["card"],
        "CARD_GATEWAY_URL": f"http://127.0.0.1:{ports['card']}",
        "CARD_GATEWAY_NOTIFY_URL": f"http://{gateway}/v1/payments/notifications",
        "LOCK_PROVIDER_PORT": ports["lock"],
        "LOCK_PROVIDER_URL": f"http://127.0.0.1:{ports['lock']}",
        "MAIL_SANDBOX_HTTP_PORT": ports["mail_http"],
        "MAIL_SANDBOX_SMTP_PORT": ports["mail_smtp"],
        "MAIL_SMTP_PORT": ports["mail_smtp"],
        "NOTIFY_ACCESS_ADDRESS": env["ACCESS_GRPC_ADDRESS"],
        **jaeger,
        "OTEL_TRACES_EXPORTER": "otlp",
        "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{jaeger['JAEGER_OTLP_GRPC_PORT']}",
    }
    return env


def _unlimited_writes() -> dict[str, str]:
    return {
        f"GATEWAY_WRITES_PER_{who}_{what}": "1000000"
        for who in ("CALLER", "ADDRESS")
        for what in ("PER_MINUTE", "BURST")
    }


def _with_driver(url: str) -> str:
    return url.replace("postgresql://", "postgresql+psycopg://", 1)


async def _run_script(env: dict[str, str], state: Path) -> str:
    # The script's output goes to a file, not a pipe: the processes it starts keep what it
    # gave them open, and uvloop, unlike asyncio's own loop, then never saw the pipe end.
    with tempfile.TemporaryFile() as out:
        script = await asyncio.create_subprocess_exec(
            "bash",
            "scripts/platform.sh",
            "up",
            cwd=REPO,
            env=env,
            stdout=out,
            stderr=asyncio.subprocess.STDOUT,
        )
        await asyncio.wait_for(script.wait(), 300)
        out.seek(0)
        output = out.read().decode(errors="replace")
    logs = "\n".join(p.read_text(errors="replace")[-3000:] for p in (state / "log").glob("*.log"))
    assert script.returncode == 0, f"{output}\n{logs}"
    return output


async def grant_kafka_access(infra: Infrastructure, prefix: str) -> None:
    """Each service's ACLs for this platform's prefixed topics and groups, as `make up`'s
    broker has them for its own (deploy/local/kafka_access.py)."""
    env = {
        **os.environ,
        "KAFKA_BOOTSTRAP": infra.kafka_bootstrap,
        "KAFKA_ADMIN_PASSWORD": KAFKA_ADMIN_PASSWORD,
    }
    script = await asyncio.create_subprocess_exec(
        sys.executable,
        "deploy/local/kafka_access.py",
        "--prefix",
        prefix,
        cwd=REPO,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    out, _ = await asyncio.wait_for(script.communicate(), 120)
    assert script.returncode == 0, out.decode(errors="replace")


def kill_what_it_started(state: Path) -> None:
    for pid_file in (state / "run").glob("*.pid"):
        pid = int(pid_file.read_text().strip() or 0)
        if pid > 0:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


@contextlib.asynccontextmanager
async def started_platform(
    infra: Infrastructure, state: Path, overrides: dict[str, str] | None = None
) -> AsyncIterator[Platform]:
    names = {part: f"up_{part}_{uuid.uuid4().hex[:8]}" for part in PARTS}
    prefix = await create_topics(infra.kafka_bootstrap, PLATFORM_TOPICS)
    await grant_kafka_access(infra, prefix)
    env = _environment(infra, names, prefix, state) | (overrides or {})
    try:
        output = await _run_script(env, state)
        yield Platform(env, output, state)
    finally:
        kill_what_it_started(state)
        await delete_topics(infra.kafka_bootstrap, prefix, list(PLATFORM_TOPICS))
        for name in names.values():
            drop_database(infra.pg_admin_dsn, name)
