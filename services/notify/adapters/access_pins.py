"""The access service's PIN, read at send time for the access mail (DisclosePin with the
purpose access_email). The PIN lives only in the answer and the mail made from it: it is
never stored here, logged, or put into an event, a timer or an error message."""

from __future__ import annotations

import abc
from dataclasses import dataclass
from datetime import UTC, datetime

import grpc
from liftfit.access.v1 import access_pb2, access_pb2_grpc

from servicekit import errors, grpc_server

READER = "notify"  # who reads the PIN, in the access service's disclosure record
PURPOSE = "access_email"


@dataclass(frozen=True)
class ActivePin:
    grant_id: str
    pin: str
    valid_from: datetime
    valid_to: datetime

    def __repr__(self) -> str:  # a PIN never reaches a log line through a repr
        return f"ActivePin(grant_id={self.grant_id!r}, pin=<hidden>)"


class PinNotActive(Exception):
    """The booking has no active grant (cancelled, moved, ended): no PIN, no access mail."""


class AccessUnavailable(Exception):
    """The access service did not answer: try again later."""


class AccessPins(abc.ABC):
    @abc.abstractmethod
    async def disclose(self, org_id: str, booking_id: str) -> ActivePin: ...

    async def aclose(self) -> None:
        return None


class GrpcAccessPins(AccessPins):
    def __init__(self, target: str, tls_dir: str, timeout_s: float) -> None:
        self._target = target
        self._tls_dir = tls_dir  # notify's own certificate: access lets it read PINs only
        self._timeout_s = timeout_s
        self._channel: grpc_server.RotatingChannel | None = None

    async def disclose(self, org_id: str, booking_id: str) -> ActivePin:
        if self._channel is None:
            self._channel = grpc_server.channel(self._target, self._tls_dir)
        stub = access_pb2_grpc.AccessServiceStub(self._channel)
        request = access_pb2.DisclosePinRequest(
            org_id=org_id, booking_id=booking_id, user=READER, purpose=PURPOSE
        )
        try:
            answer = await stub.DisclosePin(request, timeout=self._timeout_s)
        except grpc.aio.AioRpcError as error:
            reason = errors.reason_of(error)
            if reason in ("pin_not_active", "not_found"):
                raise PinNotActive(reason) from None
            raise AccessUnavailable(f"{error.code().name} {reason}".strip()) from None
        return ActivePin(
            answer.grant_id,
            answer.pin,
            answer.valid_from.ToDatetime(tzinfo=UTC),
            answer.valid_to.ToDatetime(tzinfo=UTC),
        )

    async def aclose(self) -> None:
        if self._channel is not None:
            await self._channel.close(None)
