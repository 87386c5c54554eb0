"""Checks of the values a caller sends, made at the edge before any of them reaches a query.

A gRPC string can hold anything: a NUL (which PostgreSQL refuses in text), 10,000
characters, control characters, a UUID in a form Python's parser accepts and PostgreSQL
does not (`urn:uuid:...`, braces, no hyphens, an underscore or Arabic-Indic digits between
the hex digits). A Timestamp can lie outside the years 1-9999 that `ToDatetime` handles.
Each check here returns the value it accepts, or raises `InvalidField` naming the field
and the rule it broke; the message never repeats the value, so a refusal can neither leak
nor overflow gRPC's metadata. Services map `InvalidField` to their own domain error.

Pure: no I/O beyond reading the tz database once.
"""

from __future__ import annotations

import functools
import re
import sys
import zoneinfo
from collections.abc import Collection
from datetime import UTC, datetime, timedelta

import pycountry
from google.protobuf.timestamp_pb2 import Timestamp

MAX_TEXT = 200  # a name, a user: characters
MAX_AMOUNT = 100_000_000  # minor units: 1,000,000.00 of a currency with two decimals
# Every time a caller may name: a slot, a list filter. Outside it a time is a mistake.
EARLIEST = datetime(2000, 1, 1, tzinfo=UTC)
LATEST = datetime(2100, 1, 1, tzinfo=UTC)
# A time as an HTTP caller writes it: RFC 3339 in UTC (the contract's convention), in the
# century from EARLIEST to LATEST. In UTC the written year is the instant's, so the range
# is a pattern a document can declare; `utc_time` parses exactly what it matches.
UTC_TIME_PATTERN = (
    f"^{EARLIEST.year // 100}[0-9]{{2}}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12][0-9]|3[01])"
    "T(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\\.[0-9]{1,9})?(?:Z|[+-]00:00)$"
)
_UTC_TIME = re.compile(UTC_TIME_PATTERN)
IDEMPOTENCY_KEY_PATTERN = "^[A-Za-z0-9._:-]{1,128}$"
IDEMPOTENCY_KEY = re.compile(IDEMPOTENCY_KEY_PATTERN)
# ISO 4217 codes that name no money one can pay with: precious metals, bond-market and
# accounting units, the testing code and "no currency".
NOT_MONEY = frozenset(
    (
        "XAD",
        "XAG",
        "XAU",
        "XBA",
        "XBB",
        "XBC",
        "XBD",
        "XDR",
        "XPD",
        "XPT",
        "XSU",
        "XTS",
        "XUA",
        "XXX",
    )
)
_CURRENCY = re.compile(r"[A-Z]{3}")
# An address a mail server takes: a dot-atom local part, one @, a domain of labels. Quoted
# local parts and address literals are refused: no customer needs them, and they are where
# header injection hides.
_EMAIL = re.compile(
    r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*"
    r"@([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,63}"
)
# What `email_address` accepts, as a document declares it: an address, or empty (none).
EMAIL_PATTERN = f"^(?:{_EMAIL.pattern})?$"
MAX_EMAIL = 254  # what SMTP carries in a path
LOCALES = ("cs", "en")  # the languages mails are written in; cs first, the default
# What `str(uuid.UUID(...))` writes, and nothing else: ASCII lower-case hex in 8-4-4-4-12.
# One match instead of parsing and printing a UUID: ids are checked in every request.
# Use it with fullmatch; the logs and the services' settings read ids with it too.
CANONICAL_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_MAX_MESSAGE = 200


def _printable_class(*, space: bool) -> str:
    """A regular-expression class of every character `str.isprintable` accepts (with or
    without the space), spelled out as ranges from this Python's Unicode database: the
    same class reads alike in Python, in the OpenAPI document's validators and in the
    tools that generate values from it. A BMP character is written `\\uXXXX`; one above
    it as itself, which every engine reads as one character."""
    ranges: list[tuple[int, int]] = []
    for point in range(sys.maxunicode + 1):
        if chr(point).isprintable() and (space or point != 0x20):
            if ranges and ranges[-1][1] == point - 1:
                ranges[-1] = (ranges[-1][0], point)
            else:
                ranges.append((point, point))
    return "".join(
        _spelled(low) if low == high else f"{_spelled(low)}-{_spelled(high)}"
        for low, high in ranges
    )


