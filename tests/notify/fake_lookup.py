"""A provider lookup that answers what a test tells it and counts the questions."""

from __future__ import annotations

from services.notify.adapters.mail_lookup import MailLookup
from services.notify.domain.recovery import LookupAnswer


class FakeMailLookup(MailLookup):
    def __init__(self, answer: LookupAnswer) -> None:
        self.answer = answer
        self.asked: list[str] = []

    async def find(self, message_id: str) -> LookupAnswer:
        self.asked.append(message_id)
        return self.answer
