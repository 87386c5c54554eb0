"""A studio's days as its customers see them: the test studios are in Prague."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

from tests.gateway.api import Studio

PRAGUE = ZoneInfo("Europe/Prague")


def local(iso: str) -> datetime:
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).astimezone(PRAGUE)


def first_day(studio: Studio) -> tuple[str, list[dict[str, object]]]:
    """The studio's first day with slots, and those slots (as the API made them)."""
    day = local(str(studio.slots[0]["starts_at"])).date()
    return day.isoformat(), [s for s in studio.slots if local(str(s["starts_at"])).date() == day]
