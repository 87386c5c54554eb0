"""The hints to apply again: each id once, oldest first, and never more than the capacity."""

from __future__ import annotations

from services.payment.service_layer.hints import HintsToReapply


def test_an_id_is_remembered_once_and_forgotten_when_applied() -> None:
    hints = HintsToReapply()
    for provider_id in ("pay_a", "pay_b", "pay_a"):
        hints.remember(provider_id)

    assert hints.pending() == ["pay_a", "pay_b"]
    hints.forget("pay_a")
    hints.forget("pay_unknown")
    assert hints.pending() == ["pay_b"]


def test_past_its_capacity_the_oldest_ids_are_forgotten() -> None:
    hints = HintsToReapply(capacity=3)
    for n in range(10):
        hints.remember(f"pay_{n}")

    assert hints.pending() == ["pay_7", "pay_8", "pay_9"]
    assert len(hints) == 3
