"""Acceptance d: a gateway call that hangs holds no transaction and delays nobody else."""

from __future__ import annotations

import time
from collections.abc import Callable

from liftfit.payment.v1 import payment_pb2

from tests.payment.conftest import HarnessFactory
from tests.payment.harness import Harness, eventually
from tests.payment.support import oldest_transaction_s, seconds_until

HANG_S = 10


async def _hanging_create(harness: Harness) -> tuple[payment_pb2.Payment, float]:
    """A payment whose create the gateway has stored and answers only after HANG_S."""
    await harness.faults(timeout_next_creates=1, hang_seconds=HANG_S)
    booking_id = await harness.request_payment()
    payment = await harness.payment_when(booking_id, lambda p: True)

    async def stored_and_held() -> bool:
        faults = (await harness.gateway.get("/_sandbox/faults")).json()
        stored = await harness.gateway_payments(reference=payment.payment_id)
        return bool(stored) and faults["timeout_next_creates"] == 0

    await eventually(stored_and_held)
    return payment, time.monotonic()


async def test_a_hanging_create_delays_no_other_payment_and_holds_no_transaction(
    make_harness: HarnessFactory,
) -> None:
    harness = await make_harness(gateway_timeout_s=HANG_S + 5)  # we wait the hang out
    other = await harness.opened_payment()
    hanging, hang_started = await _hanging_create(harness)

    # A notification for another payment is applied at once.
    await harness.settle(other.provider_payment_id)
    notified_s = await seconds_until(lambda: _has(harness, other.booking_id, _paid))
    # An event from the booking service is consumed at once...
    third = await harness.request_payment()
    consumed_s = await seconds_until(lambda: _has(harness, third, lambda _: True))
    # ...and the gateway create it causes is made and applied at once.
    created_s = await seconds_until(lambda: _has(harness, third, _created))
    assert max(notified_s, consumed_s, created_s) < 1.0, (notified_s, consumed_s, created_s)

    # Well into the hang, no transaction has been open for even a part of it.
    await eventually(lambda: _after(hang_started + 3))
    oldest_s = await oldest_transaction_s(harness)
    assert time.monotonic() - hang_started < HANG_S, "the hang ended before the checks"
    assert oldest_s < 2.0, f"a transaction open for {oldest_s:.1f} s during the call"
    assert not (await harness.payment(hanging.booking_id)).checkout_url  # type: ignore[union-attr]

    # The hung create still completes, under its one key.
    done = await harness.payment_when(hanging.booking_id, _created, HANG_S + 10)
    [remote] = await harness.gateway_payments(reference=done.payment_id)
    assert remote["id"] == done.provider_payment_id


async def _has(
    harness: Harness, booking_id: str, accept: Callable[[payment_pb2.Payment], bool]
) -> bool:
    found = await harness.payment(booking_id)
    return found is not None and accept(found)


def _paid(payment: payment_pb2.Payment) -> bool:
    return payment.state == "paid"


def _created(payment: payment_pb2.Payment) -> bool:
    return bool(payment.checkout_url)


async def _after(moment: float) -> bool:
    return time.monotonic() >= moment
