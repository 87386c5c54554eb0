"""The gate's membership lookups (gateway_bff.store.directory): requests that miss at the
same moment share one query, and a member found is remembered. A stand-in for the
database counts the queries."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime
from types import SimpleNamespace, TracebackType
from typing import Any, cast

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from gateway_bff.store.directory import Directory


class _Database:
    """Answers every query with the member `bench` (or with no one), after a pause, and
    counts them."""

    def __init__(self, member: bool = True) -> None:
        self.queries = 0
        self.member = member

    def __call__(self) -> _Database:
        return self

    async def __aenter__(self) -> _Database:
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        return None

    async def execute(self, query: Any) -> Any:
        self.queries += 1
        await asyncio.sleep(0.05)
        row = {
            "org_id": uuid.UUID(int=1),
            "user_name": "bench",
            "role": "member",
            "email": None,
            "locale": "en",
            "created_at": datetime.now(UTC),
        }
        found = SimpleNamespace(_mapping=row) if self.member else None
        return SimpleNamespace(first=lambda: found)


async def test_lookups_that_miss_together_share_one_query_and_its_answer_is_remembered() -> None:
    database = _Database()
    directory = Directory(cast(async_sessionmaker[AsyncSession], database))
    org_id = str(uuid.UUID(int=1))
    found = await asyncio.gather(*(directory.membership(org_id, "bench") for _ in range(32)))
    assert database.queries == 1
    assert {member.user if member else None for member in found} == {"bench"}
    assert await directory.membership(org_id, "bench") is not None
    assert database.queries == 1


async def test_someone_not_found_is_asked_about_every_time() -> None:
    database = _Database(member=False)
    directory = Directory(cast(async_sessionmaker[AsyncSession], database))
    org_id = str(uuid.UUID(int=1))
    for asked in (1, 2, 3):
        assert await directory.membership(org_id, "stranger") is None
        assert database.queries == asked
