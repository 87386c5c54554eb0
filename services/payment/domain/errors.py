"""The payment service's refusals, beside the ones every service shares (servicekit.refusals).

Each is a value of the domain with the contract's reason and its kind; the gRPC server
maps the kind to a status code, once, for every service (servicekit.errors).
"""

from __future__ import annotations

from servicekit.refusals import InvalidRequest, Kind, Refusal


class InvalidPlan(InvalidRequest):
    reason = "validation_error"


class UnknownPlan(Refusal):
    """No plan of that code and version in the catalogue."""

    reason = "unknown_plan"
    kind = Kind.INVALID


class PlanVersionExists(Refusal):
    """A plan version is immutable: it may be created once and never changed."""

    reason = "plan_version_exists"
    kind = Kind.ALREADY_EXISTS


class OrderExists(Refusal):
    """The organisation already has an open initial subscription order or an active period."""

    reason = "order_exists"
    kind = Kind.ALREADY_EXISTS

    def __init__(self, existing_order_id: str) -> None:
        super().__init__(f"order {existing_order_id} is open or its period is active")
        self.existing_order_id = existing_order_id

    @property
    def metadata(self) -> dict[str, str]:
        return {"existing_order_id": self.existing_order_id}


class InvalidSignature(Refusal):
    """A notification whose signature, timestamp or body does not verify."""

    reason = "invalid_signature"
    kind = Kind.INVALID


class AmountMismatch(Refusal):
    """The gateway reports another amount or currency than the local snapshot."""

    reason = "amount_mismatch"
    kind = Kind.PRECONDITION


class GatewayUnreachable(Refusal):
    """The card gateway did not answer: whether it applied the call is unknown; retry."""

    reason = "gateway_unavailable"
    kind = Kind.UNAVAILABLE
