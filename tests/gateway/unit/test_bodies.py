"""The request bodies accept exactly what the OpenAPI document declares: the rules are the
services' own (servicekit.validation, the payment service's plan code), declared and
checked from one spelling."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import TypeAdapter, ValidationError

from gateway_bff import bodies
from gateway_bff.app import _field_error
from servicekit import validation
from services.payment.domain import orders

PLANS: TypeAdapter[Any] = TypeAdapter(bodies.NewPlan)
SLOT = "0b6f2c9e-4a55-4f0e-9a8e-3f1c2d4b5a69"
PLAN = {
    "plan_code": "pass-5",
    "plan_version": 1,
    "name": "Five entries",
    "price": {"amount": 150000, "currency": "CZK"},
}


def _fields(error: ValidationError) -> list[str]:
    return [_field_error({**e, "loc": ("body", *e["loc"])})["field"] for e in error.errors()]


@pytest.mark.parametrize("size", [2, 2.0, 4e0])
def test_an_integral_number_is_an_integer_as_json_schema_says(size: float) -> None:
    booking = bodies.NewBooking.model_validate(
        {"slot_id": SLOT, "party_size": size, "payment_mode": "card"}
    )
    assert booking.party_size == int(size) and type(booking.party_size) is int


@pytest.mark.parametrize("size", [1.5, "1", True, float("inf"), float("nan")])
def test_a_fraction_a_string_or_a_boolean_is_not_a_party_size(size: object) -> None:
    with pytest.raises(ValidationError) as refused:
        bodies.NewBooking.model_validate(
            {"slot_id": SLOT, "party_size": size, "payment_mode": "card"}
        )
    assert _fields(refused.value) == ["party_size"]


def test_a_pass_needs_entries_and_a_subscription_a_period_each_named_by_its_field() -> None:
    with pytest.raises(ValidationError) as no_entries:
        PLANS.validate_python({**PLAN, "kind": "pass", "period_days": 30})
    assert _fields(no_entries.value) == ["entries"]
    with pytest.raises(ValidationError) as no_period:
        PLANS.validate_python({**PLAN, "kind": "subscription", "entries": 3})
    assert _fields(no_period.value) == ["period_days"]
    with pytest.raises(ValidationError) as no_kind:
        PLANS.validate_python({**PLAN, "kind": "voucher", "entries": 3})
    assert _fields(no_kind.value) == ["kind"]
    plan = PLANS.validate_python({**PLAN, "kind": "pass", "entries": 5, "period_days": None})
    assert (plan.entries, plan.period_days) == (5, 0)  # null is absent


def test_the_document_declares_a_plan_shape_per_kind() -> None:
    schema = PLANS.json_schema()
    assert schema["discriminator"]["propertyName"] == "kind"
    shapes = {name: schema["$defs"][name] for name in ("PassPlan", "SubscriptionPlan")}
    assert "entries" in shapes["PassPlan"]["required"]
    assert "period_days" in shapes["SubscriptionPlan"]["required"]
    assert shapes["PassPlan"]["properties"]["entries"]["minimum"] == 1
    assert shapes["SubscriptionPlan"]["properties"]["period_days"]["minimum"] == 1


def test_the_document_spells_the_plan_code_as_the_payment_service_checks_it() -> None:
    assert f"^{orders.PLAN_CODE_AS_WRITTEN.pattern}$" == bodies.PLAN_CODE_PATTERN
    assert bodies.MAX_PLAN_CODE == orders.MAX_PLAN_CODE_AS_WRITTEN


@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=70))
def test_a_plan_code_the_document_accepts_is_one_the_payment_service_accepts(code: str) -> None:
    declared = re.fullmatch(bodies.PLAN_CODE_PATTERN, code) is not None and len(code) <= 100
    try:
        orders.plan_code(code)
        taken = True
    except Exception:
        taken = False
    assert declared == taken, code


def test_the_kelvin_sign_is_not_a_k() -> None:
    with pytest.raises(Exception, match="plan_code"):
        orders.plan_code("\u212a")


def test_the_text_the_document_declares_is_the_text_the_services_take() -> None:
    schema = json.dumps(TypeAdapter(bodies.Text).json_schema())
    assert json.loads(schema)["pattern"] == validation.TEXT_PATTERN
    for value in (" Anna ", "名前", "x" * 200):
        assert bodies.NewOrg.model_validate({"name": value}).name == value
    for value in ("", "   ", "a\u202eb", "a\nb", "x" * 201):
        with pytest.raises(ValidationError):
            bodies.NewOrg.model_validate({"name": value})


@pytest.mark.parametrize(
    "when",
    [
        "2026-12-01T17:00:00+01:00",
        "2100-01-01T00:00:00Z",
        "1999-12-31T23:59:59Z",
        "2027-02-29T00:00:00Z",
        "2026-12-01 17:00:00Z",
        "1893492000",
        "2026-12-01",
    ],
)
def test_a_time_not_in_utc_or_outside_the_calendar_is_refused(when: str) -> None:
    with pytest.raises(ValidationError):
        bodies.NewSlot.model_validate(
            {"starts_at": when, "ends_at": when, "price": {"amount": 1, "currency": "CZK"}}
        )


def test_the_time_zones_and_currencies_are_the_services_lists() -> None:
    assert "Europe/Prague" in validation.time_zones() and "localtime" not in validation.time_zones()
    assert "CZK" in validation.currencies() and "XAU" not in validation.currencies()
    with pytest.raises(ValidationError):
        bodies.NewSpace.model_validate({"name": "Studio", "timezone": "Mars/Base"})
    with pytest.raises(ValidationError):
        bodies.Money.model_validate({"amount": 1, "currency": "AAA"})
