"""The auditor's reading of the sandboxes' answers: a hostile record is reported, the rest
are read."""

from __future__ import annotations

from chaos.auditor import providers
from chaos.auditor.findings import Violation

GOOD_CHARGE = {
    "id": "pay_1",
    "reference": "r",
    "state": "paid",
    "amount": 100,
    "currency": "CZK",
    "refunded_amount": 0,
}


def test_records_of_the_wrong_shape_are_reported_and_the_others_read() -> None:
    problems: list[Violation] = []
    answer = {
        "data": [
            GOOD_CHARGE,
            GOOD_CHARGE | {"amount": "100"},
            GOOD_CHARGE | {"amount": True},
            GOOD_CHARGE | {"reference": "x" * 10_000},
            "not an object",
            {k: v for k, v in GOOD_CHARGE.items() if k != "state"},
        ]
    }

    charges = providers.parsed_records("card_gateway", answer, providers.charge, problems)

    assert [c.charge_id for c in charges] == ["pay_1"]
    assert [p.ids["record"] for p in problems] == [f"record {i}" for i in (1, 2, 3, 4, 5)]
    assert {p.invariant for p in problems} == {"provider_records_readable"}


def test_an_answer_without_a_list_is_reported() -> None:
    problems: list[Violation] = []

    answers: list[object] = [None, [], {"data": {"a": 1}}, "<html>"]
    for answer in answers:
        assert (
            providers.parsed_records("lock_provider", answer, providers.lock_code, problems) == []
        )

    assert len(problems) == 4


def test_a_door_entry_that_contradicts_itself_or_has_no_zone_is_reported() -> None:
    problems: list[Violation] = []
    entry = {
        "device_id": "d",
        "pin": "1234",
        "at": "2030-01-01T10:00:00Z",
        "wall": "2030-01-01T10:00:00Z",
        "opens": True,
        "access_code_id": "c1",
    }
    answer = {
        "data": [
            entry,
            entry | {"opens": False},
            entry | {"at": "2030-01-01T10:00:00"},
            entry | {"wall": "soon"},
        ]
    }

    read = providers.parsed_records("lock_provider", answer, providers.door_try, problems)

    assert [t.code_id for t in read] == ["c1"]
    assert len(problems) == 3


def test_the_mail_lookup_counts_copies_and_cannot_tell_is_none() -> None:
    assert providers._lookup_copies({"status": "received", "copies": 2}) == 2
    assert providers._lookup_copies({"status": "not_received"}) == 0
    assert providers._lookup_copies({"status": "cannot_tell"}) is None
    assert providers._lookup_copies({"status": "received", "copies": "2"}) is None
