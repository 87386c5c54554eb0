"""A card checkout decided by the database in one call (the `card_checkout` function of
migration 7c1f2e9a4b60): the key's claim, the slot's lock and rules, the booking, the
hold, PaymentRequested and the hold's timer, in one statement and one round trip."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from google.protobuf.message import Message
from liftfit.booking.v1 import events_pb2 as ev
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncSession

from servicekit import driver_sql, envelope, tracing
from servicekit.idempotency import Claim
from servicekit.idempotency_keys import IdempotencyKeys
from servicekit.refusals import NotFound
from servicekit.unit_of_work import Effects
from services.booking.adapters.repository import slot_taken_is_unavailable
from services.booking.domain.errors import SlotUnavailable
from services.booking.domain.model import Booking, CardHold, Money, TimeRange

_PARAMETERS = (
    "org_id",
    "operation",
    "key_hash",
    "fingerprint",
    "booking_id",
    "user",
    "slot_id",
    "party_size",
    "terms_version",
    "trace_id",
    "contact_email",
    "contact_locale",
    "decided_at",
    "hold_expires_at",
    "effect_id",
    "topic",
    "event_type",
    "event",
    "money_keys",
    "trace_context",
    "timer_id",
    "timer_kind",
    "timer_expects",
)
# Bytes travel in binary (%b): as text psycopg escapes every byte into hex first, which
# cost 40-70 µs of a call's 500-600 (sequential, measured side by side).
_BINARY = frozenset(("key_hash", "fingerprint", "event", "money_keys"))
# Named arguments: the order above is free, and each value says which parameter it is.
_DECIDE = "SELECT * FROM card_checkout({})".format(
    ", ".join(f"p_{name} => %({name}){'b' if name in _BINARY else 's'}" for name in _PARAMETERS)
)
_MONEY_KEYS = [
    envelope.field_key(ev.Money.DESCRIPTOR.fields_by_name[f]) for f in ("amount", "currency")
]
# The key's operation: the pass checkout claims under the same, so one key cannot be both.
OPERATION = "checkout"
# The database's refusals (card_checkout raises them with these SQLSTATEs).
_SLOT_NOT_FOUND, _SLOT_UNAVAILABLE = "LF404", "LF409"


class CardCheckouts:
    def __init__(self, session: AsyncSession, effects: Effects, keys: IdempotencyKeys) -> None:
        self._session = session
        self._effects = effects
        self._keys = keys

    async def decide(
        self,
        hold: CardHold,
        key: str,
        fingerprint: bytes,
        event: Message,
        missing: str,
        timer: tuple[uuid.UUID, str, dict[str, Any]],
    ) -> Booking | Claim:
        """The booking the hold made, or the claim an earlier request with the key made
        (the caller replays or refuses it). `event` is the event to publish without its
        field `missing`, the slot's price; `timer` the hold's release: id, kind and expectations."""
        carrier = tracing.current_carrier()
        effect_id = uuid.uuid4()
        parts = envelope.unfinished(
            event, missing, hold.booking_id, self._effects.outbox.producer, carrier, effect_id
        )
        params = {
            "org_id": hold.org_id,
            "operation": OPERATION,
            "key_hash": self._keys.hashed(hold.org_id, OPERATION, key),
            "fingerprint": fingerprint,
            "booking_id": hold.booking_id,
            "user": hold.user,
            "slot_id": hold.slot_id,
            "party_size": hold.party_size,
            "terms_version": hold.terms_version,
            "trace_id": hold.trace_id,
            "contact_email": hold.contact.email,
            "contact_locale": hold.contact.locale,
            "decided_at": hold.decided_at,
            "hold_expires_at": hold.hold_expires_at,
            "effect_id": effect_id,
            "topic": self._effects.topic,
            "event_type": event.DESCRIPTOR.full_name,
            "event": parts,
            "money_keys": _MONEY_KEYS,
            "trace_context": driver_sql.Jsonb(carrier),
            "timer_id": timer[0],
            "timer_kind": timer[1],
            "timer_expects": driver_sql.Jsonb(timer[2]),
        }
        with _refusals(hold.slot_id):
            row = await driver_sql.fetch_one(self._session, _DECIDE, params)
        assert row is not None, "card_checkout answers one row or raises"
        if row.earlier_booking_id is not None:
            return Claim(bytes(row.earlier_fingerprint), row.earlier_booking_id, is_new=False)
        during = TimeRange(row.held_starts_at, row.held_ends_at)
        price = Money(row.held_price_amount, row.held_currency)
        return hold.booking(str(row.held_space_id), during, price)


@contextmanager
def _refusals(slot_id: str) -> Iterator[None]:
    """The database's refusals as the domain's; any other error stays what it is."""
    with slot_taken_is_unavailable(slot_id):
        try:
            yield
        except DBAPIError as error:
            state = getattr(error.orig, "sqlstate", None)
            message = getattr(getattr(error.orig, "diag", None), "message_primary", None)
            if state == _SLOT_NOT_FOUND:
                raise NotFound(message or f"slot {slot_id} not found") from None
            if state == _SLOT_UNAVAILABLE:
                raise SlotUnavailable(message or f"slot {slot_id} is not available") from None
            raise
