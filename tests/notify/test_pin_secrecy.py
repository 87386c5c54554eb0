"""Acceptance d: the PIN appears in the access mail, read from the access service at send
time, and in no log line, no row of the notify database and no Kafka message, checked by
searching all of them. At most one access mail per grant; a move's new grant gets its own."""

from __future__ import annotations

import logging

import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition
from liftfit.notify.v1 import notify_pb2 as npb
from sqlalchemy import text

from servicekit.kafka_access import client_security
from services.notify.adapters import orm
from tests.notify.harness import TOPICS, NotifyHarness, a_booking, activated, confirmed, new_id
from tests.support.waiting import eventually


async def _database_text(notify: NotifyHarness) -> str:
    """Every row of every notify table, as PostgreSQL writes it out."""
    found = []
    async with notify.app.deps.uows.sessions() as session:
        for table in orm.metadata.sorted_tables:
            rows = await session.execute(text(f'SELECT t::text FROM "{table.name}" t'))
            found += [str(row[0]) for row in rows]
    return "\n".join(found)


async def _kafka_text(notify: NotifyHarness, bootstrap: str) -> bytes:
    """Every record on every topic of the test, from the beginning to the end."""
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap, enable_auto_commit=False, **client_security()
    )
    await consumer.start()
    seen = []
    try:
        partitions = [
            TopicPartition(notify.prefix + topic, number)
            for topic, count in TOPICS.items()
            for number in range(count)
        ]
        consumer.assign(partitions)
        await consumer.seek_to_beginning(*partitions)
        ends = await consumer.end_offsets(partitions)
        for partition, end in ends.items():
            while await consumer.position(partition) < end:
                records = await consumer.getmany(partition, timeout_ms=1000)
                for batch in records.values():
                    seen += [(r.key or b"") + (r.value or b"") for r in batch]
                    seen += [value for record in batch for _, value in record.headers]
    finally:
        await consumer.stop()
    return b"\n".join(seen)


async def _access_mail(notify: NotifyHarness, booking_id: str, grant_id: str) -> npb.Delivery:
    async def sent() -> npb.Delivery | None:
        found = await notify.deliveries_of(booking_id)
        mail = [d for d in found if d.template == "access_details" and grant_id in d.source]
        return mail[0] if mail and mail[0].state == "sent" else None

    return await eventually(sent, 20)


async def test_the_pin_is_in_the_access_mail_and_in_no_log_row_or_kafka_message(
    notify: NotifyHarness, kafka_bootstrap: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    booking = a_booking("en")
    grant_id = new_id()
    issued = notify.issue_pin(booking, grant_id)
    await notify.publish("access.events", booking.booking_id, activated(booking, grant_id))
    await notify.publish("booking.events", booking.booking_id, confirmed(booking))
    delivery = await _access_mail(notify, booking.booking_id, grant_id)

    [mail] = await notify.mails(delivery.delivery_key)
    assert issued.pin in mail["text"] and issued.pin in mail["html"]
    assert (booking.booking_id, "notify", "access_email") in notify.desk.reads

    async def recorded_on_kafka() -> bool:
        return b"access_details" in await _kafka_text(notify, kafka_bootstrap)

    await eventually(recorded_on_kafka, 15)  # the relay published EmailDeliveryRecorded
    assert issued.pin not in await _database_text(notify)
    assert issued.pin.encode() not in await _kafka_text(notify, kafka_bootstrap)
    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert caplog.records and issued.pin not in logged


async def test_one_access_mail_per_grant_and_a_new_one_for_a_moved_bookings_new_grant(
    notify: NotifyHarness,
) -> None:
    booking = a_booking("cs")
    first_grant = new_id()
    first = notify.issue_pin(booking, first_grant)
    await notify.publish("booking.events", booking.booking_id, confirmed(booking))
    for _ in range(3):  # the same activation announced again, under new event ids
        await notify.publish("access.events", booking.booking_id, activated(booking, first_grant))
    old = await _access_mail(notify, booking.booking_id, first_grant)

    second_grant = new_id()
    second = notify.issue_pin(booking, second_grant)  # the move's new grant, a new PIN
    await notify.publish("access.events", booking.booking_id, activated(booking, second_grant))
    new = await _access_mail(notify, booking.booking_id, second_grant)
    await eventually(notify.all_consumed, 15)

    [old_mail] = await notify.mails(old.delivery_key)
    [new_mail] = await notify.mails(new.delivery_key)
    assert first.pin in old_mail["text"] and second.pin in new_mail["text"]
    access_mails = [
        d for d in await notify.deliveries_of(booking.booking_id) if d.template == "access_details"
    ]
    assert len(access_mails) == 2
