"""What this service knows of a pass order, so that it credits only orders really paid.

The payment service owns orders; it tells this service two things of a paid pass order,
in one transaction and under the order's key: the order's payment succeeded (with the
amount paid), then PassOrderPaid (whose balance, how many entries). A credit is made only
for PassOrderPaid of an order whose payment was heard to succeed; any other is refused and
kept as an incident, in words, with nothing credited: a credit nobody paid for raises a
balance that opens doors. The first credit of an order decides whose it is: a second that
names another organisation or number of entries is refused too.

The relay keeps per-key order only in the common case, so a legitimate PassOrderPaid may
overtake its payment's success and be refused. It is not kept to be credited when the
success arrives: whoever can write the topic could then claim a pending order's credit for
their own organisation before the real one comes. The incident says so, and an operator
replays PassOrderPaid at the payment service once it shows the order paid; the replay,
coming after the success, is credited. No paid order is lost, none is credited unpaid.

The number of entries cannot be compared with the amount here: the plans' prices are the
payment service's.
"""

from __future__ import annotations

from dataclasses import dataclass

from services.booking.domain.model import Money
from services.booking.domain.payment_claims import Refusal

PASS_CREDIT_REFUSED = "pass_credit_refused"  # the incident's kind
PASS_CREDIT = "pass_order_paid"  # the ledger reason of a credit for a paid order
ORDER_REFERENCE = "order:"  # a credit's ledger reference: this, then the order's id


def credit_reference(order_id: str) -> str:
    return f"{ORDER_REFERENCE}{order_id}"


@dataclass
class PassOrder:
    order_id: str
    payment_id: str | None = None  # the order's payment, once its success was heard
    paid: Money | None = None
    org_id: str | None = None  # whose balance PassOrderPaid credits, once heard
    entries: int | None = None

    def record_payment(self, payment_id: str, paid: Money | None) -> Refusal | None:
        """The order's payment succeeded; a second payment or no amount is refused."""
        if paid is None:
            return self._refused(f"its payment {payment_id} was said to succeed with no amount")
        if self.payment_id is None:
            self.payment_id, self.paid = payment_id, paid
            return None
        if self.payment_id != payment_id:
            return self._refused(
                f"payment {payment_id} was said to pay it, and {self.payment_id} already did"
            )
        return None

    def record_credit(self, org_id: str, entries: int) -> Refusal | None:
        """PassOrderPaid: whose balance, how many entries. Refused for an order not paid,
        and when it differs from the credit made before."""
        if self.payment_id is None:
            return self._refused(
                f"a credit of {entries} entries to organisation {org_id} was asked, and the"
                " payment service never said that the order's payment succeeded: nothing was"
                " credited"
            )
        if self.org_id is None:
            self.org_id, self.entries = org_id, entries
            return None
        if (self.org_id, self.entries) != (org_id, entries):
            return self._refused(
                f"a credit of {entries} entries to organisation {org_id} was asked, and"
                f" {self.entries} to {self.org_id} before"
            )
        return None

    def _refused(self, why: str) -> Refusal:
        return Refusal(PASS_CREDIT_REFUSED, f"pass order {self.order_id}: {why}")
