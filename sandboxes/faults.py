"""Faults switched on through a sandbox's control API.

A sandbox subclasses ``Faults`` with one field per fault. Counting faults ("the next n
calls") are taken one use at a time by the call they apply to, so a test states exactly
how many calls misbehave.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields


@dataclass
class Faults:
    def merge(self, changes: Mapping[str, object]) -> None:
        """Set the given faults; the others keep their values."""
        known = {f.name for f in fields(self)}
        for name, value in changes.items():
            if name not in known:
                raise KeyError(name)
            setattr(self, name, value)

    def clear(self) -> None:
        # In place: the parts of a sandbox that read the faults hold this very object.
        for f in fields(self):
            setattr(self, f.name, f.default)

    def take(self, counter: str) -> bool:
        """Consume one use of a counting fault; True when the fault applies to this call."""
        remaining: int = getattr(self, counter)
        if remaining <= 0:
            return False
        setattr(self, counter, remaining - 1)
        return True

    def to_api(self) -> dict[str, object]:
        return {f.name: getattr(self, f.name) for f in fields(self)}
