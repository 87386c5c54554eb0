"""servicekit.validation on its own: what each rule accepts, refuses, and never repeats."""

from __future__ import annotations

import re
import sys
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from google.protobuf.timestamp_pb2 import Timestamp
from hypothesis import given, settings
from hypothesis import strategies as st

from servicekit import validation
from servicekit.validation import InvalidField

U = uuid.UUID("0f8fad5b-d9cb-469f-a165-70867728950e")
CANONICAL = str(U)


def _refused(check: object, *args: object) -> InvalidField:
    with pytest.raises(InvalidField) as refused:
        check(*args)  # type: ignore[operator]
    return refused.value


def test_a_canonical_uuid_is_accepted_as_it_is() -> None:
    assert validation.canonical_uuid("slot_id", CANONICAL) == CANONICAL


@pytest.mark.parametrize(
    "value",
    [
        "",
        f"urn:uuid:{U}",
        f"{{{U}}}",
        U.hex,
        CANONICAL.upper(),
        f"{U.hex[:1]}-{U.hex[1:8]}-{U.hex[8:12]}-{U.hex[12:16]}-{U.hex[16:20]}{U.hex[20:]}",
        f"{CANONICAL[:14]}_{CANONICAL[15:]}",  # int(..., 16) takes an underscore
        CANONICAL.replace("1", "\u0661"),  # ... and Arabic-Indic digits
        f" {CANONICAL[1:-1]} ",
        f"{CANONICAL[:-1]}\x00",
        "9" * 5_000,
    ],
)
def test_every_other_form_that_pythons_parser_accepts_is_refused(value: str) -> None:
    refused = _refused(validation.canonical_uuid, "slot_id", value)
    assert refused.field == "slot_id"


def _printed_by_python(value: str) -> bool:
    """The rule as first written: what `str(uuid.UUID(value))` prints back unchanged."""
    try:
        return str(uuid.UUID(value)) == value
    except ValueError:
        return False


def _one_upper(shaped: tuple[str, int]) -> str:
    """A canonical UUID with the character at one place in upper case (a digit stays)."""
    text, at = shaped
    return text[:at] + text[at].upper() + text[at + 1 :]


_HEX_OR_NOT = "0123456789abcdefABCDEF-_{}:\u0661 "


@settings(max_examples=500, deadline=None)
@given(
    st.one_of(
        st.uuids().map(str),
        st.tuples(st.uuids().map(str), st.integers(0, 35)).map(_one_upper),
        st.text(alphabet=_HEX_OR_NOT, min_size=30, max_size=40),
        st.text(max_size=40),
    )
)
def test_the_pattern_accepts_exactly_what_pythons_parser_prints_back(value: str) -> None:
    try:
        validation.canonical_uuid("slot_id", value)
        accepted = True
    except InvalidField:
        accepted = False
    assert accepted == _printed_by_python(value)


@pytest.mark.parametrize("value", ["anna", "Studio Karlín 1", "O'Brien", "名前"])
def test_printable_text_is_accepted(value: str) -> None:
    assert validation.text("user", value) == value


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("", "is required"),
        ("   ", "must not be blank"),
        ("a\x00b", "control"),
        ("line\nbreak", "control"),
        ("right\u202eto left", "control"),  # a format character that reorders text
        ("x" * 201, "at most 200"),
    ],
)
def test_text_with_nul_controls_or_no_content_is_refused(value: str, problem: str) -> None:
    assert problem in _refused(validation.text, "user", value).problem


def test_optional_text_may_be_empty_but_not_malformed() -> None:
    assert validation.text("header", "", required=False) == ""
    _refused(validation.text, "header", "\x00", 10, False)


@pytest.mark.parametrize("key", ["k", "checkout-team-2026-01", "a.b_c:d-e", "x" * 128])
def test_a_well_formed_idempotency_key_is_accepted(key: str) -> None:
    assert validation.idempotency_key("idempotency_key", key) == key


