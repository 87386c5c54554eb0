"""One error model for every service: a refusal travels as gRPC's rich status.

A service's refusals (servicekit.refusals) are pure values with the contract's `reason`
and a `kind`. This module maps each kind to one status code, the same in every service,
and sends the reason, the service's error domain (`liftfit.booking`) and any metadata
(such as `existing_order_id` or the bad `field`) as a `google.rpc.ErrorInfo` inside a
`google.rpc.Status`, the way every gRPC client library can read it. The gRPC server
interceptor (servicekit.grpc_server) is the one place that does it, for every RPC; each
proto declares the reasons its service uses.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import grpc
from google.protobuf import any_pb2
from google.rpc import error_details_pb2, status_pb2
from grpc_status import rpc_status

from servicekit.refusals import Kind, Refusal

MAX_MESSAGE = 300
# The reasons the server interceptor gives of its own, beside a service's refusals: every
# service's proto declares them too.
UNAVAILABLE, CONFLICT, INTERNAL = "unavailable", "conflict", "internal"
CALLER_NOT_ALLOWED = "caller_not_allowed"  # servicekit.callers
INTERCEPTOR_REASONS = (UNAVAILABLE, CONFLICT, INTERNAL, CALLER_NOT_ALLOWED)
_DETAILS_KEY = "grpc-status-details-bin"  # where gRPC carries a rich status

# The kinds of refusal and the one status code each travels as, in every service.
STATUS_OF_KIND: Mapping[Kind, grpc.StatusCode] = {
    Kind.INVALID: grpc.StatusCode.INVALID_ARGUMENT,
    Kind.NOT_FOUND: grpc.StatusCode.NOT_FOUND,
    Kind.ALREADY_EXISTS: grpc.StatusCode.ALREADY_EXISTS,
    Kind.PRECONDITION: grpc.StatusCode.FAILED_PRECONDITION,
    Kind.UNAVAILABLE: grpc.StatusCode.UNAVAILABLE,
}


def status_for(refusal: Refusal, domain: str) -> grpc.Status:
    """The rich status a refusal travels as."""
    code = STATUS_OF_KIND[refusal.kind]
    return rich_status(code, refusal.reason, domain, str(refusal), refusal.metadata)


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
