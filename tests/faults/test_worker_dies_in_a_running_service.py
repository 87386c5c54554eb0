"""A worker that dies inside a running service is noticed and replaced, and nothing it
should have carried is lost.

Each worker of booking, payment, access and notify is killed in turn (its task
cancelled, as an unexpected exception or cancellation would end it). gRPC health, watched
on the Health/Watch stream, says NOT_SERVING within 2 s.

- Booking, payment and notify: a card checkout is committed while the worker is down; the
  supervisor starts the worker again and health returns to SERVING; the checkout then
  travels the whole way: PaymentRequested to the payment service, the payment page at the
  gateway, the customer pays, the notification comes back, the booking is confirmed, and
  its confirmation and access mails are in the mail sandbox once each, with every notify
  outbox row published.
- Access: a confirmed booking whose PIN was read is cancelled while the worker is down;
  once it is back, the cancellation reaches access, the revocation job removes the code,
  RevocationConfirmed reaches booking, the closed slot is for sale again, and the old PIN
  no longer opens the door.

The four services run in-process here, sharing one test's databases and topics across
the cases, against the sandbox card gateway, lock provider and mail sandbox processes; the
card gateway notifies the HTTP gateway, served in-process in front of payment.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from datetime import UTC, timedelta

import grpc
import httpx
import pytest
from liftfit.access.v1 import access_pb2 as apb
from liftfit.access.v1 import access_pb2_grpc
from liftfit.booking.v1 import booking_pb2 as bpb
from sqlalchemy import select

from servicekit.errors import reason_of
from servicekit.runtime import ServiceRuntime
from servicekit.supervision import RestartPolicy
from services.access import bootstrap as access_bootstrap
from services.booking import bootstrap as booking_bootstrap
from services.booking.adapters import orm as booking_orm
from services.booking.settings import Settings as BookingSettings
from services.notify import bootstrap as notify_bootstrap
from services.notify.adapters import orm as notify_orm
from services.payment import bootstrap as payment_bootstrap
from services.payment.settings import Settings as PaymentSettings
from tests.access.conftest import access_settings
from tests.access.harness import API_KEY as LOCK_API_KEY
from tests.access.harness import DEVICE, DEVICES
from tests.faults.conftest import TOPICS, point_sandbox_at
from tests.faults.customers import Customers
from tests.notify.conftest import notify_settings
from tests.support import tls
from tests.support.health import NOT_SERVING, SERVING, HealthWatch
from tests.support.infrastructure import Infrastructure, MigratedTemplates, drop_database
from tests.support.notification_entry import NotificationEntry
from tests.support.processes import Sandbox
from tests.support.sandboxes import MailSandbox, running_lock_provider
from tests.support.topics import create_topics, delete_topics
from tests.support.waiting import eventually

SERVICES = ("booking", "payment", "access", "notify")
NOT_SERVING_WITHIN_S = 2.0
MAILS_OF_A_BOOKING = 2  # its confirmation, and its access details once the grant is active
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
    pytest.param("notify", "relay", id="notify-relay"),
    pytest.param("notify", "consumer", id="notify-consumer"),
    pytest.param("notify", "timers", id="notify-timers"),
    pytest.param("notify", "recurring jobs", id="notify-recurring-jobs"),
]
ACCESS_WORKERS = [
    pytest.param("relay", id="access-relay"),
    pytest.param("consumer", id="access-consumer"),
    pytest.param("timers", id="access-timers"),
    pytest.param("recurring jobs", id="access-recurring-jobs"),
]


@dataclass
class Services:
    booking: booking_bootstrap.BookingApp
    payment: payment_bootstrap.PaymentApp
    access: access_bootstrap.AccessApp
    notify: notify_bootstrap.NotifyApp
    sandbox: Sandbox
    lock_url: str
    mail: MailSandbox

    def runtime(self, name: str) -> ServiceRuntime:
        runtimes = {
            "booking": self.booking.runtime,
            "payment": self.payment.runtime,
            "access": self.access.runtime,
            "notify": self.notify.runtime,
        }
        return runtimes[name]


@pytest.fixture(scope="module")
def lock_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with running_lock_provider(tmp_path_factory.mktemp("lock"), LOCK_API_KEY, DEVICES) as url:
        yield url


@pytest.fixture(scope="module")
async def services(
    infra: Infrastructure,
    migrated_templates: MigratedTemplates,
    kafka_bootstrap: str,
    sandbox: Sandbox,
    lock_url: str,
    mail_sandbox: MailSandbox,
) -> AsyncIterator[Services]:
    names = {service: f"{service}_{uuid.uuid4().hex[:10]}" for service in SERVICES}
    urls = {
        service: migrated_templates.database(service, name).replace(
            "postgresql://", "postgresql+psycopg://", 1
        )
        for service, name in names.items()
    }
    prefix = await create_topics(kafka_bootstrap, TOPICS)
    booking = booking_bootstrap.bootstrap(
        BookingSettings(
            tls_dir=tls.folder("booking"),
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
            tls_dir=tls.folder("payment"),
            database_url=urls["payment"],
            kafka_bootstrap=kafka_bootstrap,
            card_gateway_url=sandbox.url,
            card_gateway_api_key=sandbox.api_key,
            webhook_secrets=sandbox.secrets,
            idempotency_secret=uuid.uuid4().bytes,
            grpc_address="127.0.0.1:0",
            topic_prefix=prefix,
            reconcile_after_s=3600,
            reconcile_every_s=3600,
        )
    )
    access = access_bootstrap.bootstrap(
        access_settings(urls["access"], kafka_bootstrap, lock_url, prefix)
    )
    for app in (booking, payment, access):
        app.runtime.restart_policy = BACKOFF
    async with contextlib.AsyncExitStack() as running:
        # Dropped last, after every service has stopped.
        running.push_async_callback(delete_topics, kafka_bootstrap, prefix, list(TOPICS))
        for name in names.values():
            running.callback(drop_database, infra.pg_admin_dsn, name)
        for app in (booking, payment, access):
            await app.start()
            running.push_async_callback(app.stop)
        # Notify reads the PIN for the access mail from the running access service.
        notify = notify_bootstrap.bootstrap(
            notify_settings(
                urls["notify"],
                kafka_bootstrap,
                mail_sandbox,
                f"127.0.0.1:{access.grpc_port}",
                prefix,
            )
        )
        notify.runtime.restart_policy = BACKOFF
        await notify.start()
        running.push_async_callback(notify.stop)
        # The card gateway notifies the HTTP gateway, which hands them to payment over gRPC.
        entry = NotificationEntry(f"127.0.0.1:{payment.grpc_port}")
        await entry.start()
        running.push_async_callback(entry.stop)
        await point_sandbox_at(sandbox, entry.url)
        yield Services(booking, payment, access, notify, sandbox, lock_url, mail_sandbox)


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

        payment = await eventually(lambda: shop.payment_at_gateway(booking.booking_id), 30)
        await shop.pay(payment.provider_payment_id)

        async def confirmed() -> bool:
            return (await shop.booking_of(booking.booking_id)).state == "confirmed"

        await eventually(confirmed, 30)
        await eventually(lambda: _mailed_once_each(services, email, MAILS_OF_A_BOOKING), 30)
        await eventually(lambda: _outbox_published(services.notify), 30)
    assert not runtime.supervisor.down
    assert not runtime.supervisor.failed.is_set()


async def _mailed_once_each(services: Services, email: str, expected: int) -> bool:
    """`expected` mails to `email` have arrived, none of them twice."""
    async with httpx.AsyncClient(base_url=services.mail.url, timeout=5) as client:
        found = (await client.get("/messages", params={"to": email})).json()["data"]
    ids = [mail["message_id"] for mail in found]
    assert len(ids) == len(set(ids)) <= expected, f"mails to {email}: {ids}"
    return len(ids) == expected


async def _outbox_published(notify: notify_bootstrap.NotifyApp) -> bool:
    outbox = notify_orm.eventing.outbox
    async with notify.deps.uows.sessions() as session:
        query = select(outbox.c.seq).where(outbox.c.state != "dispatched").limit(1)
        return (await session.execute(query)).first() is None


async def _confirmed_with_its_pin_read(services: Services, shop: Customers) -> tuple[str, str]:
    """A paid booking whose PIN the customer has read, known to booking as disclosed."""
    [slot] = await shop.open_slots(1)
    booking = await shop.checkout(slot)
    payment = await eventually(lambda: shop.payment_at_gateway(booking.booking_id), 30)
    await shop.pay(payment.provider_payment_id)
    async with tls.channel(f"127.0.0.1:{services.access.grpc_port}") as channel:
        access = access_pb2_grpc.AccessServiceStub(channel)
        request = apb.DisclosePinRequest(
            org_id=shop.org_id, booking_id=booking.booking_id, user="anna", purpose="customer_view"
        )

        async def pin() -> str | None:
            try:
                return (await access.DisclosePin(request)).pin
            except grpc.aio.AioRpcError as error:
                if reason_of(error) in ("pin_not_active", "not_found"):
                    return None
                raise

        pin_read = await eventually(pin, 60)
    await eventually(lambda: _booking_knows_of_the_disclosure(services, booking.booking_id), 30)
    return booking.booking_id, pin_read


async def _booking_knows_of_the_disclosure(services: Services, booking_id: str) -> bool:
    t = booking_orm.pin_disclosures.c
    async with services.booking.uows.sessions() as session:
        query = select(t.disclosed_at).where(t.booking_id == booking_id)
        return (await session.execute(query)).scalar_one_or_none() is not None


async def _opens_any_time_in_its_slot(services: Services, pin: str, slot: bpb.Slot) -> bool:
    start = slot.starts_at.ToDatetime(tzinfo=UTC)
    async with httpx.AsyncClient(base_url=services.lock_url, timeout=5) as lock:
        for at in (start + timedelta(minutes=1), start + timedelta(minutes=50)):
            body = {"device_id": DEVICE, "pin": pin, "at": at.isoformat()}
            answer = await lock.post("/_sandbox/door", json=body)
            answer.raise_for_status()
            if answer.json()["opens"]:
                return True
    return False


@pytest.mark.parametrize("worker", ACCESS_WORKERS)
async def test_a_dead_access_worker_delays_a_revocation_and_loses_none_of_it(
    services: Services, worker: str
) -> None:
    runtime = services.runtime("access")
    shop = Customers.at(services.booking.grpc_port, services.payment.grpc_port, services.sandbox)
    async with shop, HealthWatch(f"127.0.0.1:{runtime.grpc_port}") as health:
        booking_id, pin = await _confirmed_with_its_pin_read(services, shop)
        slot = (await shop.booking_of(booking_id)).slot
        assert await _opens_any_time_in_its_slot(services, pin, slot)
        assert await health.next_status(within=10) == SERVING

        runtime.supervisor.task_of(worker).cancel()
        await health.until(NOT_SERVING, within=NOT_SERVING_WITHIN_S)
        await shop.cancel(booking_id)
        assert worker in runtime.supervisor.down, "the cancellation was not made while it was down"
        await health.until(SERVING, within=15)

        async def for_sale_again() -> bool:
            state = await shop.slot_state(slot)
            assert state in ("closed", "available"), state  # never sold while the PIN may work
            return state == "available"

        await eventually(for_sale_again, 60)
        assert not await _opens_any_time_in_its_slot(services, pin, slot)
    assert not runtime.supervisor.down
    assert not runtime.supervisor.failed.is_set()


async def test_every_worker_of_every_service_is_killed_above(services: Services) -> None:
    covered = {(param.values[0], param.values[1]) for param in WORKERS}
    covered |= {("access", param.values[0]) for param in ACCESS_WORKERS}
    running = {
        (service, worker.name)
        for service in SERVICES
        for worker in services.runtime(service).workers
    }
    assert running == covered
