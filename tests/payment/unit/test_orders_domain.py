"""The order command's fingerprint and key: equal by value, different by intent."""

from __future__ import annotations

import hashlib

import pytest

from services.payment.domain.errors import InvalidIdempotencyKey
from services.payment.domain.orders import check_idempotency_key, order_fingerprint


def test_the_fingerprint_is_sha256_of_the_canonical_fields() -> None:
    canonical = b'{"plan_code":"team","plan_version":1}'
    assert order_fingerprint("team", 1) == hashlib.sha256(canonical).hexdigest()


def test_case_and_white_space_of_the_plan_code_do_not_change_the_fingerprint() -> None:
    assert order_fingerprint(" Team ", 1) == order_fingerprint("team", 1)


def test_another_plan_version_is_another_intent() -> None:
    assert order_fingerprint("team", 1) != order_fingerprint("team", 2)


@pytest.mark.parametrize("key", ["", "x" * 129, "has space", "naïve"])
def test_malformed_idempotency_keys_are_refused(key: str) -> None:
    with pytest.raises(InvalidIdempotencyKey):
        check_idempotency_key(key)


def test_a_well_formed_key_is_accepted() -> None:
    assert check_idempotency_key("checkout-team-2026-01") == "checkout-team-2026-01"
