"""One error model for every service: a refusal travels as gRPC's rich status.

A service's domain errors stay pure (the domain imports nothing from here): each class
declares `reason`, the contract's machine-readable code (`slot_unavailable`), and `kind`,
what sort of refusal it is. This module maps each kind to one status code, the same in
every service, and sends the reason, the service's error domain and any metadata (such
as `existing_order_id`) as a `google.rpc.ErrorInfo` in a `google.rpc.Status`, the way
every gRPC client library can read it. Each proto declares the reasons its service uses.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import grpc
from google.protobuf import any_pb2
from google.rpc import error_details_pb2, status_pb2
from grpc_status import rpc_status

MAX_MESSAGE = 300
_DETAILS_KEY = "grpc-status-details-bin"  # where gRPC carries a rich status

# The kinds of refusal and the one status code each travels as.
STATUS_OF_KIND: Mapping[str, grpc.StatusCode] = {
    "invalid": grpc.StatusCode.INVALID_ARGUMENT,
    "not_found": grpc.StatusCode.NOT_FOUND,
    # Something the request would create, or its idempotency key, names something else.
    "already_exists": grpc.StatusCode.ALREADY_EXISTS,
    # The request is well formed but the current state refuses it (a taken slot).
    "precondition": grpc.StatusCode.FAILED_PRECONDITION,
    # A provider this service needs did not answer; the caller may try again.
    "unavailable": grpc.StatusCode.UNAVAILABLE,
}


@dataclass(frozen=True)
class ErrorModel:
    """A service's error domain (`liftfit.booking`) and the base class of its refusals."""

    domain: str
    refusals: tuple[type[Exception], ...]

    def refuses(self, error: BaseException) -> bool:
        return isinstance(error, self.refusals)


def status_for(error: Exception, domain: str) -> grpc.Status:
    """The rich status a domain error travels as."""
    kind = str(getattr(error, "kind", ""))
    if kind not in STATUS_OF_KIND:
        raise LookupError(f"{type(error).__name__} has no known kind: {kind!r}")
    metadata = getattr(error, "metadata", None) or {}
    return rich_status(
        STATUS_OF_KIND[kind], str(getattr(error, "reason", "")), domain, str(error), metadata
    )


def rich_status(
    code: grpc.StatusCode,
    reason: str,
    domain: str,
    message: str,
    metadata: Mapping[str, str] | None = None,
) -> grpc.Status:
    info = error_details_pb2.ErrorInfo(reason=reason, domain=domain, metadata=dict(metadata or {}))
    detail = any_pb2.Any()
    detail.Pack(info)
    status = status_pb2.Status(code=code.value[0], message=message[:MAX_MESSAGE], details=[detail])
    return rpc_status.to_status(status)


async def abort_with(context: Any, status: grpc.Status) -> None:
    """Ends the call with a rich status; always raises."""
    await context.abort(status.code, status.details, status.trailing_metadata)


def error_info(error: grpc.RpcError) -> error_details_pb2.ErrorInfo | None:
    """The ErrorInfo a refused call carries, if any."""
    trailing: Any = getattr(error, "trailing_metadata", lambda: ())() or ()
    for key, value in trailing:
        if key != _DETAILS_KEY:
            continue
        status = status_pb2.Status()
        status.ParseFromString(value if isinstance(value, bytes) else value.encode())
        for detail in status.details:
            info = error_details_pb2.ErrorInfo()
            if detail.Unpack(info):
                return info
    return None


def reason_of(error: grpc.RpcError) -> str:
    """The contract's reason of a refused call, or "" when it carries none."""
    info = error_info(error)
    return info.reason if info is not None else ""
