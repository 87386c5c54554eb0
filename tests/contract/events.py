"""What each consuming service relies on in the events it reads from another service.

Consumer-driven, in the spirit of Pact's message contracts: each consumer declares the
fields it reads, their types and what it takes them to mean. The producer's own tests
check that the events it really emits (taken from its outbox) give every consumer what
it declares (`unmet`); each consumer's tests feed committed golden samples of every event
version it supports through its real inbox (`golden/`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from google.protobuf import descriptor_pool
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message
from liftfit.access.v1 import events_pb2 as access_events  # noqa: F401  (registers the types)
from liftfit.booking.v1 import events_pb2 as booking_events  # noqa: F401
from liftfit.payment.v1 import events_pb2 as payment_events  # noqa: F401


@dataclass(frozen=True)
class Reads:
    """A field a consumer reads: its dotted path, its protobuf type and what it means."""

    path: str
    kind: str  # "string", "int32", "int64", "bool" or a message's full name
    meaning: str
    always: bool = True  # False: the consumer copes with it unset


B, P, A = "liftfit.booking.v1.", "liftfit.payment.v1.", "liftfit.access.v1."
TIMESTAMP = "google.protobuf.Timestamp"

CONSUMERS: dict[str, dict[str, tuple[Reads, ...]]] = {
    "payment": {
        B + "PaymentRequested": (
            Reads("booking_id", "string", "the booking the payment is for, and its Kafka key"),
            Reads("org_id", "string", "the organisation that pays"),
            Reads("price.amount", "int64", "the price snapshot, minor units"),
            Reads("price.currency", "string", "the price snapshot's ISO 4217 currency"),
            Reads("hold_expires_at", TIMESTAMP, "when the held slot is released unpaid"),
        ),
        B + "BookingExpired": (Reads("booking_id", "string", "whose open payment to cancel"),),
        B + "BookingCancelled": (
            Reads("booking_id", "string", "whose payment to cancel or refund"),
        ),
        B + "PaymentWithoutBooking": (
            Reads("booking_id", "string", "whose money to refund: it has no booking"),
        ),
    },
    "booking": {
        P + "PaymentCreated": (
            Reads("booking_id", "string", "the booking paid for; empty for an order", False),
            Reads("payment_id", "string", "the payment to note on the booking"),
        ),
        P + "PaymentSucceeded": (
            Reads("booking_id", "string", "the booking to confirm; empty for an order", False),
            Reads("payment_id", "string", "the payment that paid it"),
            Reads("amount.amount", "int64", "what was paid, minor units, against the snapshot"),
            Reads("amount.currency", "string", "what was paid, currency"),
        ),
        P + "PaymentFailed": (
            Reads("booking_id", "string", "the booking to expire; empty for an order", False),
            Reads("payment_id", "string", "must be the booking's current payment"),
        ),
        P + "PassOrderPaid": (
            Reads("org_id", "string", "whose pass balance to credit"),
            Reads("order_id", "string", "the order, credited once"),
            Reads("entries", "int32", "how many entries to credit"),
        ),
        A + "PinDisclosed": (
            Reads("booking_id", "string", "whose PIN was read"),
            Reads("slot_id", "string", "the slot that PIN opens"),
            Reads("grant_id", "string", "which grant's PIN"),
        ),
        A + "RevocationConfirmed": (
            Reads("booking_id", "string", "whose PIN no longer opens the door"),
            Reads("slot_id", "string", "the slot that may be sold again"),
            Reads("grant_id", "string", "which grant was revoked"),
        ),
    },
    "access": {
        B + "BookingConfirmed": (
            Reads("booking_id", "string", "the booking to plan access for, and its Kafka key"),
            Reads("org_id", "string", "whose booking: only that organisation reads its access"),
            Reads("user", "string", "the customer the grant is for"),
            Reads("slot_id", "string", "the slot the grant opens, named in PinDisclosed"),
            Reads("window.valid_from", TIMESTAMP, "from when the PIN may open the door"),
            Reads("window.valid_to", TIMESTAMP, "until when the PIN may open the door"),
            Reads(
                "space_id",
                "string",
                "the studio whose lock gets the code; unset: the default",
                False,
            ),
        ),
        B + "BookingCancelled": (
            Reads("booking_id", "string", "whose grants end and whose codes are removed"),
        ),
        B + "BookingRescheduled": (
            Reads("booking_id", "string", "whose grant moves: the old one ends"),
            Reads("org_id", "string", "whose booking"),
            Reads("user", "string", "the customer the new grant is for"),
            Reads("new_slot_id", "string", "the slot the new grant opens"),
            Reads("new_window.valid_from", TIMESTAMP, "from when the new PIN may open the door"),
            Reads("new_window.valid_to", TIMESTAMP, "until when the new PIN may open the door"),
            Reads(
                "new_space_id", "string", "the studio of the new slot; unset: the default", False
            ),
            Reads(
                "move",
                "int32",
                "orders the booking's moves, so an older one replayed late is stale; unset: an"
                " older producer's move, applied unless the grant is there already",
                False,
            ),
        ),
    },
    "notify": {
        B + "BookingConfirmed": (
            Reads("booking_id", "string", "the booking the confirmation is about, and its key"),
            Reads("org_id", "string", "whose booking: the access mail's PIN is read for it"),
            Reads("contact.email", "string", "where the mails go; empty: no mail", False),
            Reads("contact.locale", "string", "cs or en: the language of the mails"),
            Reads("window.valid_from", TIMESTAMP, "when the slot starts, shown in the mail"),
            Reads("window.valid_to", TIMESTAMP, "when the slot ends, shown in the mail"),
            Reads("price.amount", "int64", "the price shown, minor units"),
            Reads("price.currency", "string", "the price's ISO 4217 currency"),
            Reads("space_id", "string", "the studio, whose time zone the mail uses", False),
        ),
        B + "BookingRescheduled": (
            Reads("booking_id", "string", "whose new grant gets its own access mail"),
            Reads("contact.locale", "string", "cs or en: the language of the mails"),
            Reads("contact.email", "string", "where the mails go; empty: no mail", False),
            Reads("new_space_id", "string", "the new studio, for its time zone", False),
        ),
        B + "BookingCancelled": (
            Reads("booking_id", "string", "the booking the cancellation mail is about"),
            Reads("contact.locale", "string", "cs or en: the language of the mail"),
            Reads("contact.email", "string", "where the mail goes; empty: no mail", False),
            Reads("window.valid_from", TIMESTAMP, "when the cancelled slot started"),
            Reads("window.valid_to", TIMESTAMP, "when the cancelled slot ended"),
            Reads("refund_due", "bool", "the mail says money comes back", False),
        ),
        B + "SpaceCreated": (
            Reads("space_id", "string", "the studio, as the bookings' space_id names it"),
            Reads("name", "string", "the studio's name"),
            Reads("timezone", "string", "the IANA zone a mail tells the studio's times in"),
        ),
        P + "PaymentSucceeded": (
            Reads("order_id", "string", "the order paid; empty for a booking (no mail)", False),
            Reads("amount.amount", "int64", "what was paid, shown in the order mail"),
            Reads("amount.currency", "string", "what was paid, currency"),
            Reads("contact.locale", "string", "cs or en: the language of the mail"),
        ),
        P + "PaymentRefunded": (
            Reads("payment_id", "string", "the refund, mailed once"),
            Reads("state", "string", "refunded: the customer is told; refund_failed: not"),
            Reads("amount.amount", "int64", "what was refunded, minor units"),
            Reads("amount.currency", "string", "what was refunded, currency"),
            Reads("contact.locale", "string", "cs or en: the language of the mail"),
        ),
        A + "AccessActivated": (
            Reads("booking_id", "string", "whose access mail: its contact and PIN"),
            Reads("grant_id", "string", "the grant: one access mail each"),
        ),
    },
}

_SCALARS = {
    FieldDescriptor.TYPE_STRING: "string",
    FieldDescriptor.TYPE_INT32: "int32",
    FieldDescriptor.TYPE_INT64: "int64",
    FieldDescriptor.TYPE_BOOL: "bool",
}


def declared_by_consumers(producer_package: str) -> dict[str, dict[str, tuple[Reads, ...]]]:
    """consumer -> event type -> reads, for the events of one producer's package."""
    return {
        consumer: {
            kind: reads for kind, reads in events.items() if kind.startswith(producer_package)
        }
        for consumer, events in CONSUMERS.items()
    }


