"""Golden samples: one committed envelope per version of every event a service consumes.

`python -m tests.contract.golden_samples` writes them into `golden/` once; after that they
are data, committed and never regenerated for a release: a consumer must keep applying
the bytes an older producer sent. Each sample's ids are fixed, so a consumer's test can
prepare the state the sample refers to and check what applying it changed.
"""

from __future__ import annotations

import sys
import uuid
from dataclasses import dataclass
from pathlib import Path

from google.protobuf.message import Message
from google.protobuf.timestamp_pb2 import Timestamp
from liftfit.access.v1 import events_pb2 as access
from liftfit.booking.v1 import events_pb2 as booking
from liftfit.payment.v1 import events_pb2 as payment

from servicekit import envelope

GOLDEN = Path(__file__).parent / "golden"
VERSION = "v1"


def _id(n: int) -> str:
    return str(uuid.UUID(int=n, version=4))


ORG, ORDER = _id(1), _id(2)
BOOKING_CREATED, PAYMENT_CREATED = _id(10), _id(11)
BOOKING_FAILED, PAYMENT_FAILED = _id(12), _id(13)
BOOKING_DISCLOSED, SLOT_DISCLOSED, GRANT = _id(14), _id(15), "grant-1"
BOOKING_REQUESTED, BOOKING_CANCELLED, BOOKING_EXPIRED, BOOKING_ORPHANED = (
    _id(20),
    _id(21),
    _id(22),
    _id(23),
)
BOOKING_CONFIRMED, SLOT_CONFIRMED, SLOT_MOVED_TO, SPACE = _id(24), _id(33), _id(35), _id(34)
BOOKING_REFUNDED, PAYMENT_REFUNDED, GRANT_ACTIVATED = _id(25), _id(26), _id(27)
REFUND_CONTACT = "refund@example.test"
HOLD_EXPIRES_AT = Timestamp(seconds=4_102_444_800)  # 2100-01-01: still held when applied
# Access windows far ahead, so a consumer plans them without activating anything.
WINDOW = booking.AccessWindow(
    valid_from=Timestamp(seconds=4_084_164_000), valid_to=Timestamp(seconds=4_084_167_600)
)
MOVED_WINDOW = booking.AccessWindow(
    valid_from=Timestamp(seconds=4_084_250_400), valid_to=Timestamp(seconds=4_084_254_000)
)


@dataclass(frozen=True)
class Sample:
    topic: str
    aggregate_id: str
    event: Message
    event_id: str

    @property
    def path(self) -> Path:
        return GOLDEN / f"{self.event.DESCRIPTOR.full_name}.{VERSION}.bin"

    def envelope_bytes(self) -> bytes:
        wrapped = envelope.wrap(
            self.event, self.aggregate_id, "golden", {}, uuid.UUID(self.event_id)
        )
        wrapped.occurred_at.CopyFrom(Timestamp(seconds=1_764_547_200))
        return wrapped.SerializeToString()


