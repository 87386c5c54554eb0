"""The soak's record of what it did to the platform: one JSON line per action, written and
flushed as it happens, so a run that crashes keeps every line up to the crash.

A line has the wall-clock time it was done (`at`, UTC) and the seconds since the journal
opened (`elapsed_s`), the fault's `kind` and `target`, the `action` (apply, heal, or a step
of healing everything), its `outcome` (ok or failed) and a `detail` saying what was done or
what went wrong; an action's line also has the time it began (`began_at`), and a line about
a planned fault its place in the schedule (`fault`, `planned_offset`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

OK, FAILED = "ok", "failed"
DETAIL_CHARS = 2000  # a failed restart's output holds every process's last log lines


class Journal:
    """Appends action lines to a file."""

    def __init__(
        self,
        path: Path,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.path = path
        self._clock = clock
        self._monotonic = monotonic
        self._opened = monotonic()
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file: IO[str] = path.open("a", encoding="utf-8")

    def write(
        self, kind: str, target: str, action: str, outcome: str, detail: str, **more: object
    ) -> None:
        line = {
            "at": self._clock().isoformat(timespec="milliseconds"),
            "elapsed_s": round(self._monotonic() - self._opened, 3),
            "kind": kind,
            "target": target,
            "action": action,
            "outcome": outcome,
            "detail": detail[-DETAIL_CHARS:],
            **more,
        }
        self._file.write(json.dumps(line) + "\n")
        self._file.flush()

    async def attempt(
        self, kind: str, target: str, action: str, act: Awaitable[str], **more: object
    ) -> bool:
        """Awaits `act` (which says what it did) and writes its line, with the time it began
        (`began_at`: stopping a broker takes seconds); a failure is written, never raised, so
        the soak goes on. True when it succeeded."""
        began = {"began_at": self._clock().isoformat(timespec="milliseconds"), **more}
        try:
            detail = await act
        except Exception as error:  # any injector's failure is a line of the record
            self.write(kind, target, action, FAILED, f"{type(error).__name__}: {error}", **began)
            return False
        self.write(kind, target, action, OK, detail, **began)
        return True

    def lines(self) -> list[dict[str, Any]]:
        """Every line written so far, oldest first."""
        with self.path.open(encoding="utf-8") as written:
            return [json.loads(line) for line in written if line.strip()]

    def close(self) -> None:
        self._file.close()
