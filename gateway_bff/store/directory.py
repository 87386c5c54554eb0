"""Organisations, members and operators: who may do what at the edge.

Every operator's change is written with its audit row in one transaction, so the audit log
never misses a change nor records one that did not happen.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, TypeVar

from sqlalchemy import insert, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from gateway_bff.store import orm
from gateway_bff.times import rfc3339
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


MEMBERSHIP_TTL_S = 5.0
MAX_MEMBERSHIPS_SHOWN = 100
K = TypeVar("K")
V = TypeVar("V")


class Remembered(Generic[K, V]):
    """Values kept for a while, then asked for again; bounded, so a flood of callers cannot
    fill the memory."""

    MAX_ENTRIES = 50_000

    def __init__(self, ttl_s: float) -> None:
        self._ttl_s = ttl_s
        self._entries: dict[K, tuple[float, V]] = {}

    def get(self, key: K) -> V | None:
        entry = self._entries.get(key)
        if entry is None or entry[0] < time.monotonic():
            return None
        return entry[1]

    def put(self, key: K, value: V) -> None:
        if len(self._entries) >= self.MAX_ENTRIES:
            self._entries.clear()
        self._entries[key] = (time.monotonic() + self._ttl_s, value)


class UnknownOrg(LookupError):
    """No organisation has that id."""


class Directory:
    """Every request asks who is a member: a member found is remembered for a few seconds
    (MEMBERSHIP_TTL_S), since a database round trip per request was the largest part of the
    gateway's own cost. Someone not found is asked again every time, so a new member is let
    in at once; a change made through this process replaces what it remembered. There is no
    removal of a member yet; once there is, it must forget here too. Requests that miss at
    the same moment (every client's, when a remembered member expires under load) wait for
    one query rather than each opening a connection for its own."""

    def __init__(
        self, sessions: async_sessionmaker[AsyncSession], ttl_s: float = MEMBERSHIP_TTL_S
    ) -> None:
        self._sessions = sessions
        self._audit = AuditLog(orm.audit)
        self._members: Remembered[tuple[str, str], Member] = Remembered(ttl_s)
        self._operators: Remembered[str, bool] = Remembered(ttl_s)
        self._asking: dict[tuple[str, str], asyncio.Future[Member | None]] = {}

    async def membership(self, org_id: str, user: str) -> Member | None:
        key = (org_id, user)
        known = self._members.get(key)
        if known is not None:
            return known
        asking = self._asking.get(key)
        if asking is None:
            asking = self._asking[key] = asyncio.ensure_future(self._read_member(org_id, user))
            asking.add_done_callback(lambda _: self._asking.pop(key, None))
        # Shielded: a caller that goes away does not cancel the others' answer.
        return await asyncio.shield(asking)

    async def _read_member(self, org_id: str, user: str) -> Member | None:
        m = orm.members.c
        query = select(orm.members).where(m.org_id == uuid.UUID(org_id), m.user_name == user)
        async with self._sessions() as session:
            row = (await session.execute(query)).first()
        if row is None:
            return None
        member = _member(row._mapping)
        self._members.put((org_id, user), member)
        return member

    async def memberships_of(self, user: str) -> list[Member]:
        """The user's memberships, the oldest first (its locale is the user's default)."""
        m = orm.members.c
        query = select(orm.members).where(m.user_name == user).order_by(m.created_at, m.org_id)
        async with self._sessions() as session:
            rows = (await session.execute(query.limit(MAX_MEMBERSHIPS_SHOWN))).all()
        return [_member(row._mapping) for row in rows]

    async def is_operator(self, user: str) -> bool:
        if self._operators.get(user):
            return True
        query = select(orm.operators.c.user_name).where(orm.operators.c.user_name == user)
        async with self._sessions() as session:
            found = (await session.execute(query)).first() is not None
        if found:
            self._operators.put(user, True)
        return found

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
        changed = _member(row._mapping)
        self._members.put((member.org_id, member.user), changed)
        return changed

    async def orgs(self, limit: int) -> list[tuple[Org, list[Member]]]:
        """The newest organisations first, each with its members (oldest first)."""
        o, m = orm.orgs.c, orm.members.c
        newest = select(orm.orgs).order_by(o.created_at.desc(), o.org_id).limit(limit)
        async with self._sessions() as session:
            orgs = [_org(row._mapping) for row in await session.execute(newest)]
            ids = [uuid.UUID(org.org_id) for org in orgs]
            members = select(orm.members).where(m.org_id.in_(ids))
            members = members.order_by(m.created_at, m.user_name)
            found = [_member(row._mapping) for row in await session.execute(members)]
        by_org: dict[str, list[Member]] = {org.org_id: [] for org in orgs}
        for member in found:
            by_org[member.org_id].append(member)
        return [(org, by_org[org.org_id]) for org in orgs]

    async def record(self, actor: str, action: str, subject: str, detail: dict[str, Any]) -> None:
        """An operator's change that a service carried out, in the gateway's audit log: the
        service has no audit of its own for it, and this runs once the service said done."""
        async with self._sessions.begin() as session:
            await self._audit.within(session).record(actor, action, subject, detail)

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
                "at": rfc3339(row["at"]),
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
