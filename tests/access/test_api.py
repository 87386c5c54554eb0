"""The AccessService over real gRPC: access without the PIN, the PIN as a recorded and
announced disclosure only while active, operators' views, and hostile fields refused at
the edge naming the field, never echoing the value."""

from __future__ import annotations

from collections.abc import Callable

import grpc
import pytest
from google.protobuf.message import Message
from liftfit.access.v1 import access_pb2 as pb
from liftfit.access.v1 import access_pb2_grpc
from liftfit.access.v1 import events_pb2 as aev

from servicekit.errors import error_info
from tests.access.harness import AccessHarness, new_id
from tests.support import tls


async def _refusal(call: object) -> tuple[grpc.StatusCode, str, dict[str, str]]:
    try:
        await call  # type: ignore[misc]
    except grpc.aio.AioRpcError as error:
        info = error_info(error)
        assert info is not None and info.domain == "liftfit.access"
        assert len(error.details() or "") <= 300
        return error.code(), info.reason, dict(info.metadata)
    raise AssertionError("the call succeeded")


async def test_the_pin_is_given_only_while_active_and_every_read_is_recorded(
    access: AccessHarness,
) -> None:
    await access.app.start()
    try:
        async with tls.channel(f"127.0.0.1:{access.app.grpc_port}") as channel:
            stub = access_pb2_grpc.AccessServiceStub(channel)
            booking = await access.confirm()
            org, booking_id = booking.org_id, booking.booking_id
            read = pb.DisclosePinRequest(
                org_id=org, booking_id=booking_id, user="notify", purpose="access_email"
            )
            code, reason, metadata = await _refusal(stub.DisclosePin(read))
            assert (code, reason, metadata) == (
                grpc.StatusCode.FAILED_PRECONDITION,
                "pin_not_active",
                {"state": "planned"},
            )
            await access.run_jobs()
            seen = await stub.GetAccess(pb.GetAccessRequest(org_id=org, booking_id=booking_id))
            assert (seen.state, seen.pin) == ("active", "")
            disclosed = await stub.DisclosePin(read)
            assert disclosed.pin == await access.pin(await access.grant(booking))
            [grant] = (await stub.ListGrants(pb.ListGrantsRequest(booking_id=booking_id))).grants
            assert (grant.state, grant.disclosures, grant.provision_state) == (
                "active",
                1,
                "created",
            )
            [announced] = await access.published(aev.PinDisclosed)
            assert (announced.booking_id, announced.slot_id) == (booking_id, booking.slot_id)

            other_org = pb.GetAccessRequest(org_id=new_id(), booking_id=booking_id)
            assert (await _refusal(stub.GetAccess(other_org)))[:2] == (
                grpc.StatusCode.NOT_FOUND,
                "not_found",
            )
            findings = await stub.ListDriftFindings(pb.ListDriftFindingsRequest())
            incidents = await stub.ListIncidents(pb.ListIncidentsRequest(state="open"))
            assert list(findings.findings) == [] and list(incidents.incidents) == []
    finally:
        await access.app.stop()


@pytest.mark.parametrize(
    ("request_of", "field"),
    [
        (lambda b, o: pb.GetAccessRequest(org_id=o, booking_id=f"urn:uuid:{b}"), "booking_id"),
        (lambda b, o: pb.GetAccessRequest(org_id=o.upper(), booking_id=b), "org_id"),
        (
            lambda b, o: pb.DisclosePinRequest(
                org_id=o, booking_id=b, user="a\x00", purpose="customer_view"
            ),
            "user",
        ),
        (
            lambda b, o: pb.DisclosePinRequest(
                org_id=o, booking_id=b, user="x" * 10_000, purpose="customer_view"
            ),
            "user",
        ),
        (
            lambda b, o: pb.DisclosePinRequest(
                org_id=o, booking_id=b, user="anna", purpose="x" * 5000
            ),
            "purpose",
        ),
        (lambda b, o: pb.ListGrantsRequest(booking_id=b + "\n"), "booking_id"),
        (lambda b, o: pb.ListDriftFindingsRequest(state="\x00' OR 1=1"), "state"),
        (lambda b, o: pb.ListIncidentsRequest(state="closed"), "state"),
    ],
)
async def test_hostile_fields_are_refused_naming_the_field(
    access: AccessHarness, request_of: Callable[[str, str], Message], field: str
) -> None:
    await access.app.start()
    try:
        async with tls.channel(f"127.0.0.1:{access.app.grpc_port}") as channel:
            stub = access_pb2_grpc.AccessServiceStub(channel)
            request = request_of(new_id(), new_id())
            rpc: Callable[[Message], object] = {
                "GetAccessRequest": stub.GetAccess,
                "DisclosePinRequest": stub.DisclosePin,
                "ListGrantsRequest": stub.ListGrants,
                "ListDriftFindingsRequest": stub.ListDriftFindings,
                "ListIncidentsRequest": stub.ListIncidents,
            }[type(request).__name__]  # type: ignore[assignment]
            code, reason, metadata = await _refusal(rpc(request))
            assert (code, reason, metadata) == (
                grpc.StatusCode.INVALID_ARGUMENT,
                "validation_error",
                {"field": field},
            )
    finally:
        await access.app.stop()
