"""The payment state machine: forward only, and late money goes to a refund."""

from __future__ import annotations

import pytest

from services.payment.domain import payment_states as states


@pytest.mark.parametrize("state", states.ALL_STATES)
def test_no_state_moves_back_to_pending(state: str) -> None:
    assert not states.can_move(state, states.PENDING)


@pytest.mark.parametrize("given_up", [states.CANCELLED, states.EXPIRED])
def test_money_that_settles_after_the_booking_was_given_up_is_refunded(given_up: str) -> None:
    assert states.target_for_remote(given_up, "paid") == states.REFUND_PENDING


def test_a_paid_payment_ignores_a_late_failed_or_paid_report() -> None:
    assert states.target_for_remote(states.PAID, "failed") is None
    assert states.target_for_remote(states.PAID, "paid") is None


def test_a_refunded_payment_ignores_a_late_paid_report() -> None:
    assert states.target_for_remote(states.REFUNDED, "paid") is None


def test_a_pending_remote_changes_nothing() -> None:
    assert all(states.target_for_remote(s, "pending") is None for s in states.ALL_STATES)


def test_a_gone_owner_cancels_pending_and_refunds_paid() -> None:
    assert states.target_when_owner_gone(states.PENDING) == states.CANCELLED
    assert states.target_when_owner_gone(states.PAID) == states.REFUND_PENDING
    assert states.target_when_owner_gone(states.REFUNDED) is None
