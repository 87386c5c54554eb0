"""A consumer paused while events keep coming lags, in the gateway's /metrics and in
GET /v1/ops/lag alike, and catches up once it resumes; an outbox row the broker refuses
ends failed and shows in its service's backlog metrics.

The consumer is paused for real: the notify service's process is stopped (SIGSTOP) while
the gateway creates studios, each a SpaceCreated on booking.events, which notify reads;
it is resumed (SIGCONT) whatever happens, so the shared platform goes on. The broker
counts a stopped group's lag on the topics it has committed on (its members are gone once
their session times out), so notify has first committed on booking.events.
"""

from __future__ import annotations

import os
import signal
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx

from tests.gateway.api import OPS, Api
from tests.observability.scrape import Scrape, scrape
from tests.support.platform import Platform, database
from tests.support.waiting import eventually

EVENTS = 3
OVERSIZED = 2 * 1024 * 1024  # over the producer's largest request (1 MiB)
RELAY_ATTEMPTS = 6  # servicekit.retry.RetryPolicy's default, the relay's


@contextmanager
def stopped(pid: int) -> Iterator[None]:
    os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(pid, signal.SIGCONT)


async def test_a_paused_consumer_lags_then_catches_up(platform: Platform) -> None:
    group = f"{platform.env['TOPIC_PREFIX']}notify"
    async with Api.at(platform.gateway) as api, httpx.AsyncClient() as http:

        async def lag_in_metrics() -> float:
            served = await scrape(http, platform, "gateway")
            return served.value("liftfit_consumer_lag_messages", group=group)

        async def partitions_in_api() -> list[dict[str, Any]]:
            answer = await api.call("GET", "/v1/ops/lag", OPS)
            assert answer.status_code == 200, answer.text
            groups = answer.json()["groups"]
            return [p for g in groups if g["group"] == group for p in g["partitions"]]

        async def lag_in_api() -> int:
            return sum(p["lag"] for p in await partitions_in_api())

        async def committed_on_the_topic() -> bool:
            topic = f"{platform.env['TOPIC_PREFIX']}booking.events"
            read = [p for p in await partitions_in_api() if p["topic"] == topic]
            if any(p["committed"] is not None for p in read):
                return True
            await api.studio(slots=1)  # a SpaceCreated on a partition chosen by its key
            return False

        async def caught_up() -> bool:
            return await lag_in_metrics() == 0 and await lag_in_api() == 0

        async def behind() -> bool:
            return await lag_in_metrics() >= EVENTS and await lag_in_api() >= EVENTS

        await eventually(committed_on_the_topic, 60, every=0.5)
        await eventually(caught_up, 30, every=0.5)
        with stopped(platform.pid("notify")):
            for _ in range(EVENTS):
                await api.studio(slots=1)
            await eventually(behind, 30, every=0.5)
        await eventually(caught_up, 60, every=0.5)


async def test_an_outbox_row_the_broker_refuses_shows_as_failed(platform: Platform) -> None:
    """A row too large for any request: the producer refuses it on every try, and the relay
    marks it failed when its attempts are used up. It starts with all but its last attempt
    spent (as after five refusals), so the wait is one relay round, not the backoff's 15 s."""
    topic = f"{platform.env['TOPIC_PREFIX']}booking.events"
    effect_id = uuid.uuid4()
    async with httpx.AsyncClient() as http, database(platform, "booking") as booking:
        before = await scrape(http, platform, "booking")
        await booking.execute(
            "INSERT INTO outbox (effect_id, topic, key, event_type, payload, headers, attempts)"
            " VALUES (%s, %s, %s, 'liftfit.test.Oversized', %s, '{}', %s)",
            (effect_id, topic, str(uuid.uuid4()), b"x" * OVERSIZED, RELAY_ATTEMPTS - 1),
        )
        try:

            async def failed_in_metrics() -> Scrape | None:
                served = await scrape(http, platform, "booking")
                more = served.value("liftfit_outbox_failed_rows") > before.value(
                    "liftfit_outbox_failed_rows"
                )
                return served if more else None

            after = await eventually(failed_in_metrics, 30, every=0.5)
            row = await (
                await booking.execute(
                    "SELECT state, attempts FROM outbox WHERE effect_id = %s", (effect_id,)
                )
            ).fetchone()
            assert row == ("failed", RELAY_ATTEMPTS)
            failures = "liftfit_relay_publish_failures_total"
            assert after.value(failures, topic=topic) > before.value(failures, topic=topic)
        finally:
            await booking.execute("DELETE FROM outbox WHERE effect_id = %s", (effect_id,))
