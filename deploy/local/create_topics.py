"""Create the Kafka topics listed in deploy/local/topics.txt (idempotent).

Usage: python deploy/local/create_topics.py [TOPICS_FILE]

The bootstrap address comes from the environment variable KAFKA_BOOTSTRAP
(default 127.0.0.1:19092), the principal from KAFKA_USERNAME and KAFKA_PASSWORD (the
broker's administrator, as deploy/local/infra.sh runs it). Topics that already exist are left
alone (their partition count is never changed); a TopicAlreadyExists answer from a concurrent
creator is ignored. The script returns once every listed topic has a leader for
each of its partitions and the group coordinator answers, so producers and
consumer groups can use the broker straight away.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path
from typing import Any

from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import KafkaError, TopicAlreadyExistsError, for_code

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from servicekit.kafka_access import client_security

DEFAULT_BOOTSTRAP = "127.0.0.1:19092"
DEFAULT_TOPICS_FILE = Path(__file__).resolve().parent / "topics.txt"
CONNECT_DEADLINE_S = 60.0
LEADER_DEADLINE_S = 60.0


def parse_topics(path: Path) -> dict[str, int]:
    """Parse `name partitions` lines; '#' starts a comment; blank lines are ignored."""
    topics: dict[str, int] = {}
    for lineno, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        parts = line.split()
        if len(parts) != 2 or not parts[1].isdigit() or int(parts[1]) < 1:
            raise ValueError(f"{path}:{lineno}: expected '<topic> <partitions>', got {raw!r}")
        name, partitions = parts[0], int(parts[1])
        if name in topics and topics[name] != partitions:
            raise ValueError(f"{path}:{lineno}: topic {name!r} listed twice")
        topics[name] = partitions
    return topics


async def _connect(bootstrap: str) -> AIOKafkaAdminClient:
    deadline = time.monotonic() + CONNECT_DEADLINE_S
    while True:
        admin = AIOKafkaAdminClient(
            bootstrap_servers=bootstrap, request_timeout_ms=30000, **client_security()
        )
        try:
            await admin.start()
            return admin
        except KafkaError as exc:
            await admin.close()
            if time.monotonic() > deadline:
                raise RuntimeError(f"cannot reach Kafka at {bootstrap}: {exc!r}") from exc
            await asyncio.sleep(1.0)


async def _wait_for_leaders(admin: AIOKafkaAdminClient, names: list[str]) -> None:
    deadline = time.monotonic() + LEADER_DEADLINE_S
    while True:
        described: list[dict[str, Any]] = await admin.describe_topics(names)
        pending = [
            t["topic"]
            for t in described
            if t["error_code"] != 0
            or not t["partitions"]
            or any(p["leader"] < 0 for p in t["partitions"])
        ]
        if not pending:
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"topics without leaders after {LEADER_DEADLINE_S:.0f}s: {pending}")
        await asyncio.sleep(0.5)


async def _wait_for_group_coordinator(admin: AIOKafkaAdminClient) -> None:
    """Make the broker create __consumer_offsets now, not on the first consumer's join."""
    deadline = time.monotonic() + LEADER_DEADLINE_S
    while True:
        try:
            await admin.find_coordinator("liftfit-infra-warmup")
            return
        except KafkaError as exc:
            if time.monotonic() > deadline:
                raise RuntimeError(f"group coordinator not available: {exc!r}") from exc
            await asyncio.sleep(0.5)


async def create_topics(bootstrap: str, wanted: dict[str, int]) -> list[str]:
    """Create the missing topics; return the names that were created."""
    admin = await _connect(bootstrap)
    try:
        existing = set(await admin.list_topics())
        missing = [NewTopic(n, p, 1) for n, p in wanted.items() if n not in existing]
        created: list[str] = []
        if missing:
            response: Any = await admin.create_topics(missing, timeout_ms=30000)
            for entry in response.topic_errors:
                topic, code = entry[0], entry[1]
                if code == 0:
                    created.append(topic)
                    continue
                error_cls = for_code(code)
                if error_cls is TopicAlreadyExistsError:
                    continue
                message = entry[2] if len(entry) > 2 else ""
                raise RuntimeError(
                    f"creating topic {topic!r} failed: {error_cls.__name__} {message}"
                )
        await _wait_for_leaders(admin, list(wanted))
        await _wait_for_group_coordinator(admin)
        return created
    finally:
        await admin.close()


def main(argv: list[str]) -> int:
    topics_file = Path(argv[1]) if len(argv) > 1 else DEFAULT_TOPICS_FILE
    bootstrap = os.environ.get("KAFKA_BOOTSTRAP", DEFAULT_BOOTSTRAP)
    wanted = parse_topics(topics_file)
    try:
        created = asyncio.run(create_topics(bootstrap, wanted))
    except (RuntimeError, KafkaError) as exc:
        print(f"create_topics: {exc}", file=sys.stderr)
        return 1
    if created:
        print(f"created topics: {', '.join(sorted(created))}")
    print(f"{len(wanted)} topics present on {bootstrap}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