def shape_problems() -> list[str]:
    """Declared fields that the contract itself does not have with that type."""
    problems = []
    for consumer, events in CONSUMERS.items():
        for kind, reads in events.items():
            message = descriptor_pool.Default().FindMessageTypeByName(kind)
            for read in reads:
                actual = _kind_of(message, read.path)
                if actual != read.kind:
                    problems.append(f"{consumer} reads {kind}.{read.path} as {read.kind}: {actual}")
    return problems


def unmet(producer_package: str, emitted: Iterable[Message]) -> list[str]:
    """What a producer's emitted events fail to give their consumers, naming the consumer.

    Every event type a consumer reads must be among the emitted ones (so the producer's
    test really covers it), and every field it always reads must be set in each of them.
    """
    by_type: dict[str, list[Message]] = {}
    for event in emitted:
        by_type.setdefault(event.DESCRIPTOR.full_name, []).append(event)
    problems = []
    for consumer, events in declared_by_consumers(producer_package).items():
        for kind, reads in events.items():
            if kind not in by_type:
                problems.append(f"{consumer} reads {kind}, which the producer's test never emitted")
            for event in by_type.get(kind, []):
                problems += [
                    f"{consumer} reads {kind}.{read.path} ({read.meaning}), unset in an emitted one"
                    for read in reads
                    if read.always and not _is_set(event, read.path)
                ]
    return problems


def _kind_of(message: Descriptor, path: str) -> str:
    head, _, rest = path.partition(".")
    field = message.fields_by_name.get(head)
    if field is None:
        return "missing"
    if rest:
        return _kind_of(field.message_type, rest) if field.message_type else "not a message"
    if field.message_type is not None:
        return str(field.message_type.full_name)
    return _SCALARS.get(field.type, f"type {field.type}")


def _is_set(message: Message, path: str) -> bool:
    head, _, rest = path.partition(".")
    field = message.DESCRIPTOR.fields_by_name[head]
    if field.message_type is not None:
        if not message.HasField(head):
            return False
        return _is_set(getattr(message, head), rest) if rest else True
    return bool(getattr(message, head))
