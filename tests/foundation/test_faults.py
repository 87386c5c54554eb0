"""Faults delay work but never lose it: a relay killed mid-publish, a broker outage."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import uuid

from servicekit.outbox import Outbox
from tests.foundation.conftest import Pair
from tests.foundation.harness import append_events, eventually, start_consumer, start_relay
from tests.support.infrastructure import REPO_ROOT, start_kafka, stop_kafka


def _relay_process(pair: Pair, *flags: str) -> subprocess.Popen[str]:
    url = pair.producer.engine.url.render_as_string(hide_password=False)
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.foundation.relay_process",
            "--database-url",
            url,
            "--bootstrap",
            pair.bootstrap,
            *flags,
        ],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        text=True,
        env=dict(os.environ),
    )


async def _line_starting(process: subprocess.Popen[str], prefix: str) -> str:
    assert process.stdout is not None
    while True:
        line = await asyncio.wait_for(asyncio.to_thread(process.stdout.readline), 60)
        if not line:
            raise AssertionError(f"relay process ended before printing {prefix!r}")
        if line.startswith(prefix):
            return line


async def test_relay_killed_after_the_broker_ack_but_before_marking_applies_the_effect_once(
    pair: Pair,
) -> None:
    aggregate = str(uuid.uuid4())
    [effect] = await append_events(pair.producer, pair.topic, ["crash"], aggregate_id=aggregate)
    crashing = _relay_process(pair, "--hang-after-ack")
    acked = await _line_starting(crashing, "acked")
    assert str(effect) in acked
    crashing.send_signal(signal.SIGKILL)
    crashing.wait(10)
    assert (await pair.producer.outbox_states())["pending"] == 1, "the row was not left pending"

    restarted = _relay_process(pair)
    consumer = await start_consumer(pair.consumer, pair.bootstrap, pair.topic, "g-" + aggregate)
    try:

        async def dispatched() -> bool:
            return (await pair.producer.outbox_states())["dispatched"] == 1

        await eventually(dispatched)

        async def applied() -> bool:
            return await pair.consumer.applied_count(aggregate) >= 1

        await eventually(applied)
        await asyncio.sleep(2)  # the second copy on the topic has surely been consumed by now
    finally:
        restarted.terminate()
        restarted.wait(10)
        await consumer.stop()
    assert await pair.consumer.applied_count(aggregate) == 1


async def test_rows_written_while_the_broker_is_down_are_all_delivered_when_it_is_back(
    pair: Pair,
) -> None:
    relay = await start_relay(pair.producer, pair.bootstrap)
    consumer = await start_consumer(pair.consumer, pair.bootstrap, pair.topic, "g-outage")
    stop_kafka()
    try:
        ids = await append_events(pair.producer, pair.topic, [f"o{i}" for i in range(300)])
        await asyncio.sleep(3)  # the relay keeps trying against a dead broker meanwhile
        states = await pair.producer.outbox_states()
        assert states["pending"] == 300 and states["failed"] == 0
    finally:
        start_kafka()

    async def all_applied() -> bool:
        return await pair.consumer.applied_count() == len(ids)

    await eventually(all_applied, 120)
    await relay.stop()
    await consumer.stop()
    assert (await pair.producer.outbox_states())["dispatched"] == 300
    async with pair.producer.sessions() as session:
        rows = await Outbox(pair.producer.tables.outbox, "x").rows(session, limit=1000)
    assert all(row.state == "dispatched" for row in rows)
