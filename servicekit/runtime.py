"""The long-lived parts of one service, started and stopped together.

A service's bootstrap() builds one ServiceRuntime: its gRPC server, its outbox relay, its
inbox consumers and its timer runner. Tests start the same object in-process; the
service's process entry point starts it and waits for SIGTERM.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

import grpc
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from sqlalchemy import MetaData
from sqlalchemy.ext.asyncio import AsyncEngine

from servicekit.grpc_server import Registration, start_server
from servicekit.inbox import InboxConsumer
from servicekit.relay import OutboxRelay
from servicekit.timers import TimerRunner

log = logging.getLogger(__name__)


async def create_schema(engine: AsyncEngine, metadata: MetaData) -> None:
    """Creates missing tables; safe to run at every start and from several processes."""
    async with engine.begin() as connection:
        # One creator at a time: two processes racing on CREATE TABLE would collide.
        await connection.exec_driver_sql("SELECT pg_advisory_xact_lock(424242)")
        await connection.run_sync(metadata.create_all)


@dataclass
class ServiceRuntime:
    name: str
    engine: AsyncEngine
    metadata: MetaData
    grpc_address: str
    registrations: Sequence[Registration]
    service_names: Sequence[str]
    producer: AIOKafkaProducer
    relay: OutboxRelay | None = None
    consumers: Sequence[tuple[AIOKafkaConsumer, InboxConsumer]] = ()
    timers: TimerRunner | None = None
    grpc_port: int = 0
    _server: grpc.aio.Server | None = None
    _stopping: asyncio.Event = field(default_factory=asyncio.Event)
    _tasks: list[asyncio.Task[None]] = field(default_factory=list)

    async def start(self) -> None:
        await create_schema(self.engine, self.metadata)
        await self.producer.start()
        for consumer, _ in self.consumers:
            await consumer.start()
        self._server, self.grpc_port = await start_server(
            self.grpc_address, self.registrations, self.service_names
        )
        workers = [c.run for _, c in self.consumers]
        workers += [w.run for w in (self.relay, self.timers) if w is not None]
        self._tasks = [asyncio.create_task(run(self._stopping)) for run in workers]
        log.info("%s serving gRPC on port %d", self.name, self.grpc_port)

    async def stop(self) -> None:
        self._stopping.set()
        if self._server is not None:
            await self._server.stop(grace=2)
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        for consumer, _ in self.consumers:
            await consumer.stop()
        await self.producer.stop()
        await self.engine.dispose()

    async def serve_until_stopped(self) -> None:
        """For a service's process: runs until SIGTERM or SIGINT, or a worker dies."""
        import signal

        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self._stopping.set)
        await self.start()
        try:
            stop_wait = asyncio.create_task(self._stopping.wait())
            await asyncio.wait([stop_wait, *self._tasks], return_when=asyncio.FIRST_COMPLETED)
            for task in self._tasks:
                if task.done() and task.exception() is not None:
                    log.error("%s worker died: %r", self.name, task.exception())
        finally:
            await self.stop()


def configure_logging() -> None:
    import os

    logging.basicConfig(
        level=os.environ.get("LOG_LEVEL", "INFO").upper(),
        format="%(asctime)s %(levelname)s %(name)s %(message)s",
    )
    logging.getLogger("aiokafka").setLevel(logging.WARNING)