def _spelled(point: int) -> str:
    return f"\\u{point:04X}" if point <= 0xFFFF else chr(point)


# Printable text that is not only white space: no NUL, control, format (which hide text or
# reorder it on screen), separator, surrogate, private-use or unassigned character, and
# something besides spaces (the only white space that is printable). `text` checks exactly
# this pattern, and the gateway's OpenAPI document declares it: one rule, one spelling.
_VISIBLE = _printable_class(space=False)
_PRINTABLE = _printable_class(space=True)
TEXT_PATTERN = f"^ *[{_VISIBLE}][{_PRINTABLE}]*$"
OPTIONAL_TEXT_PATTERN = f"^(?: *[{_VISIBLE}][{_PRINTABLE}]*)?$"
_TEXT = re.compile(TEXT_PATTERN)


class InvalidField(ValueError):
    """A field breaks its rule. `field` and `problem` come from code, never from the input."""

    def __init__(self, field: str, problem: str) -> None:
        self.field = field[:64]
        self.problem = problem[:_MAX_MESSAGE]
        super().__init__(f"{self.field}: {self.problem}")


def canonical_uuid(field: str, value: str) -> str:
    """A UUID exactly as `str(uuid.UUID(...))` writes it: lower case, hyphenated, 36 chars."""
    if not value:
        raise InvalidField(field, "is required")
    if not CANONICAL_UUID.fullmatch(value):
        raise InvalidField(field, "must be a canonical UUID (36 lower-case characters)")
    return value


def is_canonical_uuid(value: str) -> bool:
    """Does `value` name something by a canonical UUID? (For ids from events, which are not
    checked at the gRPC edge: a malformed one simply names nothing.)"""
    try:
        canonical_uuid("id", value)
    except InvalidField:
        return False
    return True


def text(field: str, value: str, max_length: int = MAX_TEXT, required: bool = True) -> str:
    """Printable text of at most `max_length` characters: no NUL, control or format
    characters (which hide text or reorder it on screen), not only white space."""
    if not value:
        if required:
            raise InvalidField(field, "is required")
        return value
    if len(value) > max_length:
        raise InvalidField(field, f"must be at most {max_length} characters")
    if not _TEXT.fullmatch(value):
        if not value.strip():
            raise InvalidField(field, "must not be blank")
        raise InvalidField(field, "must not contain control or format characters")
    return value


def matching(field: str, value: str, pattern: re.Pattern[str], rule: str) -> str:
    """The whole value matches `pattern` (anchored at both ends); `rule` says it in words."""
    if not pattern.fullmatch(value):
        raise InvalidField(field, f"must be {rule}")
    return value


def idempotency_key(field: str, value: str) -> str:
    return matching(field, value, IDEMPOTENCY_KEY, "1 to 128 characters of A-Z a-z 0-9 . _ : -")


def one_of(field: str, value: str, allowed: Collection[str]) -> str:
    if value not in allowed:
        raise InvalidField(field, f"must be one of {', '.join(sorted(allowed))}"[:_MAX_MESSAGE])
    return value


def integer(field: str, value: int, lowest: int, highest: int) -> int:
    if not lowest <= value <= highest:
        raise InvalidField(field, f"must be {lowest} to {highest}")
    return value


def amount(field: str, value: int) -> int:
    """A price in minor units: positive and at most MAX_AMOUNT."""
    return integer(field, value, 1, MAX_AMOUNT)


def currency(field: str, value: str) -> str:
    """An ISO 4217 code of a currency (upper case), as the ISO list pycountry ships has it."""
    if not _CURRENCY.fullmatch(value) or value not in _currencies():
        raise InvalidField(field, "must be an ISO 4217 currency code such as CZK or EUR")
    return value


