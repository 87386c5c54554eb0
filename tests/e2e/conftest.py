"""End-to-end fixtures: the real booking, payment, access and notify services in-process,
sharing one topic prefix, with the real sandbox card gateway, lock provider and mail
sandbox processes (started once per session by the payment, access and notify suites'
fixtures). The card gateway notifies the real HTTP gateway, served in-process in front of
the payment service (tests/support/notification_entry.py)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, replace

import httpx
import pytest

from services.access import bootstrap as access_bootstrap
from services.booking import bootstrap as booking_bootstrap
from services.booking.settings import Settings as BookingSettings
from services.notify import bootstrap as notify_bootstrap
from services.payment import bootstrap as payment_bootstrap
from tests.access.conftest import access_settings, lock_provider_url  # noqa: F401
from tests.notify.conftest import mail_sandbox, notify_settings  # noqa: F401
from tests.payment.conftest import card_gateway_url, test_settings  # noqa: F401
from tests.payment.harness import API_KEY
from tests.support import tls
from tests.support.notification_entry import NotificationEntry
from tests.support.sandboxes import MailSandbox, SandboxAuth
from tests.support.topics import PLATFORM_TOPICS

TOPICS = PLATFORM_TOPICS


@dataclass
class Platform:
    booking: booking_bootstrap.BookingApp
    payment: payment_bootstrap.PaymentApp
    access: access_bootstrap.AccessApp
    notify: notify_bootstrap.NotifyApp
    prefix: str
    gateway_url: str
    lock_url: str
    mail: MailSandbox


@pytest.fixture
async def platform(
    service_database: Callable[[str], str],
    new_topics: Callable[[dict[str, int]], Awaitable[str]],
    kafka_bootstrap: str,
    card_gateway_url: str,  # noqa: F811
    lock_provider_url: str,  # noqa: F811
    mail_sandbox: MailSandbox,  # noqa: F811
) -> AsyncIterator[Platform]:
    prefix = await new_topics(TOPICS)
    booking = booking_bootstrap.bootstrap(
        BookingSettings(
            tls_dir=tls.folder("booking"),
            database_url=service_database("booking"),
            kafka_bootstrap=kafka_bootstrap,
            grpc_address="127.0.0.1:0",
            topic_prefix=prefix,
            idempotency_secret=uuid.uuid4().bytes,
            hold_seconds=900,
            terms_version="2026-11",
        )
    )
    payment = payment_bootstrap.bootstrap(
        test_settings(service_database("payment"), kafka_bootstrap, card_gateway_url, prefix)
    )
    access = access_bootstrap.bootstrap(
        replace(
            access_settings(service_database("access"), kafka_bootstrap, lock_provider_url, prefix),
            provider_max_tries=8,
            provider_retry_base_s=0.2,
        )
    )
    async with httpx.AsyncClient(base_url=lock_provider_url, auth=SandboxAuth(), timeout=5) as lock:
        (await lock.post("/_sandbox/reset")).raise_for_status()
    await booking.start()
    await payment.start()
    await access.start()
    notify = notify_bootstrap.bootstrap(
        notify_settings(
            service_database("notify"),
            kafka_bootstrap,
            mail_sandbox,
            f"127.0.0.1:{access.grpc_port}",
            prefix,
        )
    )
    async with httpx.AsyncClient(base_url=mail_sandbox.url, auth=SandboxAuth(), timeout=5) as mail:
        (await mail.post("/_sandbox/reset")).raise_for_status()
    await notify.start()
    entry = NotificationEntry(f"127.0.0.1:{payment.grpc_port}")
    await entry.start()
    async with httpx.AsyncClient(
        base_url=card_gateway_url, timeout=5, auth=SandboxAuth(API_KEY)
    ) as gateway:
        await gateway.post("/_sandbox/reset")
        await gateway.post("/_sandbox/config", json={"notify_url": entry.url})
    yield Platform(
        booking,
        payment,
        access,
        notify,
        prefix,
        card_gateway_url,
        lock_provider_url,
        mail_sandbox,
    )
    await entry.stop()
    await notify.stop()
    await access.stop()
    await payment.stop()
    await booking.stop()
