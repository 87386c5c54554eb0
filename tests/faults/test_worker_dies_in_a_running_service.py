"""A worker that dies inside a running service is noticed and replaced, and nothing it
should have carried is lost.

Each worker of booking, payment and notify is killed in turn (its task cancelled, as an
unexpected exception or cancellation would end it). gRPC health, watched on the
Health/Watch stream, says NOT_SERVING within 2 s; a card checkout is committed while the
worker is down; the supervisor starts the worker again and health returns to SERVING;
the checkout then travels the whole way: PaymentRequested to the payment service, the
payment page at the gateway, the customer pays, the notification comes back, the
booking is confirmed, and its confirmation mail is in the mail sandbox once, with every
notify outbox row published. The services run in-process here, sharing one test's
databases and topics across the cases, against the sandbox card gateway and mail sandbox
processes.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from sqlalchemy import select

from servicekit.runtime import ServiceRuntime
from servicekit.supervision import RestartPolicy
from services.booking import bootstrap as booking_bootstrap
from services.booking.settings import Settings as BookingSettings
from services.notify import bootstrap as notify_bootstrap
from services.notify.adapters import orm as notify_orm
from services.payment import bootstrap as payment_bootstrap
from services.payment.settings import Settings as PaymentSettings
from tests.faults.conftest import TOPICS, point_sandbox_at
from tests.faults.customers import Customers
from tests.notify.conftest import notify_settings
from tests.support.health import NOT_SERVING, SERVING, HealthWatch
from tests.support.infrastructure import Infrastructure, MigratedTemplates, drop_database
from tests.support.processes import Sandbox
from tests.support.sandboxes import MailSandbox
from tests.support.waiting import eventually

NOT_SERVING_WITHIN_S = 2.0
# Long enough that the checkout surely commits while the worker is down.
BACKOFF = RestartPolicy(first_backoff_s=1.0)
WORKERS = [
    pytest.param("booking", "relay", id="booking-relay"),
    pytest.param("booking", "consumer", id="booking-consumer"),
    pytest.param("booking", "timers", id="booking-timers"),
    pytest.param("booking", "recurring jobs", id="booking-recurring-jobs"),
    pytest.param("payment", "relay", id="payment-relay"),
    pytest.param("payment", "consumer", id="payment-consumer"),
    pytest.param("payment", "timers", id="payment-timers"),
    pytest.param("payment", "recurring jobs", id="payment-recurring-jobs"),
    pytest.param("payment", "hint retrier", id="payment-hint-retrier"),
    pytest.param("payment", "notification receiver", id="payment-receiver"),
    pytest.param("notify", "relay", id="notify-relay"),
    pytest.param("notify", "consumer", id="notify-consumer"),
    pytest.param("notify", "timers", id="notify-timers"),
    pytest.param("notify", "recurring jobs", id="notify-recurring-jobs"),
]
SERVICES = ("booking", "payment", "notify")


@dataclass
class Services:
    booking: booking_bootstrap.BookingApp
    payment: payment_bootstrap.PaymentApp
    notify: notify_bootstrap.NotifyApp
    sandbox: Sandbox
    mail: MailSandbox

    def runtime(self, name: str) -> ServiceRuntime:
        app: Any = getattr(self, name)
        runtime: ServiceRuntime = app.runtime
        return runtime


async def _topics(bootstrap_servers: str) -> str:
    prefix = f"t{uuid.uuid4().hex[:8]}."
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap_servers)
    await admin.start()
    try:
        await admin.create_topics(
            [NewTopic(prefix + name, count, 1) for name, count in TOPICS.items()]
        )
    finally:
        await admin.close()
    return prefix


@pytest.fixture(scope="module")
async def services(
    infra: Infrastructure,
    migrated_templates: MigratedTemplates,
    kafka_bootstrap: str,
    sandbox: Sandbox,
    mail_sandbox: MailSandbox,
) -> AsyncIterator[Services]:
    names = {service: f"{service}_{uuid.uuid4().hex[:10]}" for service in SERVICES}
    urls = {
        service: migrated_templates.database(service, name).replace(
            "postgresql://", "postgresql+psycopg://", 1
        )
        for service, name in names.items()
    }
    prefix = await _topics(kafka_bootstrap)
    booking = booking_bootstrap.bootstrap(
        BookingSettings(
            database_url=urls["booking"],
            kafka_bootstrap=kafka_bootstrap,
            grpc_address="127.0.0.1:0",
            topic_prefix=prefix,
            idempotency_secret=uuid.uuid4().bytes,
            hold_seconds=900,
            terms_version="2026-11",
        )
    )
    payment = payment_bootstrap.bootstrap(
        PaymentSettings(
            database_url=urls["payment"],
            kafka_bootstrap=kafka_bootstrap,
            card_gateway_url=sandbox.url,
            card_gateway_api_key=sandbox.api_key,
            webhook_secrets=sandbox.secrets,
            idempotency_secret=uuid.uuid4().bytes,
            grpc_address="127.0.0.1:0",
            topic_prefix=prefix,
            notification_receiver_address="127.0.0.1:0",
            reconcile_after_s=3600,
            reconcile_every_s=3600,
        )
    )
    # No access mail here: the access service's address is never called.
    notify = notify_bootstrap.bootstrap(
        notify_settings(urls["notify"], kafka_bootstrap, mail_sandbox, "127.0.0.1:9", prefix)
    )
    for app in (booking, payment, notify):
        app.runtime.restart_policy = BACKOFF
    await booking.start()
    try:
        await payment.start()
        await notify.start()
        try:
            await point_sandbox_at(sandbox, payment.notification_url)
            yield Services(booking, payment, notify, sandbox, mail_sandbox)
        finally:
            await notify.stop()
            await payment.stop()
    finally:
        await booking.stop()
        for name in names.values():
            drop_database(infra.pg_admin_dsn, name)


async def _receiver_answers(url: str) -> bool:
    """An unsigned notification is refused with 400: the endpoint is there and reading."""
    async with httpx.AsyncClient(timeout=2) as client:
        try:
            return (await client.post(url, content=b"{}")).status_code == 400
        except httpx.TransportError:
            return False


@pytest.mark.parametrize(("service", "worker"), WORKERS)
async def test_a_dead_worker_makes_health_not_serving_until_it_is_back_and_loses_no_work(
    services: Services, service: str, worker: str
) -> None:
    runtime = services.runtime(service)
    shop = Customers.at(services.booking.grpc_port, services.payment.grpc_port, services.sandbox)
    async with shop, HealthWatch(f"127.0.0.1:{runtime.grpc_port}") as health:
        [slot] = await shop.open_slots(1)
        assert await health.next_status(within=10) == SERVING

        runtime.supervisor.task_of(worker).cancel()
        await health.until(NOT_SERVING, within=NOT_SERVING_WITHIN_S)
        email = f"fault-{uuid.uuid4().hex[:10]}@example.test"
        booking = await shop.checkout(slot, email)
        assert worker in runtime.supervisor.down, "the checkout did not commit while it was down"
        await health.until(SERVING, within=15)
        if worker == "notification receiver":
            await eventually(lambda: _receiver_answers(services.payment.notification_url), 10)

        payment = await eventually(lambda: shop.payment_at_gateway(booking.booking_id), 30)
        await shop.pay(payment.provider_payment_id)

        async def confirmed() -> bool:
            return (await shop.booking_of(booking.booking_id)).state == "confirmed"

        await eventually(confirmed, 30)
        await eventually(lambda: _mailed_once(services, email), 30)
        await eventually(lambda: _outbox_published(services.notify), 30)
    assert not runtime.supervisor.down
    assert not runtime.supervisor.failed.is_set()


async def _mailed_once(services: Services, email: str) -> bool:
    async with httpx.AsyncClient(base_url=services.mail.url, timeout=5) as client:
        found = (await client.get("/messages", params={"to": email})).json()["data"]
    assert len(found) <= 1, f"{len(found)} mails to {email}"
    return len(found) == 1


async def _outbox_published(notify: notify_bootstrap.NotifyApp) -> bool:
    outbox = notify_orm.eventing.outbox
    async with notify.deps.uows.sessions() as session:
        query = select(outbox.c.seq).where(outbox.c.state != "dispatched").limit(1)
        return (await session.execute(query)).first() is None


async def test_every_worker_of_every_service_is_killed_above(services: Services) -> None:
    covered = {(param.values[0], param.values[1]) for param in WORKERS}
    running = {
        (service, worker.name)
        for service in SERVICES
        for worker in services.runtime(service).workers
    }
    assert running == covered
