"""Repositories over one session: rows in, domain objects out.

Locks are taken in one order everywhere (grant, then its provisions), so a consumer and a
job never wait for each other in a cycle. Ids that come from events or callers are checked
at the edge; a malformed one names nothing here.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from types import SimpleNamespace
from typing import Any

from sqlalchemy import ColumnElement, Table, func, select, update
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from servicekit import driver_sql, validation
from servicekit.rows import columns, record
from services.access.adapters import orm
from services.access.adapters.pin_vault import PinVault, Sealed
from services.access.domain.drift import Finding
from services.access.domain.model import Grant, GrantState, Provision, ProvisionState, Window


def grant_of(row: Any) -> Grant:
    return record(
        Grant,
        row,
        grant_id=str(row.grant_id),
        booking_id=str(row.booking_id),
        slot_id=str(row.slot_id),
        provision_id=str(row.provision_id),
        window=Window(row.valid_from, row.valid_to),
        state=GrantState(row.state),
    )


def provision_of(row: Any) -> Provision:
    return record(
        Provision,
        row,
        provision_id=str(row.provision_id),
        grant_id=str(row.grant_id),
        state=ProvisionState(row.state),
    )


class GrantRepository:
    def __init__(self, session: AsyncSession) -> None:
        self._session = session

    async def add(self, grant: Grant) -> None:
        values = columns(
            grant,
            *("grant_id", "booking_id", "org_id", "user", "slot_id", "device_id", "state"),
            *("provision_id", "booking_move", "failure"),
            valid_from=grant.window.valid_from,
            valid_to=grant.window.valid_to,
        )
        await self._session.execute(orm.grants.insert().values(values))

    async def save(self, grant: Grant) -> None:
        values = columns(grant, "grant_id", "state", "provision_id", "failure")
        await driver_sql.execute(self._session, _SAVE_GRANT, values)

    async def get(self, grant_id: str, lock: bool = False) -> Grant | None:
        found = await self._where("grant_id", grant_id, lock)
        return found[0] if found else None

    async def of_booking(self, booking_id: str, lock: bool = False) -> list[Grant]:
        """The booking's grants, oldest first (locked in that order)."""
        return await self._where("booking_id", booking_id, lock)

    async def current(self, booking_id: str, share: bool = False) -> Grant | None:
        """The booking's newest grant: the live one if it has one."""
        sql = _CURRENT_GRANT_SHARED if share else _CURRENT_GRANT
        row = await driver_sql.fetch_one(self._session, sql, {"booking_id": booking_id})
        return grant_of(row) if row is not None else None

    async def in_state(
        self, state: GrantState, limit: int, older_than: datetime | None = None
    ) -> list[Grant]:
        t = orm.grants.c
        condition: ColumnElement[bool] = t.state == state.value
        if older_than is not None:
            condition = condition & (t.updated_at < older_than)
        query = select(orm.grants).where(condition).order_by(t.updated_at).limit(limit)
        return [grant_of(row) for row in await self._session.execute(query)]

    async def _where(self, column: str, value: str, lock: bool) -> list[Grant]:
        sql = _oldest_first(orm.grants, column, "grant_id", lock)
        rows = await driver_sql.fetch_all(self._session, sql, {column: value})
        return [grant_of(row) for row in rows]


class ProvisionRepository:
    def __init__(self, session: AsyncSession) -> None:
        self._session = session

    async def add(self, provision: Provision) -> None:
        values = columns(provision, "provision_id", "grant_id", "device_id", "state")
        await self._session.execute(orm.provisions.insert().values(values))

    async def save(self, provision: Provision) -> None:
        values = columns(provision, "provision_id", "state", "provider_code_id")
        await driver_sql.execute(self._session, _SAVE_PROVISION, values)

    async def get(self, provision_id: str, lock: bool = False) -> Provision | None:
        found = await self._where("provision_id", provision_id, lock)
        return found[0] if found else None

    async def of_grant(self, grant_id: str, lock: bool = False) -> list[Provision]:
        return await self._where("grant_id", grant_id, lock)

    async def with_grants(self, provision_ids: Sequence[str]) -> list[tuple[Grant, Provision]]:
        """The named provisions and their grants (ids that are not UUIDs name nothing)."""
        ids = [p for p in provision_ids if validation.is_canonical_uuid(p)]
        if not ids:
            return []
        query = (
            _GRANT_AND_PROVISION.join_from(
                orm.provisions, orm.grants, orm.grants.c.grant_id == orm.provisions.c.grant_id
            )
        ).where(orm.provisions.c.provision_id.in_(ids))
        return _pairs((await self._session.execute(query)).all())

    async def active_with_codes(self, limit: int) -> list[tuple[Grant, Provision]]:
        """Active grants and their current provisions."""
        g, p = orm.grants.c, orm.provisions.c
        query = (
            _GRANT_AND_PROVISION.join_from(
                orm.grants, orm.provisions, g.provision_id == p.provision_id
            )
            .where(g.state == GrantState.ACTIVE.value)
            .order_by(g.updated_at)
            .limit(limit)
        )
        return _pairs((await self._session.execute(query)).all())

    async def _where(self, column: str, value: str, lock: bool) -> list[Provision]:
        sql = _oldest_first(orm.provisions, column, "provision_id", lock)
        rows = await driver_sql.fetch_all(self._session, sql, {column: value})
        return [provision_of(row) for row in rows]


