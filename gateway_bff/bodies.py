"""The request bodies the contract fixes, as pydantic models: FastAPI checks them and the
OpenAPI document describes them. Numbers and strings are strict (a "1" is not a party size);
times are RFC 3339. Rules that belong to a service (a slot id that exists, a time zone it
knows) are the service's to check: the gateway does not keep a second copy of them."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StrictInt, model_validator
from pydantic import StrictStr as _StrictStr


def _printable(value: str) -> str:
    # Control characters (a NUL above all, which PostgreSQL refuses in text) are refused
    # here, as the services refuse them, rather than failing deeper down.
    if not value.isprintable():
        raise ValueError("must be printable text")
    return value


StrictStr = Annotated[_StrictStr, AfterValidator(_printable)]
Text = Field(min_length=1, max_length=200)


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
    amount: StrictInt = Field(ge=1, le=100_000_000, examples=[45000])
    currency: StrictStr = Field(pattern=r"^[A-Z]{3}$", examples=["CZK"])


class NewBooking(Body):
    slot_id: StrictStr = Field(min_length=1, max_length=64)
    party_size: StrictInt = Field(default=1, ge=1, le=4)
    payment_mode: Literal["card", "pass"]


class Cancellation(Body):
    """Empty: the booking is in the path."""


class Move(Body):
    slot_id: StrictStr = Field(min_length=1, max_length=64)


class NewOrder(Body):
    plan_code: StrictStr = Field(min_length=1, max_length=64, examples=["pass-10"])
    plan_version: StrictInt = Field(ge=1, le=9999)


class NewSpace(Body):
    name: StrictStr = Text
    timezone: StrictStr = Field(min_length=1, max_length=64, examples=["Europe/Prague"])


class NewSlot(Body):
    starts_at: datetime
    ends_at: datetime
    price: Money


class NewSlots(Body):
    slots: list[NewSlot] = Field(min_length=1, max_length=2000)


class NewPrice(Body):
    price: Money


class NewOrg(Body):
    name: StrictStr = Text


class NewMember(Body):
    user: StrictStr = Text
    role: Literal["owner", "member"]
    # Beside the contract: the member's mails go here, in this language.
    email: StrictStr | None = Field(default=None, max_length=254)
    locale: Literal["cs", "en"] = "cs"


class NewPlan(Body):
    plan_code: StrictStr = Field(min_length=1, max_length=64)
    plan_version: StrictInt = Field(ge=1, le=9999)
    kind: Literal["pass", "subscription"]
    name: StrictStr = Text
    price: Money
    entries: StrictInt = Field(default=0, ge=0, le=1000)
    period_days: StrictInt = Field(default=0, ge=0, le=366)


class Resolution(Body):
    decision: StrictStr = Text
    note: StrictStr = Field(default="", max_length=2000)


class Replay(Body):
    reason: StrictStr = Field(default="", max_length=2000)
