"""Consumer lag read from the real broker: committed offset, end and lag per partition of
each group under the services' prefix; a live group that has committed nothing; reads after
the first on the connections it opened, closed with the sampler's gauges, and made again
after a broker restart; a broker that is not there, or does not answer, within the
deadline."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator

import aiokafka.client
import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.conn import AIOKafkaConnection

from servicekit.kafka_access import client_security
from servicekit.lag import BrokerUnreachable, ConsumerLag, GroupLag, LagSettings, PartitionLag
from servicekit.metrics.probes import lag_probe
from servicekit.metrics.sampling import SampledGauges
from tests.support.infrastructure import start_kafka, stop_kafka
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
async def lagging(kafka_bootstrap: str, new_topics: NewTopics) -> AsyncIterator[ConsumerLag]:
    """The lag of a prefix under which one group lags on a topic of its own, closed after."""
    prefix = await new_topics({"payment.events": 3})
    topic = f"{prefix}payment.events"
    await _produce(kafka_bootstrap, topic)
    await _commit(kafka_bootstrap, f"{prefix}booking", {TopicPartition(topic, 0): 2})
    lag = ConsumerLag(LagSettings(kafka_bootstrap, prefix), deadline_s=2.0)
    yield lag
    await lag.close()


@pytest.fixture
def connections_opened(monkeypatch: pytest.MonkeyPatch) -> list[AIOKafkaConnection]:
    """The broker connections aiokafka's clients open from now on (each one a SASL
    handshake where the broker asks for one)."""
    opened: list[AIOKafkaConnection] = []
    real = aiokafka.client.create_conn

    async def counted(*args: object, **kwargs: object) -> AIOKafkaConnection:
        opened.append(await real(*args, **kwargs))
        return opened[-1]

    monkeypatch.setattr(aiokafka.client, "create_conn", counted)
    return opened


async def test_reads_after_the_first_open_no_new_connection_to_the_broker(
    lagging: ConsumerLag, connections_opened: list[AIOKafkaConnection]
) -> None:
    first = await lagging.read()
    assert [group.lag for group in first] == [6]
    opened_by_the_first = len(connections_opened)
    for _ in range(3):
        assert await lagging.read() == first
    assert connections_opened[opened_by_the_first:] == []


async def test_closing_the_sampled_gauges_closes_the_connections_the_lag_kept(
    lagging: ConsumerLag, connections_opened: list[AIOKafkaConnection]
) -> None:
    gauges = SampledGauges([lag_probe(lagging)])
    await gauges.sample()
    assert any(connection.connected() for connection in connections_opened)
    await gauges.close()
    assert not any(connection.connected() for connection in connections_opened)


async def test_a_read_after_a_broker_restart_answers_on_new_connections(
    lagging: ConsumerLag,
) -> None:
    first = await lagging.read()
    await asyncio.to_thread(stop_kafka)
    try:
        with pytest.raises(BrokerUnreachable):
            await lagging.read()
    finally:
        await asyncio.to_thread(start_kafka)

    async def answered() -> list[GroupLag] | None:
        with contextlib.suppress(BrokerUnreachable):  # the group's coordinator may be loading
            return await lagging.read()
        return None

    assert await eventually(answered, within=60, every=0.5) == first


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
