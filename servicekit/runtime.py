"""The long-lived parts of one service, started and stopped together.

A service's bootstrap() builds one ServiceRuntime: its gRPC server and its workers
(outbox relay, inbox consumers, timer runner, and whatever else the service runs).
Its metrics (servicekit.metrics), when it has them, are served on a port of their own from
start() to stop(), and their sampler is one more supervised worker.
The schema is the migrations' business (servicekit.migrations), never the service's: it
runs as a role that cannot create tables. The gRPC server answers at once and the workers
connect to Kafka by themselves, so a service serves while the broker is down. Workers
are supervised (see `supervision`): gRPC health says NOT_SERVING while one is down, and
a worker that cannot recover ends the process with a non-zero exit code. Tests start the
same object in-process; the process entry point runs it until SIGTERM.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import signal
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import grpc
import uvloop
from sqlalchemy.ext.asyncio import AsyncEngine

from servicekit import driver_pool
from servicekit.config import refuse_to_start_on_bad_settings
from servicekit.grpc_server import Endpoint, Health, Registration, start_server
from servicekit.kafka import ProducerLink
from servicekit.logs import configure_logging
from servicekit.metrics.service import ServiceMetrics
from servicekit.supervision import RestartPolicy, Supervisor, Worker
from servicekit.tracing import configure_tracing

log = logging.getLogger(__name__)
S = TypeVar("S")
T = TypeVar("T")
YOUNG_COLLECTION_AFTER = 5000  # new objects (CPython's default: 700)


class ProcessFailed(RuntimeError):
    """A worker could not recover; the process must be replaced."""


@dataclass
class ServiceRuntime:
    name: str
    engine: AsyncEngine
    endpoint: Endpoint
    registrations: Sequence[Registration]
    service_names: Sequence[str]
    producer: ProducerLink
    error_domain: str = "liftfit"
    # The domains of services served beside the service's own (the operators' view).
    error_domains: Mapping[str, str] = field(default_factory=dict)
    workers: Sequence[Worker] = ()
    restart_policy: RestartPolicy = field(default_factory=RestartPolicy)
    metrics: ServiceMetrics | None = None
    grpc_port: int = 0
    _server: grpc.aio.Server | None = None
    _health: Health | None = None
    _supervisor: Supervisor | None = None

    @property
    def supervisor(self) -> Supervisor:
        assert self._supervisor is not None, "start() first"
        return self._supervisor

    async def start(self) -> None:
        self._server, self.grpc_port, self._health = await start_server(
            self.endpoint,
            self.registrations,
            self.service_names,
            self.error_domain,
            self.error_domains,
        )
        workers = list(self.workers)
        if self.metrics is not None:
            self.metrics.start()
            workers += self.metrics.workers()
            if self.metrics.port:
                log.info("%s serving /metrics on port %d", self.name, self.metrics.port)
        self._supervisor = Supervisor(workers, self._health.serving, self.restart_policy)
        self._supervisor.start()
        log.info("%s serving gRPC on port %d", self.name, self.grpc_port)

    async def stop(self) -> None:
        if self._health is not None:
            await self._health.serving(False)
        if self._server is not None:
            await self._server.stop(grace=2)
        if self._health is not None and self._health.probes is not None:
            await self._health.probes.stop(grace=None)
        if self._supervisor is not None:
            await self._supervisor.stop()
        if self.metrics is not None:
            await self.metrics.stop()
        await self.producer.close()
        await driver_pool.close(self.engine)
        await self.engine.dispose()

    async def serve_until_stopped(self) -> None:
        """For a service's process: runs until SIGTERM or SIGINT, or a worker gives up."""
        stopping = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stopping.set)
        await self.start()
        settle_garbage_collector()
        try:
            await asyncio.wait(
                [
                    asyncio.create_task(stopping.wait()),
                    asyncio.create_task(self.supervisor.failed.wait()),
                ],
                return_when=asyncio.FIRST_COMPLETED,
            )
        finally:
            await self.stop()
        if self.supervisor.failed.is_set():
            raise ProcessFailed(f"{self.name}: a worker did not recover")


def settle_garbage_collector() -> None:
    """Tunes the cycle collector for a started service, whose garbage is almost all freed
    by reference counting (measured on a replica under `make bench-booking`, gc.callbacks):

    - what the service holds for good (modules, classes, its wiring: about 107,000
      objects) is frozen out of the collector's reach; a full collection walked all of it
      every 6 to 9 s, for 100 ms each time;
    - a young collection waits for 5,000 new objects instead of 700. Requests in flight
      crossed 700 about 35 times a second, each collection walking what they hold
      (0.25 ms); at 5,000 one came every 2 to 3 s.

    Run it once started: only what is alive then is frozen; later garbage, cycles
    included, is collected as before."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(YOUNG_COLLECTION_AFTER, *gc.get_threshold()[1:])


def run_event_loop(main: Coroutine[Any, Any, T]) -> T:
    """Runs a coroutine on uvloop, a cheaper event loop (the checkout floor measured 1.1 ms
    of server CPU per checkout on asyncio's own loop, 0.85 to 0.93 ms on uvloop)."""
    return uvloop.run(main)


def run_process(serve: Coroutine[Any, Any, None]) -> None:
    """Runs a service's main coroutine; a process whose worker gave up exits with 1."""
    try:
        run_event_loop(serve)
    except ProcessFailed as failure:
        log.critical("%s; exiting so that a fresh process replaces this one", failure)
        raise SystemExit(1) from None


def service_main(
    service: str,
    settings_from_env: Callable[[], S],
    serve: Callable[[S], Coroutine[Any, Any, None]],
) -> Callable[[], None]:
    """A service's process entry point: its settings first, so a missing or bad one stops
    it at once (exit code 2, naming the setting), then logging (JSON lines, servicekit.logs)
    and tracing, then `serve` until SIGTERM."""

    @refuse_to_start_on_bad_settings
    def main() -> None:
        settings = settings_from_env()
        configure_logging(service)
        configure_tracing(service)
        run_process(serve(settings))

    return main
