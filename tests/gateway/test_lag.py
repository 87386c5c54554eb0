"""Consumer lag read from the real broker: committed offset, end and lag per partition of
each group under the services' prefix; a live group that has committed nothing; a broker
that is not there, or does not answer, within the deadline."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from servicekit.kafka_access import client_security
from servicekit.lag import BrokerUnreachable, ConsumerLag, GroupLag, LagSettings, PartitionLag
from tests.support.sandboxes import silent_listener
from tests.support.waiting import eventually

pytestmark = pytest.mark.infra

RECORDS_PER_PARTITION = {0: 5, 1: 3, 2: 0}
NewTopics = Callable[[dict[str, int]], Awaitable[str]]


async def _produce(bootstrap: str, topic: str) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", **client_security())
    await producer.start()
    try:
        for partition, count in RECORDS_PER_PARTITION.items():
            for i in range(count):
                await producer.send_and_wait(topic, f"r{i}".encode(), partition=partition)
    finally:
        await producer.stop()


async def _commit(bootstrap: str, group: str, offsets: dict[TopicPartition, int]) -> None:
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=group, **client_security())
    await consumer.start()
    try:
        consumer.assign(list(offsets))
        await consumer.commit(offsets)
    finally:
        await consumer.stop()


@contextlib.asynccontextmanager
async def _member_that_commits_nothing(
    bootstrap: str, group: str, topic: str
) -> AsyncIterator[None]:
    consumer = AIOKafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=group,
        enable_auto_commit=False,
        **client_security(),
    )
    await consumer.start()
    try:

        async def assigned() -> bool:
            return bool(consumer.assignment())

        await eventually(assigned, within=30)
        yield
    finally:
        await consumer.stop()


def _by_group(groups: list[GroupLag]) -> dict[str, list[PartitionLag]]:
    return {group.group: list(group.partitions) for group in groups}


async def test_lag_is_end_minus_committed_per_partition_of_each_service_group(
    kafka_bootstrap: str, new_topics: NewTopics
) -> None:
    prefix = await new_topics({"booking.events": 3})
    topic = f"{prefix}booking.events"
    await _produce(kafka_bootstrap, topic)
    await _commit(
        kafka_bootstrap,
        f"{prefix}payment",
        {TopicPartition(topic, 0): 2, TopicPartition(topic, 1): 3},
    )
    await _commit(kafka_bootstrap, f"x{prefix}payment", {TopicPartition(topic, 0): 1})

    async with _member_that_commits_nothing(kafka_bootstrap, f"{prefix}notify", topic):
        groups = await ConsumerLag(LagSettings(kafka_bootstrap, prefix)).read()

    assert _by_group(groups) == {
        f"{prefix}notify": [
            PartitionLag(topic, 0, None, 5, 5),
            PartitionLag(topic, 1, None, 3, 3),
            PartitionLag(topic, 2, None, 0, 0),
        ],
        f"{prefix}payment": [
            PartitionLag(topic, 0, 2, 5, 3),
            PartitionLag(topic, 1, 3, 3, 0),
            PartitionLag(topic, 2, None, 0, 0),
        ],
    }
    assert [group.lag for group in groups] == [8, 3]


async def test_every_group_under_the_prefix_is_read_however_many_share_a_coordinator(
    kafka_bootstrap: str, new_topics: NewTopics
) -> None:
    prefix = await new_topics({"access.events": 3})
    topic = f"{prefix}access.events"
    await _produce(kafka_bootstrap, topic)
    services = ("access", "booking", "notify", "payment")
    async with contextlib.AsyncExitStack() as members:
        for service in services:
            await members.enter_async_context(
                _member_that_commits_nothing(kafka_bootstrap, f"{prefix}{service}", topic)
            )
        groups = await ConsumerLag(LagSettings(kafka_bootstrap, prefix)).read()

    assert [(group.group, group.lag) for group in groups] == [
        (f"{prefix}{service}", 8) for service in services
    ]


@pytest.fixture
def closed_port() -> Iterator[int]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    yield port


@pytest.fixture
def silent_broker() -> Iterator[int]:
    with silent_listener() as port:
        yield port


async def test_a_broker_that_is_not_there_is_reported_within_the_deadline(
    closed_port: int,
) -> None:
    lag = ConsumerLag(LagSettings(f"127.0.0.1:{closed_port}", ""), deadline_s=2.0)
    started = time.monotonic()
    with pytest.raises(BrokerUnreachable):
        await lag.read()
    assert time.monotonic() - started < 3.0


async def test_a_broker_that_does_not_answer_is_reported_at_the_deadline(
    silent_broker: int,
) -> None:
    lag = ConsumerLag(LagSettings(f"127.0.0.1:{silent_broker}", ""), deadline_s=1.0)
    started = time.monotonic()
    with pytest.raises(BrokerUnreachable, match="no answer"):
        await asyncio.wait_for(lag.read(), timeout=10)
    assert 0.9 < time.monotonic() - started < 3.0
