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

The admin client and the consumer that reads end offsets stay open between reads: each new
one costs a SASL/SCRAM handshake (PBKDF2 on the client and on the broker), and a reading
every few seconds made that a large part of an idle process's CPU. They are made on the
first read, dropped after any read that fails (a broker restart leaves them half-broken),
so the next read makes them again, and closed by `close()`.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import defaultdict
from collections.abc import Awaitable, Iterable, Mapping
from dataclasses import dataclass, field
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
        self._clients: _Clients | None = None
        self._dropped: list[_Clients] = []
        # One read at a time: the clients are made, used and dropped by one reader.
        self._reading = asyncio.Lock()

    async def read(self) -> list[GroupLag]:
        """Every matching group, by name; raises BrokerUnreachable."""
        bootstrap = self._settings.kafka_bootstrap
        try:
            async with asyncio.timeout(self._deadline_s), self._reading:
                return await self._read_or_drop()
        except TimeoutError:
            raise BrokerUnreachable(f"no answer from {bootstrap} in {self._deadline_s} s") from None
        except (KafkaError, OSError) as error:
            raise BrokerUnreachable(f"{bootstrap}: {type(error).__name__}") from error
        finally:
            await self._close_dropped()  # outside the deadline, which a close must not eat

    async def close(self) -> None:
        """Closes the clients (the process is stopping); a later read makes new ones."""
        async with self._reading:
            self._drop()
        await self._close_dropped()

    async def _read_or_drop(self) -> list[GroupLag]:
        try:
            return await self._read(await self._open_clients())
        except BaseException:
            self._drop()  # whatever failed, the next read starts on new clients
            raise

    async def _open_clients(self) -> _Clients:
        if self._clients is None:
            self._clients = _Clients.made(self._settings, int(self._deadline_s * 1000))
        await self._clients.start()
        return self._clients

    def _drop(self) -> None:
        if self._clients is not None:
            self._dropped.append(self._clients)
            self._clients = None

    async def _close_dropped(self) -> None:
        dropped, self._dropped = self._dropped, []
        for clients in dropped:
            await clients.close()

    async def _read(self, clients: _Clients) -> list[GroupLag]:
        admin = clients.admin
        groups = sorted(
            group for group, *_ in await admin.list_consumer_groups() if self._settings.wants(group)
        )
        committed = {group: await admin.list_consumer_group_offsets(group) for group in groups}
        # One group per request: aiokafka 0.14 decodes a DescribeGroups v3 answer with
        # the v2 layout, which holds for one group and misreads the second.
        descriptions = [await admin.describe_consumer_groups([group]) for group in groups]
        assigned = _assigned(response for found in descriptions for response in found)
        read = {group: {*committed[group], *assigned.get(group, ())} for group in groups}
        topics = {tp.topic for tps in read.values() for tp in tps}
        partitions = await _partitions_of(admin, topics)
        ends = await clients.end_offsets([tp for tps in partitions.values() for tp in tps])
        return [
            _group_lag(group, committed[group], read[group], partitions, ends) for group in groups
        ]


@dataclass
class _Clients:
    """The admin client and the end offsets' consumer of one ConsumerLag, started once."""

    settings: LagSettings
    timeout_ms: int
    admin: AIOKafkaAdminClient
    consumer: AIOKafkaConsumer
    started: bool = False
    # The topics the consumer was asked about. aiokafka's client keeps naming a topic it
    # once looked up in its metadata requests, which would bring back a deleted topic on a
    # broker that creates topics on demand: a consumer that knew a topic this read does not
    # ask about (deleted, or read by no group now) is replaced.
    asked: set[str] = field(default_factory=set)

    @classmethod
    def made(cls, settings: LagSettings, timeout_ms: int) -> _Clients:
        admin = AIOKafkaAdminClient(**_client_settings(settings, timeout_ms))
        return cls(settings, timeout_ms, admin, _end_offsets_consumer(settings, timeout_ms))

    async def start(self) -> None:
        if not self.started:
            await self.admin.start()
            await self.consumer.start()
            self.started = True

    async def end_offsets(self, partitions: list[TopicPartition]) -> dict[TopicPartition, int]:
        if not partitions:
            return {}
        topics = {tp.topic for tp in partitions}
        if not self.asked <= topics:
            await self._replace_consumer()
        self.asked |= topics
        ends: dict[TopicPartition, int] = await self.consumer.end_offsets(partitions)
        return ends

    async def _replace_consumer(self) -> None:
        old = self.consumer
        self.consumer = _end_offsets_consumer(self.settings, self.timeout_ms)
        self.asked = set()
        await _quietly(old.stop())
        await self.consumer.start()

    async def close(self) -> None:
        await _quietly(self.admin.close())
        await _quietly(self.consumer.stop())


def _client_settings(settings: LagSettings, timeout_ms: int) -> dict[str, Any]:
    return {
        "bootstrap_servers": settings.kafka_bootstrap,
        "client_id": settings.client_id,
        "request_timeout_ms": timeout_ms,
        **client_security(settings.principal),
    }


def _end_offsets_consumer(settings: LagSettings, timeout_ms: int) -> AIOKafkaConsumer:
    return AIOKafkaConsumer(
        group_id=None,
        enable_auto_commit=False,
        isolation_level="read_committed",
        **_client_settings(settings, timeout_ms),
    )


async def _quietly(closing: Awaitable[None]) -> None:
    """A client that failed may fail to close too; it is let go either way."""
    with contextlib.suppress(Exception):
        await closing


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
