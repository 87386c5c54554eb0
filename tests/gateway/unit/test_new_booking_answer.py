"""The answer to a checkout (gateway_bff.routes.bookings.create_booking): a new booking's
payment and access are made after it from its events, so its answer asks neither service
and shows neither; a replayed checkout's answer asks, since by then they may exist. The
route is called with stand-ins for the services that note what they are asked."""

from __future__ import annotations

import json
import uuid
from types import SimpleNamespace
from typing import Any, cast

from fastapi import Request
from liftfit.booking.v1 import booking_pb2 as bpb
from liftfit.payment.v1 import payment_pb2 as ppb

from gateway_bff.bodies import NewBooking
from gateway_bff.edge import Caller
from gateway_bff.routes.bookings import create_booking
from gateway_bff.store.directory import Member

ORG = str(uuid.uuid4())
PAYMENT = ppb.Payment(payment_id=str(uuid.uuid4()), state="pending", checkout_url="https://pay")


class _Service:
    """One service: answers writes with `reply`, reads with `found`, and notes each call."""

    def __init__(self, reply: Any = None, found: Any = None) -> None:
        self.reply, self.found = reply, found
        self.asked: list[str] = []

    async def write(self, method: str, request: Any, user: str = "") -> Any:
        self.asked.append(method)
        return self.reply

    async def read(self, method: str, request: Any, user: str = "") -> Any:
        self.asked.append(method)
        return self.found


class _Services(dict[str, _Service]):
    booking = SimpleNamespace(Checkout="Checkout")
    payment = SimpleNamespace(GetPaymentForBooking="GetPaymentForBooking")
    access = SimpleNamespace(GetAccess="GetAccess")


def _services(replayed: bool) -> _Services:
    booking = bpb.Booking(
        booking_id=str(uuid.uuid4()), org_id=ORG, user="jana", state="pending", payment_mode="card"
    )
    reply = bpb.BookingReply(booking=booking, replayed=replayed)
    return _Services(booking=_Service(reply), payment=_Service(found=PAYMENT), access=_Service())


async def _checkout(services: _Services, key: str) -> dict[str, Any]:
    member = Member(ORG, "jana", "member", None, "cs", None)  # type: ignore[arg-type]
    request = SimpleNamespace(
        app=SimpleNamespace(state=SimpleNamespace(parts=SimpleNamespace(services=services))),
        state=SimpleNamespace(caller=Caller("jana", member)),
    )
    body = NewBooking(slot_id=str(uuid.uuid4()), payment_mode="card")
    answer = await create_booking(ORG, body, key, cast(Request, request))
    assert answer.status_code == 201
    shown: dict[str, Any] = json.loads(bytes(answer.body))
    return shown


async def test_a_new_bookings_answer_asks_neither_payment_nor_access() -> None:
    services = _services(replayed=False)
    shown = await _checkout(services, "first")
    assert services["booking"].asked == ["Checkout"]
    assert services["payment"].asked == [] and services["access"].asked == []
    assert (shown["state"], shown["payment"], shown["access"]) == ("pending", None, None)


async def test_a_replayed_checkouts_answer_shows_the_payment_made_since() -> None:
    services = _services(replayed=True)
    shown = await _checkout(services, "again")
    assert services["payment"].asked == ["GetPaymentForBooking"]
    assert shown["payment"]["checkout_url"] == "https://pay"
