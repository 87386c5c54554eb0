"""The contract's way of writing a moment, shared by the answers and the directory."""

from __future__ import annotations

from datetime import UTC, datetime


def rfc3339(when: datetime) -> str:
    """The contract's time: RFC 3339 in UTC, `Z`, fractions only when there are any."""
    when = when.astimezone(UTC)
    spec = "seconds" if not when.microsecond else "microseconds"
    return when.isoformat(timespec=spec).replace("+00:00", "Z")
