"""`make up`'s script starts the whole platform, and a booking walks it end to end.

`scripts/platform.sh up` runs as `make up` runs it (the suites' one shared platform,
tests/conftest.py), with its own databases (empty: the script migrates them), topics and
free ports in its environment, and its pid files and logs in a folder of its own
(PLATFORM_STATE_DIR), so a developer's running platform is neither used nor disturbed;
what the script printed when it started everything is `platform.output`. Then over gRPC
and the sandboxes' HTTP only: a studio and a slot, a card checkout with a contact, the
payment on the sandbox card gateway, the booking confirmed, the grant active, the PIN read,
the sandbox door opening with it inside the window and not after it, and the confirmation
and access mails in the mail sandbox, the access mail with that PIN. Every process the
script started is killed when the session ends.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import grpc
import httpx
import pytest
from google.protobuf.timestamp_pb2 import Timestamp
from liftfit.access.v1 import access_pb2 as apb
from liftfit.access.v1 import access_pb2_grpc
from liftfit.booking.v1 import booking_pb2 as bpb
from liftfit.booking.v1 import booking_pb2_grpc
from liftfit.booking.v1 import events_pb2 as bev
from liftfit.payment.v1 import payment_pb2 as ppb
from liftfit.payment.v1 import payment_pb2_grpc

from servicekit.errors import reason_of
from tests.support import tls
from tests.support.platform import Platform
from tests.support.sandboxes import SandboxAuth
from tests.support.waiting import eventually

DEVICE = "studio-a-door"  # platform.env's default lock


@pytest.fixture
def platform(shared_platform: Platform) -> Platform:
    """The suites' shared platform, not tests/e2e's in-process one."""
    return shared_platform


def _at(moment: datetime) -> Timestamp:
    stamp = Timestamp()
    stamp.FromDatetime(moment)
    return stamp


async def test_make_up_starts_every_part_and_a_booking_walks_it_to_its_pin_and_mails(
    platform: Platform,
) -> None:
    for part in ("booking service", "payment service", "access service", "notify service"):
        assert part in platform.output
    assert f"gateway (public HTTP API)   {platform.gateway}" in platform.output
    assert f"Jaeger UI (traces)          {platform.jaeger}/" in platform.output
    assert f"Jaeger query API            {platform.jaeger}/api/traces/" in platform.output
    for page in ("/web/cs/", "/web/en/", "/web/en/console/", "/docs"):
        assert f"{platform.gateway}{page}" in platform.output
    assert (
        "(re)started: jaeger card-gateway lock-provider mail-sandbox booking payment access"
        " notify gateway prometheus" in platform.output
    )
    prometheus = platform.env["PROMETHEUS_ADDRESS"]
    assert f"Prometheus                  http://{prometheus}" in platform.output
    email = f"walker-{uuid.uuid4().hex[:8]}@example.test"
    start = datetime.now(UTC).replace(minute=0, second=0, microsecond=0) + timedelta(hours=1)

    async with tls.channel(platform.address("BOOKING_GRPC_ADDRESS")) as channel:
        booking = booking_pb2_grpc.BookingServiceStub(channel)
        space = await booking.CreateSpace(bpb.CreateSpaceRequest(name="Walk", timezone="UTC"))
        new = bpb.NewSlot(
            starts_at=_at(start),
            ends_at=_at(start + timedelta(minutes=55)),
            price=bev.Money(amount=45000, currency="CZK"),
        )
        [slot] = (
            await booking.CreateSlots(bpb.CreateSlotsRequest(space_id=space.space_id, slots=[new]))
        ).slots
        org = str(uuid.uuid4())
        checkout = bpb.CheckoutRequest(
            org_id=org,
            user="walker",
            idempotency_key="walk-1",
            slot_id=slot.slot_id,
            party_size=1,
            payment_mode="card",
            contact=bev.Contact(email=email, locale="en"),
        )
        booked = (await booking.Checkout(checkout)).booking

        async with tls.channel(platform.address("PAYMENT_GRPC_ADDRESS")) as pay_channel:
            payments = payment_pb2_grpc.PaymentServiceStub(pay_channel)

            async def at_gateway() -> str | None:
                request = ppb.GetPaymentForBookingRequest(booking_id=booked.booking_id)
                try:
                    return (
                        await payments.GetPaymentForBooking(request)
                    ).provider_payment_id or None
                except grpc.aio.AioRpcError:
                    return None

            provider_id = await eventually(at_gateway, 60)
        async with httpx.AsyncClient(
            base_url=platform.url("CARD_GATEWAY_PORT"), auth=SandboxAuth(), timeout=10
        ) as card:
            paid = await card.post(
                f"/_sandbox/payments/{provider_id}/settle", json={"outcome": "succeed"}
            )
            paid.raise_for_status()

        async def confirmed() -> bool:
            found = await booking.GetBooking(
                bpb.GetBookingRequest(org_id=org, booking_id=booked.booking_id)
            )
            return found.state == "confirmed"

        await eventually(confirmed, 60)

    async with tls.channel(platform.address("ACCESS_GRPC_ADDRESS")) as channel:
        access = access_pb2_grpc.AccessServiceStub(channel)
        read = apb.DisclosePinRequest(
            org_id=org, booking_id=booked.booking_id, user="walker", purpose="customer_view"
        )

        async def pin() -> str | None:
            try:
                return (await access.DisclosePin(read)).pin or None
            except grpc.aio.AioRpcError as error:
                if reason_of(error) in ("pin_not_active", "not_found"):
                    return None
                raise

        the_pin = await eventually(pin, 60)

    async with httpx.AsyncClient(base_url=platform.url("LOCK_PROVIDER_PORT"), timeout=10) as lock:
        for at, opens in (
            (start + timedelta(minutes=5), True),
            (start + timedelta(hours=2), False),
        ):
            door = {"device_id": DEVICE, "pin": the_pin, "at": at.isoformat()}
            answer = await lock.post("/_sandbox/door", json=door)
            answer.raise_for_status()
            assert answer.json()["opens"] is opens, at

    async with httpx.AsyncClient(
        base_url=platform.url("MAIL_SANDBOX_HTTP_PORT"), timeout=10
    ) as mail:

        async def both_mails() -> list[dict[str, str]] | None:
            found: list[dict[str, str]] = (
                await mail.get("/messages", params={"to": email})
            ).json()["data"]
            assert len(found) <= 2, [m["subject"] for m in found]
            return found if len(found) == 2 else None

        mails = await eventually(both_mails, 60)
    assert sum(the_pin in m["text"] for m in mails) == 1  # the access mail, and only it