@pytest.mark.parametrize("key", ["", "x" * 129, "has space", "naïve", "key\n", "k\x00"])
def test_a_malformed_idempotency_key_is_refused_over_the_whole_value(key: str) -> None:
    _refused(validation.idempotency_key, "idempotency_key", key)


def test_a_pattern_must_match_the_whole_value() -> None:
    digits = re.compile(r"[0-9]+")
    assert validation.matching("code", "123", digits, "digits") == "123"
    assert _refused(validation.matching, "code", "123x", digits, "digits").problem == (
        "must be digits"
    )


@pytest.mark.parametrize("code", ["CZK", "EUR", "USD", "JPY", "XOF"])
def test_iso_4217_currencies_are_accepted(code: str) -> None:
    assert validation.currency("price.currency", code) == code


@pytest.mark.parametrize("code", ["ÄÖÜ", "czk", "ZZZ", "XXX", "XTS", "XAU", "CZ", "CZKK", ""])
def test_unknown_lower_case_or_non_money_codes_are_refused(code: str) -> None:
    _refused(validation.currency, "price.currency", code)


@pytest.mark.parametrize("value", [1, 45_000, validation.MAX_AMOUNT])
def test_an_amount_from_one_minor_unit_to_the_bound_is_accepted(value: int) -> None:
    assert validation.amount("price.amount", value) == value


@pytest.mark.parametrize("value", [0, -1, validation.MAX_AMOUNT + 1, 2**63 - 1, -(2**63)])
def test_an_amount_of_zero_negative_or_over_the_bound_is_refused(value: int) -> None:
    _refused(validation.amount, "price.amount", value)


def test_integers_and_choices_keep_to_their_bounds() -> None:
    assert validation.integer("party_size", 4, 1, 4) == 4
    _refused(validation.integer, "party_size", 5, 1, 4)
    assert validation.one_of("payment_mode", "card", ("card", "pass")) == "card"
    refused = _refused(validation.one_of, "payment_mode", "CARD", ("card", "pass"))
    assert refused.problem == "must be one of card, pass"


@pytest.mark.parametrize("zone", ["UTC", "Europe/Prague", "America/Argentina/Buenos_Aires"])
def test_iana_time_zones_are_accepted(zone: str) -> None:
    assert validation.time_zone("timezone", zone) == zone


@pytest.mark.parametrize(
    "zone", ["", "utc", "Mars/Olympus", "../../etc/passwd", "localtime", "Europe/Prague\x00"]
)
def test_anything_else_is_not_a_time_zone(zone: str) -> None:
    _refused(validation.time_zone, "timezone", zone)


def test_a_timestamp_in_the_calendar_range_becomes_an_aware_time() -> None:
    stamp = Timestamp(seconds=int(datetime(2027, 1, 4, 6, tzinfo=UTC).timestamp()), nanos=5000)
    assert validation.moment("starts_at", stamp) == datetime(2027, 1, 4, 6, 0, 0, 5, tzinfo=UTC)


@pytest.mark.parametrize(
    ("seconds", "nanos"),
    [
        (-62_135_596_800, 0),  # 0001-01-01, the smallest a Timestamp may hold
        (253_402_300_799, 0),  # 9999-12-31
        (253_402_300_800, 0),  # past what ToDatetime converts
        (-(2**63), 0),
        (2**63 - 1, 0),
        (int(validation.LATEST.timestamp()), 0),
        (int(validation.EARLIEST.timestamp()) - 1, 0),
        (1_800_000_000, -1),
        (1_800_000_000, 1_000_000_000),
    ],
)
def test_a_timestamp_outside_the_range_is_refused_before_conversion(
    seconds: int, nanos: int
) -> None:
    _refused(validation.moment, "starts_at", Timestamp(seconds=seconds, nanos=nanos))


