"""Drift sees a saga step that never came, over HTTP (`/v1/ops/drift`), on a platform of its
own started as `make up` starts it, with bounds of a few seconds so the checks speak within
a test.

Each step is lost by a real path, never by writing rows: the service that should take the
step is killed; the event is written and sent; while the service is down its consumer
group's offsets are moved past the event (as an expired retention or an operator's reset
would); it starts again and never reads it. The finding names the booking in words, and
goes once the operator's repair (replaying the event) made the step happen. A card booking
whose payment service is down has no payment at all, which the booking service sees alone.
"""

from __future__ import annotations

import contextlib
import os
import signal
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.errors import KafkaError
from liftfit.payment.v1 import events_pb2 as pay

from servicekit import envelope
from servicekit.kafka_access import client_security
from tests.gateway.api import OPS, Api, Org, new_key
from tests.gateway.test_journey import _pay
from tests.support.infrastructure import Infrastructure, as_principal
from tests.support.platform import Platform, started_platform
from tests.support.topics import PLATFORM_TOPICS
from tests.support.waiting import eventually

BOUND_S = 3
OVERRIDES = {
    "GATEWAY_DRIFT_ACCESS_AFTER_SECONDS": str(BOUND_S),
    "GATEWAY_DRIFT_PAYMENT_OPEN_AFTER_SECONDS": str(BOUND_S),
    "GATEWAY_DRIFT_UNPAID_AFTER_SECONDS": str(BOUND_S),
    "GATEWAY_DRIFT_CREDENTIAL_AFTER_SECONDS": str(BOUND_S),
    "BOOKING_DRIFT_NO_PAYMENT_AFTER_SECONDS": str(BOUND_S),
    "GATEWAY_DEADLINE_MS": "15000",  # two cores shared by many: calls may be slow
}
WAIT_S = 60


@pytest.fixture(scope="module")
async def drift_platform(
    infra: Infrastructure, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Platform]:
    state: Path = tmp_path_factory.mktemp("drift") / "state"
    async with started_platform(infra, state, OVERRIDES) as started:
        yield started


@pytest.fixture
async def api(drift_platform: Platform) -> AsyncIterator[Api]:
    async with Api.at(drift_platform.gateway) as client:
        yield client


@contextlib.asynccontextmanager
async def down(platform: Platform, service: str) -> AsyncIterator[None]:
    """The service's process killed for the block, started again after it."""
    os.kill(platform.pid(service), signal.SIGKILL)
    try:
        yield
    finally:
        await platform.up()


async def skip_past(platform: Platform, service: str, topic: str) -> None:
    """Commits the end of every partition of `topic` for the (stopped) service's group: what
    was sent until now, it never reads. Accepted once the broker let the killed member go."""
    prefix = platform.env["TOPIC_PREFIX"]
    consumer = AIOKafkaConsumer(
        bootstrap_servers=platform.env["KAFKA_BOOTSTRAP"],
        group_id=f"{prefix}{service}",
        enable_auto_commit=False,
        **client_security(),
    )
    await consumer.start()
    try:
        partitions = [TopicPartition(f"{prefix}{topic}", n) for n in range(PLATFORM_TOPICS[topic])]
        consumer.assign(partitions)
        ends = await consumer.end_offsets(partitions)

        async def committed() -> bool:
            try:
                await consumer.commit(ends)
            except KafkaError:
                return False
            return True

        await eventually(committed, WAIT_S, every=0.5)
    finally:
        await consumer.stop()


async def _booking(api: Api, org: Org, booking_id: str) -> dict[str, Any]:
    found = await api.call("GET", f"/v1/orgs/{org.org_id}/bookings/{booking_id}", org.owner)
    assert found.status_code == 200, found.text
    answer: dict[str, Any] = found.json()
    return answer


async def _card_booking(api: Api) -> tuple[Org, str]:
    studio, org = await api.studio(1), await api.org()
    booked = await api.book(org, studio.slot(0), mode="card")
    assert booked.status_code == 201, booked.text
    return org, str(booked.json()["booking_id"])


