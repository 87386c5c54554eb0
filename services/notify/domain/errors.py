"""The notify service's refusals, beside the ones every service shares (servicekit.refusals).

Each is a value of the domain with the contract's reason and its kind; the gRPC server
maps the kind to a status code, once, for every service (servicekit.errors).
"""

from __future__ import annotations

from servicekit.refusals import Kind, Refusal


class DeliveryNotUndecided(Refusal, reason="delivery_not_undecided", kind=Kind.PRECONDITION):
    """A decision on a delivery that does not wait for one (or not for that decision)."""

    def __init__(self, delivery_key: str, state: str = "") -> None:
        super().__init__(
            f"delivery {delivery_key} is {state or 'decided'}: that decision does not apply"
        )
        self.state = state

    @property
    def metadata(self) -> dict[str, str]:
        return {"state": self.state} if self.state else {}
