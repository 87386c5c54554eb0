"""`make up`'s script starts the whole platform, and a booking walks it end to end.

`scripts/platform.sh up` runs as `make up` runs it, with this test's databases (empty:
the script migrates them), topics and free ports in its environment, and its pid files
and logs in a folder of its own (PLATFORM_STATE_DIR), so a developer's running platform
is neither used nor disturbed. Then over gRPC and the sandboxes' HTTP only: a studio and
a slot, a card checkout with a contact, the payment on the sandbox card gateway, the
booking confirmed, the grant active, the PIN read, the sandbox door opening with it inside
the window and not after it, and the confirmation and access mails in the mail sandbox,
the access mail with that PIN. Every process the script started is killed at the end.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

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

from servicekit import grpc_server
from servicekit.errors import reason_of
from tests.support.infrastructure import Infrastructure, create_database, drop_database
from tests.support.sandboxes import free_port
from tests.support.topics import PLATFORM_TOPICS, create_topics, delete_topics
from tests.support.waiting import eventually

REPO = Path(__file__).resolve().parents[2]
SERVICES = ("booking", "payment", "access", "notify")
DEVICE = "studio-a-door"  # platform.env's default lock


@dataclass
class Platform:
    env: dict[str, str]
    output: str

    def address(self, name: str) -> str:
        return self.env[name]

    def url(self, port: str) -> str:
        return f"http://127.0.0.1:{self.env[port]}"


def _environment(
    infra: Infrastructure, names: dict[str, str], prefix: str, state: Path
) -> dict[str, str]:
    ports = {name: str(free_port()) for name in ("card", "lock", "mail_http", "mail_smtp", "hook")}
    env = {**os.environ, "PLATFORM_STATE_DIR": str(state), "TOPIC_PREFIX": prefix}
    env["KAFKA_BOOTSTRAP"] = infra.kafka_bootstrap
    for service, name in names.items():
        owner = create_database(infra.pg_admin_dsn, name).replace(
            "postgresql://", "postgresql+psycopg://", 1
        )
        upper = service.upper()
        env[f"{upper}_MIGRATION_DATABASE_URL"] = owner
        env[f"{upper}_DATABASE_URL"] = _as_runtime_role(owner)
        env[f"{upper}_GRPC_ADDRESS"] = f"127.0.0.1:{free_port()}"
    receiver = f"127.0.0.1:{ports['hook']}"
    env |= {
        "PAYMENT_NOTIFICATION_RECEIVER_ADDRESS": receiver,
        "PAYMENT_RETURN_URL": f"http://{receiver}/v1/payments/return",
        "CARD_GATEWAY_PORT": ports["card"],
        "CARD_GATEWAY_URL": f"http://127.0.0.1:{ports['card']}",
        "CARD_GATEWAY_NOTIFY_URL": f"http://{receiver}/v1/payments/notifications",
        "LOCK_PROVIDER_PORT": ports["lock"],
        "LOCK_PROVIDER_URL": f"http://127.0.0.1:{ports['lock']}",
        "MAIL_SANDBOX_HTTP_PORT": ports["mail_http"],
        "MAIL_SANDBOX_SMTP_PORT": ports["mail_smtp"],
        "MAIL_SMTP_PORT": ports["mail_smtp"],
        "NOTIFY_ACCESS_ADDRESS": env["ACCESS_GRPC_ADDRESS"],
    }
    return env


def _as_runtime_role(owner_url: str) -> str:
    """The services run as the rows-only role the migrations grant (platform.env's)."""
    user_and_host = owner_url.split("://", 1)[1].split("@", 1)[1]
    return f"postgresql+psycopg://liftfit_app:liftfit_app@{user_and_host}"


def _kill_what_it_started(state: Path) -> None:
    for pid_file in (state / "run").glob("*.pid"):
        pid = int(pid_file.read_text().strip() or 0)
        if pid > 0:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


@pytest.fixture
async def platform(infra: Infrastructure, tmp_path: Path) -> AsyncIterator[Platform]:
    names = {service: f"up_{service}_{uuid.uuid4().hex[:8]}" for service in SERVICES}
    prefix = await create_topics(infra.kafka_bootstrap, PLATFORM_TOPICS)
    state = tmp_path / "state"
    env = _environment(infra, names, prefix, state)
    try:
        script = await asyncio.create_subprocess_exec(
            "bash",
            "scripts/platform.sh",
            "up",
            cwd=REPO,
            env=env,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
        out, _ = await asyncio.wait_for(script.communicate(), 300)
        output = out.decode(errors="replace")
        logs = "\n".join(
            p.read_text(errors="replace")[-3000:] for p in (state / "log").glob("*.log")
        )
        assert script.returncode == 0, f"{output}\n{logs}"
        yield Platform(env, output)
    finally:
        _kill_what_it_started(state)
        await delete_topics(infra.kafka_bootstrap, prefix, list(PLATFORM_TOPICS))
        for name in names.values():
            drop_database(infra.pg_admin_dsn, name)


def _at(moment: datetime) -> Timestamp:
    stamp = Timestamp()
    stamp.FromDatetime(moment)
    return stamp


async def test_make_up_starts_every_part_and_a_booking_walks_it_to_its_pin_and_mails(
    platform: Platform,
) -> None:
    for part in ("booking service", "payment service", "access service", "notify service"):
        assert part in platform.output
    assert (
        "(re)started: card-gateway lock-provider mail-sandbox booking payment access notify"
        in platform.output
    )
    email = f"walker-{uuid.uuid4().hex[:8]}@example.test"
    start = datetime.now(UTC).replace(minute=0, second=0, microsecond=0) + timedelta(hours=1)

    async with grpc_server.channel(platform.address("BOOKING_GRPC_ADDRESS")) as channel:
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

        async with grpc_server.channel(platform.address("PAYMENT_GRPC_ADDRESS")) as pay_channel:
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
            base_url=platform.url("CARD_GATEWAY_PORT"), timeout=10
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

    async with grpc_server.channel(platform.address("ACCESS_GRPC_ADDRESS")) as channel:
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
