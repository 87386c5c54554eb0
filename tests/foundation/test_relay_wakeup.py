"""The relay wakes when outbox rows are committed (LISTEN/NOTIFY) and polls only as a
fallback: an idle relay barely asks the database anything, a committed row goes out at
once, and a lost listening connection delays nothing for long."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Sequence
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from servicekit.relay import FALLBACK_WAIT_S, OutboxRelay
from tests.foundation.conftest import Pair
from tests.foundation.harness import (
    RunningRelay,
    Side,
    append_events,
    eventually,
    start_consumer,
    start_relay,
)
from tests.support.infrastructure import start_postgres, stop_postgres

# Long enough that the relay's statements are counted over many of its old 50 ms polls.
IDLE_WINDOW_S = 5.0
# The rows of the latency and trickle tests come at this pace (5 a second), not a backlog.
TRICKLE_GAP_S = 0.2


async def _commits(side: Side) -> int:
    """The database's committed transactions so far: each of the relay's autocommit
    statements is one. PostgreSQL's statistics lag by up to a second per session."""
    async with side.sessions() as session:
        query = text("SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()")
        return int((await session.execute(query)).scalar_one())


@contextlib.asynccontextmanager
async def _relaying(
    pair: Pair, group: str, idle_wait_s: float = 0.05
) -> AsyncIterator[RunningRelay]:
    """A relay of the producer's outbox and a consumer of its topic, both stopped after."""
    relay = await start_relay(pair.producer, pair.bootstrap, idle_wait_s=idle_wait_s)
    consumer = await start_consumer(pair.consumer, pair.bootstrap, pair.topic, group)
    try:
        yield relay
    finally:
        await relay.stop()
        await consumer.stop()


async def _leading(relay: RunningRelay) -> None:
    async def leads() -> bool:
        return relay.relay.lease.held

    await eventually(leads)


async def test_an_idle_relay_asks_the_database_a_few_times_a_second_not_two_dozen(
    pair: Pair,
) -> None:
    relay = await start_relay(pair.producer, pair.bootstrap)
    try:
        await _leading(relay)
        before = await _commits(pair.producer)
        await asyncio.sleep(IDLE_WINDOW_S)  # the window the rate is measured over
        per_s = (await _commits(pair.producer) - before) / IDLE_WINDOW_S
    finally:
        await relay.stop()
    # Polling every 50 ms asked about 24 times a second (three lanes); listening, the
    # relay asks once a second, and its lease and listener check their connections.
    assert per_s < 5, f"{per_s:.1f} statements a second"


async def test_a_row_committed_while_the_relay_is_idle_is_published_at_once(pair: Pair) -> None:
    # Polling alone would find the rows after 30 s: only the notification can be in time.
    latencies = []
    async with _relaying(pair, "g-wakeup", idle_wait_s=30.0) as relay:
        await _leading(relay)
        for i in range(5):
            await asyncio.sleep(TRICKLE_GAP_S)
            await append_events(pair.producer, pair.topic, [f"w{i}"])
            committed = asyncio.get_running_loop().time()

            async def consumed(expected: int = i + 1) -> bool:
                return await pair.consumer.applied_count() == expected

            await eventually(consumed, 5 * FALLBACK_WAIT_S)
            latencies.append(asyncio.get_running_loop().time() - committed)
    # Each would have a fair chance under the fallback's second; all five, hardly any.
    assert max(latencies) < FALLBACK_WAIT_S / 2, latencies


class _Asked:
    """Counts a relay's claims and its questions whether anything is due."""

    def __init__(self, relay: OutboxRelay) -> None:
        self.claims = self.questions = 0
        claim, question = relay._claim, relay._anything_due

        async def counted_claim(session: AsyncSession) -> Sequence[Any]:
            self.claims += 1
            return await claim(session)

        async def counted_question() -> bool:
            self.questions += 1
            return await question()

        relay._claim = counted_claim  # type: ignore[method-assign]
        relay._anything_due = counted_question  # type: ignore[method-assign]


async def test_at_a_trickle_a_row_costs_one_claim_and_no_question(pair: Pair) -> None:
    # Before, each row took a question whether anything was due, its claim, and an empty
    # claim after it: 20 rows asked about 20 questions and made about 40 claims.
    rows = 20
    async with _relaying(pair, "g-trickle") as relay:
        await _listening(relay)
        await _commit_and_see_consumed(pair, "first", 1)
        asked = _Asked(relay.relay)
        for i in range(rows):
            await asyncio.sleep(TRICKLE_GAP_S)  # longer than the relay's rest after a batch
            await _commit_and_see_consumed(pair, f"trickle {i}", 1)
    # Slack for the fallback: a second without a commit heard asks once and may claim once.
    assert rows <= asked.claims <= rows + 4, asked.claims
    assert asked.questions <= 4, asked.questions


async def _listening(relay: RunningRelay, not_on: int | None = None) -> int:
    """Waits until the relay listens, on another backend than `not_on`; returns its pid."""
    listener = relay.relay.listener

    async def listening() -> bool:
        return listener.listening and listener.backend_pid not in (None, not_on)

    await eventually(listening, 30)
    assert listener.backend_pid is not None
    return listener.backend_pid


async def _commit_and_see_consumed(pair: Pair, note: str, count: int, within: float = 30) -> None:
    """Commits `count` rows, one transaction each, and waits until the consumer applied them."""
    already = await pair.consumer.applied_count()
    await append_events(pair.producer, pair.topic, [f"{note} {i}" for i in range(count)])

    async def consumed() -> bool:
        return await pair.consumer.applied_count() == already + count

    await eventually(consumed, within)


async def test_rows_are_published_while_the_listener_is_cut_and_it_listens_again(
    pair: Pair,
) -> None:
    async with _relaying(pair, "g-cut") as relay:
        cut = await _listening(relay)
        async with pair.producer.sessions() as session:
            await session.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": cut})
        await _commit_and_see_consumed(pair, "while cut", 20)
        await _listening(relay, not_on=cut)
        await _commit_and_see_consumed(pair, "after the cut", 1)
    assert (await pair.producer.outbox_states())["dispatched"] == 21


async def test_rows_committed_as_the_database_comes_back_are_published_and_it_listens_again(
    pair: Pair,
) -> None:
    async with _relaying(pair, "g-restart") as relay:
        before = await _listening(relay)
        await asyncio.to_thread(stop_postgres)
        try:

            async def deaf() -> bool:
                return not relay.relay.listener.listening

            await eventually(deaf)
        finally:
            await asyncio.to_thread(start_postgres)
        await pair.producer.engine.dispose()  # the test's own pooled sessions died too
        await pair.consumer.engine.dispose()
        await _commit_and_see_consumed(pair, "as it comes back", 20, within=60)
        await _listening(relay, not_on=before)
