"""Bounded retry with exponential backoff, shared by the relay, the inbox and the timers."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, bindparam, func


@dataclass(frozen=True)
class RetryPolicy:
    """After max_attempts a piece of work is parked as failed, visible to operators."""

    max_attempts: int = 6
    base_delay_s: float = 0.5
    max_delay_s: float = 60.0

    def delay_after(self, attempts: int) -> float:
        """The wait before the next attempt, once `attempts` attempts have failed."""
        return float(min(self.max_delay_s, self.base_delay_s * 2 ** max(0, attempts - 1)))

    def exhausted(self, attempts: int) -> bool:
        return attempts >= self.max_attempts


def seconds_from_now(seconds: float) -> ColumnElement[Any]:
    """now() plus a delay, computed by the database so every process agrees on the clock."""
    return func.now() + func.make_interval(0, 0, 0, 0, 0, 0, bindparam("delay_s", seconds))
