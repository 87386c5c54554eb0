"""The broker enforces the table of who may do what (deploy/boundary.yaml), attacked as a
neighbour on the same network would: with no credentials, with a wrong password, and with
a service's own credentials used for what that service may not do.

On the real local broker (SASL/SCRAM, KRaft's StandardAuthorizer), with the services'
principals and passwords as `make up` has them (deploy/local/platform.env), on topics and
groups under a fresh prefix whose ACLs deploy/local/kafka_access.py grants exactly as it
grants `make up`'s own.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.errors import (
    GroupAuthorizationFailedError,
    KafkaConnectionError,
    TopicAuthorizationFailedError,
)
from aiokafka.structs import TopicPartition
from liftfit.events.v1 import envelope_pb2
from liftfit.payment.v1 import events_pb2 as pev

from tests.support.infrastructure import Infrastructure, as_principal
from tests.support.platform import grant_kafka_access
from tests.support.topics import PLATFORM_TOPICS, create_topics, delete_topics

TOPIC_AUTHORIZATION_FAILED = 29


def _as(principal: str, password: str | None = None) -> dict[str, Any]:
    options = as_principal(principal)
    if password is not None:
        options["sasl_plain_password"] = password
    return {"request_timeout_ms": 10000, **options}


@pytest.fixture
async def prefix(infra: Infrastructure) -> AsyncIterator[str]:
    made = await create_topics(infra.kafka_bootstrap, PLATFORM_TOPICS)
    await grant_kafka_access(infra, made)
    yield made
    await delete_topics(infra.kafka_bootstrap, made, list(PLATFORM_TOPICS))


def _payment_succeeded() -> bytes:
    """A well-formed payment-succeeded event, as a forger would write it."""
    event = pev.PaymentSucceeded(payment_id=str(uuid.uuid4()), booking_id=str(uuid.uuid4()))
    envelope = envelope_pb2.EventEnvelope(
        event_id=str(uuid.uuid4()), event_type="PaymentSucceeded", producer="payment"
    )
    envelope.payload.Pack(event)
    return envelope.SerializeToString()


async def test_bookings_credentials_cannot_write_a_payment_event(
    infra: Infrastructure, prefix: str
) -> None:
    producer = AIOKafkaProducer(
        bootstrap_servers=infra.kafka_bootstrap, enable_idempotence=True, **_as("booking")
    )
    await producer.start()
    try:
        with pytest.raises(TopicAuthorizationFailedError):
            await producer.send_and_wait(prefix + "payment.events", _payment_succeeded())
        # The same credentials write booking's own topic: the refusal is the table's.
        await producer.send_and_wait(prefix + "booking.events", b"booking's own")
    finally:
        await producer.stop()


async def test_payments_credentials_write_payment_events(
    infra: Infrastructure, prefix: str
) -> None:
    producer = AIOKafkaProducer(
        bootstrap_servers=infra.kafka_bootstrap, enable_idempotence=True, **_as("payment")
    )
    await producer.start()
    try:
        sent = await producer.send_and_wait(prefix + "payment.events", _payment_succeeded())
        assert sent.offset >= 0
    finally:
        await producer.stop()


@pytest.mark.parametrize("credentials", ["none", "wrong password"])
async def test_a_client_without_valid_credentials_cannot_connect(
    infra: Infrastructure, credentials: str
) -> None:
    options = (
        {"request_timeout_ms": 5000}
        if credentials == "none"
        else _as("booking", password="not-bookings-password")
    )
    producer = AIOKafkaProducer(bootstrap_servers=infra.kafka_bootstrap, **options)
    with pytest.raises(KafkaConnectionError):
        await producer.start()
    await producer.stop()


@pytest.mark.parametrize("principal", ["booking", "payment", "access", "notify", "gateway"])
async def test_no_service_can_delete_a_topic(
    infra: Infrastructure, prefix: str, principal: str
) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=infra.kafka_bootstrap, **_as(principal))
    await admin.start()
    try:
        answer = await admin.delete_topics([prefix + "booking.events"])
        codes = [code for _, code, *_ in answer.topic_error_codes]
        assert codes == [TOPIC_AUTHORIZATION_FAILED], answer
    finally:
        await admin.close()


@pytest.mark.parametrize(
    ("principal", "others"), [("booking", "payment"), ("notify", "booking"), ("gateway", "access")]
)
async def test_no_service_can_move_another_groups_offsets(
    infra: Infrastructure, prefix: str, principal: str, others: str
) -> None:
    consumer = AIOKafkaConsumer(
        bootstrap_servers=infra.kafka_bootstrap,
        group_id=prefix + others,
        enable_auto_commit=False,
        **_as(principal),
    )
    await consumer.start()
    try:
        partition = TopicPartition(prefix + "booking.events", 0)
        consumer.assign([partition])
        with pytest.raises((GroupAuthorizationFailedError, TopicAuthorizationFailedError)):
            await consumer.commit({partition: 1000})
    finally:
        await consumer.stop()


async def test_the_gateway_follows_booking_events_but_cannot_write_them_or_read_notifys(
    infra: Infrastructure, prefix: str
) -> None:
    """Its booking cache hears changes by reading the events about bookings with no group
    (gateway_bff.booking_changes); that grant is a read, of those topics only."""
    writer = AIOKafkaProducer(
        bootstrap_servers=infra.kafka_bootstrap, enable_idempotence=True, **_as("booking")
    )
    await writer.start()
    try:
        sent = await writer.send_and_wait(prefix + "booking.events", b"x", key=b"k")
    finally:
        await writer.stop()
    follower = AIOKafkaConsumer(
        bootstrap_servers=infra.kafka_bootstrap, group_id=None, **_as("gateway")
    )
    await follower.start()
    try:
        partition = TopicPartition(prefix + "booking.events", sent.partition)
        follower.assign([partition])
        follower.seek(partition, sent.offset)
        record = await follower.getone()
        assert (record.key, record.value) == (b"k", b"x")
        other = TopicPartition(prefix + "notify.events", 0)
        follower.assign([other])
        follower.seek(other, 0)
        with pytest.raises(TopicAuthorizationFailedError):
            await follower.getmany(other, timeout_ms=5000)
    finally:
        await follower.stop()
    producer = AIOKafkaProducer(bootstrap_servers=infra.kafka_bootstrap, **_as("gateway"))
    await producer.start()
    try:
        with pytest.raises(TopicAuthorizationFailedError):
            await producer.send_and_wait(prefix + "booking.events", b"forged")
    finally:
        await producer.stop()
