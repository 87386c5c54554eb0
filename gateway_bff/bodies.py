"""The request bodies the contract fixes, as pydantic models: FastAPI checks them and the
OpenAPI document describes them, and the two say the same thing. Each rule a service holds
for a value (printable text, a canonical id, a known time zone or currency, a time in the
calendar's range) is declared here as the service states it in servicekit.validation, and
checked with that same function: a body the document calls valid is one the services take,
and one it calls invalid is refused here, before any service is asked. Numbers are strict
(a "1" is not a party size) but an integral number is an integer, as JSON Schema has it
(1.0 is 1). What JSON Schema cannot say (a slot ends after it starts, within a day) the
service checks and the document says in words."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    GetCoreSchemaHandler,
    GetJsonSchemaHandler,
    StrictInt,
    model_validator,
)
from pydantic_core import core_schema

from servicekit import validation

# How a catalogue code may be written: the payment service trims it and writes it in lower
# case, and then it must be 1 to 64 of a-z 0-9 . _ -.
PLAN_CODE_PATTERN = "^ *[A-Za-z0-9][A-Za-z0-9._-]{0,63} *$"
MAX_PLAN_CODE = 100
MAX_NOTE = 2000  # a reason or a note, as the services bound it
MAX_SLOTS = 2000  # slots in one request, as the booking service bounds it


class Declared:
    """A value the document names once, under components/schemas, and a check of it: the
    check is servicekit.validation's, so the services and the document agree."""

    def __init__(self, name: str, schema: dict[str, Any], check: Callable[[str], Any]) -> None:
        self.name = name
        self.schema = schema
        self.check = check

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        return core_schema.no_info_after_validator_function(
            self._checked, core_schema.str_schema(strict=True), ref=self.name
        )

    def __get_pydantic_json_schema__(
        self, schema: core_schema.CoreSchema, handler: GetJsonSchemaHandler
    ) -> dict[str, Any]:
        reference = handler(schema)
        handler.resolve_ref_schema(reference).update(self.schema)
        return reference

    def _checked(self, value: str) -> Any:
        try:
            return self.check(value)
        except validation.InvalidField as bad:
            raise ValueError(bad.problem) from None


def _text(max_length: int, required: bool) -> Callable[[str], str]:
    return lambda value: validation.text("text", value, max_length, required)


def _plan_code(value: str) -> str:
    if len(value) > MAX_PLAN_CODE or not _PLAN_CODE.fullmatch(value):
        raise validation.InvalidField("plan_code", "must be 1 to 64 of A-Z a-z 0-9 . _ -")
    return value


_PLAN_CODE = re.compile(PLAN_CODE_PATTERN)

Text = Annotated[
    str,
    Declared(
        "Text",
        {
            "type": "string",
            "minLength": 1,
            "maxLength": validation.MAX_TEXT,
            "pattern": validation.TEXT_PATTERN,
            "description": "Printable text, not only spaces: no control, format, separator"
            " or unassigned characters",
        },
        _text(validation.MAX_TEXT, required=True),
    ),
]
Note = Annotated[
    str,
    Declared(
        "Note",
        {
            "type": "string",
            "maxLength": MAX_NOTE,
            "pattern": validation.OPTIONAL_TEXT_PATTERN,
            "description": "Empty, or printable text that is not only spaces",
        },
        _text(MAX_NOTE, required=False),
    ),
]
Subject = Annotated[
    str,
    Declared(
        "Subject",
        {
            "type": "string",
            "maxLength": validation.MAX_TEXT,
            "pattern": validation.OPTIONAL_TEXT_PATTERN,
            "description": "Empty, or printable text that is not only spaces",
        },
        _text(validation.MAX_TEXT, required=False),
    ),
]
Id = Annotated[
    str,
    Declared(
        "Id",
        {
            "type": "string",
            "pattern": f"^{validation.CANONICAL_UUID.pattern}$",
            "description": "A UUID in its canonical form: lower-case hex, 8-4-4-4-12",
            "examples": ["0b6f2c9e-4a55-4f0e-9a8e-3f1c2d4b5a69"],
        },
        lambda value: validation.canonical_uuid("id", value),
    ),
]
UtcTime = Annotated[
    datetime,
    Declared(
        "UtcTime",
        {
            "type": "string",
            "format": "date-time",
            "pattern": validation.UTC_TIME_PATTERN,
            "description": "RFC 3339 in UTC (Z or +00:00), from"
            f" {validation.EARLIEST.year} to {validation.LATEST.year - 1}",
            "examples": ["2026-12-01T17:00:00Z"],
        },
        lambda value: validation.utc_time("time", value),
    ),
]
TimeZone = Annotated[
    str,
    Declared(
        "TimeZone",
        {
            "type": "string",
            "enum": validation.time_zones(),
            "description": "An IANA time zone name",
            "examples": ["Europe/Prague"],
        },
        lambda value: validation.time_zone("timezone", value),
    ),
]
Currency = Annotated[
    str,
    Declared(
        "Currency",
        {
            "type": "string",
            "enum": validation.currencies(),
            "description": "An ISO 4217 code of a currency one can pay with",
            "examples": ["CZK"],
        },
        lambda value: validation.currency("currency", value),
    ),
]
Email = Annotated[
    str,
    Declared(
        "Email",
        {
            "type": "string",
            "maxLength": validation.MAX_EMAIL,
            "pattern": validation.EMAIL_PATTERN,
            "description": "An e-mail address, or empty for none",
            "examples": ["anna@example.com"],
        },
        lambda value: validation.email_address("email", value),
    ),
]
PlanCode = Annotated[
    str,
    Declared(
        "PlanCode",
        {
            "type": "string",
            "maxLength": MAX_PLAN_CODE,
            "pattern": PLAN_CODE_PATTERN,
            "description": "A catalogue code; spaces around it and upper case do not count",
            "examples": ["pass-10"],
        },
        _plan_code,
    ),
]