async def _checkout_url(api: Api, org: Org, booking_id: str) -> str:
    async def url() -> str | None:
        path = f"/v1/orgs/{org.org_id}/bookings/{booking_id}"
        found = await api.call("GET", path, org.owner)
        if found.status_code == 503:  # a service just started again, not answering yet
            return None
        assert found.status_code == 200, found.text
        payment = found.json()["payment"]
        return str(payment["checkout_url"]) if payment and payment["checkout_url"] else None

    return await eventually(url, WAIT_S)


async def _sent(api: Api, booking_id: str, event: str) -> str:
    """The effect id of the booking's event once it went out."""

    async def dispatched() -> str | None:
        answer = await api.call("GET", "/v1/ops/outbox?service=booking&state=dispatched", OPS)
        rows = answer.json()["rows"]
        mine = [r for r in rows if r["key"] == booking_id and r["event_type"].endswith(event)]
        return str(mine[0]["effect_id"]) if mine else None

    return await eventually(dispatched, WAIT_S)


async def _drift(api: Api) -> dict[str, Any]:
    answer = await api.call("GET", "/v1/ops/drift?state=open", OPS)
    assert answer.status_code == 200, answer.text
    found: dict[str, Any] = answer.json()
    return found


async def _finding(api: Api, kind: str, booking_id: str) -> dict[str, Any]:
    async def seen() -> dict[str, Any] | None:
        mine = [
            f
            for f in (await _drift(api))["findings"]
            if f["kind"] == kind and f["subject_id"] == booking_id
        ]
        return mine[0] if mine else None

    found = await eventually(seen, WAIT_S, every=0.5)
    assert booking_id in found["problem"], found
    assert found["truth"] and found["repair"], found
    assert (found["state"], found["needs_human"]) == ("open", True)
    return found


async def _gone(api: Api, kind: str, booking_id: str) -> None:
    async def cleared() -> bool:
        findings = (await _drift(api))["findings"]
        return not [f for f in findings if f["kind"] == kind and f["subject_id"] == booking_id]

    await eventually(cleared, WAIT_S, every=0.5)


async def _replay(api: Api, effect_id: str) -> None:
    path = f"/v1/ops/outbox/booking/{effect_id}/replay"
    replayed = await api.call("POST", path, OPS, {"reason": "the consumer skipped it"})
    assert replayed.status_code == 202, replayed.text


async def test_a_confirmed_booking_whose_access_never_came_is_drift_until_it_comes(
    api: Api, drift_platform: Platform
) -> None:
    org, booking_id = await _card_booking(api)
    url = await _checkout_url(api, org, booking_id)
    async with down(drift_platform, "access"):
        await _pay(url)
        effect_id = await _sent(api, booking_id, "BookingConfirmed")  # it was confirmed
        await skip_past(drift_platform, "access", "booking.events")

    found = await _finding(api, "confirmed_without_access", booking_id)
    assert found["service"] == "access" and "no grant" in found["problem"]
    assert (await _booking(api, org, booking_id))["access"] is None  # truly never came

    await _replay(api, effect_id)
    await _gone(api, "confirmed_without_access", booking_id)
    assert (await _booking(api, org, booking_id))["access"] is not None


async def test_a_card_booking_holding_its_slot_with_no_payment_is_drift_until_one_comes(
    api: Api, drift_platform: Platform
) -> None:
    async with down(drift_platform, "payment"):
        org, booking_id = await _card_booking(api)
        found = await _finding(api, "card_booking_without_payment", booking_id)
        assert found["service"] == "booking" and "no payment" in found["problem"]
    await _checkout_url(api, org, booking_id)  # the payment service came back and made it
    await _gone(api, "card_booking_without_payment", booking_id)


async def test_a_cancelled_booking_whose_payment_is_still_open_is_drift_until_cancelled(
    api: Api, drift_platform: Platform
) -> None:
    org, booking_id = await _card_booking(api)
    await _checkout_url(api, org, booking_id)
    async with down(drift_platform, "payment"):
        path = f"/v1/orgs/{org.org_id}/bookings/{booking_id}/cancel"
        cancelled = await api.call("POST", path, org.owner, {}, new_key())
        assert cancelled.status_code == 200, cancelled.text
        effect_id = await _sent(api, booking_id, "BookingCancelled")
        await skip_past(drift_platform, "payment", "booking.events")

    found = await _finding(api, "payment_open_for_ended_booking", booking_id)
    assert found["service"] == "payment" and "cancelled" in found["problem"]
    assert (await _booking(api, org, booking_id))["payment"]["state"] == "pending"

    await _replay(api, effect_id)
    await _gone(api, "payment_open_for_ended_booking", booking_id)
    assert (await _booking(api, org, booking_id))["payment"]["state"] == "cancelled"


