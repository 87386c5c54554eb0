"""A gateway process of its own beside a platform (`python -m gateway_bff`, as production
runs it): another replica on the same services and database, with settings of its own."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import httpx

from tests.support.infrastructure import as_principal
from tests.support.sandboxes import free_port
from tests.support.waiting import eventually

REPO = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class GatewayProcess:
    url: str
    pid: int


def replica_settings(platform_env: dict[str, str], **settings: str) -> dict[str, str]:
    """The platform's settings on a free address, as the gateway's own broker principal,
    with `settings` over them."""
    return {
        **platform_env,
        "GATEWAY_ADDRESS": f"127.0.0.1:{free_port()}",
        "GATEWAY_OPERATORS": "",
        "KAFKA_USERNAME": "gateway",  # its own principal, as scripts/platform.sh runs it
        "KAFKA_PASSWORD": as_principal("gateway")["sasl_plain_password"],
        **settings,
    }


@contextlib.asynccontextmanager
async def gateway_process(env: dict[str, str], log: Path) -> AsyncIterator[GatewayProcess]:
    """Started with `env`, its output in `log`; ready once /healthz answers; killed after."""
    with log.open("wb") as out:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "gateway_bff", cwd=REPO, env=env, stdout=out, stderr=out
        )
    url = f"http://{env['GATEWAY_ADDRESS']}"
    try:

        async def alive() -> bool:
            if process.returncode is not None:
                raise AssertionError(await asyncio.to_thread(log.read_text))
            try:
                async with httpx.AsyncClient(timeout=1) as client:
                    return (await client.get(f"{url}/healthz")).status_code == 200
            except httpx.HTTPError:
                return False

        await eventually(alive, 60, every=0.2)
        yield GatewayProcess(url, process.pid)
    finally:
        if process.returncode is None:
            os.kill(process.pid, signal.SIGKILL)
            await process.wait()
