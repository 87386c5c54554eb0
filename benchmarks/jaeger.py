"""The trace collector a benchmark's services export to, as `make up` runs it: Jaeger v2
(.local/bin/jaeger, which the Makefile builds) with deploy/local/jaeger.yaml, on free ports
of its own so that a running platform's Jaeger is neither used nor disturbed.

A benchmark of the platform's configuration needs one running: without a collector the
OTLP exporter only retries against nothing, which is neither the platform's cost nor the
stripped one's.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import httpx

from tests.support.infrastructure import REPO_ROOT
from tests.support.sandboxes import free_port

JAEGER = Path(os.environ.get("JAEGER", REPO_ROOT / ".local" / "bin" / "jaeger"))
CONFIG = REPO_ROOT / "deploy" / "local" / "jaeger.yaml"
PORTS = (
    "JAEGER_OTLP_GRPC_PORT",
    "JAEGER_QUERY_PORT",
    "JAEGER_QUERY_GRPC_PORT",
    "JAEGER_HEALTH_PORT",
)
READY_S = 60.0
STOP_S = 5.0


@dataclass(frozen=True)
class Collector:
    """A running Jaeger: where spans go in (OTLP over gRPC) and its query API."""

    pid: int
    ports: dict[str, str]

    @staticmethod
    def built() -> bool:
        """Whether the program is there to start (`make` builds it)."""
        return JAEGER.exists()

    @property
    def otlp_endpoint(self) -> str:
        """OTEL_EXPORTER_OTLP_ENDPOINT for the processes that export to it."""
        return f"http://127.0.0.1:{self.ports['JAEGER_OTLP_GRPC_PORT']}"

    def services(self) -> list[str]:
        """The services whose spans it received: the proof that the export happened."""
        url = f"http://127.0.0.1:{self.ports['JAEGER_QUERY_PORT']}/api/services"
        data: list[str] = httpx.get(url, timeout=5).json().get("data") or []
        return data


@contextlib.asynccontextmanager
async def running_collector(log_dir: Path) -> AsyncIterator[Collector]:
    """Jaeger, started and healthy, for the time of the block; its log in `log_dir`."""
    ports = {name: str(free_port()) for name in PORTS}
    with (log_dir / "jaeger.log").open("ab") as log:
        process = await asyncio.create_subprocess_exec(
            str(JAEGER),
            "--config",
            f"file:{CONFIG}",
            env={**os.environ, **ports, **_own_telemetry(ports)},
            stdin=asyncio.subprocess.DEVNULL,
            stdout=log,
            stderr=asyncio.subprocess.STDOUT,
        )
    try:
        await _healthy(process, ports["JAEGER_HEALTH_PORT"])
        yield Collector(process.pid, ports)
    finally:
        await _stopped(process)


def _own_telemetry(ports: dict[str, str]) -> dict[str, str]:
    """Where Jaeger sends its own spans: to itself, as under `make up` (platform.env's
    OTLP endpoint is its own); unset, it would dial the default port 4317, another's."""
    endpoint = f"http://127.0.0.1:{ports['JAEGER_OTLP_GRPC_PORT']}"
    return {"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint}


async def _healthy(process: asyncio.subprocess.Process, port: str) -> None:
    deadline = time.monotonic() + READY_S
    async with httpx.AsyncClient(timeout=1) as client:
        while time.monotonic() < deadline:
            if process.returncode is not None:
                raise RuntimeError(f"jaeger exited with {process.returncode} before it was ready")
            with contextlib.suppress(httpx.HTTPError):
                if (await client.get(f"http://127.0.0.1:{port}/status")).status_code == 200:
                    return
            await asyncio.sleep(0.1)
    raise RuntimeError(f"jaeger was not ready within {READY_S:.0f} s")


async def _stopped(process: asyncio.subprocess.Process) -> None:
    """SIGTERM, and SIGKILL if it is still there after STOP_S: its traces are in memory
    only, nothing to lose."""
    with contextlib.suppress(ProcessLookupError):
        process.terminate()
    try:
        await asyncio.wait_for(process.wait(), STOP_S)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        await process.wait()
