from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Money:
    """An integer amount in minor units and its ISO 4217 currency."""

    amount: int
    currency: str