# The reads a booking's saga repeats go to the driver: through SQLAlchemy each cost
# several times the driver's CPU (servicekit.driver_sql).
@functools.cache
def _oldest_first(table: Table, column: str, tie: str, lock: bool) -> str:
    """The rows whose `column` equals the value, oldest first (locked in that order)."""
    query = driver_sql.select_sql(table, tuple(table.c.keys()), (column,))
    return f"{query} ORDER BY created_at, {tie}" + (" FOR UPDATE" if lock else "")


_CURRENT_GRANT = (
    driver_sql.select_sql(orm.grants, tuple(orm.grants.c.keys()), ("booking_id",))
    + " ORDER BY created_at DESC, grant_id LIMIT 1"
)
_CURRENT_GRANT_SHARED = _CURRENT_GRANT + " FOR SHARE"
_SAVE_GRANT = driver_sql.update_sql(
    orm.grants, ("state", "provision_id", "failure"), ("grant_id",), now=("updated_at",)
)
_SAVE_PROVISION = driver_sql.update_sql(
    orm.provisions, ("state", "provider_code_id"), ("provision_id",), now=("updated_at",)
)
_SEALED_PIN = driver_sql.select_sql(
    orm.credentials, ("key_id", "nonce", "ciphertext"), ("provision_id",)
)
_DISCLOSED = driver_sql.insert_sql(orm.disclosures, ("grant_id", "booking_id", "reader", "purpose"))


# A grant and a provision in one row: their columns apart, since several share a name.
_GRANT_AND_PROVISION = select(
    *(column.label(f"g_{column.name}") for column in orm.grants.c),
    *(column.label(f"p_{column.name}") for column in orm.provisions.c),
)


def _pairs(rows: Sequence[Any]) -> list[tuple[Grant, Provision]]:
    return [(grant_of(_part(row, "g_")), provision_of(_part(row, "p_"))) for row in rows]


def _part(row: Any, prefix: str) -> SimpleNamespace:
    values = row._mapping
    return SimpleNamespace(
        **{
            key.removeprefix(prefix): value
            for key, value in values.items()
            if key.startswith(prefix)
        }
    )


class CredentialRepository:
    """The sealed PINs; a PIN leaves this repository only opened, for a disclosure."""

    def __init__(self, session: AsyncSession, vault: PinVault) -> None:
        self._session = session
        self._vault = vault

    async def store(self, provision_id: str, pin: str) -> None:
        sealed = self._vault.seal(pin, provision_id)
        await self._session.execute(
            insert(orm.credentials)
            .values(
                provision_id=provision_id,
                key_id=sealed.key_id,
                nonce=sealed.nonce,
                ciphertext=sealed.ciphertext,
            )
            .on_conflict_do_nothing(index_elements=["provision_id"])
        )

    async def pin(self, provision_id: str) -> str | None:
        params = {"provision_id": provision_id}
        row = await driver_sql.fetch_one(self._session, _SEALED_PIN, params)
        if row is None:
            return None
        return self._vault.open(_sealed(row), provision_id)

    async def erase(self, provision_id: str) -> None:
        t = orm.credentials.c
        await self._session.execute(orm.credentials.delete().where(t.provision_id == provision_id))

    async def reseal_batch(self, limit: int) -> int:
        """Re-encrypts up to `limit` PINs sealed under an older key; returns how many."""
        t = orm.credentials.c
        query = (
            select(t.provision_id, t.key_id, t.nonce, t.ciphertext)
            .where(t.key_id != self._vault.current_key_id)
            .limit(limit)
            .with_for_update(skip_locked=True)
        )
        rows = (await self._session.execute(query)).all()
        for row in rows:
            provision_id = str(row.provision_id)
            resealed = self._vault.reseal(_sealed(row), provision_id)
            if resealed is None:
                continue
            await self._session.execute(
                update(orm.credentials)
                .where(t.provision_id == provision_id)
                .values(
                    key_id=resealed.key_id, nonce=resealed.nonce, ciphertext=resealed.ciphertext
                )
            )
        return len(rows)


