"""How far consumers are behind: per group, topic and partition, the offset the group has
committed, the partition's end and the difference. The gateway reads every group of the
platform (for operators and its /metrics), each service its own (its /metrics).

The services' groups are named `<TOPIC_PREFIX><service>`, so the prefix picks them out of
whatever else the broker serves; `only` narrows that to named groups. A group's
partitions are those it has committed on, and for a live group those its members are
assigned; a partition of such a topic without a commit has consumed nothing, and its lag
is the whole end offset. Partitions of a topic the broker no longer has are left out:
they have no end to measure against.

End offsets are read as the services' consumers read (read_committed), so the lag counts
only records a consumer could be given. Everything is read within one deadline; a broker
that cannot be reached or does not answer in it raises `BrokerUnreachable`.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.coordinator.protocol import ConsumerProtocolMemberAssignment
from aiokafka.errors import KafkaError

from servicekit import config
from servicekit.kafka_access import client_security

DEADLINE_S = 5.0


class BrokerUnreachable(RuntimeError):
    """The broker could not be reached, or did not answer, within the deadline."""


@dataclass(frozen=True)
class PartitionLag:
    topic: str
    partition: int
    committed: int | None  # None: the group has committed nothing here
    end: int
    lag: int


@dataclass(frozen=True)
class GroupLag:
    group: str
    partitions: tuple[PartitionLag, ...]  # by topic, then partition

    @property
    def lag(self) -> int:
        return sum(partition.lag for partition in self.partitions)


@dataclass(frozen=True)
class LagSettings:
    kafka_bootstrap: str
    group_prefix: str
    only: tuple[str, ...] = ()  # these groups alone; empty: every group with the prefix
    client_id: str = "gateway-lag"
    # KAFKA_USERNAME and KAFKA_PASSWORD of the principal that reads (servicekit.kafka_access);
    # None: the process's own, from its environment.
    principal: Mapping[str, str] | None = None

    def wants(self, group: str) -> bool:
        if self.only:
            return group in self.only
        return group.startswith(self.group_prefix)

    @classmethod
    def from_env(cls) -> LagSettings:
        return cls(config.required("KAFKA_BOOTSTRAP"), config.optional("TOPIC_PREFIX", ""))


class ConsumerLag:
    """Reads the lag of the consumer groups the settings want."""

    def __init__(self, settings: LagSettings, deadline_s: float = DEADLINE_S) -> None:
        self._settings = settings
        self._deadline_s = deadline_s

    async def read(self) -> list[GroupLag]:
        """Every matching group, by name; raises BrokerUnreachable."""
        bootstrap = self._settings.kafka_bootstrap
        try:
            async with asyncio.timeout(self._deadline_s):
                return await self._read()
        except TimeoutError:
            raise BrokerUnreachable(f"no answer from {bootstrap} in {self._deadline_s} s") from None
        except (KafkaError, OSError) as error:
            raise BrokerUnreachable(f"{bootstrap}: {type(error).__name__}") from error

    async def _read(self) -> list[GroupLag]:
        timeout_ms = int(self._deadline_s * 1000)
        admin = AIOKafkaAdminClient(
            bootstrap_servers=self._settings.kafka_bootstrap,
            client_id=self._settings.client_id,
            request_timeout_ms=timeout_ms,
            **client_security(self._settings.principal),
        )
        try:
            await admin.start()
            groups = sorted(
                group
                for group, *_ in await admin.list_consumer_groups()
                if self._settings.wants(group)
            )
            committed = {group: await admin.list_consumer_group_offsets(group) for group in groups}
            # One group per request: aiokafka 0.14 decodes a DescribeGroups v3 answer with
            # the v2 layout, which holds for one group and misreads the second.
            descriptions = [await admin.describe_consumer_groups([group]) for group in groups]
            assigned = _assigned(response for found in descriptions for response in found)
            read = {group: {*committed[group], *assigned.get(group, ())} for group in groups}
            topics = {tp.topic for tps in read.values() for tp in tps}
            partitions = await _partitions_of(admin, topics)
        finally:
            await admin.close()
        every = [tp for tps in partitions.values() for tp in tps]
        ends = await _end_offsets(self._settings, every, timeout_ms)
        return [
            _group_lag(group, committed[group], read[group], partitions, ends) for group in groups
        ]


def _assigned(descriptions: Iterable[Any]) -> dict[str, set[TopicPartition]]:
    """The partitions each live group's members are assigned (a group protocol's own
    assignment, which only the consumer protocol's groups have, is not read)."""
    assigned: dict[str, set[TopicPartition]] = defaultdict(set)
    for response in descriptions:
        for group in response.to_object()["groups"]:
            if group["protocol_type"] != "consumer":
                continue
            for member in group["members"]:
                if member["member_assignment"]:
                    assignment = ConsumerProtocolMemberAssignment.decode(
                        member["member_assignment"]
                    )
                    assigned[group["group"]].update(assignment.partitions())
    return assigned


async def _partitions_of(
    admin: AIOKafkaAdminClient, topics: set[str]
) -> dict[str, list[TopicPartition]]:
    if not topics:
        return {}
    # The whole cluster's metadata: naming the topics would let a broker that creates
    # topics on demand bring back one that a group once read and that was deleted.
    described = await admin.describe_topics(None)
    return {
        topic["topic"]: sorted(
            TopicPartition(topic["topic"], partition["partition"])
            for partition in topic["partitions"]
        )
        for topic in described
        if topic["topic"] in topics and topic["error_code"] == 0
    }


async def _end_offsets(
    settings: LagSettings, partitions: list[TopicPartition], timeout_ms: int
) -> dict[TopicPartition, int]:
    if not partitions:
        return {}
    consumer = AIOKafkaConsumer(
        bootstrap_servers=settings.kafka_bootstrap,
        client_id=settings.client_id,
        group_id=None,
        enable_auto_commit=False,
        isolation_level="read_committed",
        request_timeout_ms=timeout_ms,
        **client_security(settings.principal),
    )
    try:
        await consumer.start()
        ends: dict[TopicPartition, int] = await consumer.end_offsets(partitions)
        return ends
    finally:
        await consumer.stop()


def _group_lag(
    group: str,
    committed: Mapping[TopicPartition, Any],
    read: set[TopicPartition],
    partitions: Mapping[str, list[TopicPartition]],
    ends: Mapping[TopicPartition, int],
) -> GroupLag:
    topics = sorted({tp.topic for tp in read} & partitions.keys())
    rows = (
        _partition_lag(tp, committed[tp].offset if tp in committed else -1, ends[tp])
        for topic in topics
        for tp in partitions[topic]
    )
    return GroupLag(group, tuple(rows))


def _partition_lag(tp: TopicPartition, offset: int, end: int) -> PartitionLag:
    # The broker says -1 for "no commit"; a commit past the end (a topic emptied and
    # made again) is no lag rather than a negative one.
    committed = offset if offset >= 0 else None
    return PartitionLag(tp.topic, tp.partition, committed, end, max(0, end - (committed or 0)))
