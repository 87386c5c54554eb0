"""What the booking service does with each event it consumes, for the inbox.

Payment events come from payment.events, access events from access.events. Ids that name
nothing here are ignored, except in a payment's success or a pass credit: those are checked
against what this service owns, and refused as incidents when they match nothing.
"""

from __future__ import annotations

from liftfit.access.v1 import events_pb2 as access
from liftfit.payment.v1 import events_pb2 as payment

from servicekit.inbox import EventHandler
from servicekit.unit_of_work import bind_events
from services.booking.adapters.rows import is_uuid
from services.booking.domain.model import Money
from services.booking.service_layer import event_handlers as react
from services.booking.service_layer.unit_of_work import UnitOfWork, UnitOfWorkFactory


async def _payment_created(uow: UnitOfWork, event: payment.PaymentCreated) -> None:
    if is_uuid(event.booking_id):
        await react.record_payment_created(uow, event.booking_id, event.payment_id)


async def _payment_succeeded(uow: UnitOfWork, event: payment.PaymentSucceeded) -> None:
    amount = Money(event.amount.amount, event.amount.currency) if event.HasField("amount") else None
    if event.booking_id:
        await react.confirm_paid_booking(uow, event.booking_id, event.payment_id, amount)
    elif is_uuid(event.order_id):  # an order's payment: PassOrderPaid may credit it
        await react.record_order_paid(uow, event.order_id, event.payment_id, amount)


async def _payment_failed(uow: UnitOfWork, event: payment.PaymentFailed) -> None:
    if is_uuid(event.booking_id):
        await react.expire_unpaid_booking(uow, event.booking_id, event.payment_id)


async def _pass_order_paid(uow: UnitOfWork, event: payment.PassOrderPaid) -> None:
    await react.credit_pass_order(uow, event.org_id, event.order_id, event.entries)


async def _pin_disclosed(uow: UnitOfWork, event: access.PinDisclosed) -> None:
    if is_uuid(event.booking_id) and is_uuid(event.slot_id):
        await react.note_pin_disclosed(uow, event.booking_id, event.slot_id, event.grant_id)


async def _revocation_confirmed(uow: UnitOfWork, event: access.RevocationConfirmed) -> None:
    if is_uuid(event.booking_id) and is_uuid(event.slot_id):
        await react.reopen_after_revocation(uow, event.booking_id, event.slot_id, event.grant_id)


def event_handlers(uows: UnitOfWorkFactory) -> dict[str, EventHandler]:
    """The inbox's map from event type to reaction."""
    return bind_events(
        uows,
        {
            payment.PaymentCreated: _payment_created,
            payment.PaymentSucceeded: _payment_succeeded,
            payment.PaymentFailed: _payment_failed,
            payment.PassOrderPaid: _pass_order_paid,
            access.PinDisclosed: _pin_disclosed,
            access.RevocationConfirmed: _revocation_confirmed,
        },
    )