def test_a_naive_or_out_of_range_datetime_is_refused() -> None:
    assert validation.calendar_time("at", validation.EARLIEST) == validation.EARLIEST
    _refused(validation.calendar_time, "at", datetime(2027, 1, 1))
    _refused(validation.calendar_time, "at", validation.LATEST)


def test_a_time_range_ends_after_it_starts_and_lasts_at_most_the_bound() -> None:
    start, day = datetime(2027, 1, 1, tzinfo=UTC), timedelta(hours=24)
    assert validation.time_range("slot", start, start + day, day) == (start, start + day)
    assert "end after" in _refused(validation.time_range, "slot", start, start, day).problem
    too_long = _refused(
        validation.time_range, "slot", start, start + day + timedelta(seconds=1), day
    )
    assert too_long.problem == "must last at most 24 hours"


def test_a_payload_is_bounded_in_bytes() -> None:
    assert validation.payload("raw_body", b"x" * 10, 10) == b"x" * 10
    _refused(validation.payload, "raw_body", b"x" * 11, 10)


@pytest.mark.parametrize(
    "value", ["\x00" * 10_000, "é" * 10_000, "urn:uuid:" + "9" * 5_000, "DROP TABLE\x00--"]
)
def test_a_refusal_names_the_field_and_never_repeats_the_value(value: str) -> None:
    for check, args in (
        (validation.canonical_uuid, ("org_id", value)),
        (validation.text, ("name", value)),
        (validation.idempotency_key, ("idempotency_key", value)),
        (validation.currency, ("currency", value)),
        (validation.time_zone, ("timezone", value)),
    ):
        refused = _refused(check, *args)
        assert str(refused).startswith(f"{args[0]}: ")
        assert value[:8] not in str(refused) and len(str(refused)) <= 300


def test_the_text_pattern_is_printable_text_that_is_not_blank_for_every_character() -> None:
    # One spelling of the rule serves the services and the gateway's document: it must be
    # exactly what str.isprintable and "not only white space" say, character by character.
    text = re.compile(validation.TEXT_PATTERN)
    for point in range(sys.maxunicode + 1):
        character = chr(point)
        printable = character.isprintable()
        assert bool(text.fullmatch(character)) == (printable and not character.isspace()), point
        assert bool(text.fullmatch(f"a{character}")) == printable, point


@given(st.text(max_size=20))
def test_text_is_accepted_when_printable_and_not_blank_and_only_then(value: str) -> None:
    expected = bool(value) and value.isprintable() and bool(value.strip())
    try:
        validation.text("name", value)
        accepted = True
    except InvalidField:
        accepted = False
    assert accepted == expected
    optional = re.fullmatch(validation.OPTIONAL_TEXT_PATTERN, value) is not None
    assert optional == (expected or value == "")


@pytest.mark.parametrize(
    ("written", "meant"),
    [
        ("2026-12-01T17:00:00Z", datetime(2026, 12, 1, 17, tzinfo=UTC)),
        ("2000-01-01T00:00:00+00:00", datetime(2000, 1, 1, tzinfo=UTC)),
        ("2099-12-31T23:59:59.123456789-00:00", datetime(2099, 12, 31, 23, 59, 59, 123456, UTC)),
    ],
)
def test_a_utc_time_in_the_calendar_is_read(written: str, meant: datetime) -> None:
    assert validation.utc_time("starts_at", written) == meant


@pytest.mark.parametrize(
    "written",
    [
        "2026-12-01T17:00:00+01:00",
        "2100-01-01T00:00:00Z",
        "1999-12-31T23:59:59Z",
        "2027-02-29T10:00:00Z",
        "2026-12-01T17:00:00Z\n",
        "2026-12-01T17:00:60Z",
        "2026-12-01t17:00:00z",
        "2026-12-01",
    ],
)
def test_a_time_not_in_utc_or_outside_the_calendar_is_refused(written: str) -> None:
    _refused(validation.utc_time, "starts_at", written)
