"""Topics under a fresh prefix, for a test or a benchmark that must not meet anyone else's."""

from __future__ import annotations

import asyncio
import uuid

from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from servicekit.kafka_access import client_security

# Every topic the four services read or write, for a test that runs them all.
PLATFORM_TOPICS = {
    "booking.events": 3,
    "payment.events": 3,
    "access.events": 3,
    "notify.events": 1,
    "booking.events.dlq": 1,
    "payment.events.dlq": 1,
    "access.events.dlq": 1,
}


async def create_topics(bootstrap: str, partitions_by_topic: dict[str, int]) -> str:
    """Creates the topics under a new prefix; returns the prefix."""
    prefix = f"t{uuid.uuid4().hex[:8]}."
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, **client_security())
    await admin.start()
    try:
        await admin.create_topics(
            [NewTopic(prefix + name, count, 1) for name, count in partitions_by_topic.items()]
        )
    finally:
        await admin.close()
    await asyncio.sleep(0.2)  # let the new partitions' leaders settle
    return prefix


async def delete_topics(bootstrap: str, prefix: str, names: list[str]) -> None:
    """Deletes a test's topics, so the broker stays small: a broker holding every topic the
    suite ever made restarts slowly (a minute with 12,000 partitions), and the fault tests
    restart it."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, **client_security())
    await admin.start()
    try:
        await admin.delete_topics([prefix + name for name in names])
    except Exception as error:  # a topic the test removed itself, or a broker it stopped
        print(f"[topics] not deleted: {prefix}*: {error!r}")
    finally:
        await admin.close()