async def _recorded_payment(api: Api, booking_id: str) -> str:
    """The payment id the booking service recorded from the payment's PaymentCreated."""

    async def recorded() -> str | None:
        answer = await api.call("GET", f"/v1/ops/bookings/{booking_id}/timeline", OPS)
        if answer.status_code != 200:
            return None
        facts = answer.json()["services"].get("booking", {}).get("facts", {})
        return str(facts["payment_id"]) if facts.get("payment_id") else None

    return await eventually(recorded, WAIT_S)


async def _published_as_payment(
    platform: Platform, booking_id: str, event: pay.PaymentSucceeded
) -> None:
    """Written on payment's topic as its relay writes (an envelope under the booking's key)."""
    event_id = uuid.uuid4()
    wrapped = envelope.wrap(event, booking_id, "payment", {}, event_id)
    # Written with payment's own credentials: the broker lets payment write its topic, so
    # only booking's checks stand between this event and a confirmed booking.
    producer = AIOKafkaProducer(
        bootstrap_servers=platform.env["KAFKA_BOOTSTRAP"], **as_principal("payment")
    )
    await producer.start()
    try:
        await producer.send_and_wait(
            f"{platform.env['TOPIC_PREFIX']}payment.events",
            value=wrapped.SerializeToString(),
            key=booking_id.encode(),
            headers=[("event-id", str(event_id).encode()), ("dispatch-generation", b"0")],
        )
    finally:
        await producer.stop()


async def test_a_success_naming_another_payment_confirms_nothing_and_drift_explains_it(
    api: Api, drift_platform: Platform
) -> None:
    org, booking_id = await _card_booking(api)
    await _checkout_url(api, org, booking_id)
    payment_id = await _recorded_payment(api, booking_id)
    price = (await _booking(api, org, booking_id))["price"]
    forged = str(uuid.uuid4())
    money = pay.Money(amount=price["amount"], currency=price["currency"])
    event = pay.PaymentSucceeded(payment_id=forged, booking_id=booking_id, amount=money)
    await _published_as_payment(drift_platform, booking_id, event)

    found = await _finding(api, "payment_event_refused", booking_id)
    assert found["service"] == "booking"
    assert forged in found["problem"] and payment_id in found["problem"], found
    answer = await api.call("GET", "/v1/ops/incidents?state=open", OPS)
    [incident] = [i for i in answer.json()["incidents"] if i["subject_id"] == booking_id]
    assert incident["kind"] == "payment_event_refused" and forged in incident["detail"]
    held = await _booking(api, org, booking_id)
    assert (held["state"], held["payment"]["state"]) == ("pending", "pending")


async def test_a_forged_success_that_overtook_the_payment_is_drift_once_the_payment_comes(
    api: Api, drift_platform: Platform
) -> None:
    """Before PaymentCreated the booking can check only the price: the forgery confirms it.
    The real payment's PaymentCreated then contradicts it, and drift names the booking."""
    studio, org = await api.studio(1), await api.org()
    async with down(drift_platform, "payment"):
        booked = await api.book(org, studio.slot(0), mode="card")
        assert booked.status_code == 201, booked.text
        booking_id, price = str(booked.json()["booking_id"]), booked.json()["price"]
        forged = str(uuid.uuid4())
        money = pay.Money(amount=price["amount"], currency=price["currency"])
        event = pay.PaymentSucceeded(payment_id=forged, booking_id=booking_id, amount=money)
        await _published_as_payment(drift_platform, booking_id, event)
        await _sent(api, booking_id, "BookingConfirmed")

    found = await _finding(api, "confirmed_without_paid_payment", booking_id)
    assert found["service"] == "booking" and "pending, not paid" in found["problem"]
    conflict = await _finding(api, "payment_id_conflict", booking_id)
    assert forged in conflict["problem"]
