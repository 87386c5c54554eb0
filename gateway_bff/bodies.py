"""The request bodies the contract fixes, as pydantic models: FastAPI checks them and the
OpenAPI document describes them. Numbers and strings are strict (a "1" is not a party size);
times are RFC 3339. Rules that belong to a service (a slot id that exists, a time zone it
knows) are the service's to check: the gateway does not keep a second copy of them."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StrictInt
from pydantic import StrictStr as _StrictStr


def _printable(value: str) -> str:
    # Control characters (a NUL above all, which PostgreSQL refuses in text) are refused
    # here, as the services refuse them, rather than failing deeper down.
    if not value.isprintable():
        raise ValueError("must be printable text")
    return value


StrictStr = Annotated[_StrictStr, AfterValidator(_printable)]
Text = Field(min_length=1, max_length=200)


class Body(BaseModel):
    model_config = ConfigDict(extra="ignore")


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
