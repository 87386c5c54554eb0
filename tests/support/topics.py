"""Topics under a fresh prefix, for a test or a benchmark that must not meet anyone else's."""

from __future__ import annotations

import asyncio
import uuid

from aiokafka.admin import AIOKafkaAdminClient, NewTopic


async def create_topics(bootstrap: str, partitions_by_topic: dict[str, int]) -> str:
    """Creates the topics under a new prefix; returns the prefix."""
    prefix = f"t{uuid.uuid4().hex[:8]}."
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        await admin.create_topics(
            [NewTopic(prefix + name, count, 1) for name, count in partitions_by_topic.items()]
        )
    finally:
        await admin.close()
    await asyncio.sleep(0.2)  # let the new partitions' leaders settle
    return prefix