def _integral(value: Any) -> Any:
    # JSON has one kind of number: 1.0 is the integer 1 (as JSON Schema's `integer` says),
    # while 1.5, "1" and true stay what they are and are refused as integers.
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


Integral = Annotated[StrictInt, BeforeValidator(_integral)]


def _optional_may_be_null(schema: dict[str, Any]) -> None:
    """The document says what the validator below accepts: null for any field that may be
    left out."""
    required = set(schema.get("required", ()))
    properties = schema.get("properties", {})
    for name, shape in properties.items():
        if name in required or _allows_null(shape):
            continue
        kept = {key: shape.pop(key) for key in ("title", "default", "description") if key in shape}
        properties[name] = {"anyOf": [shape, {"type": "null"}], **kept}


def _allows_null(shape: dict[str, Any]) -> bool:
    return any(option.get("type") == "null" for option in shape.get("anyOf", ()))


class Body(BaseModel):
    model_config = ConfigDict(extra="ignore", json_schema_extra=_optional_may_be_null)

    @model_validator(mode="before")
    @classmethod
    def _null_is_absent(cls, data: Any) -> Any:
        # Most clients write a field that does not apply (a pass plan's period) as null:
        # it means the same as leaving it out, so the default applies.
        if not isinstance(data, dict):
            return data
        fields = cls.model_fields
        return {
            key: value
            for key, value in data.items()
            if value is not None or key not in fields or fields[key].is_required()
        }


class Money(Body):
    amount: Integral = Field(ge=1, le=validation.MAX_AMOUNT, examples=[45000])
    currency: Currency


class NewBooking(Body):
    slot_id: Id
    party_size: Integral = Field(default=1, ge=1, le=4)
    payment_mode: Literal["card", "pass"]


class Cancellation(Body):
    """Empty: the booking is in the path."""


class Move(Body):
    slot_id: Id


class NewOrder(Body):
    plan_code: PlanCode
    plan_version: Integral = Field(ge=1, le=9999)


class NewSpace(Body):
    name: Text
    timezone: TimeZone


class NewSlot(Body):
    """A slot ends after it starts and lasts at most 24 hours (else 422): a rule between two
    fields, which the booking service checks."""

    starts_at: UtcTime
    ends_at: UtcTime
    price: Money


class NewSlots(Body):
    slots: list[NewSlot] = Field(min_length=1, max_length=MAX_SLOTS)


class NewPrice(Body):
    price: Money


class NewOrg(Body):
    name: Text


class NewMember(Body):
    user: Text
    role: Literal["owner", "member"]
    # Beside the contract: the member's mails go here, in this language.
    email: Email | None = None
    locale: Literal["cs", "en"] = "cs"


class PassPlan(Body):
    """A pack of entries: at least one entry."""

    plan_code: PlanCode
    plan_version: Integral = Field(ge=1, le=9999)
    kind: Literal["pass"]
    name: Text
    price: Money
    entries: Integral = Field(ge=1, le=1000)
    period_days: Integral = Field(default=0, ge=0, le=366)


class SubscriptionPlan(Body):
    """A paid period: at least one day."""

    plan_code: PlanCode
    plan_version: Integral = Field(ge=1, le=9999)
    kind: Literal["subscription"]
    name: Text
    price: Money
    entries: Integral = Field(default=0, ge=0, le=1000)
    period_days: Integral = Field(ge=1, le=366)


# Which fields a plan needs, and their ranges, depend on its kind: one shape per kind.
NewPlan = Annotated[PassPlan | SubscriptionPlan, Field(discriminator="kind")]
PLAN_KINDS = frozenset({"pass", "subscription"})


class Resolution(Body):
    decision: Text
    note: Note = ""


class Replay(Body):
    reason: Note = ""
