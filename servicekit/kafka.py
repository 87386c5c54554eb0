"""Kafka clients as every service configures them."""

from __future__ import annotations

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.errors import (
    KafkaConnectionError,
    KafkaTimeoutError,
    NodeNotReadyError,
    RequestTimedOutError,
)

# Errors that say the broker could not be reached, as opposed to a problem with one message.
OUTAGE_ERRORS: tuple[type[BaseException], ...] = (
    KafkaConnectionError,
    KafkaTimeoutError,
    NodeNotReadyError,
    RequestTimedOutError,
    ConnectionError,
)


def make_producer(bootstrap: str, client_id: str) -> AIOKafkaProducer:
    # The idempotent producer with acks=all: a broker-side retry never writes a message twice,
    # and an acknowledgement means every in-sync replica has it.
    return AIOKafkaProducer(
        bootstrap_servers=bootstrap,
        client_id=client_id,
        enable_idempotence=True,
        acks="all",
        linger_ms=5,
        max_batch_size=256 * 1024,
        request_timeout_ms=15000,
    )


def make_consumer(bootstrap: str, group_id: str, topics: list[str]) -> AIOKafkaConsumer:
    # Offsets are committed by the inbox only after the database commit.
    return AIOKafkaConsumer(
        *topics,
        bootstrap_servers=bootstrap,
        group_id=group_id,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        isolation_level="read_committed",
        max_poll_records=500,
    )


async def broker_answers(producer: AIOKafkaProducer, timeout_s: float = 3.0) -> bool:
    import asyncio

    try:
        await asyncio.wait_for(producer.client.fetch_all_metadata(), timeout_s)
        return True
    except Exception:
        return False
