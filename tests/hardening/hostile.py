"""Hostile field values for gRPC requests, and the check that every answer is deliberate.

A value is drawn either from a small pool of valid ones (so that a request gets past its
first field and its later fields are checked too) or from what an attacker or a broken
client sends: NUL and control characters, 10,000-character strings, any Unicode, UUIDs in
the forms Python's parser accepts and PostgreSQL does not, integers at their type's
limits, timestamps at and beyond protobuf's limits, random and oversized bytes.
"""

from __future__ import annotations

import re
import uuid
import zoneinfo
from collections.abc import Awaitable, Callable, Iterator
from datetime import UTC, timedelta
from typing import Any

import grpc
import pycountry
from google.protobuf.message import Message
from google.protobuf.timestamp_pb2 import Timestamp
from hypothesis import strategies as st

from servicekit.grpc_server import reason_of

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
# The range of google.protobuf.Timestamp: 0001-01-01T00:00:00Z to 9999-12-31T23:59:59Z.
TIMESTAMP_MIN_S, TIMESTAMP_MAX_S = -62_135_596_800, 253_402_300_799

# What a caller may be answered; anything else (UNKNOWN, INTERNAL, RESOURCE_EXHAUSTED,
# UNAVAILABLE with the database up) is a fault that let a hostile value through.
DELIBERATE = {
    grpc.StatusCode.INVALID_ARGUMENT,
    grpc.StatusCode.NOT_FOUND,
    grpc.StatusCode.FAILED_PRECONDITION,
    grpc.StatusCode.ALREADY_EXISTS,
}
MAX_DETAIL = 300
LEAKS = re.compile(
    r"\bSELECT\b|\bINSERT\b|\bUPDATE\b|\[SQL:|\[parameters:|Traceback|<class"
    r"|\b[A-Z][a-zA-Z]+(?:Error|Exception)\b|sqlalchemy|psycopg",
    re.IGNORECASE,
)
ECHO_LIMIT = 64  # a sent value longer than this must never come back in a message

_UUID_FORMS: tuple[Callable[[uuid.UUID], str], ...] = (
    lambda u: f"urn:uuid:{u}",
    lambda u: f"{{{u}}}",
    lambda u: u.hex,
    lambda u: str(u).upper(),
    lambda u: f"{u.hex[:1]}-{u.hex[1:8]}-{u.hex[8:12]}-{u.hex[12:16]}-{u.hex[16:20]}{u.hex[20:]}",
    lambda u: f" {u.hex[:30]} ",  # int(..., 16) strips white space
    lambda u: f"{u.hex[:15]}_{u.hex[16:]}",  # ... and accepts an underscore between digits
    lambda u: str(u).replace("1", "\u0661"),  # ... and Arabic-Indic digits
    lambda u: f"{u}\x00",
    lambda u: f"{u}\n",
)


def _repeated(piece: str, times: int) -> str:
    return piece * times


def hostile_text() -> st.SearchStrategy[str]:
    return st.one_of(
        st.text(max_size=40),
        st.builds(lambda a, b: f"{a}\x00{b}", st.text(max_size=8), st.text(max_size=8)),
        st.builds(
            _repeated,
            st.sampled_from(["a", "9", "é", "\x00", "\U0001f4a5", " ", "-"]),
            st.integers(200, 10_000),
        ),
        st.builds(lambda u, form: form(u), st.uuids(), st.sampled_from(_UUID_FORMS)),
        st.sampled_from(["", " ", "9" * 5_000, "' OR 1=1 --", "%s", "{0}", "../../etc/passwd"]),
    )


def text_or_hostile(*valid: str) -> st.SearchStrategy[str]:
    """Sometimes one of the valid values, sometimes a new canonical UUID, often hostile."""
    return st.one_of(
        st.sampled_from(valid) if valid else st.nothing(),
        st.uuids().map(str),
        hostile_text(),
    )


def int32s(*valid: int) -> st.SearchStrategy[int]:
    edges = [0, -1, 1, 2, 4, 5, 366, 367, 1_001, INT32_MAX, INT32_MIN, *valid]
    return st.one_of(st.sampled_from(edges), st.integers(INT32_MIN, INT32_MAX))


def int64s(*valid: int) -> st.SearchStrategy[int]:
    edges = [0, -1, 1, 100_000_000, 100_000_001, INT64_MAX, INT64_MIN, *valid]
    return st.one_of(st.sampled_from(edges), st.integers(INT64_MIN, INT64_MAX))


