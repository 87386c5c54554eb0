"""The mail sandbox's model: the messages it accepted, its delivery log and the faults.

Pure and synchronous: the SMTP sessions and the HTTP API run on one event loop and call
it without awaiting in between, so nothing needs a lock. Every message accepted is written
to the records (sandboxes/records.py) before the SMTP server answers 250, so a restarted
sandbox still has it, and still says `received` when asked about its Message-ID.
"""

from __future__ import annotations

import base64
import functools
import secrets
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from sandboxes.faults import Faults
from sandboxes.records import Records
from sandboxes.refusals import Refusal

from .parsing import MessageContent, message_id_of, read_message, readable

# The newest messages are kept; older ones are forgotten rather than filling the memory.
MAX_KEPT = 1000
# How many Message-IDs the lookup remembers; past it, "never received" is no longer certain.
MAX_REMEMBERED = 100_000


def utc_now() -> datetime:
    return datetime.now(UTC)


def new_message_id() -> str:
    return f"msg_{secrets.token_hex(12)}"


@dataclass(frozen=True)
class StoredMessage:
    id: str
    received_at: datetime
    mail_from: str
    rcpt_tos: tuple[str, ...]
    raw: bytes

    @functools.cached_property
    def message_id(self) -> str | None:
        # Read once, from the headers alone: a search by Message-ID compares every kept
        # message's (up to MAX_KEPT), and reading the header each time cost 0.85 ms a search.
        return message_id_of(self.raw)

    @functools.cached_property
    def content(self) -> MessageContent:
        # Read when first asked for, not as the mail arrives: reading the headers and
        # bodies cost about 2 ms a mail, most of the sandbox's CPU, and a test or a
        # customer reads few of the mails a platform sends.
        return read_message(self.raw)

    def to_api(self) -> dict[str, object]:
        content = self.content
        return {
            "id": self.id,
            "received_at": self.received_at.isoformat(timespec="milliseconds").replace(
                "+00:00", "Z"
            ),
            "mail_from": readable(self.mail_from),
            "rcpt_tos": [readable(rcpt) for rcpt in self.rcpt_tos],
            "message_id": self.message_id,
            "subject": content.header("Subject"),
            "from": content.header("From"),
            "to": content.header("To"),
            "date": content.header("Date"),
            "headers": [{"name": name, "value": value} for name, value in content.headers],
            "text": content.text,
            "html": content.html,
            "size": len(self.raw),
            "parse_error": content.parse_error,
        }

    def to_record(self) -> dict[str, object]:
        return {
            "id": self.id,
            "received_at": self.received_at.isoformat(),
            "mail_from": self.mail_from,
            "rcpt_tos": list(self.rcpt_tos),
            "raw": base64.b64encode(self.raw).decode(),
        }

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> StoredMessage:
        raw = base64.b64decode(record["raw"])
        received_at = datetime.fromisoformat(record["received_at"])
        rcpt_tos = tuple(record["rcpt_tos"])
        return cls(record["id"], received_at, record["mail_from"], rcpt_tos, raw)


@dataclass
class MailFaults(Faults):
    drop_after_data: int = 0
    refuse_next: int = 0
    refuse_code: int = 451
    refuse_message: str = ""  # empty: a standard text for the code
    refuse_at: Literal["data", "rcpt"] = "data"
    slow_next: int = 0
    slow_ms: int = 0
    lose_after_data: int = 0

    def refusal_reply(self) -> str:
        standard = (
            "4.3.0 Temporarily refused by the mail sandbox, try again later"
            if self.refuse_code < 500
            else "5.7.1 Refused by the mail sandbox"
        )
        return f"{self.refuse_code} {self.refuse_message or standard}"


@dataclass
class MailState:
    clock: Callable[[], datetime] = utc_now
    monotonic: Callable[[], float] = time.monotonic
    make_id: Callable[[], str] = new_message_id
    messages: deque[StoredMessage] = field(default_factory=lambda: deque(maxlen=MAX_KEPT))
    faults: MailFaults = field(default_factory=MailFaults)
    offline_until: float = 0.0
    # Every Message-ID taken since `records_since`, with its copies: a provider's delivery log.
    received: dict[str, int] = field(default_factory=dict)
    records_since: datetime = field(default_factory=utc_now)
    forgot: bool = False  # the log outgrew MAX_REMEMBERED: a miss proves nothing
    records: Records = field(default_factory=Records)

    def restore(self) -> None:
        """Read back the messages and the delivery log of the records."""
        for record in self.records.load("message"):
            message = StoredMessage.from_record(record)
            self.messages.append(message)
            self._remember(message.message_id)
        since = [record["records_since"] for record in self.records.load("log")]
        if since:
            self.records_since = datetime.fromisoformat(str(since[-1]))
        else:  # the first start on these records: they begin now
            self.records.put("log", "since", {"records_since": self.records_since.isoformat()})

    def store(self, mail_from: str, rcpt_tos: Sequence[str], raw: bytes) -> StoredMessage:
        message = StoredMessage(self.make_id(), self.clock(), mail_from, tuple(rcpt_tos), raw)
        self.records.put("message", message.id, message.to_record())
        self.messages.append(message)
        self._remember(message.message_id)
        return message

    def _remember(self, message_id: str | None) -> None:
        if message_id is None:
            return
        if message_id not in self.received and len(self.received) >= MAX_REMEMBERED:
            self.forgot = True
            return
        self.received[message_id] = self.received.get(message_id, 0) + 1

    def lookup(self, message_id: str) -> dict[str, object]:
        """What the sandbox can say about one Message-ID, as a provider's delivery log would."""
        since = self.records_since.isoformat(timespec="milliseconds").replace("+00:00", "Z")
        copies = self.received.get(message_id, 0)
        if copies:
            status = "received"
        elif self.forgot:
            status = "cannot_tell"
        else:
            status = "not_received"
        return {
            "message_id": message_id,
            "status": status,
            "copies": copies,
            "records_since": since,
        }

    def find(self, message_id: str | None, to: str | None) -> list[StoredMessage]:
        return [
            message
            for message in reversed(self.messages)
            if (message_id is None or message.message_id == message_id)
            and (to is None or to in message.rcpt_tos)
        ]

    def get(self, stored_id: str) -> StoredMessage:
        found = next((m for m in self.messages if m.id == stored_id), None)
        if found is None:
            raise Refusal(404, "message_not_found")
        return found

    def go_offline(self, milliseconds: int) -> None:
        self.offline_until = self.monotonic() + milliseconds / 1000

    def offline_ms_left(self) -> int:
        return max(0, round((self.offline_until - self.monotonic()) * 1000))

    def is_offline(self) -> bool:
        return self.monotonic() < self.offline_until

    def clear_faults(self) -> None:
        self.faults.clear()
        self.offline_until = 0.0

    def reset(self) -> None:
        self.messages.clear()
        self.received.clear()
        self.forgot = False
        self.records_since = self.clock()
        self.clear_faults()
        self.records.clear()
        self.records.put("log", "since", {"records_since": self.records_since.isoformat()})