def time_zone(field: str, value: str) -> str:
    """An IANA time zone name that the tz database knows, such as Europe/Prague or UTC."""
    if len(value) > 64 or value not in _time_zones():
        raise InvalidField(field, "must be an IANA time zone such as Europe/Prague")
    return value


def moment(field: str, stamp: Timestamp) -> datetime:
    """The time a Timestamp names, checked for range before it is converted."""
    earliest, latest = int(EARLIEST.timestamp()), int(LATEST.timestamp())
    if not earliest <= stamp.seconds < latest:
        raise InvalidField(field, f"must be from {EARLIEST.year} to {LATEST.year - 1}")
    if not 0 <= stamp.nanos < 1_000_000_000:
        raise InvalidField(field, "nanos must be 0 to 999,999,999")
    return stamp.ToDatetime(tzinfo=UTC)


def utc_time(field: str, value: str) -> datetime:
    """A time written as UTC_TIME_PATTERN says, on a day the calendar has (no 30 February);
    digits past the microsecond are dropped."""
    if not _UTC_TIME.fullmatch(value):
        raise InvalidField(
            field, f"must be an RFC 3339 time in UTC from {EARLIEST.year} to {LATEST.year - 1}"
        )
    try:
        when = datetime.fromisoformat(_microseconds(value))
    except ValueError:
        raise InvalidField(field, "must name a day the calendar has") from None
    return when.astimezone(UTC)


def _microseconds(value: str) -> str:
    """The time with at most six fraction digits, which is all a datetime holds."""
    if "." not in value:
        return value
    head, _, tail = value.partition(".")
    digits = len(tail) - len(tail.lstrip("0123456789"))
    return f"{head}.{tail[:digits][:6].ljust(6, '0')}{tail[digits:]}"


def calendar_time(field: str, when: datetime) -> datetime:
    """An aware time from EARLIEST up to (not including) LATEST."""
    if when.tzinfo is None or not EARLIEST <= when < LATEST:
        raise InvalidField(field, f"must be from {EARLIEST.year} to {LATEST.year - 1}, with a zone")
    return when


def time_range(
    field: str, starts_at: datetime, ends_at: datetime, longest: timedelta
) -> tuple[datetime, datetime]:
    """A range that ends after it starts and lasts at most `longest`."""
    if not starts_at < ends_at:
        raise InvalidField(field, "must end after it starts")
    if ends_at - starts_at > longest:
        raise InvalidField(field, f"must last at most {_duration(longest)}")
    return starts_at, ends_at


def email_address(field: str, value: str) -> str:
    """An e-mail address of at most MAX_EMAIL characters, or empty (none given)."""
    if value and (len(value) > MAX_EMAIL or not _EMAIL.fullmatch(value)):
        raise InvalidField(field, f"must be an e-mail address of at most {MAX_EMAIL} characters")
    return value


def locale(field: str, value: str) -> str:
    """One of LOCALES; empty means the first."""
    return one_of(field, value or LOCALES[0], LOCALES)


def payload(field: str, value: bytes, max_bytes: int) -> bytes:
    if len(value) > max_bytes:
        raise InvalidField(field, f"must be at most {max_bytes} bytes")
    return value


@functools.cache
def _currencies() -> frozenset[str]:
    return frozenset(c.alpha_3 for c in pycountry.currencies) - NOT_MONEY


@functools.cache
def _time_zones() -> frozenset[str]:
    # "localtime" is this machine's zone and "Factory" a placeholder, not places.
    return frozenset(zoneinfo.available_timezones()) - {"localtime", "Factory"}


def currencies() -> list[str]:
    """Every code `currency` accepts, sorted: what a document lists as the enum."""
    return sorted(_currencies())


def time_zones() -> list[str]:
    """Every name `time_zone` accepts, sorted: what a document lists as the enum."""
    return sorted(zone for zone in _time_zones() if len(zone) <= 64)


def _duration(length: timedelta) -> str:
    hours = length.total_seconds() / 3600
    return f"{hours:g} hours"
