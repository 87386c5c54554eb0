"""The card provider's API, behind an interface the service layer depends on.

The HTTP adapter speaks the sandbox gateway's API (bearer key, Idempotency-Key on
creates and refunds); a real provider would be another subclass chosen by configuration.
Errors are split by what the caller may conclude: `GatewayUnavailable` means the outcome
is unknown (timeout, connection error, 5xx) and the call may be repeated with the same
key; `GatewayRefused` is a definite answer.
"""

from __future__ import annotations

import abc
from typing import Any
from urllib.parse import quote

import httpx

from services.payment.domain.money import Money
from services.payment.domain.payment import RemotePayment


class GatewayUnavailable(Exception):
    """No definite answer: the request may or may not have been applied."""


class GatewayRefused(Exception):
    """The gateway answered and declined; `remote` is its view of the payment, if it sent one."""

    def __init__(self, status: int, code: str, remote: RemotePayment | None = None) -> None:
        super().__init__(f"{status} {code}")
        self.status = status
        self.code = code
        self.remote = remote


class CardGateway(abc.ABC):
    @abc.abstractmethod
    async def create_payment(
        self, key: str, amount: Money, reference: str, return_url: str
    ) -> RemotePayment: ...

    @abc.abstractmethod
    async def get_payment(self, provider_payment_id: str) -> RemotePayment: ...

    @abc.abstractmethod
    async def find_by_reference(self, reference: str) -> list[RemotePayment]: ...

    @abc.abstractmethod
    async def cancel_payment(self, provider_payment_id: str) -> RemotePayment: ...

    @abc.abstractmethod
    async def refund(self, provider_payment_id: str, key: str, amount: Money) -> None: ...

    async def aclose(self) -> None:
        return None


class HttpCardGateway(CardGateway):
    def __init__(self, client: httpx.AsyncClient) -> None:
        self._client = client

    async def create_payment(
        self, key: str, amount: Money, reference: str, return_url: str
    ) -> RemotePayment:
        body: dict[str, Any] = {
            "amount": amount.amount,
            "currency": amount.currency,
            "reference": reference,
        }
        if return_url:
            body["return_url"] = return_url
        data = await self._call("POST", "/v1/payments", json=body, key=key)
        return remote_of(data)

    async def get_payment(self, provider_payment_id: str) -> RemotePayment:
        return remote_of(await self._call("GET", f"/v1/payments/{_segment(provider_payment_id)}"))

    async def find_by_reference(self, reference: str) -> list[RemotePayment]:
        data = await self._call("GET", "/v1/payments", params={"reference": reference})
        return [remote_of(item) for item in data.get("data", [])]

    async def cancel_payment(self, provider_payment_id: str) -> RemotePayment:
        path = f"/v1/payments/{_segment(provider_payment_id)}/cancel"
        return remote_of(await self._call("POST", path))

    async def refund(self, provider_payment_id: str, key: str, amount: Money) -> None:
        path = f"/v1/payments/{_segment(provider_payment_id)}/refunds"
        await self._call("POST", path, json={"amount": amount.amount}, key=key)

    async def aclose(self) -> None:
        await self._client.aclose()

    async def _call(
        self,
        method: str,
        path: str,
        json: dict[str, Any] | None = None,
        params: dict[str, str] | None = None,
        key: str | None = None,
    ) -> dict[str, Any]:
        headers = {"Idempotency-Key": key} if key else {}
        try:
            response = await self._client.request(
                method, path, json=json, params=params, headers=headers
            )
        except httpx.TransportError as error:  # timeouts included: the outcome is unknown
            raise GatewayUnavailable(f"{method} {path}: {type(error).__name__}") from error
        if response.status_code >= 500:
            raise GatewayUnavailable(f"{method} {path}: {response.status_code}")
        data: dict[str, Any] = response.json()
        if response.is_success:
            return data
        remote = remote_of(data["payment"]) if isinstance(data.get("payment"), dict) else None
        raise GatewayRefused(response.status_code, str(data.get("error", "")), remote)


def _segment(provider_payment_id: str) -> str:
    """An id as one URL path segment: ids come from notifications, which anyone can send,
    and `../` in one must not reach another path of the provider with our API key."""
    if not provider_payment_id or len(provider_payment_id) > 128:
        raise GatewayRefused(400, "invalid_payment_id")
    return quote(provider_payment_id, safe="")


def remote_of(data: dict[str, Any]) -> RemotePayment:
    return RemotePayment(
        provider_payment_id=str(data["id"]),
        reference=str(data["reference"]),
        state=str(data["state"]),
        amount=Money(int(data["amount"]), str(data["currency"])),
        checkout_url=str(data.get("checkout_url") or ""),
    )


def make_client(base_url: str, api_key: str, timeout_s: float) -> httpx.AsyncClient:
    # Explicit timeouts: a hanging provider must end in GatewayUnavailable, never a stuck worker.
    return httpx.AsyncClient(
        base_url=base_url,
        headers={"Authorization": f"Bearer {api_key}"},
        timeout=httpx.Timeout(timeout_s, connect=min(timeout_s, 2.0)),
    )
