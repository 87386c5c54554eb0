"""An operator at one service's OperationsService: the stub, refusals read back, the rows
a decision wrote, and a trace context to send with an event."""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Awaitable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import grpc
from liftfit.ops.v1 import operations_pb2_grpc
from sqlalchemy import select, text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from servicekit.errors import error_info
from servicekit.schema import EventingTables

if TYPE_CHECKING:  # the async stub exists only in the type stubs
    from liftfit.ops.v1.operations_pb2_grpc import OperationsServiceAsyncStub


def operations(channel: grpc.aio.Channel) -> OperationsServiceAsyncStub:
    stub: OperationsServiceAsyncStub = operations_pb2_grpc.OperationsServiceStub(channel)
    return stub


@dataclass(frozen=True)
class Refused:
    code: grpc.StatusCode
    reason: str
    domain: str
    field: str


async def refused(call: Awaitable[Any]) -> Refused:
    """How a call was refused; fails the test if it was answered."""
    try:
        await call
    except grpc.aio.AioRpcError as error:
        info = error_info(error)
        assert info is not None, error
        return Refused(error.code(), info.reason, info.domain, info.metadata.get("field", ""))
    raise AssertionError("the call was answered")


def new_trace_id() -> str:
    return os.urandom(16).hex()


def traceparent(trace_id: str) -> str:
    return f"00-{trace_id}-{os.urandom(8).hex()}-01"


def new_id() -> str:
    return str(uuid.uuid4())


async def audit_rows(
    sessions: async_sessionmaker[AsyncSession], tables: EventingTables, subject: str
) -> list[Any]:
    """The audit rows of a subject, each with the id of the transaction that wrote it."""
    t = tables.audit_log
    async with sessions() as session:
        query = select(t, text("audit_log.xmin::text AS written_by")).where(t.c.subject == subject)
        return list((await session.execute(query.order_by(t.c.audit_id))).all())


async def written_by(session: AsyncSession, table: str, key: str, value: str) -> str:
    """The id of the transaction that wrote a row's current version (PostgreSQL's xmin)."""
    query = text(f'SELECT xmin::text FROM "{table}" WHERE {key}::text = :value')
    return str((await session.execute(query, {"value": value})).scalar_one())


@asynccontextmanager
async def relay_kept_off(
    sessions: async_sessionmaker[AsyncSession], tables: EventingTables, effect_id: str
) -> AsyncIterator[AsyncSession]:
    """Holds a KEY SHARE lock on an outbox row: the relay's claim (FOR UPDATE SKIP LOCKED)
    skips it, while a replay (an update of no key column) still goes through. The lock
    passes to the row's new version, so a replayed row stays pending until the block ends,
    and the test can look at it."""
    t = tables.outbox
    async with sessions() as session, session.begin():
        query = select(t.c.effect_id).where(t.c.effect_id == uuid.UUID(effect_id))
        await session.execute(query.with_for_update(read=True, key_share=True))
        yield session