def timestamps(around_s: int) -> st.SearchStrategy[Timestamp]:
    """Times near `around_s` (valid ones), and at and beyond the limits of the type."""
    seconds = st.one_of(
        st.integers(around_s - 86_400, around_s + 40 * 86_400),
        st.sampled_from(
            [
                0,
                -1,
                TIMESTAMP_MIN_S,
                TIMESTAMP_MIN_S - 1,
                TIMESTAMP_MAX_S,
                TIMESTAMP_MAX_S + 1,
                INT64_MIN,
                INT64_MAX,
            ]
        ),
        st.integers(INT64_MIN, INT64_MAX),
    )
    nanos = st.one_of(st.just(0), st.integers(INT32_MIN, INT32_MAX))
    return st.builds(Timestamp, seconds=seconds, nanos=nanos)


def hostile_bytes() -> st.SearchStrategy[bytes]:
    return st.one_of(
        st.binary(max_size=200),
        st.builds(_repeated, st.sampled_from([b"\x00", b"{", b"9"]), st.integers(1, 70_000)),
    )


def _sent_strings(message: Message) -> Iterator[str]:
    for field, value in message.ListFields():
        for item in value if field.is_repeated else [value]:
            if isinstance(item, str):
                yield item
            elif isinstance(item, bytes):
                yield item.decode("utf-8", "replace")
            elif isinstance(item, Message):
                yield from _sent_strings(item)


def _money_is_sane(money: Any) -> None:
    assert 1 <= money.amount <= 100_000_000, f"accepted amount {money.amount}"
    currency = money.currency
    assert pycountry.currencies.get(alpha_3=currency) is not None, f"accepted {currency!r}"
    assert currency.isupper() and currency not in ("XXX", "XTS"), f"accepted {currency!r}"


def _slot_is_sane(slot: Any) -> None:
    starts = slot.starts_at.ToDatetime(tzinfo=UTC)
    ends = slot.ends_at.ToDatetime(tzinfo=UTC)
    assert starts < ends <= starts + timedelta(hours=24), f"accepted slot {starts}..{ends}"
    assert starts.year >= 2000 and ends.year < 2100, f"accepted slot {starts}..{ends}"


def accepted_values_are_sane(reply: Any) -> None:
    """What a service accepted and answers with (or stored earlier and lists now) obeys
    the rules, checked here independently of the services' own validation."""
    kind = reply.DESCRIPTOR.name
    if kind == "Money":
        _money_is_sane(reply)
    if kind == "Slot" and reply.HasField("price"):  # a booking's copy of its slot has none
        _slot_is_sane(reply)
    if kind == "Space":
        assert reply.timezone in zoneinfo.available_timezones(), f"accepted {reply.timezone!r}"
    if kind == "Plan":
        assert 0 <= reply.period_days <= 366, f"accepted period_days {reply.period_days}"
        assert 0 <= reply.entries <= 1_000, f"accepted entries {reply.entries}"
    for field, value in reply.ListFields():
        for item in value if field.is_repeated else [value]:
            if isinstance(item, Message):
                accepted_values_are_sane(item)
            elif isinstance(item, str):
                assert item.isprintable() and len(item) <= 2_048, f"accepted {field.name}"


async def answered_deliberately(
    request: Message, call: Awaitable[Message], writes: bool = False
) -> str:
    """Awaits one call; returns "OK" or the reason it was refused with, after checking that
    the refusal is deliberate (`refused_deliberately`) or, for a call that `writes`, that
    what the service accepted is sane. (Replies of reads may show what an earlier example
    stored; the write that stored it is the one to blame.)
    """
    try:
        reply = await call
    except grpc.aio.AioRpcError as error:
        return refused_deliberately(request, error)
    if writes:
        accepted_values_are_sane(reply)
    return "OK"


def refused_deliberately(request: Message, error: grpc.aio.AioRpcError) -> str:
    """The reason of a refusal that is a deliberate answer and tells nothing about the
    inside of the service: no SQL, bound value, class name or echo, at most 300 chars."""
    code, details, reason = error.code(), error.details() or "", reason_of(error)
    shown = f"{code.name} {reason!r} {details[:400]!r}"
    if code == grpc.StatusCode.UNAVAILABLE:  # the card gateway (a sandbox process) was slow
        assert reason == "gateway_unavailable", shown
    else:
        assert code in DELIBERATE, shown
    assert reason, f"no reason in the trailing metadata: {shown}"
    assert len(details) <= MAX_DETAIL, shown
    assert not LEAKS.search(details), shown
    assert details.isprintable(), shown
    for sent in _sent_strings(request):
        assert len(sent) <= ECHO_LIMIT or sent not in details, f"echoed input: {shown}"
    return reason
