"""Organisations, members and operators: who may do what at the edge.

Every operator's change is written with its audit row in one transaction, so the audit log
never misses a change nor records one that did not happen.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import insert, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from gateway_bff.store import orm
from servicekit.audit import AuditLog


@dataclass(frozen=True)
class Org:
    org_id: str
    name: str
    created_at: datetime


@dataclass(frozen=True)
class Member:
    org_id: str
    user: str
    role: str
    email: str | None
    locale: str
    created_at: datetime


class UnknownOrg(LookupError):
    """No organisation has that id."""


class Directory:
    def __init__(self, sessions: async_sessionmaker[AsyncSession]) -> None:
        self._sessions = sessions
        self._audit = AuditLog(orm.audit)

    async def membership(self, org_id: str, user: str) -> Member | None:
        m = orm.members.c
        query = select(orm.members).where(m.org_id == uuid.UUID(org_id), m.user_name == user)
        async with self._sessions() as session:
            row = (await session.execute(query)).first()
        return _member(row._mapping) if row is not None else None

    async def is_operator(self, user: str) -> bool:
        query = select(orm.operators.c.user_name).where(orm.operators.c.user_name == user)
        async with self._sessions() as session:
            return (await session.execute(query)).first() is not None

    async def ensure_operators(self, users: Iterable[str]) -> None:
        """The operators named by the settings exist (a fresh local run has its `ops`)."""
        rows = [{"user_name": user} for user in users]
        if not rows:
            return
        async with self._sessions.begin() as session:
            await session.execute(pg_insert(orm.operators).values(rows).on_conflict_do_nothing())

    async def create_org(self, name: str, actor: str) -> Org:
        org_id = uuid.uuid4()
        async with self._sessions.begin() as session:
            row = (
                await session.execute(
                    insert(orm.orgs).values(org_id=org_id, name=name).returning(orm.orgs)
                )
            ).one()
            await self._audit.within(session).record(
                actor, "create_org", str(org_id), {"name": name}
            )
        return _org(row._mapping)

    async def put_member(self, member: NewMember, actor: str) -> Member:
        """Adds the member, or changes the role and contact of one already there."""
        values = {
            "org_id": uuid.UUID(member.org_id),
            "user_name": member.user,
            "role": member.role,
            "email": member.email,
            "locale": member.locale,
        }
        statement = (
            pg_insert(orm.members)
            .values(values)
            .on_conflict_do_update(
                constraint="members_pkey",
                set_={"role": member.role, "email": member.email, "locale": member.locale},
            )
            .returning(orm.members)
        )
        async with self._sessions.begin() as session:
            if not await _org_exists(session, member.org_id):
                raise UnknownOrg(member.org_id)
            row = (await session.execute(statement)).one()
            detail = {"user": member.user, "role": member.role}
            await self._audit.within(session).record(actor, "put_member", member.org_id, detail)
        return _member(row._mapping)

    async def audit_entries(self, limit: int, subject: str | None = None) -> list[dict[str, Any]]:
        """The gateway's own audit log (organisations and members), newest first."""
        t = orm.audit.c
        query = select(orm.audit).order_by(t.audit_id.desc()).limit(limit)
        if subject:
            query = query.where(t.subject == subject)
        async with self._sessions() as session:
            rows = [dict(row._mapping) for row in await session.execute(query)]
        return [
            {
                "audit_id": row["audit_id"],
                "at": row["at"].astimezone(UTC).isoformat().replace("+00:00", "Z"),
                "actor": row["actor"],
                "action": row["action"],
                "subject": row["subject"],
                "detail_json": json.dumps(row["detail"], sort_keys=True),
            }
            for row in rows
        ]

    async def ping(self) -> None:
        async with self._sessions() as session:
            await session.execute(select(1))


@dataclass(frozen=True)
class NewMember:
    org_id: str
    user: str
    role: str
    email: str | None
    locale: str


async def _org_exists(session: AsyncSession, org_id: str) -> bool:
    query = select(orm.orgs.c.org_id).where(orm.orgs.c.org_id == uuid.UUID(org_id))
    return (await session.execute(query)).first() is not None


def _org(row: Any) -> Org:
    return Org(str(row["org_id"]), row["name"], row["created_at"])


def _member(row: Any) -> Member:
    return Member(
        str(row["org_id"]),
        row["user_name"],
        row["role"],
        row["email"],
        row["locale"],
        row["created_at"],
    )
