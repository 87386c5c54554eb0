"""The sandbox control API under ``/_sandbox``: fault injection and test shortcuts.

For tests and operators of the sandbox, never part of the provider API the merchant's
adapter is written against: it answers only to the control token
(CARD_GATEWAY_CONTROL_TOKEN), not to the account's API key.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Header
from fastapi.responses import JSONResponse

from sandboxes.bearer import presents

from .api import Unauthorized
from .runtime import GatewayDep
from .schemas import Config, FaultsPatch, Settle, Tamper


async def require_control_token(
    gateway: GatewayDep, authorization: Annotated[str | None, Header()] = None
) -> None:
    if not presents(authorization, gateway.settings.control_token):
        raise Unauthorized


router = APIRouter(prefix="/_sandbox", dependencies=[Depends(require_control_token)])


@router.get("/faults")
async def get_faults(gateway: GatewayDep) -> dict[str, object]:
    return gateway.state.faults.to_api()


@router.post("/faults")
async def merge_faults(body: FaultsPatch, gateway: GatewayDep) -> dict[str, object]:
    gateway.state.faults.merge(body.model_dump(exclude_none=True))
    return gateway.state.faults.to_api()


@router.delete("/faults")
async def clear_faults(gateway: GatewayDep) -> dict[str, object]:
    gateway.state.faults.clear()
    return gateway.state.faults.to_api()


@router.get("/payments")
async def list_payments(gateway: GatewayDep) -> dict[str, object]:
    rows = [
        {**gateway.payment_json(p), "idempotency_key": p.idempotency_key, "settling": p.settling}
        for p in gateway.state.payments.values()
    ]
    return {"data": rows}


@router.get("/refunds")
async def list_refunds(gateway: GatewayDep) -> dict[str, object]:
    rows = [
        {**refund.to_api(), "idempotency_key": refund.idempotency_key}
        for refund in gateway.state.refunds.values()
    ]
    return {"data": rows}


@router.post("/payments/{payment_id}/settle")
async def settle(payment_id: str, body: Settle, gateway: GatewayDep) -> JSONResponse:
    deferred = gateway.start_settlement(payment_id, body.outcome)
    payment = gateway.payment_json(gateway.state.get_payment(payment_id))
    # 202 tells the test the state will change only after settle_delay_ms.
    return JSONResponse(payment, status_code=202 if deferred else 200)


@router.post("/payments/{payment_id}/tamper")
async def tamper(payment_id: str, body: Tamper, gateway: GatewayDep) -> dict[str, object]:
    payment = gateway.state.tamper(payment_id, body.amount, body.currency)
    return gateway.payment_json(payment)


@router.post("/payments/{payment_id}/expire")
async def expire(payment_id: str, gateway: GatewayDep) -> dict[str, object]:
    payment = gateway.state.expire(payment_id)
    gateway.dispatch()
    return gateway.payment_json(payment)


@router.get("/notifications")
async def notifications(gateway: GatewayDep) -> dict[str, object]:
    return {"data": [delivery.to_api() for delivery in gateway.notifier.log()]}


@router.post("/notifications/flush")
async def flush(gateway: GatewayDep) -> dict[str, object]:
    return {"released": gateway.notifier.flush()}


@router.get("/config")
async def get_config(gateway: GatewayDep) -> dict[str, object]:
    return {"notify_url": gateway.notifier.notify_url}


@router.post("/config")
async def set_config(body: Config, gateway: GatewayDep) -> dict[str, object]:
    gateway.notifier.notify_url = body.notify_url
    return {"notify_url": gateway.notifier.notify_url}


@router.post("/reset")
async def reset(gateway: GatewayDep) -> dict[str, object]:
    gateway.reset()
    return {"reset": True}
