"""Which mails an event makes: one delivery per (event, template, recipient), written in
the inbox's transaction with its send job. A copy of an event finds its delivery and adds
nothing; a booking or payment without an address gets no mail.

The access mail needs two streams: the booking's contact (booking events) and the active
grant (access events), in either order; whichever comes second makes it, and the database
allows one access mail per grant.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from servicekit.contacts import Contact
from services.notify.adapters.repository import BookingContact
from services.notify.domain.model import Delivery, Template, delivery_key
from services.notify.service_layer import jobs
from services.notify.service_layer.unit_of_work import UnitOfWork

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Slot:
    starts_at: datetime
    ends_at: datetime
    space_id: str


@dataclass(frozen=True)
class Price:
    amount: int  # minor units
    currency: str


async def plan(
    uow: UnitOfWork,
    source: str,
    template: Template,
    contact: Contact,
    context: dict[str, Any],
    org_id: str = "",
    booking_id: str | None = None,
    order_id: str | None = None,
) -> None:
    if not contact.email:
        log.debug("%s of %s: no address, no mail", template.value, source)
        return
    delivery = Delivery(
        delivery_key=delivery_key(source, template, contact.email),
        source=source,
        template=template,
        recipient=contact.email,
        locale=contact.locale,
        context=context,
        org_id=org_id,
        booking_id=booking_id,
        order_id=order_id,
    )
    if await uow.deliveries.add(delivery):
        await jobs.schedule_send(uow, delivery.delivery_key)


async def _slot_context(uow: UnitOfWork, booking_id: str, slot: Slot) -> dict[str, Any]:
    return {
        "booking_id": booking_id,
        "starts_at": slot.starts_at.isoformat(),
        "ends_at": slot.ends_at.isoformat(),
        "timezone": await uow.timezone_of(slot.space_id),
    }


async def booking_confirmed(uow: UnitOfWork, who: BookingContact, slot: Slot, price: Price) -> None:
    context = {
        **await _slot_context(uow, who.booking_id, slot),
        "amount": price.amount,
        "currency": price.currency,
    }
    await plan(
        uow,
        f"booking:{who.booking_id}",
        Template.BOOKING_CONFIRMED,
        who.contact,
        context,
        who.org_id,
        booking_id=who.booking_id,
    )
    await uow.access_mails.remember_contact(who, replace=False)
    await access_mails(uow, who.booking_id)


async def booking_moved(uow: UnitOfWork, who: BookingContact) -> None:
    """A move brings a new grant, and its own access mail when access activates it."""
    await uow.access_mails.remember_contact(who, replace=True)
    await access_mails(uow, who.booking_id)


async def contact_known(uow: UnitOfWork, who: BookingContact) -> None:
    """A confirmation without a price (an older producer): no confirmation mail, but the
    access mails have their address; a later move's contact is never undone by it."""
    await uow.access_mails.remember_contact(who, replace=False)
    await access_mails(uow, who.booking_id)


async def booking_cancelled(
    uow: UnitOfWork, who: BookingContact, slot: Slot, refund_due: bool
) -> None:
    context = {**await _slot_context(uow, who.booking_id, slot), "refund_due": refund_due}
    await plan(
        uow,
        f"booking:{who.booking_id}",
        Template.BOOKING_CANCELLED,
        who.contact,
        context,
        who.org_id,
        booking_id=who.booking_id,
    )


async def access_activated(uow: UnitOfWork, grant_id: str, booking_id: str) -> None:
    await uow.access_mails.remember_grant(grant_id, booking_id)
    await access_mails(uow, booking_id)


async def access_mails(uow: UnitOfWork, booking_id: str) -> None:
    """One access mail per active grant of the booking once its contact is known."""
    who = await uow.access_mails.contact_of(booking_id)
    if who is None:
        return
    for grant_id in await uow.access_mails.grants_of(booking_id):
        context = {
            "booking_id": booking_id,
            "grant_id": grant_id,
            "timezone": await uow.timezone_of(who.space_id),
        }
        await plan(
            uow,
            f"grant:{grant_id}",
            Template.ACCESS_DETAILS,
            who.contact,
            context,
            who.org_id,
            booking_id=booking_id,
        )


async def refund_completed(
    uow: UnitOfWork, payment_id: str, booking_id: str, contact: Contact, price: Price
) -> None:
    context = {"booking_id": booking_id, "amount": price.amount, "currency": price.currency}
    await plan(
        uow,
        f"payment:{payment_id}",
        Template.REFUND_COMPLETED,
        contact,
        context,
        booking_id=booking_id or None,
    )


async def order_paid(uow: UnitOfWork, order_id: str, contact: Contact, price: Price) -> None:
    context = {"order_id": order_id, "amount": price.amount, "currency": price.currency}
    await plan(uow, f"order:{order_id}", Template.ORDER_PAID, contact, context, order_id=order_id)
