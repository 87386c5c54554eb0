"""A booking read lately is answered from the gateway's memory, and a change the services
make is heard from their events (gateway_bff.booking_cache, gateway_bff.booking_changes).

A second gateway replica runs beside the shared platform's with a time to live of ten
minutes: within that, only the change it hears can make it answer a booking's new state.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx
import pytest
from aiokafka import AIOKafkaProducer
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from gateway_bff.booking_cache import BookingCache
from gateway_bff.booking_changes import BookingChanges, consumer_factory
from tests.gateway.api import Api, Org
from tests.gateway.test_journey import _pay
from tests.gateway.test_notifications import _pending_card_booking
from tests.support.gateway_process import gateway_process, replica_settings
from tests.support.infrastructure import as_principal
from tests.support.platform import Platform
from tests.support.waiting import eventually

WAIT_S = 60


@pytest.fixture(scope="module")
async def replica(
    platform: Platform, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[str]:
    env = replica_settings(platform.env, GATEWAY_BOOKING_CACHE_MS="600000")
    log = Path(tmp_path_factory.mktemp("replica")) / "gateway.log"
    async with gateway_process(env, log) as gateway:
        yield gateway.url


async def _reads(client: httpx.AsyncClient) -> dict[str, float]:
    text = (await client.get("/metrics")).text
    pattern = r'^liftfit_gateway_booking_reads_total\{answered_from="(\w+)"\} (\S+)$'
    return {where: float(n) for where, n in re.findall(pattern, text, re.MULTILINE)}


async def _booking(client: httpx.AsyncClient, org: Org, booking_id: str) -> httpx.Response:
    path = f"/v1/orgs/{org.org_id}/bookings/{booking_id}"
    found = await client.get(path, headers={"X-Dev-User": org.owner})
    assert found.status_code == 200, found.text
    return found


async def test_a_replica_answers_from_memory_until_it_hears_the_booking_change(
    api: Api, replica: str
) -> None:
    org, booking_id, url = await _pending_card_booking(api)
    async with httpx.AsyncClient(base_url=replica, timeout=15) as client:
        first = await _booking(client, org, booking_id)
        assert first.json()["state"] == "pending" and first.headers["Age"] == "0"
        before = await _reads(client)
        again = await _booking(client, org, booking_id)
        assert again.content == first.content
        after = await _reads(client)
        assert after.get("memory", 0) == before.get("memory", 0) + 1, (before, after)

        await _pay(url)

        async def confirmed() -> dict[str, Any] | None:
            shown: dict[str, Any] = (await _booking(client, org, booking_id)).json()
            return shown if shown["state"] == "confirmed" else None

        shown = await eventually(confirmed, WAIT_S, every=0.2)
        assert shown["payment"]["state"] == "paid"
        stranger = await api.org()
        path = f"/v1/orgs/{stranger.org_id}/bookings/{booking_id}"
        other = await client.get(path, headers={"X-Dev-User": stranger.owner})
        assert (other.status_code, other.json()["code"]) == (404, "not_found")


def test_a_key_that_names_no_booking_forgets_nothing_and_stops_nothing() -> None:
    """Only the key is read: values and headers are never parsed."""
    cache = BookingCache(ttl_s=60.0)
    kept = "2f1b7a3c-8d4e-4f6a-9b0c-1d2e3f4a5b6c"
    cache.finish_reading(cache.start_reading(kept), "org-a", b"kept")
    changes = BookingChanges(lambda: None, cache)
    hostile = [None, b"", b"\xff\xfe" * 18, kept.upper().encode(), kept.encode() + b"\x00", "x"]
    changes.hear(SimpleNamespace(key=key, value=b"\x00junk", headers=[]) for key in hostile)
    assert cache.get("org-a", kept) is not None
    changes.hear([SimpleNamespace(key=kept.encode(), value=None, headers=None)])
    assert cache.get("org-a", kept) is None


async def test_the_listener_forgets_everything_once_it_attaches(platform: Platform) -> None:
    """Changes made while it was away went unheard: what was kept before goes."""
    cache = BookingCache(ttl_s=600.0)
    kept = str(uuid.uuid4())
    cache.finish_reading(cache.start_reading(kept), "org-a", b"kept while away")
    async with _listening(platform, cache) as until:
        await until(lambda: len(cache) == 0)


async def test_the_listener_reads_no_trace_headers_and_opens_no_span(
    platform: Platform, span_exporter: InMemorySpanExporter
) -> None:
    """With tracing on (span_exporter), as in the gateway's process: a record it hears
    makes no span in the trace its headers name (decision 0008: only the key is read)."""
    cache = BookingCache(ttl_s=600.0)
    cache.finish_reading(cache.start_reading(str(uuid.uuid4())), "org-a", b"kept while away")
    trace_id = uuid.uuid4().hex
    async with _listening(platform, cache) as until:
        await until(lambda: len(cache) == 0)  # attached: it forgot what was kept before
        changed = str(uuid.uuid4())
        cache.finish_reading(cache.start_reading(changed), "org-a", b"before the change")
        await _send_change(platform, changed, f"00-{trace_id}-{uuid.uuid4().hex[:16]}-01")
        await until(lambda: cache.get("org-a", changed) is None)
    in_that_trace = [
        span.name
        for span in span_exporter.get_finished_spans()
        if span.context is not None and f"{span.context.trace_id:032x}" == trace_id
    ]
    assert in_that_trace == []


Until = Callable[[Callable[[], bool]], Awaitable[None]]


@contextlib.asynccontextmanager
async def _listening(platform: Platform, cache: BookingCache) -> AsyncIterator[Until]:
    """The listener on the platform's topics as the gateway principal, and `until`, which
    waits for a condition on the cache and fails at once if the listener has died."""
    make = consumer_factory(
        platform.env["KAFKA_BOOTSTRAP"], platform.env["TOPIC_PREFIX"], as_principal("gateway")
    )
    stopping = asyncio.Event()
    listening = asyncio.create_task(BookingChanges(make, cache).run(stopping))

    async def until(condition: Callable[[], bool]) -> None:
        async def met() -> bool:
            assert not listening.done(), listening
            return condition()

        await eventually(met, 30, every=0.1)

    try:
        yield until
    finally:
        stopping.set()
        await asyncio.wait_for(listening, 10)


async def _send_change(platform: Platform, booking_id: str, traceparent: str) -> None:
    producer = AIOKafkaProducer(
        bootstrap_servers=platform.env["KAFKA_BOOTSTRAP"], **as_principal("booking")
    )
    await producer.start()
    try:
        await producer.send_and_wait(
            platform.env["TOPIC_PREFIX"] + "booking.events",
            b"not read",
            key=booking_id.encode(),
            headers=[("traceparent", traceparent.encode())],
        )
    finally:
        await producer.stop()
