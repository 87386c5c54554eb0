"""The notify service's side of the operators' view (servicekit.operations): a booking's
mail deliveries as this service holds them, and the deliveries that wait for a person or
for a send that is not running. Never a PIN: no table here holds one."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta

from sqlalchemy import ColumnElement, select
from sqlalchemy.ext.asyncio import AsyncSession

from servicekit.operations.hooks import OPEN, BookingRecord, DriftFinding, live_finding
from services.notify.adapters import orm
from services.notify.domain.model import DeliveryState

SERVICE = "notify"
# A send holds its delivery `sending` for one SMTP exchange, bounded by its time-outs (well
# under a minute); a later try of the job finds it and calls it unknown. Still sending
# after this long, no try is coming.
SENDING_TOO_LONG = timedelta(minutes=10)
MOST = 500  # findings of each kind listed


async def describe_booking(session: AsyncSession, booking_id: str) -> BookingRecord:
    """A summary of the booking's deliveries' states ("queued 1, sent 2") and each delivery
    (`delivery:<key>`: `<template> <state>`). Its events, send jobs and incidents are keyed
    by the delivery keys."""
    d = orm.deliveries.c
    query = (
        select(d.delivery_key, d.template, d.state)
        .where(d.booking_id == booking_id)
        .order_by(d.created_at, d.delivery_key)
    )
    rows = (await session.execute(query)).all()
    if not rows:
        return BookingRecord(known=False, subjects=[booking_id])
    states = Counter(str(row.state) for row in rows)
    return BookingRecord(
        known=True,
        subjects=[booking_id, *(str(row.delivery_key) for row in rows)],
        state=", ".join(f"{state} {n}" for state, n in sorted(states.items())),
        facts={f"delivery:{row.delivery_key}": f"{row.template} {row.state}" for row in rows},
    )


async def drift_findings(session: AsyncSession, state: str | None) -> list[DriftFinding]:
    """Read live from the deliveries, never stored or repaired here, so each is `open`
    while the table shows it: mails whose outcome is unknown or that failed, which wait for
    an operator's DecideDelivery, and mails left `sending` with no try coming."""
    if state not in (None, OPEN):
        return []
    d = orm.deliveries.c
    stale = datetime.now(UTC) - SENDING_TOO_LONG
    return [
        *await _listed(
            session,
            d.state == DeliveryState.UNKNOWN.value,
            "delivery_outcome_unknown",
            "the mail server may or may not have the mail: the connection ended after the"
            " data went out, or a send was cut short",
            "the mail server, which cannot be asked: code never sends such a mail again",
            "none by code: an operator decides with DecideDelivery (send_again or mark_sent)",
        ),
        *await _listed(
            session,
            d.state == DeliveryState.FAILED.value,
            "delivery_failed",
            "the mail server refused the mail for good or every try was used up, or an"
            " access mail found no active grant to read its PIN from",
            "the mail server's answers",
            "none by code: an operator may send it again with DecideDelivery (send_again)",
        ),
        *await _listed(
            session,
            (d.state == DeliveryState.SENDING.value) & (d.updated_at < stale),
            "sending_too_long",
            "the delivery has been sending for over ten minutes: the send that marked it is"
            " gone and no try has looked at it since",
            "the mail server, which cannot be asked whether it has the mail",
            "none by code until a try of its send job runs; see the delivery's effects",
        ),
    ]


async def _listed(
    session: AsyncSession,
    condition: ColumnElement[bool],
    kind: str,
    problem: str,
    truth: str,
    repair: str,
) -> list[DriftFinding]:
    d = orm.deliveries.c
    query = select(d.delivery_key, d.updated_at).where(condition).order_by(d.updated_at)
    return [
        live_finding(SERVICE, kind, str(row.delivery_key), row.updated_at, problem, truth, repair)
        for row in await session.execute(query.limit(MOST))
    ]
