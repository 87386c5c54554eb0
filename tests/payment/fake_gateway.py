"""An in-memory card gateway that subclasses the real interface, for the property tests.

It behaves like the sandbox (idempotent creates and refunds, forward-only states) and can
be told to answer with a timeout after applying a call, or to decline refunds. It also
checks invariant 12 from the provider's side: when a create arrives, the payment it names
must already be committed in the service's database.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from services.payment.adapters.card_gateway import CardGateway, GatewayRefused, GatewayUnavailable
from services.payment.domain.money import Money
from services.payment.domain.payment import RemotePayment


@dataclass
class FakeRemote:
    provider_payment_id: str
    reference: str
    amount: Money
    key: str
    state: str = "pending"
    refunded_amount: int = 0

    def view(self) -> RemotePayment:
        url = f"https://fake.test/checkout/{self.provider_payment_id}"
        return RemotePayment(self.provider_payment_id, self.reference, self.state, self.amount, url)


@dataclass
class FakeCardGateway(CardGateway):
    engine: AsyncEngine  # a separate connection: it sees only committed rows
    payments: dict[str, FakeRemote] = field(default_factory=dict)
    keys: dict[str, str] = field(default_factory=dict)
    refund_keys: set[str] = field(default_factory=set)
    timeout_next_creates: int = 0
    timeout_next_refunds: int = 0
    decline_refunds: bool = False
    uncommitted_creates: list[str] = field(default_factory=list)

    async def create_payment(
        self, key: str, amount: Money, reference: str, return_url: str
    ) -> RemotePayment:
        await self._check_committed(reference)
        if key not in self.keys:
            remote = FakeRemote(f"pay_{uuid.uuid4().hex[:12]}", reference, amount, key)
            self.payments[remote.provider_payment_id] = remote
            self.keys[key] = remote.provider_payment_id
        remote = self.payments[self.keys[key]]
        if self.timeout_next_creates > 0:  # stored, then the reply is lost
            self.timeout_next_creates -= 1
            raise GatewayUnavailable("timeout")
        return remote.view()

    async def get_payment(self, provider_payment_id: str) -> RemotePayment:
        return self._get(provider_payment_id).view()

    async def find_by_reference(self, reference: str) -> list[RemotePayment]:
        return [p.view() for p in self.payments.values() if p.reference == reference]

    async def cancel_payment(self, provider_payment_id: str) -> RemotePayment:
        remote = self._get(provider_payment_id)
        if remote.state != "pending":
            raise GatewayRefused(409, "not_cancellable", remote.view())
        remote.state = "cancelled"
        return remote.view()

    async def refund(self, provider_payment_id: str, key: str, amount: Money) -> None:
        remote = self._get(provider_payment_id)
        if key not in self.refund_keys:
            if remote.state != "paid":
                raise GatewayRefused(409, "not_refundable", remote.view())
            if self.decline_refunds:
                raise GatewayRefused(402, "refund_declined", remote.view())
            self.refund_keys.add(key)
            remote.refunded_amount += amount.amount
            remote.state = "refunded"
        if self.timeout_next_refunds > 0:
            self.timeout_next_refunds -= 1
            raise GatewayUnavailable("timeout")

    def settle(self, provider_payment_id: str, outcome: str) -> bool:
        remote = self._get(provider_payment_id)
        if remote.state != "pending":
            return False
        remote.state = outcome
        return True

    def _get(self, provider_payment_id: str) -> FakeRemote:
        remote = self.payments.get(provider_payment_id)
        if remote is None:
            raise GatewayRefused(404, "not_found")
        return remote

    async def _check_committed(self, reference: str) -> None:
        async with self.engine.connect() as connection:
            query = text("SELECT 1 FROM payments WHERE payment_id = :id")
            if (await connection.execute(query, {"id": uuid.UUID(reference)})).first() is None:
                self.uncommitted_creates.append(reference)
