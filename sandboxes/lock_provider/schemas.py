"""Request bodies. Strict types and no unknown fields, as a real provider's API: a client
sending a number for a name, or a field the API does not have, is told so.
"""

from __future__ import annotations

import re
import unicodedata
from datetime import UTC, datetime
from typing import Annotated

from pydantic import (
    AfterValidator,
    AwareDatetime,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictFloat,
    StrictInt,
    model_validator,
)

from .state import CodeRequest

DEVICE_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$"
# RFC 3339: a date, a time and an offset; fromisoformat alone would also take a bare date.
_RFC3339 = re.compile(r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d{1,6})?([Zz]|[+-]\d{2}:\d{2})")


def _moment(value: object) -> datetime:
    if not isinstance(value, str) or not _RFC3339.fullmatch(value):
        raise ValueError("must be an RFC 3339 date-time with an offset, e.g. 2025-01-01T10:00:00Z")
    try:
        return datetime.fromisoformat(value.upper()).astimezone(UTC)
    except OverflowError:  # e.g. 0001-01-01T00:00:00+01:00, which is before year 1 in UTC
        raise ValueError("is out of range") from None


def _printable(value: str) -> str:
    # Control characters cannot be shown, lone surrogates cannot even be sent back as JSON.
    if any(unicodedata.category(char) in ("Cc", "Cs") for char in value):
        raise ValueError("must not contain control characters")
    return value


DeviceId = Annotated[str, Field(pattern=DEVICE_ID_PATTERN)]
AccessCodeId = Annotated[str, Field(pattern=r"^[A-Za-z0-9_-]{1,128}$")]
Name = Annotated[str, Field(min_length=1, max_length=200), AfterValidator(_printable)]
Moment = Annotated[AwareDatetime, BeforeValidator(_moment)]
Count = Annotated[StrictInt, Field(ge=0, le=1_000_000)]
Milliseconds = Annotated[StrictInt, Field(ge=0, le=3_600_000)]


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class CreateAccessCode(_Body):
    device_id: DeviceId
    name: Name
    starts_at: Moment
    ends_at: Moment
    code: Annotated[str, Field(pattern=r"^[0-9]{4,8}$")] | None = None

    @model_validator(mode="after")
    def _window_is_not_empty(self) -> CreateAccessCode:
        if self.ends_at <= self.starts_at:
            raise ValueError("ends_at must be after starts_at")
        return self

    def to_request(self) -> CodeRequest:
        return CodeRequest(self.device_id, self.name, self.starts_at, self.ends_at, self.code)


class ListAccessCodes(_Body):
    device_id: DeviceId | None = None
    name: Name | None = None


class AccessCodeRef(_Body):
    access_code_id: AccessCodeId


class DoorAttempt(_Body):
    device_id: DeviceId
    pin: Annotated[str, Field(pattern=r"^[0-9]{1,16}$")]
    at: Moment | None = None


class NewDevice(_Body):
    device_id: DeviceId


class ClockOffset(_Body):
    offset_seconds: Annotated[
        StrictInt | StrictFloat, Field(ge=-10 * 365 * 86400, le=10 * 365 * 86400)
    ]


class FaultsPatch(_Body):
    timeout_next_creates: Count | None = None
    timeout_next_deletes: Count | None = None
    duplicate_next_creates: Count | None = None
    fail_next_calls: Count | None = None
    setting_delay_ms: Milliseconds | None = None
    removing_delay_ms: Milliseconds | None = None
    hang_seconds: Annotated[StrictInt | StrictFloat, Field(ge=0, le=3600)] | None = None
