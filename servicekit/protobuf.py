"""Conversions between protobuf's well-known messages and Python values, one set for all.

Each service's own messages keep their own conversions; what every service repeats
(timestamps, and money as minor units plus an ISO 4217 code) is here. Reading a
Timestamp a caller sent is `servicekit.validation.moment`, which checks its range first.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Protocol, TypeVar, overload

from google.protobuf.message import Message
from google.protobuf.timestamp_pb2 import Timestamp

from servicekit.incidents import Incident


class MoneyLike(Protocol):
    @property
    def amount(self) -> int: ...

    @property
    def currency(self) -> str: ...


M = TypeVar("M", bound=Message)


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@overload
def timestamp(at: datetime) -> Timestamp: ...


@overload
def timestamp(at: datetime | None) -> Timestamp | None: ...


def timestamp(at: datetime | None) -> Timestamp | None:
    """The moment as a Timestamp; None for None, so that a message built with it leaves the
    field unset (an empty Timestamp would be set, and read as 1970-01-01). A naive moment
    is taken as UTC, as protobuf's FromDatetime takes it.

    Seconds and nanoseconds are worked out here in whole numbers: FromDatetime goes
    through a time tuple in Python, and a checkout's reply and event carry nine moments.
    """
    if at is None:
        return None
    since = (at if at.tzinfo is not None else at.replace(tzinfo=UTC)) - _EPOCH
    return Timestamp(seconds=since.days * 86_400 + since.seconds, nanos=since.microseconds * 1000)


def money(message: type[M], value: MoneyLike) -> M:
    """A service's Money message (each package has its own) from a domain value."""
    return message(amount=value.amount, currency=value.currency)


def incident(message: type[M], value: Incident) -> M:
    """A service's Incident message (each package has its own) from servicekit's Incident:
    every field the message declares, times as Timestamps, absent values left unset."""
    found = message()
    for name, field in message.DESCRIPTOR.fields_by_name.items():
        raw = getattr(value, name, None)
        if raw is None:
            continue
        if field.message_type is not None:
            getattr(found, name).CopyFrom(timestamp(raw))
        else:
            setattr(found, name, str(raw))
    return found
