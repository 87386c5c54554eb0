"""The booking domain's rules, with no database and no I/O."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest

from servicekit.idempotency import key_hash
from servicekit.refusals import InvalidRequest
from services.booking.domain.commands import (
    CancelBooking,
    Checkout,
    CreateSpace,
    NewSlot,
    RescheduleBooking,
    price,
)
from services.booking.domain.errors import (
    BookingNotCancellable,
    BookingNotReschedulable,
    InsufficientPassBalance,
    SlotUnavailable,
)
from services.booking.domain.model import (
    Booking,
    BookingState,
    Money,
    PassBalance,
    PaymentMode,
    Slot,
    SlotState,
    TimeRange,
)

START = datetime(2027, 1, 1, 17, tzinfo=UTC)
ORG, S1, S2 = (str(uuid.UUID(int=n << 100 | 0xABC)) for n in (1, 2, 3))


def _slot(slot_id: str = "s1", hours: int = 0) -> Slot:
    during = TimeRange(START + timedelta(hours=hours), START + timedelta(hours=hours + 1))
    return Slot(slot_id, "space", during, Money(45000, "CZK"))


def _booking(state: BookingState = BookingState.PENDING) -> Booking:
    slot = _slot()
    return Booking(
        "b1", "org", "ann", slot.slot_id, "space", slot.during, slot.during, 2,
        PaymentMode.CARD, slot.price, "2026-11", state,
    )  # fmt: skip


def test_a_held_slot_cannot_be_booked_by_another() -> None:
    slot = _slot()
    slot.state, slot.holder = SlotState.HELD, "b1"  # as card_checkout holds it
    with pytest.raises(SlotUnavailable):
        slot.book_for("b2")


def test_a_slot_left_with_a_disclosed_pin_is_closed_until_revocation() -> None:
    slot = _slot()
    slot.book_for("b1")
    assert slot.release_from("b1", pin_disclosed=True)
    assert slot.state is SlotState.CLOSED
    assert slot.reopen_after_revocation()
    assert slot.state.value == "available"


def test_an_operator_closed_slot_is_not_reopened_by_a_revocation() -> None:
    slot = _slot()
    slot.close_by_operator()
    assert not slot.reopen_after_revocation() and slot.state is SlotState.CLOSED


def test_only_the_holder_releases_a_slot() -> None:
    slot = _slot()
    slot.state, slot.holder = SlotState.HELD, "b1"  # as card_checkout holds it
    assert not slot.release_from("b2", pin_disclosed=False)
    assert slot.state is SlotState.HELD


def test_confirmation_and_expiry_apply_only_to_a_pending_booking() -> None:
    booking = _booking()
    assert booking.confirm_if_pending("p1") and booking.is_paid_with("p1")
    assert not booking.confirm_if_pending("p2") and not booking.expire_if_pending()


def test_an_expired_booking_is_not_cancellable_and_a_cancelled_one_cancels_quietly() -> None:
    with pytest.raises(BookingNotCancellable):
        _booking(BookingState.EXPIRED).cancel()
    assert not _booking(BookingState.CANCELLED).cancel()


def test_a_move_keeps_the_price_and_takes_the_new_window() -> None:
    booking = _booking(BookingState.CONFIRMED)
    target = _slot("s2", hours=3)
    target.price = Money(1, "EUR")
    booking.move_to(target)
    assert booking.price == Money(45000, "CZK") and booking.window == target.during
    with pytest.raises(BookingNotReschedulable):
        _booking().move_to(target)


def test_the_last_pass_entry_is_redeemed_once() -> None:
    balance, entry = PassBalance("org", 1).redeem_one("b1")
    assert balance.balance == 0 and entry.delta == -1
    with pytest.raises(InsufficientPassBalance):
        balance.redeem_one("b2")


def test_a_key_hash_depends_on_the_secret_and_the_organisation() -> None:
    assert key_hash(b"s1", "org", "checkout", "k") != key_hash(b"s2", "org", "checkout", "k")
    assert key_hash(b"s1", "org", "checkout", "k") != key_hash(b"s1", "org2", "checkout", "k")


def test_a_checkout_fingerprint_covers_slot_user_party_size_and_payment_mode() -> None:
    base = Checkout.of(ORG, "ann", "k", S1, 2, "card")
    variants = [
        Checkout.of(ORG, "ann", "k", S2, 2, "card"),
        Checkout.of(ORG, "bob", "k", S1, 2, "card"),
        Checkout.of(ORG, "ann", "k", S1, 3, "card"),
        Checkout.of(ORG, "ann", "k", S1, 2, "pass"),
    ]
    assert all(v.fingerprint() != base.fingerprint() for v in variants)


@pytest.mark.parametrize(
    ("key", "party_size", "mode"), [("", 1, "card"), ("k", 5, "card"), ("k", 1, "cash")]
)
def test_an_invalid_checkout_is_refused_before_any_io(key: str, party_size: int, mode: str) -> None:
    with pytest.raises(InvalidRequest):
        Checkout.of(ORG, "ann", key, S1, party_size, mode)


def test_late_money_never_confirms_a_cancelled_or_expired_booking() -> None:
    cancelled, expired = _booking(), _booking()
    assert cancelled.cancel() and expired.expire_if_pending()
    assert not cancelled.confirm_if_pending("late") and not expired.confirm_if_pending("late")
    assert cancelled.state is BookingState.CANCELLED and expired.state is BookingState.EXPIRED
    assert not cancelled.is_paid_with("late") and not expired.is_paid_with("late")


@pytest.mark.parametrize(
    ("org", "user", "slot"),
    [
        (f"urn:uuid:{ORG}", "ann", S1),
        (ORG.upper(), "ann", S1),
        (ORG, "ann\x00", S1),
        (ORG, "a" * 201, S1),
        (ORG, "", S1),
        (ORG, "ann", S1.replace("-", "")),
        (ORG, "ann", "bk-" + S1),
    ],
)
def test_a_checkout_names_canonical_ids_and_a_printable_user(
    org: str, user: str, slot: str
) -> None:
    with pytest.raises(InvalidRequest) as refused:
        Checkout.of(org, user, "k", slot, 1, "card")
    assert refused.value.field in ("org_id", "user", "slot_id")


def test_cancel_and_reschedule_check_every_field() -> None:
    with pytest.raises(InvalidRequest, match="booking_id"):
        CancelBooking(ORG, "ann", "k", "b1")
    with pytest.raises(InvalidRequest, match="user"):
        CancelBooking(ORG, "", "k", S1)
    with pytest.raises(InvalidRequest, match="new_slot_id"):
        RescheduleBooking(ORG, "ann", "k", S1, "{" + S2 + "}")
    with pytest.raises(InvalidRequest, match="idempotency_key"):
        RescheduleBooking(ORG, "ann", "k\n", S1, S2)


def test_a_space_needs_a_printable_name_and_an_iana_zone() -> None:
    assert CreateSpace("Karlin", "Europe/Prague").timezone == "Europe/Prague"
    for name, zone in (("Karlin", "Mars/Olympus"), ("Karlin", "utc"), ("\x00", "UTC")):
        with pytest.raises(InvalidRequest):
            CreateSpace(name, zone)


@pytest.mark.parametrize(("amount", "currency"), [(0, "CZK"), (2**63 - 1, "CZK"), (1, "ÄÖÜ")])
def test_a_price_is_positive_bounded_iso_4217_money(amount: int, currency: str) -> None:
    assert price(45000, "CZK") == Money(45000, "CZK")
    with pytest.raises(InvalidRequest) as refused:
        price(amount, currency)
    assert refused.value.field.startswith("price.")


def test_a_new_slot_lasts_at_most_a_day_within_the_calendar_range() -> None:
    NewSlot(TimeRange(START, START + timedelta(hours=24)), Money(1, "CZK"))
    too_long = TimeRange(START, START + timedelta(hours=24, seconds=1))
    ancient = TimeRange(datetime(1, 1, 1, tzinfo=UTC), datetime(1, 1, 1, 1, tzinfo=UTC))
    for during in (too_long, ancient):
        with pytest.raises(InvalidRequest):
            NewSlot(during, Money(1, "CZK"))
