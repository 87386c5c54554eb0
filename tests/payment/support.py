"""Helpers of the payment suite's hardening tests, next to the shared harness."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

from liftfit.payment.v1 import payment_pb2
from sqlalchemy import text

from tests.payment.harness import Harness, eventually


async def seconds_until(check: Callable[[], Awaitable[Any]], within: float = 10.0) -> float:
    """How long `check` took to come true, measured from now."""
    started = time.monotonic()
    await eventually(check, within)
    return time.monotonic() - started


async def oldest_transaction_s(harness: Harness) -> float:
    """The age of the oldest transaction open on the service's database, ours excepted."""
    query = text(
        "SELECT coalesce(extract(epoch FROM max(now() - xact_start)), 0) FROM pg_stat_activity"
        " WHERE datname = current_database() AND pid <> pg_backend_pid()"
    )
    async with harness.app.sessions() as session:
        return float((await session.execute(query)).scalar_one())


async def open_incidents(harness: Harness, about: str) -> list[payment_pb2.Incident]:
    """Open incidents whose subject names `about`, directly or as a job's `kind:id`."""
    reply = await harness.stub.ListIncidents(payment_pb2.ListIncidentsRequest(state="open"))
    return [i for i in reply.incidents if i.subject_id.split(":")[-1] == about]
