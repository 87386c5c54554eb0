"""A service's own producer left with a gap in its idempotent sequence, as a broker
restart can leave it, and the check that the service's relay got over it blaming no row.

A stopped broker hands its partitions over before it goes; a batch the producer had
already numbered is then given up, and the broker refuses every later batch of that
producer on the partition with OutOfOrderSequenceNumber. A real producer on the real
broker is put into that state here by moving its next sequence number past ones the
broker never saw, on every partition of the service's topic.
"""

from __future__ import annotations

from typing import Any

import pytest
from aiokafka import AIOKafkaProducer
from aiokafka.structs import TopicPartition
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from servicekit import kafka
from servicekit.kafka_access import client_security
from tests.support.waiting import eventually

GAP = 3  # sequence numbers the broker never saw


class GappedProducer(AIOKafkaProducer):  # type: ignore[misc]
    """The real idempotent producer that, on its first send to a topic whose name ends
    with `suffix`, opens a gap in its sequence numbers on every partition of that topic."""

    def __init__(self, suffix: str, **config: Any) -> None:
        super().__init__(**config)
        self._suffix = suffix
        self._gapped: set[str] = set()

    async def send(self, topic: str, *args: Any, **kwargs: Any) -> Any:
        if topic.endswith(self._suffix) and topic not in self._gapped:
            self._gapped.add(topic)
            await self._open_gap(topic)
        return await super().send(topic, *args, **kwargs)

    async def _open_gap(self, topic: str) -> None:
        for partition in sorted(await self.partitions_for(topic)):
            # One record first, so the broker knows the producer id and its sequence.
            headers = [("event-id", b"before-the-gap")]
            await self.send_and_wait(topic, b"-", partition=partition, headers=headers)
            self._txn_manager.increment_sequence_number(TopicPartition(topic, partition), GAP)


class GappedFirstProducer:
    """Stands in for `servicekit.kafka.make_producer`: the first producer made for
    `client_id` (a service's relay and dead letters) is gapped on the topic whose name
    ends with `topic` (the service's prefix comes first), every other
    one is the real factory's. Remembers the producers made for `client_id`."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, client_id: str, topic: str) -> None:
        self._client_id = client_id
        self._topic = topic
        self._real = kafka.make_producer
        self.made: list[AIOKafkaProducer] = []
        monkeypatch.setattr(kafka, "make_producer", self)

    def __call__(self, bootstrap: str, client_id: str) -> AIOKafkaProducer:
        if client_id != self._client_id:
            return self._real(bootstrap, client_id)
        producer = (
            GappedProducer(
                self._topic,
                bootstrap_servers=bootstrap,
                enable_idempotence=True,
                acks="all",
                **client_security(),
            )
            if not self.made
            else self._real(bootstrap, client_id)
        )
        self.made.append(producer)
        return producer


async def outbox_states(engine: AsyncEngine) -> dict[str, int]:
    async with engine.connect() as connection:
        rows = await connection.execute(text("SELECT state, count(*) FROM outbox GROUP BY state"))
        return {str(state): int(count) for state, count in rows}


async def relayed_blaming_no_row(
    engine: AsyncEngine,
    producers: GappedFirstProducer,
    log: pytest.LogCaptureFixture,
    at_least: int,
    within: float = 60,
) -> dict[str, int]:
    """Waits until at least `at_least` rows were written and none is pending, or one
    failed; then checks that none failed and that the gapped producer was replaced, and
    said so in the log. Returns the outbox's states."""

    async def settled() -> bool:
        states = await outbox_states(engine)
        written = sum(states.values())
        return states.get("failed", 0) > 0 or (
            written >= at_least and states.get("pending", 0) == 0
        )

    await eventually(settled, within)
    states = await outbox_states(engine)
    assert states.get("failed", 0) == 0, f"rows blamed for the producer's fault: {states}"
    assert len(producers.made) >= 2, "the gapped producer was never replaced"
    said = [r.getMessage() for r in log.records if r.name == "servicekit.kafka"]
    assert any("producer replaced" in line for line in said), said
    return states
