"""The pure part of settling an `unknown` delivery: reading the provider's answer, which
is hostile input, and the step it leads to."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from services.notify.adapters.mail_lookup import read_answer
from services.notify.domain.model import Delivery, DeliveryState, Template
from services.notify.domain.recovery import LookupAnswer, Step, Verdict, next_step

ID = "<0f9d7c1e-4d2a-5b8e-9c3f-6a1b2c3d4e5f@notify.liftfit>"
CREATED = datetime(2030, 1, 1, 9, 0, tzinfo=UTC)
BEFORE, AFTER = CREATED - timedelta(hours=1), CREATED + timedelta(seconds=1)


def delivery(state: DeliveryState = DeliveryState.UNKNOWN) -> Delivery:
    return Delivery(
        "key", "booking:1", Template.BOOKING_CONFIRMED, "a@x.test", "en", {}, state=state,
        created_at=CREATED,
    )  # fmt: skip


def never(since: datetime | None = BEFORE) -> LookupAnswer:
    return LookupAnswer(Verdict.NOT_RECEIVED, "never", since)


RECEIVED = LookupAnswer(Verdict.RECEIVED, "taken")
CANNOT_TELL = LookupAnswer(Verdict.CANNOT_TELL, "no answer")


@pytest.mark.parametrize(
    ("answer", "resent", "step"),
    [
        (RECEIVED, False, Step.MARK_SENT),
        (RECEIVED, True, Step.MARK_SENT),
        (never(), False, Step.SEND_AGAIN),
        (never(), True, Step.LEAVE),  # sent again once already: never a second time
        (never(AFTER), False, Step.ASK_LATER),  # the log began after the delivery
        (never(None), False, Step.ASK_LATER),
        (CANNOT_TELL, False, Step.ASK_LATER),
    ],
)
def test_the_step_an_answer_leads_to(answer: LookupAnswer, resent: bool, step: Step) -> None:
    assert next_step(delivery(), answer, resent) is step


@pytest.mark.parametrize("state", [s for s in DeliveryState if s is not DeliveryState.UNKNOWN])
def test_only_an_unknown_delivery_is_settled_by_the_log(state: DeliveryState) -> None:
    assert next_step(delivery(state), RECEIVED, False) is Step.LEAVE
    assert next_step(delivery(state), never(), False) is Step.LEAVE


def test_answers_that_say_something_are_read() -> None:
    found = read_answer(ID, {"message_id": ID, "status": "received", "copies": 1})
    assert found.verdict is Verdict.RECEIVED
    missing = read_answer(
        ID, {"message_id": ID, "status": "not_received", "records_since": "2030-01-01T08:00Z"}
    )
    assert (missing.verdict, missing.records_since) == (Verdict.NOT_RECEIVED, BEFORE)


@pytest.mark.parametrize(
    "document",
    [
        {},
        {"data": []},
        {"message_id": "<other@notify.liftfit>", "status": "received"},
        {"message_id": ID, "status": "RECEIVED"},
        {"message_id": ID, "status": ["received"]},
        {"message_id": ID, "status": None},
        {"message_id": ID, "status": "cannot_tell"},
        {"message_id": ID, "status": "not_received"},
        {"message_id": ID, "status": "not_received", "records_since": "2030-01-01T08:00"},
        {"message_id": ID, "status": "not_received", "records_since": "yesterday"},
        {"message_id": ID, "status": "not_received", "records_since": 1893488400},
        {"message_id": ID, "status": "not_received", "records_since": "2" * 10_000},
        {"message_id": ID, "status": "x" * 100_000},
    ],
)
def test_garbage_settles_nothing(document: dict[str, Any]) -> None:
    answer = read_answer(ID, document)
    assert answer.verdict is Verdict.CANNOT_TELL
    assert len(answer.detail) <= 300
