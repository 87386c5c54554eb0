"""A fresh database, topic prefix and running booking service per test."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import replace

import pytest
from liftfit.booking.v1.booking_pb2_grpc import BookingServiceStub

from servicekit.kafka import make_producer
from services.booking.bootstrap import bootstrap
from services.booking.settings import Settings
from tests.booking.harness import TOPICS, BookingHarness
from tests.support import tls

StartBooking = Callable[..., Awaitable[BookingHarness]]


@pytest.fixture
async def booking_settings(
    service_database: Callable[[str], str],
    new_topics: Callable[[dict[str, int]], Awaitable[str]],
    kafka_bootstrap: str,
) -> Settings:
    return Settings(
        tls_dir=tls.folder("booking"),
        database_url=service_database("booking"),
        kafka_bootstrap=kafka_bootstrap,
        grpc_address="127.0.0.1:0",
        topic_prefix=await new_topics(TOPICS),
        idempotency_secret=f"test-secret-{uuid.uuid4().hex}".encode(),
        hold_seconds=900,
        terms_version="2026-11",
    )


@pytest.fixture
async def start_booking(booking_settings: Settings) -> AsyncIterator[StartBooking]:
    """Starts the booking service (again, after a stop, on the same database and topics)."""
    running: list[BookingHarness] = []

    async def start(**overrides: object) -> BookingHarness:
        app = bootstrap(replace(booking_settings, **overrides))  # type: ignore[arg-type]
        await app.start()
        grpc_channel = tls.channel(app.grpc_target)
        producer = make_producer(booking_settings.kafka_bootstrap, client_id="booking-tests")
        await producer.start()
        harness = BookingHarness(app, BookingServiceStub(grpc_channel), grpc_channel, producer)
        running.append(harness)
        return harness

    yield start
    for harness in running:
        await harness.stop()


@pytest.fixture
async def booking(start_booking: StartBooking) -> BookingHarness:
    return await start_booking()