SAMPLES: tuple[Sample, ...] = (
    Sample(
        "payment.events",
        PAYMENT_CREATED,
        payment.PaymentCreated(
            payment_id=PAYMENT_CREATED,
            booking_id=BOOKING_CREATED,
            checkout_url="https://gateway.invalid/checkout/pay_1",
        ),
        _id(100),
    ),
    Sample(
        "payment.events",
        PAYMENT_CREATED,
        payment.PaymentSucceeded(
            payment_id=PAYMENT_CREATED,
            booking_id=BOOKING_CREATED,
            amount=payment.Money(amount=45000, currency="CZK"),
        ),
        _id(101),
    ),
    Sample(
        "payment.events",
        PAYMENT_FAILED,
        payment.PaymentFailed(payment_id=PAYMENT_FAILED, booking_id=BOOKING_FAILED, state="failed"),
        _id(102),
    ),
    Sample(
        "payment.events",
        ORDER,
        payment.PassOrderPaid(
            order_id=ORDER, org_id=ORG, entries=10, plan_code="pass-10", plan_version=1
        ),
        _id(103),
    ),
    Sample(
        "access.events",
        BOOKING_DISCLOSED,
        access.PinDisclosed(booking_id=BOOKING_DISCLOSED, slot_id=SLOT_DISCLOSED, grant_id=GRANT),
        _id(104),
    ),
    Sample(
        "access.events",
        BOOKING_DISCLOSED,
        access.RevocationConfirmed(
            booking_id=BOOKING_DISCLOSED, slot_id=SLOT_DISCLOSED, grant_id=GRANT
        ),
        _id(105),
    ),
    Sample(
        "booking.events",
        BOOKING_REQUESTED,
        booking.PaymentRequested(
            booking_id=BOOKING_REQUESTED,
            org_id=ORG,
            user="anna",
            price=booking.Money(amount=45000, currency="CZK"),
            slot_id=_id(30),
            hold_expires_at=HOLD_EXPIRES_AT,
        ),
        _id(106),
    ),
    Sample(
        "booking.events",
        BOOKING_CANCELLED,
        booking.BookingCancelled(
            booking_id=BOOKING_CANCELLED, slot_id=_id(31), payment_mode="card", refund_due=False
        ),
        _id(107),
    ),
    Sample(
        "booking.events",
        BOOKING_EXPIRED,
        booking.BookingExpired(booking_id=BOOKING_EXPIRED, slot_id=_id(32)),
        _id(108),
    ),
    Sample(
        "booking.events",
        BOOKING_ORPHANED,
        booking.PaymentWithoutBooking(booking_id=BOOKING_ORPHANED, reason="booking_cancelled"),
        _id(109),
    ),
    Sample(
        "booking.events",
        BOOKING_CONFIRMED,
        booking.BookingConfirmed(
            booking_id=BOOKING_CONFIRMED,
            org_id=ORG,
            user="anna",
            slot_id=SLOT_CONFIRMED,
            window=WINDOW,
            payment_mode="card",
            payment_id=PAYMENT_CREATED,
            space_id=SPACE,
        ),
        _id(110),
    ),
    Sample(
        "booking.events",
        BOOKING_CONFIRMED,
        booking.BookingRescheduled(
            booking_id=BOOKING_CONFIRMED,
            old_slot_id=SLOT_CONFIRMED,
            old_window=WINDOW,
            new_slot_id=SLOT_MOVED_TO,
            new_window=MOVED_WINDOW,
            org_id=ORG,
            user="anna",
            new_space_id=SPACE,
        ),
        _id(111),
    ),
    Sample(
        "payment.events",
        BOOKING_REFUNDED,
        payment.PaymentRefunded(
            payment_id=PAYMENT_REFUNDED,
            booking_id=BOOKING_REFUNDED,
            state="refunded",
            contact=payment.Contact(email=REFUND_CONTACT, locale="en"),
            amount=payment.Money(amount=45000, currency="CZK"),
        ),
        _id(112),
    ),
    Sample(
        "access.events",
        BOOKING_CONFIRMED,
        access.AccessActivated(booking_id=BOOKING_CONFIRMED, grant_id=GRANT_ACTIVATED),
        _id(113),
    ),
    Sample(
        "booking.events",
        SPACE,
        booking.SpaceCreated(space_id=SPACE, name="Studio Karlín", timezone="America/New_York"),
        _id(114),
    ),
)


def sample_of(kind: type[Message]) -> Sample:
    return next(s for s in SAMPLES if s.event.DESCRIPTOR.full_name == kind.DESCRIPTOR.full_name)


def committed(sample: Sample) -> bytes:
    """The committed bytes: what an older producer sent, never regenerated."""
    return sample.path.read_bytes()


def main() -> int:
    GOLDEN.mkdir(exist_ok=True)
    for sample in SAMPLES:
        if sample.path.exists():
            print(f"kept {sample.path.name}: a golden sample is never rewritten")
            continue
        sample.path.write_bytes(sample.envelope_bytes())
        print(f"wrote {sample.path.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
