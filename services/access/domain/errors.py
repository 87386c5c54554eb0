"""The access service's refusals, beside the ones every service shares (servicekit.refusals).

Each is a value of the domain with the contract's reason and its kind; the gRPC server
maps the kind to a status code, once, for every service (servicekit.errors).
"""

from __future__ import annotations

from servicekit.refusals import Kind, Refusal


class PinNotActive(Refusal, reason="pin_not_active", kind=Kind.PRECONDITION):
    """The booking has no active grant: there is no PIN to read, and nothing is disclosed."""

    def __init__(self, booking_id: str, state: str = "") -> None:
        super().__init__(f"booking {booking_id} has no active access ({state or 'none'})")
        self.state = state

    @property
    def metadata(self) -> dict[str, str]:
        return {"state": self.state} if self.state else {}
