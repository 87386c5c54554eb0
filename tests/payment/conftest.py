"""The payment suite's fixtures: the real sandbox card gateway process and the real service.

The gateway runs once per session as `python -m sandboxes.card_gateway` on a free port and
is reset for every test; each test gets its own database, its own topic prefix and its own
PaymentApp, started in-process, and its own HTTP gateway in-process in front of it
(tests/support/notification_entry.py), which the card gateway is told to notify.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from aiokafka import AIOKafkaProducer

from servicekit import kafka
from servicekit.kafka_access import client_security
from services.payment.bootstrap import bootstrap
from services.payment.settings import Settings
from tests.payment.harness import API_KEY, SECRETS, Harness, PaymentEvents
from tests.support import tls
from tests.support.card_gateway import running_card_gateway
from tests.support.notification_entry import NotificationEntry

from liftfit.payment.v1 import payment_pb2_grpc  # isort: skip
from tests.support.sandboxes import SandboxAuth

REPO_ROOT = Path(__file__).resolve().parents[2]
HarnessFactory = Callable[..., Awaitable[Harness]]


@pytest.fixture(scope="session")
def card_gateway_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with running_card_gateway(tmp_path_factory.mktemp("card_gateway"), API_KEY, SECRETS) as url:
        yield url


def test_settings(
    database_url: str, bootstrap_servers: str, gateway_url: str, prefix: str
) -> Settings:
    return Settings(
        tls_dir=tls.folder("payment"),
        database_url=database_url,
        kafka_bootstrap=bootstrap_servers,
        card_gateway_url=gateway_url,
        card_gateway_api_key=API_KEY,
        # The service knows the old secret and the new one; the gateway signs with both.
        webhook_secrets=SECRETS,
        idempotency_secret=f"test-secret-{uuid.uuid4().hex}".encode(),
        grpc_address="127.0.0.1:0",
        topic_prefix=prefix,
        # Sweeps stay out of the way unless a test asks for them.
        reconcile_after_s=3600,
        reconcile_every_s=3600,
        gateway_timeout_s=1.0,
        gateway_retry_base_s=0.1,
        gateway_max_tries=5,
    )


test_settings.__test__ = False  # type: ignore[attr-defined]


@pytest.fixture
async def make_harness(
    service_database: Callable[[str], str],
    new_topics: Callable[[dict[str, int]], Awaitable[str]],
    kafka_bootstrap: str,
    card_gateway_url: str,
) -> AsyncIterator[HarnessFactory]:
    started: list[Harness] = []

    async def make(**overrides: Any) -> Harness:
        prefix = await new_topics({"booking.events": 3, "payment.events": 3})
        database = service_database("payment")
        settings = test_settings(database, kafka_bootstrap, card_gateway_url, prefix)
        app = bootstrap(dataclasses.replace(settings, **overrides))
        await app.start()
        harness = await _connect(app, prefix, kafka_bootstrap, card_gateway_url)
        started.append(harness)
        return harness

    yield make
    for harness in started:
        await _disconnect(harness)


@pytest.fixture
async def harness(make_harness: HarnessFactory) -> Harness:
    return await make_harness()


async def _connect(app: Any, prefix: str, bootstrap_servers: str, gateway_url: str) -> Harness:
    gateway = httpx.AsyncClient(base_url=gateway_url, auth=SandboxAuth(API_KEY), timeout=5)
    entry = NotificationEntry(f"127.0.0.1:{app.grpc_port}")
    await entry.start()
    (await gateway.post("/_sandbox/reset")).raise_for_status()
    config = {"notify_url": entry.url}
    (await gateway.post("/_sandbox/config", json=config)).raise_for_status()
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap_servers, **client_security())
    await producer.start()
    consumer = kafka.make_consumer(
        bootstrap_servers, f"{prefix}observer", [f"{prefix}payment.events"]
    )
    await consumer.start()
    events = PaymentEvents(consumer)
    events.start()
    channel = tls.channel(f"127.0.0.1:{app.grpc_port}")
    stub = payment_pb2_grpc.PaymentServiceStub(channel)
    return Harness(app, prefix, gateway, stub, channel, producer, events, entry)


async def _disconnect(harness: Harness) -> None:
    await harness.events.stop()
    await harness.producer.stop()
    await harness.channel.close(None)
    await harness.entry.stop()
    await harness.app.stop()
    await harness.gateway.aclose()
    await harness.notifications.aclose()
