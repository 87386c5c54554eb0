"""The notify suite's fixtures: the mail sandbox process (once per session, reset for every
test), a stand-in access service (PinDesk) on a real gRPC server, and per test a fresh
migrated database, fresh topics and the notify service built by its own bootstrap()."""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any

import grpc
import httpx
import pytest
from aiokafka import AIOKafkaProducer
from liftfit.access.v1 import access_pb2, access_pb2_grpc
from liftfit.notify.v1 import notify_pb2_grpc

from servicekit import grpc_server
from servicekit.kafka_access import client_security
from services.notify.adapters.mail_lookup import MailLookup
from services.notify.bootstrap import bootstrap
from services.notify.settings import Settings
from tests.notify.harness import TOPICS, NotifyHarness, PinDesk
from tests.support import tls
from tests.support.sandboxes import MailSandbox, SandboxAuth, running_mail_sandbox

HarnessFactory = Callable[..., Awaitable[NotifyHarness]]


@pytest.fixture(scope="session")
def mail_sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MailSandbox]:
    with running_mail_sandbox(tmp_path_factory.mktemp("mail")) as sandbox:
        yield sandbox


def notify_settings(
    database_url: str, kafka_bootstrap: str, mail: MailSandbox, access: str, prefix: str
) -> Settings:
    return Settings(
        tls_dir=tls.folder("notify"),
        database_url=database_url,
        kafka_bootstrap=kafka_bootstrap,
        grpc_address="127.0.0.1:0",
        topic_prefix=prefix,
        idempotency_secret=f"test-secret-{uuid.uuid4().hex}".encode(),
        smtp_host=mail.smtp_host,
        smtp_port=mail.smtp_port,
        mail_from="noreply@liftfit.test",
        access_address=access,
        smtp_timeout_s=2.0,
        access_timeout_s=2.0,
        # Tries every 0.1 s at first, at most every 1 s: a 30 s outage is 40 tries at most.
        send_max_tries=60,
        send_retry_base_s=0.1,
        send_retry_max_s=1.0,
    )


notify_settings.__test__ = False  # type: ignore[attr-defined]


@pytest.fixture
async def pin_desk() -> AsyncIterator[tuple[PinDesk, str]]:
    desk = PinDesk()

    def register(server: grpc.aio.Server) -> None:
        access_pb2_grpc.add_AccessServiceServicer_to_server(desk, server)

    name = access_pb2.DESCRIPTOR.services_by_name["AccessService"].full_name
    server, port, _ = await grpc_server.start_server(
        tls.endpoint("access"), [register], [name], "liftfit.access"
    )
    yield desk, f"127.0.0.1:{port}"
    await server.stop(None)


@pytest.fixture
async def make_notify(
    service_database: Callable[[str], str],
    new_topics: Callable[[dict[str, int]], Awaitable[str]],
    kafka_bootstrap: str,
    mail_sandbox: MailSandbox,
    pin_desk: tuple[PinDesk, str],
) -> AsyncIterator[HarnessFactory]:
    made: list[NotifyHarness] = []
    desk, access_address = pin_desk

    async def make(
        start: bool = True, lookup: MailLookup | None = None, **overrides: Any
    ) -> NotifyHarness:
        prefix = await new_topics(TOPICS)
        settings = notify_settings(
            service_database("notify"), kafka_bootstrap, mail_sandbox, access_address, prefix
        )
        app = bootstrap(dataclasses.replace(settings, **overrides), mail_lookup=lookup)
        sandbox = httpx.AsyncClient(base_url=mail_sandbox.url, auth=SandboxAuth(), timeout=10)
        (await sandbox.post("/_sandbox/reset")).raise_for_status()
        producer = AIOKafkaProducer(bootstrap_servers=kafka_bootstrap, **client_security())
        await producer.start()
        if start:
            await app.start()
        channel = tls.channel(f"127.0.0.1:{app.grpc_port}")
        stub = notify_pb2_grpc.NotifyServiceStub(channel)
        harness = NotifyHarness(app, prefix, mail_sandbox, sandbox, desk, producer, channel, stub)
        made.append(harness)
        return harness

    yield make
    for harness in made:
        await harness.channel.close(None)
        await harness.producer.stop()
        await harness.sandbox.aclose()
        if harness.app.grpc_port:
            await harness.app.stop()
        await harness.app.deps.pins.aclose()
        await harness.app.runtime.engine.dispose()


@pytest.fixture
async def notify(make_notify: HarnessFactory) -> NotifyHarness:
    return await make_notify()
