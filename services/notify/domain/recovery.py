"""What a provider's delivery log says about an `unknown` delivery, and what follows.

A mail whose final SMTP reply never came may or may not have been taken. A provider that
keeps a log of what it took can settle it: the Message-ID (which carries the delivery
key) is there, so the mail was taken and the delivery is `sent`; or the log is certain it
never came, so one more mail under the same Message-ID cannot be a second copy. A
certain "never" counts only when the log covers the whole life of the delivery, and the
recovery sends again at most once: should that try end unknown too, a person decides.
Anything else (no answer, an answer that makes no sense, a log that cannot tell) leaves
the delivery `unknown` with its incident, and it is asked again later, a bounded number
of times.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from services.notify.domain.model import Delivery, DeliveryState


class Verdict(StrEnum):
    RECEIVED = "received"
    NOT_RECEIVED = "not_received"  # certain, for every mail taken since `records_since`
    CANNOT_TELL = "cannot_tell"  # no answer, a garbled one, or a log that cannot say


@dataclass(frozen=True)
class LookupAnswer:
    verdict: Verdict
    detail: str  # what the provider said, or why nothing usable came
    records_since: datetime | None = None  # where a NOT_RECEIVED is certain from


class Step(StrEnum):
    MARK_SENT = "mark_sent"
    SEND_AGAIN = "send_again"
    ASK_LATER = "ask_later"
    LEAVE = "leave"  # nothing the lookup can settle: a person decides, or it is settled


def next_step(delivery: Delivery, answer: LookupAnswer, resent_once: bool) -> Step:
    if delivery.state is not DeliveryState.UNKNOWN:
        return Step.LEAVE
    if answer.verdict is Verdict.RECEIVED:
        return Step.MARK_SENT
    if answer.verdict is Verdict.NOT_RECEIVED and _covers(answer, delivery):
        return Step.LEAVE if resent_once else Step.SEND_AGAIN
    return Step.ASK_LATER


def _covers(answer: LookupAnswer, delivery: Delivery) -> bool:
    """The log started before the delivery existed, so before any try at sending it."""
    since, created = answer.records_since, delivery.created_at
    return since is not None and created is not None and since <= created
