from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass

import pytest

from tests.foundation.harness import TOPIC, Side


@dataclass
class Pair:
    """A producing and a consuming database, and this test's own topic."""

    producer: Side
    consumer: Side
    topic: str
    bootstrap: str


@pytest.fixture
async def pair(
    new_database: Callable[[str], str],
    new_topics: Callable[[dict[str, int]], Awaitable[str]],
    kafka_bootstrap: str,
) -> AsyncIterator[Pair]:
    prefix = await new_topics({TOPIC: 3, f"{TOPIC}.dlq": 1})
    producer = await Side.create(new_database("producer"))
    consumer = await Side.create(new_database("consumer"))
    yield Pair(producer, consumer, prefix + TOPIC, kafka_bootstrap)
    await producer.engine.dispose()
    await consumer.engine.dispose()
