"""Repositories over one session: rows in, domain objects out, statements built from the
tables. Ids from events and callers are checked at the edge before they reach here."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from servicekit import driver_sql
from servicekit.contacts import Contact
from servicekit.rows import columns, record
from services.notify.adapters import orm
from services.notify.domain.model import UNDECIDED, Delivery, DeliveryState, Template

MAX_LISTED = 500


def delivery_of(row: Any) -> Delivery:
    return record(
        Delivery,
        row,
        delivery_key=str(row.delivery_key),
        template=Template(row.template),
        state=DeliveryState(row.state),
        context=dict(row.context),
        booking_id=str(row.booking_id) if row.booking_id else None,
        order_id=str(row.order_id) if row.order_id else None,
    )


# A delivery is read and moved on every mail's way: on the driver, since through
# SQLAlchemy each statement cost several times the driver's CPU (servicekit.driver_sql).
_DELIVERY = driver_sql.select_sql(orm.deliveries, tuple(orm.deliveries.c.keys()), ("delivery_key",))
_DELIVERY_LOCKED = _DELIVERY + " FOR UPDATE"


_ADD_DELIVERY = (
    driver_sql.insert_sql(
        orm.deliveries,
        (
            *("delivery_key", "source", "recipient", "locale", "org_id", "booking_id"),
            *("order_id", "context", "template", "state"),
        ),
    )
    # its key, or a second access mail for one grant
    + " ON CONFLICT DO NOTHING RETURNING delivery_key"
)
_CONTACT_COLUMNS = ("booking_id", "org_id", "email", "locale", "space_id")
_KEEP_CONTACT = (
    driver_sql.insert_sql(orm.booking_contacts, _CONTACT_COLUMNS)
    + " ON CONFLICT (booking_id) DO NOTHING"
)
_REPLACE_CONTACT = (
    driver_sql.insert_sql(orm.booking_contacts, _CONTACT_COLUMNS)
    + " ON CONFLICT (booking_id) DO UPDATE SET org_id = EXCLUDED.org_id,"
    " email = EXCLUDED.email, locale = EXCLUDED.locale, space_id = EXCLUDED.space_id,"
    " updated_at = now()"
)
_CONTACT = driver_sql.select_sql(orm.booking_contacts, _CONTACT_COLUMNS, ("booking_id",))
_REMEMBER_GRANT = (
    driver_sql.insert_sql(orm.active_grants, ("grant_id", "booking_id"))
    + " ON CONFLICT (grant_id) DO NOTHING"
)
_GRANTS = (
    driver_sql.select_sql(orm.active_grants, ("grant_id",), ("booking_id",))
    + " ORDER BY activated_at"
)
_TIMEZONE = driver_sql.select_sql(orm.studios, ("timezone",), ("space_id",))


@functools.cache
def _move_sql(with_error: bool, tried: bool, sent: bool) -> str:
    sets = ["state = %(target)s", "updated_at = now()"]
    sets += ["last_error = %(last_error)s"] if with_error else []
    sets += ["tries = tries + 1"] if tried else []
    sets += ["sent_at = now()"] if sent else []
    return (
        f'UPDATE "{orm.deliveries.name}" SET {", ".join(sets)}'
        " WHERE delivery_key = %(delivery_key)s AND state = %(current)s RETURNING delivery_key"
    )


class DeliveryRepository:
    def __init__(self, session: AsyncSession) -> None:
        self._session = session

    async def add(self, delivery: Delivery) -> bool:
        """Writes a new delivery; False when it exists (another copy of the event) or its
        grant already has an access mail."""
        values = columns(
            delivery,
            *("delivery_key", "source", "recipient", "locale", "org_id"),
            *("booking_id", "order_id"),
            context=driver_sql.Jsonb(delivery.context),
            template=delivery.template.value,
            state=delivery.state.value,
        )
        # Nothing when its key exists or its grant already has an access mail.
        return bool(await driver_sql.fetch_all(self._session, _ADD_DELIVERY, values))

    async def get(self, key: str, lock: bool = False) -> Delivery | None:
        sql = _DELIVERY_LOCKED if lock else _DELIVERY
        row = await driver_sql.fetch_one(self._session, sql, {"delivery_key": key})
        return delivery_of(row) if row is not None else None

    async def move(
        self,
        key: str,
        current: DeliveryState,
        target: DeliveryState,
        error: str | None = None,
        tried: bool = False,
    ) -> bool:
        """current -> target, only if the delivery is still `current`."""
        sql = _move_sql(error is not None, tried, target is DeliveryState.SENT)
        params = {
            "delivery_key": key,
            "current": current.value,
            "target": target.value,
            "last_error": error[:2000] if error is not None else None,
        }
        return bool(await driver_sql.fetch_all(self._session, sql, params))

    async def of_subject(self, booking_id: str = "", order_id: str = "") -> list[Delivery]:
        t = orm.deliveries.c
        where = t.booking_id == booking_id if booking_id else t.order_id == order_id
        query = select(orm.deliveries).where(where).order_by(t.created_at, t.delivery_key)
        return [delivery_of(row) for row in await self._session.execute(query.limit(MAX_LISTED))]

    async def undecided(self, state: str) -> list[Delivery]:
        t = orm.deliveries.c
        states = [state] if state else [s.value for s in UNDECIDED]
        query = select(orm.deliveries).where(t.state.in_(states)).order_by(t.updated_at.desc())
        return [delivery_of(row) for row in await self._session.execute(query.limit(MAX_LISTED))]


@dataclass(frozen=True)
class BookingContact:
    booking_id: str
    org_id: str
    contact: Contact
    space_id: str


class AccessMailRepository:
    """What an access mail needs from two streams: who (booking events) and which grant
    is active (access events). Whichever arrives second makes the mail."""

    def __init__(self, session: AsyncSession) -> None:
        self._session = session

    async def remember_contact(self, who: BookingContact, replace: bool) -> None:
        """A booking's contact; `replace` for a move (a late confirmation never undoes it)."""
        values = {
            "booking_id": who.booking_id,
            "org_id": who.org_id,
            "email": who.contact.email,
            "locale": who.contact.locale,
            "space_id": who.space_id,
        }
        sql = _REPLACE_CONTACT if replace else _KEEP_CONTACT
        await driver_sql.execute(self._session, sql, values)

    async def contact_of(self, booking_id: str) -> BookingContact | None:
        row = await driver_sql.fetch_one(self._session, _CONTACT, {"booking_id": booking_id})
        if row is None:
            return None
        return BookingContact(
            str(row.booking_id), row.org_id, Contact(row.email, row.locale), row.space_id
        )

    async def remember_grant(self, grant_id: str, booking_id: str) -> None:
        params = {"grant_id": grant_id, "booking_id": booking_id}
        await driver_sql.execute(self._session, _REMEMBER_GRANT, params)

    async def grants_of(self, booking_id: str) -> list[str]:
        rows = await driver_sql.fetch_all(self._session, _GRANTS, {"booking_id": booking_id})
        return [str(row.grant_id) for row in rows]


class StudioRepository:
    """The studios booking announced, for the time zone a mail tells a booking's times in."""

    def __init__(self, session: AsyncSession) -> None:
        self._session = session

    async def remember(self, space_id: str, name: str, timezone: str) -> None:
        values = {"space_id": space_id, "name": name, "timezone": timezone}
        statement = insert(orm.studios).values(values)
        statement = statement.on_conflict_do_update(
            index_elements=["space_id"],
            set_={"name": name, "timezone": timezone, "updated_at": func.now()},
        )
        await self._session.execute(statement)

    async def timezone_of(self, space_id: str) -> str | None:
        if not space_id:
            return None
        row = await driver_sql.fetch_one(self._session, _TIMEZONE, {"space_id": space_id})
        return str(row.timezone) if row is not None else None
