"""The soak's history: one JSON line per operation a customer tried, as the answer came.

The workload appends a line after each answer (or after giving up on one: status 0); the
auditor reads them back to check that every accepted operation is reflected in the stores.
A writer killed mid-line leaves a truncated last line, which the reader skips and reports;
any other line it cannot read is reported with its number, never raised.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from datetime import datetime
from enum import StrEnum
from pathlib import Path
from typing import IO, Any, Self

NO_ANSWER = 0  # the status of an operation whose answer never came (time-out, reset)


class Kind(StrEnum):
    CHECKOUT_CARD = "checkout_card"
    CHECKOUT_PASS = "checkout_pass"
    BUY_PASS = "buy_pass"
    CANCEL = "cancel"
    RESCHEDULE = "reschedule"
    READ_PIN = "read_pin"
    TRY_DOOR = "try_door"
    PAY = "pay"
    NOTIFY_AGAIN = "card_notification_again"  # a card notification delivered once more


@dataclass(frozen=True)
class Operation:
    """One request and what its answer named; ids the answer did not name are None.

    For a reschedule `slot_id` is the slot moved to; for `pay`, `payment_id` is the card
    gateway's id of the payment paid."""

    at: datetime
    customer: str
    kind: Kind
    status: int
    key: str | None = None
    org_id: str | None = None
    booking_id: str | None = None
    order_id: str | None = None
    payment_id: str | None = None
    slot_id: str | None = None

    @property
    def accepted(self) -> bool:
        return 200 <= self.status < 300

    def to_line(self) -> str:
        record = asdict(self) | {"at": self.at.isoformat(), "kind": self.kind.value}
        return json.dumps(record, separators=(",", ":")) + "\n"

    @classmethod
    def from_record(cls, record: Any) -> Self:
        """The operation a decoded line holds; ValueError naming what is wrong."""
        if not isinstance(record, dict):
            raise ValueError("not a JSON object")
        at = datetime.fromisoformat(_required(record, "at"))
        if at.tzinfo is None:
            raise ValueError("at: no time zone")
        status = record.get("status")
        if not isinstance(status, int) or isinstance(status, bool) or not 0 <= status < 1000:
            raise ValueError(f"status: {status!r}")
        return cls(
            at=at,
            customer=_required(record, "customer"),
            kind=Kind(_required(record, "kind")),
            status=status,
            **{name: _text(record, name) for name in _IDS},
        )


_IDS = ("key", "org_id", "booking_id", "order_id", "payment_id", "slot_id")
MAX_FIELD = 512


def _text(record: dict[str, Any], name: str) -> str | None:
    return None if record.get(name) is None else _required(record, name)


def _required(record: dict[str, Any], name: str) -> str:
    value = record.get(name)
    if not isinstance(value, str) or not value or len(value) > MAX_FIELD:
        raise ValueError(f"{name}: {str(value)[:80]!r}")
    return value


@dataclass(frozen=True)
class UnreadableLine:
    number: int  # 1-based
    why: str
    text: str  # the start of the line, for the report


@dataclass
class History:
    operations: list[Operation] = field(default_factory=list)
    unreadable: list[UnreadableLine] = field(default_factory=list)
    truncated_tail: bool = False  # the last line had no end: a writer stopped mid-line


class HistoryWriter:
    """Appends operations, each line written and flushed whole."""

    def __init__(self, path: Path) -> None:
        self._file: IO[str] = path.open("a", encoding="utf-8")

    def write(self, operation: Operation) -> None:
        self._file.write(operation.to_line())
        self._file.flush()

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def read_history(path: Path) -> History:
    history = History()
    if not path.exists():
        return history
    raw = path.read_bytes()
    lines = raw.split(b"\n")
    for number, line in _numbered(lines):
        last = number == len(lines)  # after the final newline, or a line cut short
        try:
            history.operations.append(Operation.from_record(json.loads(line)))
        except (ValueError, KeyError) as why:  # JSONDecodeError and bad UTF-8 are ValueErrors
            if last:
                history.truncated_tail = True
            else:
                text = line[:120].decode(errors="replace")
                history.unreadable.append(UnreadableLine(number, str(why)[:200], text))
    return history


def _numbered(lines: list[bytes]) -> Iterator[tuple[int, bytes]]:
    for number, line in enumerate(lines, start=1):
        if line.strip():
            yield number, line
