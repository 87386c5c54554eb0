"""The payment service's refusals, beside the ones every service shares (servicekit.refusals).

Each is a value of the domain with the contract's reason and its kind; the gRPC server
maps the kind to a status code, once, for every service (servicekit.errors).
"""

from __future__ import annotations

from servicekit.refusals import InvalidRequest, Kind, Refusal


class InvalidPlan(InvalidRequest, reason="validation_error"):
    """A plan whose fields break the catalogue's rules."""


class UnknownPlan(Refusal, reason="unknown_plan", kind=Kind.INVALID):
    """No plan of that code and version in the catalogue."""


class PlanVersionExists(Refusal, reason="plan_version_exists", kind=Kind.ALREADY_EXISTS):
    """A plan version is immutable: it may be created once and never changed."""


class OrderExists(Refusal, reason="order_exists", kind=Kind.ALREADY_EXISTS):
    """The organisation already has an open initial subscription order or an active period."""

    def __init__(self, existing_order_id: str) -> None:
        super().__init__(f"order {existing_order_id} is open or its period is active")
        self.existing_order_id = existing_order_id

    @property
    def metadata(self) -> dict[str, str]:
        return {"existing_order_id": self.existing_order_id}


class InvalidSignature(Refusal, reason="invalid_signature", kind=Kind.INVALID):
    """A notification whose signature, timestamp or body does not verify."""


class AmountMismatch(Refusal, reason="amount_mismatch", kind=Kind.PRECONDITION):
    """The gateway reports another amount or currency than the local snapshot."""


class GatewayUnreachable(Refusal, reason="gateway_unavailable", kind=Kind.UNAVAILABLE):
    """The card gateway did not answer: whether it applied the call is unknown; retry."""
