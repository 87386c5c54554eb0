"""The mail provider's delivery log, asked by Message-ID: the port and its HTTP adapter.

The provider answers `GET <lookup url>?message_id=<id>` with a JSON object whose
`message_id` is the one asked, `status` is `received`, `not_received` or `cannot_tell`,
and `records_since` is the ISO 8601 time its log is complete from. Its answer is hostile
input: anything else (another id, an unknown status, a missing or naive time, a 4xx, no
answer) is read as `cannot_tell`, which settles nothing. The adapter never raises for
what the provider does.
"""

from __future__ import annotations

import abc
from datetime import datetime
from typing import Any

import httpx

from servicekit.provider_http import JsonExchange, UnknownOutcome
from services.notify.domain.recovery import LookupAnswer, Verdict

MAX_DETAIL = 300


class MailLookup(abc.ABC):
    @abc.abstractmethod
    async def find(self, message_id: str) -> LookupAnswer:
        """What the provider's log says of `message_id`; never raises for the provider."""

    async def aclose(self) -> None:
        return None


class HttpMailLookup(MailLookup):
    def __init__(self, url: str, timeout_s: float) -> None:
        client = httpx.AsyncClient(
            headers={"Accept-Encoding": "identity"},
            timeout=httpx.Timeout(timeout_s, connect=min(timeout_s, 2.0)),
        )
        self._url = url
        self._exchange = JsonExchange(client, "the mail lookup", metric_name="mail")

    async def find(self, message_id: str) -> LookupAnswer:
        try:
            status, document = await self._exchange.call(
                "GET", self._url, params={"message_id": message_id}, operation="lookup"
            )
        except UnknownOutcome as error:
            return _cannot_tell(f"no answer: {error}")
        if status >= 300:
            return _cannot_tell(f"refused: {status}")
        return read_answer(message_id, document)

    async def aclose(self) -> None:
        await self._exchange.aclose()


def read_answer(message_id: str, document: dict[str, Any]) -> LookupAnswer:
    """The provider's answer about `message_id`, validated; `cannot_tell` if it is not one."""
    if document.get("message_id") != message_id:
        return _cannot_tell("an answer about another message")
    status = document.get("status")
    if status == Verdict.RECEIVED.value:
        return LookupAnswer(Verdict.RECEIVED, "the provider took it")
    if status != Verdict.NOT_RECEIVED.value:
        return _cannot_tell(f"the provider cannot tell: {str(status)[:MAX_DETAIL]}")
    since = _aware_time(document.get("records_since"))
    if since is None:
        return _cannot_tell("a 'not received' without the time its log is complete from")
    return LookupAnswer(Verdict.NOT_RECEIVED, "the provider never received it", since)


def _aware_time(value: object) -> datetime | None:
    if not isinstance(value, str) or len(value) > 64:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else None


def _cannot_tell(detail: str) -> LookupAnswer:
    return LookupAnswer(Verdict.CANNOT_TELL, detail[:MAX_DETAIL])
