"""Logging an outage as an operator wants to read it: when it starts, a bounded reminder
while it lasts, and when it ends; never one line per attempt.

During a broker outage a worker retries several times a second; a line per retry buried
everything else in the log (about a hundred ERROR lines a second).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

REMINDER_EVERY_S = 30.0


class OutageLog:
    """One dependency as one worker sees it: up, or down since a moment."""

    def __init__(
        self,
        logger: logging.Logger,
        what: str,
        clock: Callable[[], float] = time.monotonic,
        remind_every_s: float = REMINDER_EVERY_S,
    ) -> None:
        self._log = logger
        self._what = what
        self._clock = clock
        self._remind_every_s = remind_every_s
        self._since: float | None = None
        self._last_line = 0.0

    @property
    def down(self) -> bool:
        return self._since is not None

    def failed(self, error: BaseException) -> None:
        """An attempt failed because the dependency is unreachable."""
        now = self._clock()
        if self._since is None:
            self._since = self._last_line = now
            self._log.warning("%s unreachable, waiting: %s", self._what, short_error(error))
        elif now - self._last_line >= self._remind_every_s:
            self._last_line = now
            self._log.warning(
                "%s still unreachable after %.0f s: %s",
                self._what,
                now - self._since,
                short_error(error),
            )

    def succeeded(self) -> None:
        """An attempt went through; ends the outage if there was one."""
        if self._since is not None:
            self._log.warning(
                "%s reachable again after %.1f s", self._what, self._clock() - self._since
            )
            self._since = None


def short_error(error: BaseException) -> str:
    """An error's type and the first line of its text, bounded, for one log line."""
    text = str(error).splitlines()[0] if str(error) else ""
    return f"{type(error).__name__}: {text[:200]}"
