"""Request bodies. Strict types, so a client sending "100" for an amount is told so,
as a real provider would, instead of having it silently coerced.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt

Currency = Annotated[str, Field(pattern=r"^[A-Z]{3}$")]
Count = Annotated[StrictInt, Field(ge=0)]


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CreatePayment(_Body):
    amount: Annotated[StrictInt, Field(gt=0)]
    currency: Currency
    reference: Annotated[str, Field(min_length=1, max_length=200)]
    description: Annotated[str, Field(max_length=500)] | None = None
    return_url: Annotated[str, Field(pattern=r"^https?://")] | None = None


class CreateRefund(_Body):
    amount: Annotated[StrictInt, Field(gt=0)]


class Settle(_Body):
    outcome: Literal["succeed", "fail"]


class Tamper(_Body):
    amount: Annotated[StrictInt, Field(gt=0)] | None = None
    currency: Currency | None = None


class FaultsPatch(_Body):
    duplicate_notifications: Count | None = None
    delay_notifications_ms: Count | None = None
    reorder_notifications: StrictBool | None = None
    drop_notifications: StrictBool | None = None
    timeout_next_creates: Count | None = None
    timeout_next_refunds: Count | None = None
    hang_seconds: Annotated[float, Field(ge=0)] | None = None
    fail_next_calls: Count | None = None
    settle_delay_ms: Count | None = None


class Config(_Body):
    notify_url: Annotated[str, Field(pattern=r"^(https?://.+)?$")]
