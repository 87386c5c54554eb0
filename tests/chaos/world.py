"""A small, consistent set of snapshots for the auditor's unit tests: every check holds on
it, and each test breaks one thing."""

from __future__ import annotations

import uuid
from collections import Counter
from dataclasses import replace
from datetime import UTC, datetime, timedelta

from chaos.auditor import snapshots as s
from services.notify.domain.model import message_id
from services.payment.domain.payment import refund_key

NOW = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)
HOUR = timedelta(hours=1)
ORG = "7d1b7d4e-0000-4000-8000-000000000001"
PRICE = 45_000


def uid() -> str:
    return str(uuid.uuid4())


class World:
    """Ids of what the stores hold, so a test can name what it breaks."""

    def __init__(self) -> None:
        self.slot, self.free_slot, self.pass_slot = uid(), uid(), uid()
        self.booking, self.cancelled, self.pass_booking = uid(), uid(), uid()
        self.payment, self.refunded_payment, self.order_payment = uid(), uid(), uid()
        self.order = uid()
        self.grant, self.provision, self.code = uid(), uid(), uid()
        self.pass_grant, self.pass_provision = uid(), uid()
        self.confirmation, self.access_mail = uid(), uid()
        self.window = (NOW + timedelta(minutes=10), NOW + timedelta(minutes=40))
        self.stores = self._stores()

    def _stores(self) -> s.Stores:
        valid_from, valid_to = self.window
        earlier = NOW - HOUR
        tomorrow = (NOW + 24 * HOUR, NOW + 25 * HOUR)
        return s.Stores(
            now=NOW,
            rules=s.Rules(timedelta(seconds=120), timedelta(seconds=900), "liftfit"),
            orgs={ORG},
            slots=[
                s.Slot(self.slot, "booked", self.booking, updated_at=earlier),
                s.Slot(self.free_slot, "available", updated_at=earlier),
                s.Slot(self.pass_slot, "booked", self.pass_booking, updated_at=earlier),
            ],
            bookings=[
                s.Booking(
                    self.booking,
                    ORG,
                    self.slot,
                    "confirmed",
                    "card",
                    PRICE,
                    "CZK",
                    valid_from,
                    valid_to,
                    self.payment,
                    updated_at=earlier,
                ),
                s.Booking(
                    self.cancelled,
                    ORG,
                    self.free_slot,
                    "cancelled",
                    "card",
                    PRICE,
                    "CZK",
                    valid_from,
                    valid_to,
                    self.refunded_payment,
                    updated_at=earlier,
                ),
                s.Booking(
                    self.pass_booking,
                    ORG,
                    self.pass_slot,
                    "confirmed",
                    "pass",
                    PRICE,
                    "CZK",
                    *tomorrow,
                    updated_at=earlier,
                ),
            ],
            payments=[
                s.Payment(self.payment, "paid", PRICE, "CZK", self.booking, None, "ch_1", earlier),
                s.Payment(
                    self.refunded_payment,
                    "refunded",
                    PRICE,
                    "CZK",
                    self.cancelled,
                    None,
                    "ch_2",
                    earlier,
                ),
                s.Payment(
                    self.order_payment, "paid", 100_000, "CZK", None, self.order, "ch_3", earlier
                ),
            ],
            orders=[s.Order(self.order, ORG, "paid", "pass", 100_000, "CZK", 5, earlier)],
            charges=[
                s.Charge("ch_1", self.payment, "paid", PRICE, "CZK"),
                s.Charge("ch_2", self.refunded_payment, "refunded", PRICE, "CZK", PRICE),
                s.Charge("ch_3", self.order_payment, "paid", 100_000, "CZK"),
                s.Charge("ch_4", uid(), "cancelled", PRICE, "CZK"),  # never took money
            ],
            refunds=[s.Refund("re_1", "ch_2", PRICE, refund_key(uuid.UUID(self.refunded_payment)))],
            ledger=[
                s.LedgerEntry(1, ORG, 5, "pass_order_paid", f"order:{self.order}"),
                s.LedgerEntry(2, ORG, -1, "redeemed", f"booking:{self.pass_booking}"),
            ],
            balances=[s.PassBalance(ORG, 4)],
            grants=[
                s.Grant(
                    self.grant,
                    self.booking,
                    self.slot,
                    "door-a",
                    valid_from,
                    valid_to,
                    "active",
                    self.provision,
                    updated_at=earlier,
                ),
                s.Grant(
                    self.pass_grant,
                    self.pass_booking,
                    self.pass_slot,
                    "door-a",
                    *tomorrow,
                    "planned",
                    self.pass_provision,
                    updated_at=earlier,
                ),
            ],
            provisions=[
                s.Provision(self.provision, self.grant, "created", self.code, earlier),
                s.Provision(self.pass_provision, self.pass_grant, "pending", None, earlier),
            ],
            codes=[
                s.LockCode(
                    self.code,
                    "door-a",
                    f"liftfit-{self.provision}",
                    "482913",
                    valid_from,
                    valid_to,
                    "set",
                )
            ],
            door_log=[
                s.DoorTry("door-a", "482913", valid_from + timedelta(minutes=1), NOW, self.code),
                s.DoorTry("door-a", "000000", NOW, NOW, None),
            ],
            disclosures=[s.Disclosure(self.grant, self.booking, "customer_view")],
            deliveries=[
                s.Delivery(
                    self.confirmation,
                    f"booking:{self.booking}",
                    "booking_confirmed",
                    "sent",
                    booking_id=self.booking,
                    updated_at=earlier,
                ),
                s.Delivery(
                    self.access_mail,
                    f"grant:{self.grant}",
                    "access_details",
                    "sent",
                    booking_id=self.booking,
                    updated_at=earlier,
                ),
            ],
            mail_copies={self.confirmation: 1, self.access_mail: 1},
            mail_message_ids=Counter(
                {message_id(self.confirmation): 1, message_id(self.access_mail): 1}
            ),
            work=[
                s.WorkRow("booking", "timers", uid(), "servicekit.prune:x", "pending", NOW + HOUR)
            ],
        )

    def change(self, rows: str, index: int, **fields: object) -> None:
        """Replaces one field or more of one snapshot row."""
        listed = getattr(self.stores, rows)
        listed[index] = replace(listed[index], **fields)