def _sealed(row: Any) -> Sealed:
    return Sealed(row.key_id, bytes(row.nonce), bytes(row.ciphertext))


class DisclosureRepository:
    def __init__(self, session: AsyncSession) -> None:
        self._session = session

    async def record(self, grant: Grant, reader: str, purpose: str) -> None:
        values = {
            "grant_id": grant.grant_id,
            "booking_id": grant.booking_id,
            "reader": reader,
            "purpose": purpose,
        }
        await driver_sql.execute(self._session, _DISCLOSED, values)

    async def counts(self, grant_ids: Sequence[str]) -> dict[str, int]:
        if not grant_ids:
            return {}
        t = orm.disclosures.c
        query = (
            select(t.grant_id, func.count())
            .where(t.grant_id.in_(list(grant_ids)))
            .group_by(t.grant_id)
        )
        return {str(grant_id): int(n) for grant_id, n in await self._session.execute(query)}


class EndedBookingRepository:
    def __init__(self, session: AsyncSession) -> None:
        self._session = session

    async def record(self, booking_id: str) -> None:
        await self._session.execute(
            insert(orm.ended_bookings)
            .values(booking_id=booking_id)
            .on_conflict_do_nothing(index_elements=["booking_id"])
        )

    async def ended(self, booking_id: str) -> bool:
        t = orm.ended_bookings.c
        found = await self._session.scalar(select(t.booking_id).where(t.booking_id == booking_id))
        return found is not None


@dataclass(frozen=True)
class StoredFinding:
    finding_id: str
    kind: str
    subject_id: str
    problem: str
    truth: str
    repair: str
    state: str
    found_at: datetime
    seen_at: datetime
    cleared_at: datetime | None = None

    @property
    def needs_human(self) -> bool:
        return self.state == "open"


class FindingRepository:
    def __init__(self, session: AsyncSession) -> None:
        self._session = session

    async def note(self, finding: Finding) -> None:
        """Stores a finding, or refreshes the standing one about the same problem."""
        state = "open" if finding.needs_human else "repaired"
        values = {
            "problem": finding.problem,
            "truth": finding.truth,
            "repair": finding.repair_text,
            "state": state,
        }
        statement = insert(orm.drift_findings).values(
            finding_id=str(uuid.uuid4()),
            kind=finding.kind.value,
            subject_id=finding.subject_id,
            **values,
        )
        await self._session.execute(
            statement.on_conflict_do_update(
                index_elements=["kind", "subject_id"],
                index_where=orm.drift_findings.c.state != "cleared",
                set_={**values, "seen_at": func.now()},
            )
        )

    async def clear_unseen(self, seen: set[tuple[str, str]]) -> int:
        """Standing findings this run did not see again are cleared."""
        t = orm.drift_findings.c
        standing = (
            await self._session.execute(
                select(t.finding_id, t.kind, t.subject_id).where(t.state != "cleared")
            )
        ).all()
        gone = [str(row.finding_id) for row in standing if (row.kind, row.subject_id) not in seen]
        if gone:
            await self._session.execute(
                update(orm.drift_findings)
                .where(t.finding_id.in_(gone))
                .values(state="cleared", cleared_at=func.now())
            )
        return len(gone)

    async def listed(self, state: str | None, limit: int = 500) -> list[StoredFinding]:
        t = orm.drift_findings.c
        query = select(orm.drift_findings).order_by(t.seen_at.desc()).limit(limit)
        if state:
            query = query.where(t.state == state)
        return [
            record(StoredFinding, row, finding_id=str(row.finding_id))
            for row in await self._session.execute(query)
        ]
