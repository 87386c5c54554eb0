"""Every pass balance equals its ledger and is never negative; the ledger's lines match what
they stand for: one debit per pass booking, one return per cancelled one, one credit per
paid pass order, of its entries."""

from __future__ import annotations

from collections import defaultdict
from itertools import accumulate

from chaos.auditor.findings import Findings
from chaos.auditor.snapshots import LedgerEntry, Stores
from services.booking.domain.pass_orders import credit_reference

# The ledger references booking writes (services/booking/domain/model.py and handlers).
REDEEMED = "booking:"
RETURNED = "cancel:"

BALANCE_IS_LEDGER = "pass_balance_equals_its_ledger"
NEVER_NEGATIVE = "pass_balance_never_negative"
LEDGER_MATCHES = "pass_ledger_matches_bookings_and_orders"


def check_passes(stores: Stores) -> Findings:
    findings = Findings()
    ledgers: dict[str, list[LedgerEntry]] = defaultdict(list)
    for entry in sorted(stores.ledger, key=lambda e: e.entry_id):
        ledgers[entry.org_id].append(entry)
    balances = {b.org_id: b.balance for b in stores.balances}
    for org_id in sorted(set(balances) | set(ledgers)):
        lines = ledgers.get(org_id, [])
        total = sum(e.delta for e in lines)
        ids = {"org_id": org_id}
        findings.check(
            BALANCE_IS_LEDGER,
            balances.get(org_id, 0) == total,
            ids,
            pass_balances=f"balance {balances.get(org_id, 'none')}",
            pass_ledger=f"{len(lines)} entries adding up to {total}",
        )
        running = list(accumulate(e.delta for e in lines))
        lowest = min(running, default=0)
        findings.check(
            NEVER_NEGATIVE,
            balances.get(org_id, 0) >= 0 and lowest >= 0,
            ids,
            pass_balances=f"balance {balances.get(org_id, 'none')}",
            pass_ledger=f"lowest running balance {lowest}",
        )
    _references(stores, findings, ledgers)
    return findings


def _references(stores: Stores, findings: Findings, ledgers: dict[str, list[LedgerEntry]]) -> None:
    by_reference = {(e.org_id, e.reference): e for lines in ledgers.values() for e in lines}
    expected: dict[tuple[str, str], tuple[int, str]] = {}  # must be there by now
    allowed: set[str] = set()  # may be there
    for booking in stores.bookings:
        if booking.payment_mode == "pass" and booking.state in ("confirmed", "cancelled"):
            expected[(booking.org_id, REDEEMED + booking.booking_id)] = (-1, booking.state)
            allowed.add(REDEEMED + booking.booking_id)
            if booking.state == "cancelled":
                allowed.add(RETURNED + booking.booking_id)
                if stores.settled(booking.updated_at):
                    expected[(booking.org_id, RETURNED + booking.booking_id)] = (1, "cancelled")
    for order in stores.orders:
        if order.kind == "pass" and order.state == "paid":
            allowed.add(credit_reference(order.order_id))
            if stores.settled(order.updated_at):
                expected[(order.org_id, credit_reference(order.order_id))] = (order.entries, "paid")
    for (org_id, reference), (delta, state) in expected.items():
        entry = by_reference.get((org_id, reference))
        findings.check(
            LEDGER_MATCHES,
            entry is not None and entry.delta == delta,
            {"org_id": org_id, "reference": reference},
            source=f"{reference.split(':')[0]} {state}: expects {delta:+d}",
            pass_ledger=f"{entry.delta:+d} ({entry.reason})" if entry else "no entry",
        )
    for (org_id, reference), entry in by_reference.items():
        findings.check(
            LEDGER_MATCHES,
            reference in allowed or not _ours(reference),
            {"org_id": org_id, "reference": reference, "entry_id": str(entry.entry_id)},
            pass_ledger=f"{entry.delta:+d} ({entry.reason})",
            source="no pass booking or paid pass order it stands for",
        )


def _ours(reference: str) -> bool:
    return reference.startswith((REDEEMED, RETURNED, credit_reference("")))
