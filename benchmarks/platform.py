"""The whole platform as `make up` starts it, for a benchmark that goes through the gateway.

`scripts/platform.sh up` runs as tests/e2e/test_make_up.py runs it: fresh databases the
script migrates, its own topics and free ports, and pid files and logs in a temporary
PLATFORM_STATE_DIR, so a developer's running platform is neither used nor disturbed. The
gateway runs in development mode (`X-Dev-User` names the caller, `ops` is an operator).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import tempfile
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import httpx

from tests.support.infrastructure import (
    REPO_ROOT,
    Infrastructure,
    create_database,
    drop_database,
)
from tests.support.sandboxes import free_port
from tests.support.topics import PLATFORM_TOPICS, create_topics, delete_topics

PARTS = ("booking", "payment", "access", "notify", "gateway")


@dataclass(frozen=True)
class Platform:
    env: dict[str, str]

    @property
    def gateway(self) -> str:
        return f"http://{self.env['GATEWAY_ADDRESS']}"

    @property
    def booking(self) -> str:
        return self.env["BOOKING_GRPC_ADDRESS"]


def _environment(infra: Infrastructure, owners: dict[str, str], state: Path) -> dict[str, str]:
    ports = {name: str(free_port()) for name in ("card", "lock", "mail_http", "mail_smtp", "hook")}
    env = {**os.environ, "PLATFORM_STATE_DIR": str(state), "KAFKA_BOOTSTRAP": infra.kafka_bootstrap}
    for part, owner in owners.items():
        upper = part.upper()
        env[f"{upper}_MIGRATION_DATABASE_URL"] = owner
        # The processes run as the rows-only role the migrations grant, as platform.env has it.
        env[f"{upper}_DATABASE_URL"] = (
            "postgresql+psycopg://liftfit_app:liftfit_app@" + (owner.split("@", 1)[1])
        )
        env[f"{upper}_GRPC_ADDRESS"] = f"127.0.0.1:{free_port()}"
    gateway = f"127.0.0.1:{free_port()}"
    return env | {
        "GATEWAY_ADDRESS": gateway,
        "GATEWAY_IDENTITY": "dev",
        "GATEWAY_OPERATORS": "ops",
        "PAYMENT_NOTIFICATION_RECEIVER_ADDRESS": f"127.0.0.1:{ports['hook']}",
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
    }


@contextlib.asynccontextmanager
async def running_platform(infra: Infrastructure) -> AsyncIterator[Platform]:
    """The platform as `make up` starts it, on databases and topics of its own; every process
    the script started is killed at the end, by the pids it recorded."""
    suffix = uuid.uuid4().hex[:8]
    names = {part: f"bench_{part}_{suffix}" for part in PARTS}
    prefix = await create_topics(infra.kafka_bootstrap, PLATFORM_TOPICS)
    with tempfile.TemporaryDirectory(prefix="bench-gateway-") as state_dir:
        state = Path(state_dir)
        try:
            owners = {
                part: create_database(infra.pg_admin_dsn, name).replace(
                    "postgresql://", "postgresql+psycopg://", 1
                )
                for part, name in names.items()
            }
            env = _environment(infra, owners, state) | {"TOPIC_PREFIX": prefix}
            await _platform_up(env, state)
            yield Platform(env)
        finally:
            for pid_file in (state / "run").glob("*.pid"):
                pid = int(pid_file.read_text().strip() or 0)
                if pid > 0:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGKILL)
            await delete_topics(infra.kafka_bootstrap, prefix, list(PLATFORM_TOPICS))
            for name in names.values():
                drop_database(infra.pg_admin_dsn, name)


async def _platform_up(env: dict[str, str], state: Path) -> None:
    script = await asyncio.create_subprocess_exec(
        "bash",
        "scripts/platform.sh",
        "up",
        cwd=REPO_ROOT,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    output, _ = await asyncio.wait_for(script.communicate(), 300)
    if script.returncode != 0:
        logs = "\n".join(p.read_text()[-2000:] for p in (state / "log").glob("*.log"))
        raise RuntimeError(f"platform.sh up failed:\n{output.decode()}\n{logs}")
    await gateway_answers(f"http://{env['GATEWAY_ADDRESS']}")


async def gateway_answers(gateway: str) -> None:
    async with httpx.AsyncClient(timeout=5) as http:
        try:
            (await http.get(f"{gateway}/healthz")).raise_for_status()
        except httpx.HTTPError as error:
            raise RuntimeError(
                f"no gateway answers at {gateway} ({type(error).__name__}): "
                "does this branch's platform.sh start gateway_bff?"
            ) from None
