"""A failed outbox row is an open incident until it is replayed or an operator resolves it.

A row is marked failed by whichever path gave up on it (the relay, its dead-letter copy);
rather than asking each of them to open the incident, the operators' view raises one for
every failed row it does not yet have when it reads the incidents, in the same transaction,
so no failed row is ever listed without its incident. The incident names the row's dispatch
generation: a resolution without a replay stays resolved, while a replayed row that fails
again is a new problem and gets a new incident. A replay resolves the row's open incident
in the replay's own transaction.
"""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import Row, and_, exists, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncSession

from servicekit.incidents import MAX_DETAIL, Incidents
from servicekit.schema import FAILED, EventingTables

KIND = "outbox_row_failed"
REPLAYED = "replayed"
MOST = 500  # failed rows raised per reading; the next reading raises the rest


def subject_of(effect_id: uuid.UUID, generation: int, key: str) -> str:
    """`<effect id>/<generation>:<key>`: the key (the booking id, where the row concerns
    one) ends it, so a booking's view finds the incident by the booking's id."""
    return f"{effect_id}/{generation}:{key}"


def detail_of(service: str, row: Row[Any]) -> str:
    reason = row.last_error or "no reason was recorded"
    told = (
        f"the {service} service gave up sending {row.event_type} to {row.topic} after"
        f" {row.attempts} attempts: {reason}. The event concerns {row.key}; what it announces"
        f" has not reached the services that consume it. Replay the effect {row.effect_id}"
        " once the cause is gone (consumers drop a duplicate), or resolve this incident"
        " with the decision taken."
    )
    return told[:MAX_DETAIL]


async def raise_incidents(session: AsyncSession, tables: EventingTables, service: str) -> int:
    """Opens an incident for each failed row of this generation that has none (open or
    resolved); how many were opened."""
    outbox, incidents = tables.outbox.c, tables.incidents.c
    subject = (
        outbox.effect_id.cast(incidents.subject_id.type)
        + "/"
        + outbox.dispatch_generation.cast(incidents.subject_id.type)
        + ":"
        + outbox.key
    )
    known = exists().where(and_(incidents.kind == KIND, incidents.subject_id == subject))
    query = (
        select(tables.outbox).where(outbox.state == FAILED, ~known).order_by(outbox.seq).limit(MOST)
    )
    rows = (await session.execute(query)).all()
    if not rows:
        return 0
    statement = (
        pg_insert(tables.incidents)
        .values(
            [
                {
                    "incident_id": uuid.uuid4(),
                    "kind": KIND,
                    "subject_id": subject_of(r.effect_id, r.dispatch_generation, r.key),
                    "detail": detail_of(service, r).replace("\x00", "?"),
                }
                for r in rows
            ]
        )
        .on_conflict_do_nothing()
    )
    await session.execute(statement)
    return len(rows)


async def resolve_replayed(
    session: AsyncSession, tables: EventingTables, effect_id: uuid.UUID, operator: str, reason: str
) -> int:
    """Resolves the open incident of the row's generation that was just replayed."""
    outbox = tables.outbox.c
    query = select(outbox.key, outbox.dispatch_generation).where(outbox.effect_id == effect_id)
    found = (await session.execute(query)).first()
    if found is None:
        return 0
    subject = subject_of(effect_id, found.dispatch_generation - 1, found.key)
    return await Incidents(tables.incidents).resolve(session, subject, operator, REPLAYED, reason)
