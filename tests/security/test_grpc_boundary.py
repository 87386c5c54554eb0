"""Every service's gRPC port, attacked as a neighbour on the same network would, on the
platform as `make up` starts it (its processes, its certificates from .local/tls): with no
certificate, in plaintext, and with one service's own certificate used for what the table
(deploy/boundary.yaml) does not give it. The legitimate callers' calls get through to the
service, which answers them on their merits (an unknown booking is not found).
"""

from __future__ import annotations

import uuid
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from liftfit.access.v1 import access_pb2, access_pb2_grpc
from liftfit.booking.v1 import booking_pb2, booking_pb2_grpc
from liftfit.ops.v1 import operations_pb2, operations_pb2_grpc

from servicekit.errors import reason_of
from tests.support import tls
from tests.support.platform import Platform

SERVICES = ("booking", "payment", "access", "notify")
DENIED = (grpc.StatusCode.PERMISSION_DENIED, "caller_not_allowed")


def _target(platform: Platform, service: str) -> str:
    return platform.address(f"{service.upper()}_GRPC_ADDRESS")


async def _outcome(call: Any) -> tuple[grpc.StatusCode, str]:
    try:
        await call
    except grpc.aio.AioRpcError as error:
        return error.code(), reason_of(error)
    return grpc.StatusCode.OK, ""


@pytest.mark.parametrize("service", SERVICES)
async def test_no_service_answers_a_client_without_a_certificate(
    platform: Platform, service: str
) -> None:
    authority = (tls.ROOT / "gateway" / "ca.crt").read_bytes()
    target, check = _target(platform, service), health_pb2.HealthCheckRequest()
    async with grpc.aio.secure_channel(target, grpc.ssl_channel_credentials(authority)) as bare:
        anonymous = await _outcome(health_pb2_grpc.HealthStub(bare).Check(check, timeout=5))
    async with grpc.aio.insecure_channel(target) as plaintext:
        plain = await _outcome(health_pb2_grpc.HealthStub(plaintext).Check(check, timeout=5))
    async with tls.channel(target, "operator-tools") as certified:
        answer = await health_pb2_grpc.HealthStub(certified).Check(check, timeout=5)
    assert (anonymous[0], plain[0]) == (grpc.StatusCode.UNAVAILABLE,) * 2
    assert answer.status == health_pb2.HealthCheckResponse.SERVING


@pytest.mark.parametrize("service", SERVICES)
async def test_notify_may_call_no_operator_method(platform: Platform, service: str) -> None:
    async with tls.channel(_target(platform, service), "notify") as channel:
        ops = operations_pb2_grpc.OperationsServiceStub(channel)
        listed = await _outcome(ops.ListOutbox(operations_pb2.ListOutboxRequest(), timeout=5))
        replay = operations_pb2.ReplayEffectRequest(
            effect_id=str(uuid.uuid4()), operator="mallory", reason="forged"
        )
        replayed = await _outcome(ops.ReplayEffect(replay, timeout=5))
    assert (listed, replayed) == (DENIED, DENIED)


async def test_notify_may_not_create_a_space(platform: Platform) -> None:
    async with tls.channel(_target(platform, "booking"), "notify") as channel:
        stub = booking_pb2_grpc.BookingServiceStub(channel)
        request = booking_pb2.CreateSpaceRequest(name="Forged studio", timezone="UTC")
        assert await _outcome(stub.CreateSpace(request, timeout=5)) == DENIED


def _disclose(user: str) -> access_pb2.DisclosePinRequest:
    return access_pb2.DisclosePinRequest(
        org_id=str(uuid.uuid4()), booking_id=str(uuid.uuid4()), user=user, purpose="access_email"
    )


async def test_only_notify_and_the_gateway_may_read_a_pin(platform: Platform) -> None:
    target = _target(platform, "access")
    async with tls.channel(target, "booking") as booking:
        by_booking = await _outcome(
            access_pb2_grpc.AccessServiceStub(booking).DisclosePin(_disclose("booking"), timeout=5)
        )
    async with tls.channel(target, "notify") as notify:
        stub = access_pb2_grpc.AccessServiceStub(notify)
        for_someone = await _outcome(stub.DisclosePin(_disclose("alice"), timeout=5))
        own = await _outcome(stub.DisclosePin(_disclose("notify"), timeout=5))
    async with tls.channel(target, "gateway") as gateway:
        for_alice = await _outcome(
            access_pb2_grpc.AccessServiceStub(gateway).DisclosePin(_disclose("alice"), timeout=5)
        )
    assert (by_booking, for_someone) == (DENIED, DENIED)
    # Through to the service, which knows no such booking: the call was let in.
    assert own[0] is not grpc.StatusCode.PERMISSION_DENIED, own
    assert for_alice[0] is not grpc.StatusCode.PERMISSION_DENIED, for_alice
    assert {own[1], for_alice[1]} <= {"not_found", "pin_not_active"}


async def test_a_user_named_by_the_operators_tools_is_refused(platform: Platform) -> None:
    cancel = booking_pb2.CancelBookingRequest(
        org_id=str(uuid.uuid4()),
        user="alice",
        idempotency_key="forged-cancel",
        booking_id=str(uuid.uuid4()),
    )
    async with tls.channel(_target(platform, "booking"), "operator-tools") as tools:
        refused = await _outcome(booking_pb2_grpc.BookingServiceStub(tools).CancelBooking(cancel))
        listed = await _outcome(
            operations_pb2_grpc.OperationsServiceStub(tools).ListOutbox(
                operations_pb2.ListOutboxRequest(limit=1), timeout=5
            )
        )
    assert refused == DENIED
    assert listed == (grpc.StatusCode.OK, "")
