"""Access's relay gets over a producer the broker refuses for good (a gap in its
idempotent sequence, as a broker restart leaves it): the producer is replaced, and every
activation goes out with no row marked failed. A relay that blamed the rows marked each
of them failed after its attempts."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest

from tests.access.conftest import HarnessFactory
from tests.support.broken_producer import GappedFirstProducer, relayed_blaming_no_row

ACTIVATIONS = 4
TOPICS = {"booking.events": 3, "access.events": 3, "booking.events.dlq": 1}


async def test_activations_published_through_a_refused_producer_go_out_on_a_new_one(
    make_access: HarnessFactory,
    new_topics: Callable[[dict[str, int]], Awaitable[str]],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    producers = GappedFirstProducer(monkeypatch, "access", "access.events")
    access = await make_access(topic_prefix=await new_topics(TOPICS))
    await access.app.start()
    try:
        for _ in range(ACTIVATIONS):
            await access.confirm()
        await access.run_jobs()  # the lock provider's codes made: each grant is activated

        await relayed_blaming_no_row(access.app.runtime.engine, producers, caplog, ACTIVATIONS)
    finally:
        await access.app.stop()
