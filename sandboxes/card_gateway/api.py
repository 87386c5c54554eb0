"""The provider API under ``/v1``: what the payment service's adapter talks to."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Header
from fastapi.responses import JSONResponse

from sandboxes.bearer import presents

from .runtime import GatewayDep
from .schemas import CreatePayment, CreateRefund
from .state import GatewayError, PaymentParams

MAX_KEY_LENGTH = 255

IdempotencyKey = Annotated[str | None, Header(alias="Idempotency-Key")]


class Unauthorized(Exception):
    """Missing or wrong bearer token; answered with 401 and a WWW-Authenticate challenge."""


async def require_api_key(
    gateway: GatewayDep, authorization: Annotated[str | None, Header()] = None
) -> None:
    if not presents(authorization, gateway.settings.api_key):
        raise Unauthorized


async def injected_outage(gateway: GatewayDep) -> None:
    # Runs after authentication so a misconfigured client cannot use up the fault.
    if gateway.state.faults.take("fail_next_calls"):
        raise GatewayError(503, "service_unavailable")


router = APIRouter(prefix="/v1", dependencies=[Depends(require_api_key), Depends(injected_outage)])


def _key(raw: str | None) -> str:
    if not raw or len(raw) > MAX_KEY_LENGTH:
        raise GatewayError(400, "idempotency_key_required")
    return raw


@router.post("/payments")
async def create_payment(
    body: CreatePayment, gateway: GatewayDep, idempotency_key: IdempotencyKey = None
) -> JSONResponse:
    params = PaymentParams(**body.model_dump())
    payment, created = gateway.state.create_payment(_key(idempotency_key), params)
    # The payment is stored before the hang, so a client that times out and retries with
    # the same key finds it: exactly the ambiguity a merchant must cope with.
    if gateway.state.faults.take("timeout_next_creates"):
        await gateway.hang()
    return JSONResponse(gateway.payment_json(payment), status_code=201 if created else 200)


@router.get("/payments")
async def find_payments(reference: str, gateway: GatewayDep) -> dict[str, object]:
    found = gateway.state.find_by_reference(reference)
    return {"data": [gateway.payment_json(payment) for payment in found]}


@router.get("/payments/{payment_id}")
async def get_payment(payment_id: str, gateway: GatewayDep) -> dict[str, object]:
    return gateway.payment_json(gateway.state.get_payment(payment_id))


@router.post("/payments/{payment_id}/cancel")
async def cancel_payment(payment_id: str, gateway: GatewayDep) -> dict[str, object]:
    payment = gateway.state.cancel(payment_id)
    gateway.dispatch()
    return gateway.payment_json(payment)


@router.post("/payments/{payment_id}/refunds")
async def create_refund(
    payment_id: str, body: CreateRefund, gateway: GatewayDep, idempotency_key: IdempotencyKey = None
) -> JSONResponse:
    refund, created = gateway.state.refund(payment_id, _key(idempotency_key), body.amount)
    gateway.dispatch()
    if gateway.state.faults.take("timeout_next_refunds"):
        await gateway.hang()
    return JSONResponse(refund.to_api(), status_code=201 if created else 200)


@router.get("/refunds/{refund_id}")
async def get_refund(refund_id: str, gateway: GatewayDep) -> dict[str, object]:
    return gateway.state.get_refund(refund_id).to_api()
