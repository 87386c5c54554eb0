"""The gateway's drift checks that join two services' records (gateway_bff.drift), against
services answered in memory: what each check asks, in bounded pages, what it names, and a
service that does not answer."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

from liftfit.ops.v1 import operations_pb2 as opb

from gateway_bff import drift
from gateway_bff.problems import service_unavailable
from servicekit.protobuf import timestamp

BOUNDS = drift.DriftBounds(timedelta(minutes=5), timedelta(minutes=5))


def _state(booking_id: str, state: str, ago: timedelta) -> opb.BookingState:
    # Against the clock of the moment: a module-level "now" is minutes old in a long run.
    since = timestamp(datetime.now(UTC) - ago)
    return opb.BookingState(booking_id=booking_id, state=state, since=since)


class Services:
    """Each service's records; every ask is kept, to be looked at."""

    def __init__(self, records: dict[str, list[opb.BookingState]], down: str = "") -> None:
        self.records = records
        self.down = down
        self.asked: list[tuple[str, opb.ListBookingStatesRequest]] = []

    async def __call__(
        self, service: str, request: opb.ListBookingStatesRequest
    ) -> opb.ListBookingStatesResponse:
        self.asked.append((service, request))
        if service == self.down:
            raise service_unavailable(service)
        held = self.records.get(service, [])
        if request.booking_ids:
            found = [r for r in held if r.booking_id in request.booking_ids]
        else:
            now = datetime.now(UTC)
            before = request.before.ToDatetime(tzinfo=UTC) if request.HasField("before") else now
            found = [
                r
                for r in held
                if r.state == request.state and r.since.ToDatetime(tzinfo=UTC) < before
            ]
        return opb.ListBookingStatesResponse(bookings=found[: request.limit])


def _ids(n: int) -> list[str]:
    return [str(uuid.uuid4()) for _ in range(n)]


async def test_a_confirmed_booking_without_a_grant_is_named_once_past_the_bound() -> None:
    lost, granted, recent = _ids(3)
    services = Services(
        {
            "booking": [
                _state(lost, "confirmed", timedelta(minutes=6)),
                _state(granted, "confirmed", timedelta(minutes=6)),
                _state(recent, "confirmed", timedelta(minutes=1)),  # access has time yet
            ],
            "access": [_state(granted, "active", timedelta(minutes=6))],
        }
    )
    found, unavailable = await drift.cross_findings(services, BOUNDS)
    assert [(f.service, f.kind, f.subject_id) for f in found] == [
        ("access", "confirmed_without_access", lost)
    ]
    assert lost in found[0].problem and found[0].needs_human and found[0].state == "open"
    assert unavailable == []
    again, _ = await drift.cross_findings(services, BOUNDS)
    assert [f.finding_id for f in again] == [f.finding_id for f in found]  # stable id


async def test_an_ended_booking_with_a_pending_payment_is_named_once_past_the_bound() -> None:
    cancelled, expired, just_cancelled, live = _ids(4)
    services = Services(
        {
            "payment": [
                _state(b, "pending", timedelta(minutes=9))
                for b in (cancelled, expired, just_cancelled, live)
            ],
            "booking": [
                _state(cancelled, "cancelled", timedelta(minutes=6)),
                _state(expired, "expired", timedelta(minutes=7)),
                _state(just_cancelled, "cancelled", timedelta(minutes=1)),
                _state(live, "pending", timedelta(minutes=9)),
            ],
        }
    )
    found, _ = await drift.cross_findings(services, BOUNDS)
    named = sorted((f.service, f.kind, f.subject_id) for f in found)
    assert named == sorted(
        ("payment", "payment_open_for_ended_booking", b) for b in (cancelled, expired)
    )
    assert all("still pending" in f.problem for f in found)


async def test_many_candidates_are_asked_of_the_second_service_in_bounded_pages() -> None:
    many = _ids(drift.PAGE * 2 + 1)
    services = Services(
        {"booking": [_state(b, "confirmed", timedelta(minutes=6)) for b in many], "access": []}
    )
    found, _ = await drift.cross_findings(services, BOUNDS)
    assert len(found) == len(many)
    pages = [len(r.booking_ids) for s, r in services.asked if s == "access" and r.booking_ids]
    assert pages == [drift.PAGE, drift.PAGE, 1]
    assert all(r.limit == drift.CANDIDATES for _, r in services.asked)


async def test_a_service_that_does_not_answer_is_named_and_its_checks_are_not_made() -> None:
    lost = str(uuid.uuid4())
    services = Services(
        {"booking": [_state(lost, "confirmed", timedelta(minutes=6))]}, down="access"
    )
    found, unavailable = await drift.cross_findings(services, BOUNDS)
    assert (found, unavailable) == ([], ["access"])  # no grant unknown is not "no grant"


async def test_a_confirmed_booking_whose_payment_is_not_paid_is_named_past_the_bound() -> None:
    forged, paid, by_pass, recent = _ids(4)
    services = Services(
        {
            "booking": [
                _state(b, "confirmed", timedelta(minutes=6)) for b in (forged, paid, by_pass)
            ]
            + [_state(recent, "confirmed", timedelta(minutes=1))],
            "payment": [
                _state(forged, "pending", timedelta(minutes=9)),
                _state(paid, "paid", timedelta(minutes=6)),
                _state(recent, "pending", timedelta(minutes=9)),
            ],
            "access": [_state(b, "active", timedelta(minutes=5)) for b in (forged, paid, by_pass)],
        }
    )
    found, unavailable = await drift.cross_findings(services, BOUNDS)
    assert [(f.service, f.kind, f.subject_id) for f in found] == [
        ("booking", "confirmed_without_paid_payment", forged)
    ]
    assert forged in found[0].problem and "pending, not paid" in found[0].problem
    assert found[0].needs_human and unavailable == []


async def test_an_active_credential_for_a_booking_not_confirmed_is_named_past_the_bound() -> None:
    cancelled, unknown, confirmed, just_cancelled = _ids(4)
    services = Services(
        {
            "access": [
                _state(b, "active", timedelta(minutes=9))
                for b in (cancelled, unknown, confirmed, just_cancelled)
            ],
            "booking": [
                _state(cancelled, "cancelled", timedelta(minutes=6)),
                _state(confirmed, "confirmed", timedelta(minutes=1)),
                _state(just_cancelled, "cancelled", timedelta(minutes=1)),  # revocation runs
            ],
        }
    )
    found, _ = await drift.cross_findings(services, BOUNDS)
    named = {f.subject_id: f for f in found if f.kind == "credential_without_confirmed_booking"}
    assert sorted(named) == sorted([cancelled, unknown])
    assert "is cancelled since" in named[cancelled].problem
    assert "is unknown to it" in named[unknown].problem
    assert all(f.service == "access" for f in named.values())
