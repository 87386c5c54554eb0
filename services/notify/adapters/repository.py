"""Repositories over one session: rows in, domain objects out, statements built from the
tables. Ids from events and callers are checked at the edge before they reach here."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

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


class DeliveryRepository:
    def __init__(self, session: AsyncSession) -> None:
        self._session = session

    async def add(self, delivery: Delivery) -> bool:
        """Writes a new delivery; False when it exists (another copy of the event) or its
        grant already has an access mail."""
        values = columns(
            delivery,
            *("delivery_key", "source", "recipient", "locale", "context", "org_id"),
            *("booking_id", "order_id"),
            template=delivery.template.value,
            state=delivery.state.value,
        )
        statement = (
            insert(orm.deliveries)
            .values(values)
            .on_conflict_do_nothing()  # its key, or a second access mail for one grant
            .returning(orm.deliveries.c.delivery_key)
        )
        return (await self._session.execute(statement)).first() is not None

    async def get(self, key: str, lock: bool = False) -> Delivery | None:
        query = select(orm.deliveries).where(orm.deliveries.c.delivery_key == key)
        if lock:
            query = query.with_for_update()
        row = (await self._session.execute(query)).one_or_none()
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
        t = orm.deliveries.c
        values: dict[str, Any] = {"state": target.value, "updated_at": func.now()}
        if error is not None:
            values["last_error"] = error[:2000]
        if tried:
            values["tries"] = t.tries + 1
        if target is DeliveryState.SENT:
            values["sent_at"] = func.now()
        result = await self._session.execute(
            update(orm.deliveries)
            .where(t.delivery_key == key, t.state == current.value)
            .values(values)
        )
        return bool(getattr(result, "rowcount", 0))

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
        statement = insert(orm.booking_contacts).values(values)
        if replace:
            changed = {k: v for k, v in values.items() if k != "booking_id"}
            statement = statement.on_conflict_do_update(
                index_elements=["booking_id"], set_={**changed, "updated_at": func.now()}
            )
        else:
            statement = statement.on_conflict_do_nothing(index_elements=["booking_id"])
        await self._session.execute(statement)

    async def contact_of(self, booking_id: str) -> BookingContact | None:
        t = orm.booking_contacts.c
        row = (
            await self._session.execute(
                select(orm.booking_contacts).where(t.booking_id == booking_id)
            )
        ).one_or_none()
        if row is None:
            return None
        return BookingContact(
            str(row.booking_id), row.org_id, Contact(row.email, row.locale), row.space_id
        )

    async def remember_grant(self, grant_id: str, booking_id: str) -> None:
        statement = insert(orm.active_grants).values(grant_id=grant_id, booking_id=booking_id)
        await self._session.execute(statement.on_conflict_do_nothing(index_elements=["grant_id"]))

    async def grants_of(self, booking_id: str) -> list[str]:
        t = orm.active_grants.c
        query = select(t.grant_id).where(t.booking_id == booking_id).order_by(t.activated_at)
        return [str(row.grant_id) for row in await self._session.execute(query)]


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
        t = orm.studios.c
        query = select(t.timezone).where(t.space_id == space_id)
        found: str | None = (await self._session.execute(query)).scalar_one_or_none()
        return found
