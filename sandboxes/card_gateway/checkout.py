"""The hosted payment page the customer is sent to via ``checkout_url``."""

from __future__ import annotations

from urllib.parse import parse_qs

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from . import pages
from .runtime import GatewayDep
from .state import GatewayError, Outcome

router = APIRouter(prefix="/checkout")

_MESSAGES = {404: "No such payment.", 409: "This payment can no longer be paid."}
_OUTCOMES: dict[str, Outcome] = {"succeed": "succeed", "fail": "fail"}


@router.get("/{payment_id}", response_class=HTMLResponse)
async def show(payment_id: str, gateway: GatewayDep) -> HTMLResponse:
    try:
        payment = gateway.state.get_payment(payment_id)
    except GatewayError as exc:
        return _error(exc.status)
    return HTMLResponse(pages.checkout(payment))


@router.post("/{payment_id}", response_class=HTMLResponse)
async def pay(payment_id: str, request: Request, gateway: GatewayDep) -> Response:
    # Parsed by hand: FastAPI's Form() would need python-multipart just for one field.
    form = parse_qs((await request.body()).decode(errors="replace"))
    outcome = _OUTCOMES.get(form.get("outcome", [""])[0])
    if outcome is None:
        return HTMLResponse(pages.error("outcome must be succeed or fail."), status_code=400)
    try:
        deferred = gateway.start_settlement(payment_id, outcome)
    except GatewayError as exc:
        return _error(exc.status)
    payment = gateway.state.get_payment(payment_id)
    if payment.params.return_url:
        return RedirectResponse(payment.params.return_url, status_code=303)
    return HTMLResponse(pages.result(payment, deferred))


def _error(status: int) -> HTMLResponse:
    return HTMLResponse(pages.error(_MESSAGES.get(status, "Error.")), status_code=status)
