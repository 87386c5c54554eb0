"""The order command's fingerprint and key: equal by value, different by intent."""

from __future__ import annotations

import hashlib

import pytest

from servicekit.refusals import InvalidIdempotencyKey, InvalidRequest
from services.payment.domain.errors import InvalidPlan
from services.payment.domain.money import Money
from services.payment.domain.orders import (
    CreateOrder,
    Plan,
    check_idempotency_key,
    order_fingerprint,
)


def test_the_fingerprint_is_sha256_of_the_canonical_fields() -> None:
    canonical = b'{"plan_code":"team","plan_version":1}'
    assert order_fingerprint("team", 1) == hashlib.sha256(canonical).digest()


def test_case_and_white_space_of_the_plan_code_do_not_change_the_fingerprint() -> None:
    assert order_fingerprint(" Team ", 1) == order_fingerprint("team", 1)


def test_another_plan_version_is_another_intent() -> None:
    assert order_fingerprint("team", 1) != order_fingerprint("team", 2)


@pytest.mark.parametrize("key", ["", "x" * 129, "has space", "naïve", "trailing-newline\n"])
def test_malformed_idempotency_keys_are_refused(key: str) -> None:
    with pytest.raises(InvalidIdempotencyKey):
        check_idempotency_key(key)


def test_a_well_formed_key_is_accepted() -> None:
    assert check_idempotency_key("checkout-team-2026-01") == "checkout-team-2026-01"


ORG = "6f1c1f4e-8d7b-4b0a-9a53-2f1d6c0e9b11"
PRICE = Money(99000, "CZK")


def _plan(**change: object) -> Plan:
    fields: dict[str, object] = {
        "code": " Pass-10 ",
        "version": 1,
        "kind": "pass",
        "name": "Ten entries",
        "price": PRICE,
        "entries": 10,
        "period_days": 0,
    }
    return Plan(**{**fields, **change})  # type: ignore[arg-type]


def test_a_valid_plan_comes_back_with_its_code_normalised() -> None:
    assert _plan().validated().code == "pass-10"
    assert _plan(kind="subscription", entries=0, period_days=30).validated().period_days == 30


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"price": Money(99000, "ÄÖÜ")}, "price.currency"),
        ({"price": Money(0, "CZK")}, "price.amount"),
        ({"price": Money(2**63 - 1, "CZK")}, "price.amount"),
        ({"period_days": -1}, "period_days"),
        ({"kind": "subscription", "period_days": 0}, "period_days"),
        ({"kind": "subscription", "period_days": 367}, "period_days"),
        ({"entries": 0}, "entries"),
        ({"entries": 1_001}, "entries"),
        ({"version": 0}, "plan_version"),
        ({"kind": "lifetime"}, "kind"),
        ({"name": "ten\x00entries"}, "name"),
        ({"code": "pass 10"}, "plan_code"),
        ({"code": "x" * 65}, "plan_code"),
        ({"code": "pass\x00"}, "plan_code"),
    ],
)
def test_a_plan_outside_its_bounds_is_refused_naming_the_field(
    change: dict[str, object], field: str
) -> None:
    with pytest.raises(InvalidPlan) as refused:
        _plan(**change).validated()
    assert refused.value.field == field


@pytest.mark.parametrize(
    ("org", "user", "key", "code", "version", "error"),
    [
        (f"org-{ORG}", "anna", "k1", "pass-10", 1, InvalidRequest),
        (ORG.upper(), "anna", "k1", "pass-10", 1, InvalidRequest),
        (ORG, "", "k1", "pass-10", 1, InvalidRequest),
        (ORG, "anna\x00", "k1", "pass-10", 1, InvalidRequest),
        (ORG, "anna", "k1\n", "pass-10", 1, InvalidIdempotencyKey),
        (ORG, "anna", "k1", "x" * 10_000, 1, InvalidRequest),
        (ORG, "anna", "k1", "pass-10", 0, InvalidRequest),
    ],
)
def test_an_order_command_checks_every_field_before_any_io(
    org: str, user: str, key: str, code: str, version: int, error: type[Exception]
) -> None:
    with pytest.raises(error):
        CreateOrder(org, user, key, code, version)
    assert CreateOrder(ORG, "anna", "k1", " PASS-10 ", 1).plan_code == " PASS-10 "
