"""The card provider's API, behind an interface the service layer depends on.

The HTTP adapter speaks the sandbox gateway's API (bearer key, Idempotency-Key on
creates and refunds); a real provider would be another subclass chosen by configuration.
Errors are split by what the caller may conclude: `GatewayUnavailable` means the outcome
is unknown (timeout, connection error, 5xx) and the call may be repeated with the same
key; `GatewayRefused` is a definite answer.

Nothing in an answer is trusted (servicekit.provider_http): a body that is too large, not
JSON, or lacks a field of the right type says nothing definite, so it is
`GatewayUnavailable` too, never a KeyError or ValueError escaping into a job.
"""

from __future__ import annotations

import abc
from typing import Any, Final
from urllib.parse import quote

import httpx

from servicekit.provider_http import JsonExchange, UnknownOutcome
from services.payment.domain.money import Money
from services.payment.domain.payment import RemotePayment

MAX_TEXT: Final = 2048
MAX_CODE: Final = 100


class GatewayUnavailable(UnknownOutcome):
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
        self._exchange = JsonExchange(
            client, "the card gateway", GatewayUnavailable, "card_gateway"
        )

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
        data = await self._call("create_payment", "POST", "/v1/payments", json=body, key=key)
        return remote_of(data)

    async def get_payment(self, provider_payment_id: str) -> RemotePayment:
        path = f"/v1/payments/{_segment(provider_payment_id)}"
        return remote_of(await self._call("get_payment", "GET", path))

    async def find_by_reference(self, reference: str) -> list[RemotePayment]:
        query = {"reference": reference}
        data = await self._call("find_payments", "GET", "/v1/payments", params=query)
        found = data.get("data")
        if not isinstance(found, list):
            raise GatewayUnavailable("GET /v1/payments: no list of payments in the answer")
        return [remote_of(item) for item in found]

    async def cancel_payment(self, provider_payment_id: str) -> RemotePayment:
        path = f"/v1/payments/{_segment(provider_payment_id)}/cancel"
        return remote_of(await self._call("cancel_payment", "POST", path))

    async def refund(self, provider_payment_id: str, key: str, amount: Money) -> None:
        path = f"/v1/payments/{_segment(provider_payment_id)}/refunds"
        await self._call("refund", "POST", path, json={"amount": amount.amount}, key=key)

    async def aclose(self) -> None:
        await self._exchange.aclose()

    async def _call(
        self,
        operation: str,
        method: str,
        path: str,
        json: dict[str, Any] | None = None,
        params: dict[str, str] | None = None,
        key: str | None = None,
    ) -> dict[str, Any]:
        headers = {"Idempotency-Key": key} if key else {}
        status, data = await self._exchange.call(
            method, path, json, params, headers, operation=operation
        )
        if status < 300:
            return data
        found = data.get("payment")
        remote = remote_of(found) if found is not None else None
        raise GatewayRefused(status, str(data.get("error", ""))[:MAX_CODE], remote)


def _segment(provider_payment_id: str) -> str:
    """An id as one URL path segment: ids come from notifications, which anyone can send,
    and `../` in one must not reach another path of the provider with our API key."""
    if not provider_payment_id or len(provider_payment_id) > 128:
        raise GatewayRefused(400, "invalid_payment_id")
    return quote(provider_payment_id, safe="")


def remote_of(data: Any) -> RemotePayment:
    """The gateway's payment object; an incomplete or mistyped one is no answer at all."""
    if not isinstance(data, dict):
        raise GatewayUnavailable("the payment in the answer is not an object")
    amount = data.get("amount")
    checkout_url = data.get("checkout_url") or ""
    if not isinstance(amount, int) or isinstance(amount, bool) or not isinstance(checkout_url, str):
        raise GatewayUnavailable("the payment in the answer has no valid amount or checkout_url")
    return RemotePayment(
        provider_payment_id=_text(data, "id"),
        reference=_text(data, "reference"),
        state=_text(data, "state"),
        amount=Money(amount, _text(data, "currency")),
        checkout_url=checkout_url[:MAX_TEXT],
    )


def _text(data: dict[str, Any], name: str) -> str:
    value = data.get(name)
    if not isinstance(value, str) or not value or len(value) > MAX_TEXT:
        raise GatewayUnavailable(f"the payment in the answer has no valid {name}")
    return value
